package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/search"
	"github.com/tessera-ml/tessera/tuning"
)

// tuneUsage is the help of the command, before its flags.
const tuneUsage = "usage: tune [flags] model.onnx\n\nTunes every task of the model and stores each measurement in --db.\nRunning the same command again resumes.\n\n"

// tuneFlags are the flags of `tune`: most go straight into the run
// (tuning.Run: the session's options, the target and, with --nats, the
// remote measurer's).
type tuneFlags struct {
	model     cli.Model
	run       tuning.Run
	maxMemory *cli.Bytes
	weights   cli.Weights
}

func (f *tuneFlags) Register(fs *flag.FlagSet) {
	f.model.Register(fs)
	o, r := &f.run, &f.run.Remote
	o.Options = tuning.DefaultOptions(search.DefaultOptions(nil))
	fs.IntVar(&o.Trials, "trials", o.Trials, "measurements across all tasks, earlier runs of the same target included (over a dimension given at run time, --range S=lo..hi, up to a quarter of them measure the tuning points' best schedules at the probe points, the search taking what they leave)")
	cli.RegisterTarget(fs, &o.Target, "target to tune for", cli.CPUHelp, "threads of every measured kernel")
	cli.RegisterDB(fs, &o.DB, "")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed of the search")
	fs.IntVar(&o.PerRound, "per-round", 64, "measurements per round")
	fs.IntVar(&o.Population, "population", o.Search.Population, "states per generation of the evolutionary search (fewer: faster rounds, worse picks)")
	fs.IntVar(&o.Scheduler.EarlyStopping, "early-stopping", 0, "set a task aside after `N` of its rounds without improvement (0: never)")
	fs.IntVar(&o.WarmUp, "warm-up", o.WarmUp, "measurements of every task before the task scheduler takes over: its default schedule and the cost model's best predictions (0: --per-round, Ansor's warm-up)")
	fs.IntVar(&o.Transfer, "transfer", o.Transfer, "seed a task without records with the `N` best schedules of each of the most similar measured workloads in --db (0: none)")
	fs.StringVar(&o.CostModel, "cost-model", "pretrained", "the cost model to start from: pretrained (shipped with tune, for the cpu target of x86-64), none (cold: random until this run's records train one), or a LightGBM text `FILE`")
	fs.BoolVar(&o.Verify, "verify", false, "check every candidate's output against the reference evaluator")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "run time limit of one candidate")
	fs.BoolVar(&o.FlushCache, "flush-cache", true, "before every timed call (one call per repetition) evict the kernel's weights from the CPU caches, or clear a GPU's L2: time kernels as a model runs them, weights cold; --flush-cache=false times them with the caches warm from the call before (costs not comparable: tune into another --db)")
	fs.StringVar(&o.Scheduler.Strategy, "scheduler", "gradient", "task scheduler: gradient or round-robin")
	cli.RegisterNATS(fs, r, "measure on the workers (tune worker) of this NATS server `URL` instead of on this machine")
	fs.StringVar(&r.WorkerKey, "worker-key", "", "with --nats, when workers of several target keys are up: the `key`, or a part of it that names one")
	fs.DurationVar(&r.AckWait, "ack-wait", 30*time.Second, "with --nats: a job without a worker's heartbeat for this long goes to another worker")
	fs.IntVar(&r.MaxDeliver, "max-deliver", 3, "with --nats: deliveries of a job before it is recorded as a failure of its candidate")
	fs.DurationVar(&r.NoWorker, "worker-wait", time.Minute, "with --nats: how long to wait while no worker of the target is up")
	f.weights = cli.Weights{}
	fs.Var(f.weights, "weights", "with --range, how much the values of a dimension given at run time matter, `NAME=v:w,...` (e.g. S=16:0.5,128:0.3,256:0.2; repeatable): each tuning point's tasks weigh, in the objective the task scheduler lowers, the weights of the values nearest it (default: every point alike); a batch's weights move nothing, every sample running the same kernels")
	f.maxMemory = cli.MaxMemory(fs, "the most memory measuring one task may take (its tensors at once), e.g. 8GiB or 512MiB")
	cli.SetUsage(fs, tuneUsage)
}

// runTune is the tuning command, `tune [flags] model.onnx`: flags and the
// model's tasks; tuning.Tune does the rest, with a progress bar on a
// terminal.
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
	r := f.run
	r.Model, r.DBName, r.MaxMemory, r.Log = cli.Printable(pos[0]), cli.Printable(r.DB), int64(*f.maxMemory), stderr
	if err := r.Check(); err != nil {
		return err
	}
	if len(f.model.Ranges) > 0 && r.Target.Name != "cpu" {
		return fmt.Errorf("--range %s: a model over a range is built for the CPU only (tune build --range); tune it with --target cpu", f.model.Ranges)
	}
	if r.Tasks, err = f.tasks(pos[0], stderr); err != nil {
		return err
	}
	// A signal ends the run once the batch measured is committed.
	ctx, sigs := cli.NotifySignals()
	defer sigs.Stop()
	if bar := cli.NewBar(stderr, "tuning"); bar != nil {
		r.Bar = bar
	}
	if stopped, err := tuning.Tune(ctx, stdout, r); !stopped {
		return err
	}
	return sigs.Interrupted(nil, fmt.Sprintf("every measured batch is in %s; run the same command to resume", r.DB))
}

// tasks loads the model's tasks (tuning.LoadTasks), says what it tunes of
// a --range, and checks each task within --max-memory.
func (f *tuneFlags) tasks(path string, stderr io.Writer) (*tuning.TaskSet, error) {
	if err := f.weights.Within(f.model.Ranges); err != nil {
		return nil, err
	}
	ts, err := tuning.LoadTasks(path, tuning.TaskOptions{Load: f.model.LoadOptions(cli.CPUOf(f.run.Target)), Partition: f.model.Partition(), Ranges: f.model.Ranges, Weights: f.weights})
	if err != nil {
		return nil, err
	}
	ts.WriteRanges(stderr, "tune")
	cli.Notes(stderr, "tune", ts.Model.Notes)
	return ts, tuning.CheckFootprints(ts.Tasks, int64(*f.maxMemory))
}
