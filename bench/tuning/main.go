// Command tuning measures what tuning a model costs, side by side in one
// run: it tunes the model twice with package tuning's session, each to
// -trials measurements into a database of its own,
//
//   - cold: as Ansor and Tessera before issue 23 did — a cold cost model
//     (random until 100 measurements train one), a warm-up round of
//     -per-round measurements per task, no transfer, rivals never decided;
//   - new: the session tune runs by default — the shipped pretrained cost
//     model (or -cost-model), a warm-up of 4 per task, rivals decided at a
//     1.5× lead, and tasks seeded with the best schedules of similar
//     workloads of the -from databases (imported into its database first),
//
// then builds the model from the records each run had made at every
// checkpoint (-checkpoints, in trials), and times every build end to end
// at -threads (1 by default), alternating `tune bench` processes with
// onnxruntime's (bench/ort/bench.mjs) for -rounds rounds. It prints
// "name = value" lines:
//
//	MODE trials=N ms = <median of the rounds' medians> (wall W s)
//	onnxruntime ms = <the same>
//	MODE trials to onnxruntime = <first checkpoint at least as fast as onnxruntime>
//	MODE trials to within 5% = <first checkpoint within 5% of cold's last>
//	MODE final / cold final = <ratio of the last checkpoints' latencies>
//
// and draws the tuning curves (latency against trials and against wall
// time, onnxruntime as a line) into -o DIR/curve.png and curve.svg.
//
//	go run ./bench/tuning -model models/resnet18.onnx -from /tmp/pre/resnet50.db -o /tmp/tc
//	go run ./bench/tuning -model models/mobilenetv2.onnx -skip-tune -o /tmp/tc  # re-time the databases in -o
//
// A checkpoint wall time is the time from the run's start to its record of
// that trial (records keep their time). The databases stay in -o: running
// again with -skip-tune re-times them, and a run stopped early resumes
// (the session resumes from its database).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/search"
	"github.com/tessera-ml/tessera/tuning"
)

type config struct {
	model, out, costModel string
	from                  []string
	trials, perRound      int
	threads, rounds       int
	checkpoints           []int
	modes                 []string
	skipTune, skipRace    bool
	buildOnly             bool
	seconds               float64
	seed                  uint64
}

func main() {
	var c config
	flag.StringVar(&c.model, "model", "models/resnet18.onnx", "ONNX model `FILE` to tune")
	flag.StringVar(&c.out, "o", "", "output `DIR`: the databases, the builds, curve.png and curve.svg (required)")
	flag.StringVar(&c.costModel, "cost-model", "pretrained", "the new run's starting cost model: pretrained (shipped) or a LightGBM text `FILE`")
	from := flag.String("from", "", "comma-separated records `DBs` whose records the new run imports first (transfer from other models)")
	flag.IntVar(&c.trials, "trials", 2000, "measurements per run")
	flag.IntVar(&c.perRound, "per-round", 64, "measurements per round (and the cold run's warm-up per task)")
	flag.IntVar(&c.threads, "threads", 1, "threads of the tuned kernels and of both sides of the race")
	flag.IntVar(&c.rounds, "rounds", 3, "alternating rounds of the end-to-end race")
	flag.Float64Var(&c.seconds, "seconds", 1, "timed seconds per bench process")
	cps := flag.String("checkpoints", "26,50,100,150,200,300,400,500,750,1000,1500,2000", "trial counts at which the model is built and timed")
	modes := flag.String("modes", "cold,new", "the runs, in order")
	flag.BoolVar(&c.skipTune, "skip-tune", false, "time the databases already in -o without tuning")
	flag.BoolVar(&c.buildOnly, "build-only", false, "build the checkpoints of the runs in -o without timing them (a later run times them)")
	flag.BoolVar(&c.skipRace, "skip-race", false, "tune only (a later run with the same -o races: a finished run is not tuned again)")
	flag.Uint64Var(&c.seed, "seed", 1, "search seed of both runs")
	flag.Parse()
	if c.out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *from != "" {
		c.from = strings.Split(*from, ",")
	}
	c.modes = strings.Split(*modes, ",")
	for _, s := range strings.Split(*cps, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-checkpoints: %q is not a positive count", s))
		}
		if n <= c.trials {
			c.checkpoints = append(c.checkpoints, n)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/tuning:", err)
	os.Exit(1)
}

func run(ctx context.Context, c config) error {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	m, err := machine.Resolve("native", (&measure.Builder{}).Command())
	if err != nil {
		return err
	}
	fmt.Printf("cpu = %s\n", m)
	timing := measure.SearchRunOptions(c.threads)
	timing.FlushCache = true
	tg := backend.CPU(backend.CPUConfig{Threads: c.threads, Builder: &measure.Builder{}, Run: timing, Machine: m})
	defer tg.Close()
	// One load: the tasks tuned are the plan's the checkpoints build.
	l, plan, err := tuning.LoadModel(c.model, frontend.LoadOptions{}, partition.Options{Alternatives: true})
	if err != nil {
		return err
	}
	if !c.skipTune {
		for _, mode := range c.modes {
			if err := tune(ctx, c, mode, tg, plan.Tasks); err != nil {
				return fmt.Errorf("%s run: %w", mode, err)
			}
		}
	}
	if c.skipRace {
		return nil
	}
	return race(ctx, c, tg, l.Graph, plan)
}

func dbPath(c config, mode string) string { return filepath.Join(c.out, mode+".db") }

// tune runs one session to c.trials.
func tune(ctx context.Context, c config, mode string, tg *backend.Target, tasks []*partition.Task) error {
	store, err := records.Open(dbPath(c, mode))
	if err != nil {
		return err
	}
	defer store.Close()
	so := search.DefaultOptions(tg)
	so.Seed = c.seed
	opts := tuning.DefaultOptions(so)
	opts.Trials, opts.PerRound = c.trials, c.perRound
	switch mode {
	case "cold":
		opts.WarmUp, opts.RivalLead, opts.Transfer = 0, 0, 0
	case "new":
		var note string
		if opts.Pretrained, note, err = tuning.StartingModel(c.costModel, tg); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, note)
		for _, f := range c.from {
			if err := importFrom(store, f); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown mode %q (cold or new)", mode)
	}
	// Imported records of this model's own workloads (a model sharing a
	// layer with another) are the run's start, not its trials: the budget
	// is c.trials beyond them.
	base, err := baseTrials(c, mode, store, tasks, tg.Key())
	if err != nil {
		return err
	}
	opts.Trials += base
	start := time.Now()
	opts.Progress = append(opts.Progress, tuning.LogProgress(os.Stderr, start))
	s, err := tuning.New(store, tasks, tg.Key(), tg.Measurer(false), opts)
	if err != nil {
		return err
	}
	if _, err := os.Stat(startFile(c, mode)); errors.Is(err, os.ErrNotExist) { // not a resumed run
		if err := os.WriteFile(startFile(c, mode), []byte(start.Format(time.RFC3339Nano)), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "%s run: %d tasks, %d trials to go, %d tasks seeded by transfer\n", mode, len(tasks), s.ToGo(), len(s.Seeds))
	sum, err := s.Run(ctx)
	if err != nil {
		return err
	}
	tuning.WriteSummary(os.Stderr, sum)
	return nil
}

// baseTrials returns the measurements of the tasks the run's database held
// before the run started (kept in MODE.base, so that a resumed run keeps
// its budget).
func baseTrials(c config, mode string, store *records.Store, tasks []*partition.Task, key string) (int, error) {
	file := filepath.Join(c.out, mode+".base")
	if data, err := os.ReadFile(file); err == nil {
		return strconv.Atoi(strings.TrimSpace(string(data)))
	}
	_, done, _, err := tuning.Preload(store, tasks, key, &costmodel.Dataset{})
	if err != nil {
		return 0, err
	}
	return done, os.WriteFile(file, []byte(strconv.Itoa(done)), 0o644)
}

func startFile(c config, mode string) string { return filepath.Join(c.out, mode+".start") }

// importFrom copies every record and task of the database at path into
// store (once: a second import of the same records is a no-op).
func importFrom(store *records.Store, path string) error {
	src, err := records.OpenReadOnly(path)
	if err != nil {
		return err
	}
	defer src.Close()
	infos, err := src.Tasks()
	if err != nil {
		return err
	}
	for _, t := range infos {
		if err := store.PutTask(t); err != nil {
			return err
		}
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(src.Export(pw)) }()
	rep, err := store.Import(pr)
	if err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "imported %d records of %s (%d skipped: already there or not replaying)\n", rep.Added, path, len(rep.Skipped))
	return nil
}
