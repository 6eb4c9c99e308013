package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"tessera/internal/cli"
	"tessera/measure"
	"tessera/measure/remote"
	"tessera/partition"
	"tessera/records"
	"tessera/search"
	"tessera/target"
	"tessera/tuning"
)

// defaultTrials is the measurement budget when --trials is not given:
// enough for every task of a small model to get several rounds.
const defaultTrials = 1000

// toolVersion is written into every record.
const toolVersion = "tessera-dev"

// tuneUsage is the help of the command, before its flags.
const tuneUsage = "usage: tune [flags] model.onnx\n\nTunes every task of the model and stores each measurement in --db.\nRunning the same command again resumes.\n\n"

// tuneFlags are the flags of `tune`.
type tuneFlags struct {
	model                          modelFlags
	nats                           natsFlags
	trials, threads, perRound, pop int
	early, warmUp, transfer        int
	maxDeliver                     int
	target, db, cpu, costModel     string
	strategy, workerKey            string
	seed                           uint64
	verify, flushCache             bool
	timeout, ackWait, workerWait   time.Duration
	maxMemory                      *cli.Bytes
}

func (f *tuneFlags) Register(fs *flag.FlagSet) {
	f.model.Register(fs)
	fs.IntVar(&f.trials, "trials", defaultTrials, "measurements across all tasks, earlier runs of the same target included")
	fs.StringVar(&f.target, "target", "cpu", "target to tune for: "+strings.Join(target.Names, ", "))
	fs.StringVar(&f.db, "db", "tuning.db", "records database `FILE`")
	fs.IntVar(&f.threads, "threads", runtime.NumCPU(), "threads of every measured kernel")
	fs.StringVar(&f.cpu, "cpu", target.DefaultCPU(), cpuFlagHelp)
	fs.Uint64Var(&f.seed, "seed", 1, "random seed of the search")
	fs.IntVar(&f.perRound, "per-round", 64, "measurements per round")
	fs.IntVar(&f.pop, "population", search.DefaultOptions(nil).Population, "states per generation of the evolutionary search (fewer: faster rounds, worse picks)")
	fs.IntVar(&f.early, "early-stopping", 0, "set a task aside after `N` of its rounds without improvement (0: never)")
	fs.IntVar(&f.warmUp, "warm-up", tuning.DefaultWarmUp, "measurements of every task before the task scheduler takes over: its default schedule and the cost model's best predictions (0: --per-round, Ansor's warm-up)")
	fs.IntVar(&f.transfer, "transfer", 8, "seed a task without records with the `N` best schedules of each of the most similar measured workloads in --db (0: none)")
	fs.StringVar(&f.costModel, "cost-model", "pretrained", "the cost model to start from: pretrained (shipped with tune, for the cpu target of x86-64), none (cold: random until this run's records train one), or a LightGBM text `FILE`")
	fs.BoolVar(&f.verify, "verify", false, "check every candidate's output against the reference evaluator")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "run time limit of one candidate")
	fs.BoolVar(&f.flushCache, "flush-cache", true, "before every timed call (one call per repetition) evict the kernel's weights from the CPU caches, or clear a GPU's L2: time kernels as a model runs them, weights cold; --flush-cache=false times them with the caches warm from the call before (costs not comparable: tune into another --db)")
	fs.StringVar(&f.strategy, "scheduler", "gradient", "task scheduler: gradient or round-robin")
	f.nats.register(fs, "measure on the workers (tune worker) of this NATS server `URL` instead of on this machine")
	fs.StringVar(&f.workerKey, "worker-key", "", "with --nats, when workers of several target keys are up: the `key`, or a part of it that names one")
	fs.DurationVar(&f.ackWait, "ack-wait", 30*time.Second, "with --nats: a job without a worker's heartbeat for this long goes to another worker")
	fs.IntVar(&f.maxDeliver, "max-deliver", 3, "with --nats: deliveries of a job before it is recorded as a failure of its candidate")
	fs.DurationVar(&f.workerWait, "worker-wait", time.Minute, "with --nats: how long to wait while no worker of the target is up")
	f.maxMemory = cli.MaxMemory(fs, "the most memory measuring one task may take (its tensors at once), e.g. 8GiB or 512MiB")
	cli.SetUsage(fs, tuneUsage)
}

// runTune is the tuning command, `tune [flags] model.onnx`: flags, the
// model's tasks and the target; tune does the rest.
func runTune(args []string, stdout, stderr io.Writer) error {
	if !strings.HasPrefix(args[0], "-") && !strings.HasSuffix(args[0], ".onnx") {
		return fmt.Errorf("unknown command %q (run 'tune -h' for the commands)", args[0])
	}
	var f tuneFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune", stderr, &f), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef(stderr, "tune: want exactly one model file (run 'tune -h')")
	}
	if err := f.check(); err != nil {
		return err
	}
	tasks, err := f.tasks(pos[0], stderr)
	if err != nil {
		return err
	}
	tg, err := target.New(target.Config{Name: f.target, CPU: f.cpu, Threads: f.threads, Run: f.timing(), Host: &measure.Builder{}, Measures: true})
	if err != nil {
		return err
	}
	defer tg.Close()
	return f.tune(pos[0], tasks, tg, stdout, stderr)
}

// tune runs a tuning.Session on the tasks, measured where the flags say,
// and prints its summary. A signal ends it once the batch measured is
// committed.
func (f *tuneFlags) tune(model string, tasks []*partition.Task, tg *target.Target, stdout, stderr io.Writer) error {
	ctx, sigs := cli.NotifySignals()
	defer sigs.Stop()
	m, err := f.measurer(ctx, tg, stdout)
	if err != nil {
		return err
	}
	defer m.close()
	store, err := records.Open(f.db)
	if err != nil {
		return err
	}
	defer store.Close()
	opts, err := f.options(tg, stdout)
	if err != nil {
		return err
	}
	start := time.Now()
	bar := progress(&opts, stderr, start)
	s, err := tuning.New(store, tasks, m.key, m, opts)
	if err != nil {
		return err
	}
	bar.SetMax(s.ToGo())
	s.WriteStart(stdout, cli.Printable(model), cli.Printable(f.db), tg)
	sum, err := s.Run(ctx)
	bar.Finish()
	if errors.Is(err, search.ErrMeasure) {
		return fmt.Errorf("%w\nevery batch measured before is in %s; run the same command to resume", err, f.db)
	}
	interrupted := sigs.Caught() != 0 && errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	tuning.WriteSummary(stdout, sum)
	if !interrupted && sum.Trials < s.ToGo() {
		fmt.Fprintf(stdout, "stopped at %d of %d trials: no task has a schedule left to measure\n", sum.Trials, s.ToGo())
	}
	m.printTimes(stdout, sum, time.Since(start), f.maxDeliver)
	if interrupted {
		return sigs.Interrupted(nil, fmt.Sprintf("every measured batch is in %s; run the same command to resume", f.db))
	}
	return nil
}

func (f *tuneFlags) check() error {
	if f.trials < 0 || f.perRound <= 0 || f.threads <= 0 || f.pop <= 0 || f.warmUp < 0 || f.transfer < 0 {
		return errors.New("--trials, --per-round, --population and --threads must be positive (--warm-up and --transfer not negative)")
	}
	return search.CheckStrategy(f.strategy)
}

// tasks loads the model and returns its tasks, each within --max-memory.
func (f *tuneFlags) tasks(path string, stderr io.Writer) ([]*partition.Task, error) {
	l, err := loadModel(path, f.model)
	if err != nil {
		return nil, err
	}
	cli.Notes(stderr, "tune", l.Notes)
	plan, err := partition.Extract(l.Graph, partition.Options{Winograd: f.model.winograd})
	if err != nil {
		return nil, err
	}
	for i, t := range plan.Tasks {
		if err := measure.CheckFootprint(t.DAG, int64(*f.maxMemory)); err != nil {
			return nil, fmt.Errorf("task %d (%s) cannot be tuned: %w (--max-memory)", i, t.Ops(), err)
		}
	}
	return plan.Tasks, nil
}

func (f *tuneFlags) timing() measure.RunOptions {
	timing := runOptions(f.threads, f.timeout)
	timing.FlushCache = f.flushCache
	return timing
}

// options are the session's options the flags give; the cost model of
// --cost-model is loaded and named on stdout.
func (f *tuneFlags) options(tg *target.Target, stdout io.Writer) (tuning.Options, error) {
	so := search.DefaultOptions(tg)
	so.Seed, so.Population = f.seed, f.pop
	opts := tuning.DefaultOptions(so)
	opts.Trials, opts.PerRound, opts.WarmUp, opts.Transfer = f.trials, f.perRound, f.warmUp, f.transfer
	opts.Scheduler.Strategy = f.strategy
	opts.Scheduler.EarlyStopping = f.early
	opts.CostModel.Seed = f.seed
	opts.Version = toolVersion
	m, note, err := tuning.StartingModel(f.costModel, tg)
	if err != nil {
		return opts, fmt.Errorf("--cost-model: %w", err)
	}
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	opts.Pretrained = m
	return opts, nil
}

// progress adds the session's progress report to opts: a bar on a
// terminal (returned), elsewhere one line per committed round.
func progress(opts *tuning.Options, stderr io.Writer, start time.Time) *cli.Bar {
	bar := cli.NewBar(stderr, "tuning")
	if bar == nil {
		opts.Progress = append(opts.Progress, tuning.LogProgress(stderr, start))
		return nil
	}
	opts.Progress = append(opts.Progress, func(p search.Progress) {
		bar.Set(fmt.Sprintf("task %d/%d, est. model latency %s", p.Task+1, len(p.Tasks), tuning.Estimate(p.Objective, p.Complete)), p.Trials)
	})
	return bar
}

// measurer is where candidates are measured: this machine, or the
// workers of a NATS server (--nats).
type measurer struct {
	search.Measurer
	times  func() measure.Times
	key    string // the target key the records are measured on
	remote *remote.Measurer
	close  func()
}

func (f *tuneFlags) measurer(ctx context.Context, tg *target.Target, stdout io.Writer) (*measurer, error) {
	local := tg.Measurer(f.verify)
	local.MaxMemory = int64(*f.maxMemory)
	if f.nats.url == "" {
		return &measurer{Measurer: local, times: local.Times, key: tg.Key(), close: func() {}}, nil
	}
	nc, err := f.nats.connect("tessera tuner")
	if err != nil {
		return nil, err
	}
	key, err := remote.FindTarget(ctx, nc, tg.Name, f.workerKey, f.workerWait, f.nats.url)
	if err != nil {
		nc.Close()
		return nil, err
	}
	rm, err := remote.NewMeasurer(ctx, nc, remote.Options{Target: key, Verify: f.verify, Timing: f.timing(),
		AckWait: f.ackWait, MaxDeliver: f.maxDeliver, NoWorker: f.workerWait})
	if err != nil {
		nc.Close()
		return nil, err
	}
	fmt.Fprintf(stdout, "measuring on the workers of target key %s through %s (run %s)\n", key, f.nats.url, rm.Run())
	return &measurer{Measurer: rm, times: rm.Times, key: key, remote: rm, close: func() { rm.Close(); nc.Close() }}, nil
}

func (m *measurer) printTimes(w io.Writer, sum search.Summary, wall time.Duration, maxDeliver int) {
	tuning.WriteTimes(w, sum, m.times(), wall)
	if m.remote != nil {
		st := m.remote.Stats()
		fmt.Fprintf(w, "remote: %d jobs, %d results of a redelivered job, %d duplicate results dropped, %d jobs abandoned after %d deliveries\n",
			st.Jobs, st.Redelivered, st.Duplicates, st.Abandoned, maxDeliver)
	}
}

func runOptions(threads int, timeout time.Duration) measure.RunOptions {
	o := measure.SearchRunOptions(threads)
	o.Timeout = timeout
	return o
}
