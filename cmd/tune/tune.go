package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"tessera/costmodel"
	"tessera/measure"
	"tessera/measure/remote"
	"tessera/partition"
	"tessera/records"
	"tessera/search"
	"tessera/sketch"
	"tessera/target"
	"tessera/te"
)

// defaultTrials is the measurement budget when --trials is not given:
// enough for every task of a small model to get several rounds.
const defaultTrials = 1000

// toolVersion is written into every record.
const toolVersion = "tessera-dev"

// runTune is the tuning command, `tune [flags] model.onnx`.
func runTune(args []string, stdout, stderr io.Writer) error {
	if !strings.HasPrefix(args[0], "-") && !strings.HasSuffix(args[0], ".onnx") {
		return fmt.Errorf("unknown command %q (run 'tune -h' for the commands)", args[0])
	}
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	trials := fs.Int("trials", defaultTrials, "measurements across all tasks, earlier runs of the same target included")
	targetName := fs.String("target", "cpu", "target to tune for: "+strings.Join(target.Names, ", "))
	db := fs.String("db", "tuning.db", "records database `FILE`")
	threads := fs.Int("threads", runtime.NumCPU(), "threads of every measured kernel")
	cpu := fs.String("cpu", cpuDefault(), cpuFlagHelp)
	seed := fs.Uint64("seed", 1, "random seed of the search")
	perRound := fs.Int("per-round", 64, "measurements per round")
	population := fs.Int("population", search.DefaultOptions(nil).Population, "states per generation of the evolutionary search (fewer: faster rounds, worse picks)")
	early := fs.Int("early-stopping", 0, "set a task aside after `N` of its rounds without improvement (0: never)")
	costModel := fs.String("cost-model", "", "start from a pretrained cost model `FILE` (LightGBM text)")
	verify := fs.Bool("verify", false, "check every candidate's output against the reference evaluator")
	timeout := fs.Duration("timeout", 10*time.Second, "run time limit of one candidate")
	flushCache := fs.Bool("flush-cache", true, "before every timed call (one call per repetition) evict the kernel's weights from the CPU caches, or clear a GPU's L2: time kernels as a model runs them, weights cold; --flush-cache=false times them with the caches warm from the call before (costs not comparable: tune into another --db)")
	strategy := fs.String("scheduler", "gradient", "task scheduler: gradient or round-robin")
	var nf natsFlags
	nf.register(fs, "measure on the workers (tune worker) of this NATS server `URL` instead of on this machine")
	workerKey := fs.String("worker-key", "", "with --nats, when workers of several target keys are up: the `key`, or a part of it that names one")
	ackWait := fs.Duration("ack-wait", 30*time.Second, "with --nats: a job without a worker's heartbeat for this long goes to another worker")
	maxDeliver := fs.Int("max-deliver", 3, "with --nats: deliveries of a job before it is recorded as a failure of its candidate")
	workerWait := fs.Duration("worker-wait", time.Minute, "with --nats: how long to wait while no worker of the target is up")
	maxMemory := bytesFlag(measure.DefaultMaxMemory)
	fs.Var(&maxMemory, "max-memory", "the most memory measuring one task may take (its tensors at once), e.g. 8GiB or 512MiB")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tune [flags] model.onnx\n\nTunes every task of the model and stores each measurement in --db.\nRunning the same command again resumes.\n\n")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tune: want exactly one model file (run 'tune -h')")
		return errUsage
	}
	if *trials < 0 || *perRound <= 0 || *threads <= 0 || *population <= 0 {
		return errors.New("--trials, --per-round, --population and --threads must be positive")
	}
	if err := search.CheckStrategy(*strategy); err != nil {
		return err
	}

	l, err := loadModel(pos[0], mf)
	if err != nil {
		return err
	}
	l.printNotes(stderr, "tune")
	plan, err := partition.Extract(l.g, mf.partitionOptions())
	if err != nil {
		return err
	}
	tasks := make([]search.Task, len(plan.Tasks))
	rivals := plan.Rivals()
	for i, t := range plan.Tasks {
		if err := measure.CheckFootprint(t.DAG, int64(maxMemory)); err != nil {
			return fmt.Errorf("task %d (%s) cannot be tuned: %w (--max-memory)", i, t.Ops(), err)
		}
		tasks[i] = search.Task{Key: t.Key, DAG: t.DAG, Weight: t.Weight, Rivals: rivals[i]}
	}

	timing := runOptions(*threads, *timeout)
	timing.FlushCache = *flushCache
	tg, err := newTarget(*targetName, *cpu, *threads, timing, &measure.Builder{}, true)
	if err != nil {
		return err
	}
	defer tg.Close()
	ctx, caught, stop := signalContext()
	defer stop()
	local := tg.Measurer(*verify)
	local.MaxMemory = int64(maxMemory)
	var measurer interface {
		search.Measurer
		Times() measure.Times
	} = local
	targetKey := tg.Key()
	var rm *remote.Measurer
	if nf.url != "" {
		nc, err := nf.connect("tessera tuner")
		if err != nil {
			return err
		}
		defer nc.Close()
		key, err := workerTarget(ctx, nc, tg.Name, *workerKey, *workerWait, nf.url)
		if err != nil {
			return err
		}
		rm, err = remote.NewMeasurer(ctx, nc, remote.Options{Target: key, Verify: *verify, Timing: timing,
			AckWait: *ackWait, MaxDeliver: *maxDeliver, NoWorker: *workerWait})
		if err != nil {
			return err
		}
		defer rm.Close()
		measurer, targetKey = rm, key
		fmt.Fprintf(stdout, "measuring on the workers of target key %s through %s (run %s)\n", key, nf.url, rm.Run())
	}

	store, err := records.Open(*db)
	if err != nil {
		return err
	}
	defer store.Close()
	for _, t := range plan.Tasks {
		codec, _ := t.DAG.MarshalJSON() // without it, imports of the task are not checked
		if err := store.PutTask(records.TaskInfo{Key: t.Key, DAG: t.DAG.CanonicalString(), FLOPs: t.FLOPs, Weight: t.Weight, Codec: codec}); err != nil {
			return err
		}
	}

	params := costmodel.DefaultParams()
	params.Seed = *seed
	model := search.NewGBDTModel(params)
	prior, done, retry, err := loadPrior(store, tasks, targetKey, model)
	if err != nil {
		return err
	}
	if err := model.Retrain(); err != nil {
		return err
	}
	if *costModel != "" {
		m, err := loadCostModel(*costModel)
		if err != nil {
			return fmt.Errorf("--cost-model: %w", err)
		}
		if model.Trained() == nil { // a model trained on this run's own records wins
			model.Use(m)
		}
	}

	// --trials is the budget of the model on this target: running the same
	// command again continues up to it.
	todo := max(*trials-done, 0)
	retried := ""
	if retry > 0 {
		retried = fmt.Sprintf(", %d of them build timeouts that may be measured again", retry)
	}
	fmt.Fprintf(stdout, "tuning %s: %d tasks, %d trials (%d from earlier runs%s, %d to go), target %s, records in %s\n",
		printable(pos[0]), len(tasks), *trials, done, retried, todo, tg.Name, printable(*db))
	if tg.Name == "cpu" {
		fmt.Fprintln(stdout, tg.Machine)
	}
	// A progress bar on a terminal; one line per committed round in logs.
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(max(todo, 1),
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("tuning"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
		)
	}
	start := time.Now()
	opts := search.TuneOptions{
		Trials:    todo,
		PerRound:  *perRound,
		Search:    search.DefaultOptions(tg),
		Scheduler: search.DefaultSchedulerOptions(),
	}
	opts.Search.Seed = *seed
	opts.Search.Population = *population
	opts.Scheduler.Strategy = *strategy
	opts.Scheduler.EarlyStopping = *early
	opts.Progress = func(p search.Progress) {
		est := "?"
		if p.Complete {
			est = fmt.Sprintf("%.3f ms", p.Objective*1e3)
		}
		if bar == nil {
			fmt.Fprintf(stderr, "committed %d/%d trials (task %d/%d), est. model latency %s, %s elapsed\n",
				p.Trials, p.Total, p.Task+1, len(tasks), est, time.Since(start).Round(time.Second))
			return
		}
		bar.Describe(fmt.Sprintf("task %d/%d, est. model latency %s", p.Task+1, len(tasks), est))
		bar.Set(p.Trials)
	}
	log := &storeLog{store: store, target: targetKey}
	sum, err := search.Tune(ctx, tasks, prior, model, measurer, log, opts)
	if errors.Is(err, search.ErrMeasure) {
		return fmt.Errorf("%w\nevery batch measured before is in %s; run the same command to resume", err, *db)
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	interrupted := caught() != 0 && errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	if m := model.Trained(); m != nil {
		var buf bytes.Buffer
		if err := m.Save(&buf); err == nil {
			if err := store.SaveModel(targetKey, buf.Bytes()); err != nil {
				return err
			}
		}
	}
	sum.Prior = done // measurements, where Tune counts the schedules it was given
	printSummary(stdout, sum)
	if !interrupted && sum.Trials < todo {
		fmt.Fprintf(stdout, "stopped at %d of %d trials: no task has a schedule left to measure\n", sum.Trials, todo)
	}
	mt := measurer.Times()
	fmt.Fprintf(stdout, "wall time %v: search %v, measure %v (lower %v, compile %v for %d of %d candidates, run %v), learn %v\n",
		time.Since(start).Round(time.Second), sum.Times.Search.Round(time.Second), sum.Times.Measure.Round(time.Second),
		mt.Lower.Round(time.Second), mt.Build.Round(time.Second), mt.Compiled, mt.Candidates, mt.Run.Round(time.Second),
		sum.Times.Learn.Round(time.Second))
	if rm != nil {
		st := rm.Stats()
		fmt.Fprintf(stdout, "remote: %d jobs, %d results of a redelivered job, %d duplicate results dropped, %d jobs abandoned after %d deliveries\n",
			st.Jobs, st.Redelivered, st.Duplicates, st.Abandoned, *maxDeliver)
	}
	if interrupted {
		return &interruptedError{sig: caught(), msg: fmt.Sprintf("every measured batch is in %s; run the same command to resume", *db)}
	}
	return nil
}

// loadPrior replays the records of earlier runs on the target key: the
// states they measured (never measured again) and their features for the
// cost model. A schedule recorded several times counts once, by its best
// record. A schedule whose only records are fewer than maxBuildTimeouts
// build timeouts is left out, so that it can be measured again: a
// compiler killed at its deadline most often means a loaded machine (two
// runs sharing the cores), not a schedule that cannot be compiled; retry
// says how many were left out.
//
// done is the number of measurements the records hold, the part of the
// --trials budget earlier runs spent: every record that replays, but a
// record identical to another (same schedule, outcome, costs and time: an
// import of the database's own export) once.
func loadPrior(store *records.Store, tasks []search.Task, key string, model *search.GBDTModel) (prior map[string][]search.Measured, done, retry int, err error) {
	prior = map[string][]search.Measured{}
	for _, t := range tasks {
		recs, err := store.Records(t.Key, key)
		if err != nil {
			return nil, 0, 0, err
		}
		type entry struct {
			r        records.Replayed
			timeouts int
		}
		var order []string
		by := map[string]*entry{}
		counted := map[string]bool{}
		for _, r := range records.Replay(recs, map[string]*te.DAG{t.Key: t.DAG}, target.FeaturesOf) {
			if r.State == nil {
				continue // steps that no longer decode or apply to this DAG
			}
			k := sketch.Key(r.State)
			if id := fmt.Sprint(k, r.Record.Error, r.Record.Costs, r.Record.At.UnixNano()); !counted[id] {
				counted[id] = true
				done++
			}
			e := by[k]
			switch {
			case e == nil:
				e = &entry{r: r}
				by[k] = e
				order = append(order, k)
			case r.Result.Kind == measure.None && (e.r.Result.Kind != measure.None || r.Result.Cost() < e.r.Result.Cost()):
				e.r = r
			}
			if r.Result.Kind == measure.BuildTimeout {
				e.timeouts++
			}
		}
		for _, k := range order {
			e := by[k]
			if e.r.Result.Kind == measure.BuildTimeout && e.timeouts < maxBuildTimeouts {
				retry++
				continue
			}
			prior[t.Key] = append(prior[t.Key], search.Measured{State: e.r.State, Result: e.r.Result})
			if e.r.Features != nil {
				model.Data.Add(t.Key, e.r.Features, e.r.Result.Cost())
			}
		}
	}
	return prior, done, retry, nil
}

// maxBuildTimeouts is how many build timeouts of one schedule, in
// different runs, make tune take it as one that does not compile in time.
const maxBuildTimeouts = 2

// storeLog commits measured batches to the records store.
type storeLog struct {
	store  *records.Store
	target string
}

func (l *storeLog) Commit(t search.Task, batch []search.Measured) error {
	recs := make([]records.Record, 0, len(batch))
	for _, m := range batch {
		r, err := records.New(t.Key, l.target, m.State.Steps, m.Result, toolVersion)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	return l.store.Add(recs)
}

func printSummary(w io.Writer, sum search.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "task\tkey\tweight\ttrials\tbest ms\tGFLOP/s\tshare\t")
	for i, t := range sum.Tasks {
		best, gflops, share := "-", "-", "-"
		if !math.IsInf(t.Best, 1) {
			best = fmt.Sprintf("%.4f", t.Best*1e3)
			gflops = fmt.Sprintf("%.1f", t.Task.DAG.FLOPs()/t.Best/1e9)
			if sum.Objective > 0 {
				share = fmt.Sprintf("%.1f%%", 100*float64(t.Task.Weight)*t.Best/sum.Objective)
			}
		}
		key := t.Task.Key
		if len(key) > 11 {
			key = key[:11]
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t\n", i, key, t.Task.Weight, t.Trials+t.Prior, best, gflops, share)
	}
	tw.Flush()
	est := "unknown (a task has no valid schedule yet)"
	if sum.Complete {
		est = fmt.Sprintf("%.3f ms", sum.Objective*1e3)
	}
	fmt.Fprintf(w, "%d trials this run, %d from earlier runs; estimated model latency %s\n", sum.Trials, sum.Prior, est)
	for i, t := range sum.Tasks {
		if t.Exhausted {
			fmt.Fprintf(w, "task %d is exhausted: all %d distinct schedules the search reaches were measured\n", i, t.Trials+t.Prior)
		}
		if math.IsInf(t.Best, 1) && t.LastErrors != "" {
			fmt.Fprintf(w, "task %d has no valid schedule; last error: %s\n", i, t.LastErrors)
		}
	}
}

func runOptions(threads int, timeout time.Duration) measure.RunOptions {
	o := measure.SearchRunOptions(threads)
	o.Timeout = timeout
	return o
}

// workerTarget returns the target key of the workers of target name that
// are up on the NATS server: the only one, or the one that is want or
// contains it. It waits up to wait for such a worker to announce itself.
func workerTarget(ctx context.Context, nc *nats.Conn, name, want string, wait time.Duration, url string) (string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	if err := remote.Setup(ctx, js); err != nil {
		return "", err
	}
	deadline := time.Now().Add(wait)
	for {
		ps, err := remote.Workers(ctx, js)
		if err != nil {
			return "", err
		}
		keys, hits := map[string]bool{}, map[string]bool{}
		for _, p := range ps {
			if target.NameOf(p.Target) != name {
				continue
			}
			keys[p.Target] = true
			if want == "" || p.Target == want || strings.Contains(p.Target, want) {
				hits[p.Target] = true
			}
		}
		if hits[want] {
			return want, nil
		}
		sorted := slices.Sorted(maps.Keys(hits))
		switch {
		case len(hits) == 1:
			return sorted[0], nil
		case len(hits) > 1:
			return "", fmt.Errorf("workers of %d %s target keys are up on %s; name one with --worker-key:\n  %s", len(hits), name, url, strings.Join(sorted, "\n  "))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			what := "target " + name
			if want != "" {
				what = fmt.Sprintf("a %s target key containing %q", name, want)
			}
			up := "none"
			if len(keys) > 0 {
				up = strings.Join(slices.Sorted(maps.Keys(keys)), "; ")
			}
			return "", fmt.Errorf("no worker of %s announced itself on %s within %v (workers up: %s); start `tune worker --nats URL` on a host of that target, whose jobs go to stream %s", what, url, wait, up, remote.JobsStream)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
