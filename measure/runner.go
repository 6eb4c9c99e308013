package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tsrt"
)

// Arg describes one kernel argument, a buffer of Size float32 elements.
type Arg struct {
	Name   string
	Size   int       // elements
	DType  tir.DType // their type: the data is one slot per element (tir.PackMemory), in memory DType.Bytes() each
	Output bool      // written by the kernel; zeroed before the first call
	// Weight marks a constant input (the model's weights): with
	// RunOptions.FlushCache on the CPU it leaves the caches before every
	// timed call. A constant that a task's occurrences read one after
	// another (te.Tensor.Reused: a recurrent layer's weights) is no
	// Weight: the model runs it warm.
	Weight bool
}

// RunOptions is the timing protocol. Zero fields take their defaults.
type RunOptions struct {
	Timeout     time.Duration // per job, the whole child process; default 10s
	Number      int           // calls per repetition to start from; default 3
	Repeat      int           // repetitions; default 3
	MinRepeatMs int           // grow Number until one repetition lasts this long; default 100, negative: never grow
	BudgetMs    int           // start no repetition after the timed calls ran this long (at least one runs); 0: no limit
	Threads     int           // OMP_NUM_THREADS of the child; default runtime.NumCPU()
	Check       bool          // return the outputs of the first call in Result.Outputs
	// FlushCache makes every repetition one call and, before it, clears
	// a GPU's last-level cache, or on the CPU evicts the kernel's weights
	// (Arg.Weight) from the caches, as Ansor's cache flush does: in a
	// model the other kernels' weights pass through the caches between
	// two runs of this one, while its input activations were just written.
	FlushCache bool
}

// SearchRunOptions is the timing protocol of tuning: a repetition lasts
// 25 ms, three of them, but none starts after 100 ms of timed calls, so a
// candidate far slower than the good ones (common among random schedules)
// costs one or two calls instead of nine.
func SearchRunOptions(threads int) RunOptions {
	return RunOptions{Threads: threads, Repeat: 3, MinRepeatMs: 25, BudgetMs: 100}
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Number <= 0 {
		o.Number = 3
	}
	if o.Repeat <= 0 {
		o.Repeat = 3
	}
	switch {
	case o.MinRepeatMs == 0:
		o.MinRepeatMs = 100
	case o.MinRepeatMs < 0:
		o.MinRepeatMs = 0
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	return o
}

// Job is one kernel to time.
type Job struct {
	Lib    string      // path of the shared library (Built.Path)
	Entry  string      // the kernel's symbol
	Args   []Arg       // the buffers, in the kernel's argument order
	Inputs [][]float32 // one per non-output arg, in arg order; nil means RandomInputs(Args, Seed)
	Seed   uint64
	// Workspace is the bytes of scratch memory the kernel takes after
	// its args (Program.Workspace); 0: none.
	Workspace int
	// Cutoff, when positive: a kernel whose first call lasts longer is
	// timed by one more call only (Result.Costs has one entry).
	Cutoff time.Duration
	// Launches and Temps are a GPU program's kernels and device
	// temporaries (Program); empty for a CPU kernel.
	Launches []codegen.Launch
	Temps    []int
}

func (j Job) validate() error {
	if j.Lib == "" || j.Entry == "" && len(j.Launches) == 0 {
		return errors.New("no library or entry")
	}
	nin := 0
	for i, a := range j.Args {
		if a.Size < 0 {
			return fmt.Errorf("arg %d (%s): negative size %d", i, a.Name, a.Size)
		}
		if a.Output {
			continue
		}
		if j.Inputs != nil {
			if nin >= len(j.Inputs) {
				return fmt.Errorf("arg %d (%s): no input data", i, a.Name)
			}
			if len(j.Inputs[nin]) != a.Size {
				return fmt.Errorf("arg %d (%s): %d input values, want %d", i, a.Name, len(j.Inputs[nin]), a.Size)
			}
		}
		nin++
	}
	if j.Inputs != nil && len(j.Inputs) != nin {
		return fmt.Errorf("%d input slices for %d input args", len(j.Inputs), nin)
	}
	return nil
}

// Runner times kernels, each in a child process of its own (the harness),
// one at a time, even across concurrent calls of Run. The zero value is ready
// to use; Close removes its data files. A Runner must not be copied after
// first use.
type Runner struct {
	Opts    RunOptions
	Builder *Builder // compiles the harness into its cache, once; nil means a zero Builder
	// Device, when set, makes this a GPU runner: every job is a GPU
	// program (Job.Launches) the device's runner child times, instead of
	// a kernel of a shared library the harness calls.
	Device *Device
	// Exec, when set, is the command the harness runs under: an emulator
	// for code of another architecture (qemu-aarch64 -L /usr/aarch64-linux-gnu).
	Exec []string

	mu      sync.Mutex
	harness string            // path of the harness executable, once built
	dataDir string            // input and output files; removed by Close
	inputs  map[string]string // random input files by (seed, input sizes)
	seq     int               // names the per-job files in dataDir
	server  *gpuServer        // a GPU runner child serving jobs (serve.go)
}

// Run times jobs one after another, never overlapping, and returns one Result
// per job, in order. Each job runs in its own child process with
// OMP_NUM_THREADS=Opts.Threads: a crash, a non-zero return or a failed load
// becomes RuntimeError, a child past Opts.Timeout is killed and becomes
// RunTimeout, and Run carries on. When ctx ends, the running child is killed
// and it and the jobs after it come back as RuntimeError with a Msg starting
// with "canceled".
//
// The harness is called as
// `harness LIB ENTRY NUMBER REPEAT MIN_REPEAT_MS BUDGET_MS CUTOFF_US IN_FILE OUT_FILE {i|o}SIZE...`
// and prints "tessera number N", one "tessera cost S" per repetition and
// "tessera done" (see tsrt/c/harness.c).
func (r *Runner) Run(ctx context.Context, jobs []Job) []Result {
	return r.RunWith(ctx, r.Opts, jobs)
}

// RunWith is Run with the timing protocol opts instead of r.Opts, for
// callers that share one Runner (so that runs never overlap) but time
// with protocols of their own.
func (r *Runner) RunWith(ctx context.Context, opts RunOptions, jobs []Job) []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Result, len(jobs))
	opts = opts.withDefaults()
	setupErr := r.setup(ctx)
	for i, job := range jobs {
		switch {
		case ctx.Err() != nil:
			out[i] = Result{Kind: RuntimeError, Msg: canceledMsg + ": " + ctx.Err().Error()}
		case setupErr != nil:
			out[i] = Result{Kind: RuntimeError, Msg: setupErr.Error()}
		default:
			out[i] = r.run(ctx, opts, job)
		}
	}
	return out
}

// Ready builds the harness and makes the data directory if that was not
// done yet. An error is the machine's (no compiler, no temporary
// directory), not any job's.
func (r *Runner) Ready(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.setup(ctx)
}

// Close removes the Runner's data files. The Runner stays usable.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopServer()
	if r.dataDir == "" {
		return nil
	}
	err := os.RemoveAll(r.dataDir)
	r.dataDir, r.inputs = "", nil
	if err != nil {
		return fmt.Errorf("measure: close runner: %w", err)
	}
	return nil
}

// setup builds the harness (or finds the device) and makes the data
// directory, once.
func (r *Runner) setup(ctx context.Context) error {
	if r.harness == "" && r.Device != nil {
		if _, err := r.Device.Probe(ctx); err != nil {
			return err
		}
		path, err := r.Device.program(ctx)
		if err != nil {
			return err
		}
		r.harness = path
	}
	if r.harness == "" {
		b := r.Builder
		if b == nil {
			b = &Builder{}
			r.Builder = b
		}
		path, err := b.BuildProgram(ctx, "harness", Source{Code: tsrt.Harness, Files: map[string]string{"timing.h": tsrt.Timing}}, []string{"-O2", "-std=gnu11"}, []string{"-ldl"})
		if err != nil {
			return err
		}
		r.harness = path
	}
	if r.dataDir == "" {
		dir, err := TempDir("tessera-run")
		if err != nil {
			return fmt.Errorf("measure: runner data dir: %w", err)
		}
		r.dataDir, r.inputs = dir, make(map[string]string)
	}
	return nil
}

// run times one job in a child process.
func (r *Runner) run(ctx context.Context, opts RunOptions, job Job) Result {
	if err := job.validate(); err != nil {
		return Result{Kind: RuntimeError, Msg: "invalid job: " + err.Error()}
	}
	lib, err := filepath.Abs(job.Lib) // dlopen searches the library path for a bare name
	if err != nil {
		return Result{Kind: RuntimeError, Msg: "invalid job: " + err.Error()}
	}
	inPath, err := r.inputFile(job)
	if err != nil {
		return Result{Kind: RuntimeError, Msg: err.Error()}
	}
	outPath := "-"
	if opts.Check {
		outPath = r.newFile("out")
		defer os.Remove(outPath)
	}
	protocol := []string{strconv.Itoa(opts.Number), strconv.Itoa(opts.Repeat),
		strconv.Itoa(opts.MinRepeatMs), strconv.Itoa(max(opts.BudgetMs, 0)),
		strconv.FormatInt(max(job.Cutoff.Microseconds(), 0), 10)}
	flush := "0"
	if opts.FlushCache {
		flush = "1"
	}
	var argv []string
	if r.Device != nil {
		argv = append(append([]string{"run", lib}, protocol...), flush, inPath, outPath)
	} else {
		argv = append(append([]string{lib, job.Entry}, protocol...), flush, inPath, outPath)
	}
	for _, a := range job.Args {
		io := "i"
		switch {
		case a.Output:
			io = "o"
		case a.Weight && r.Device == nil:
			io = "w"
		}
		argv = append(argv, io+strconv.Itoa(tir.MemoryWords(a.DType, a.Size)))
	}
	if job.Workspace > 0 {
		argv = append(argv, "s"+strconv.Itoa((job.Workspace+3)/4))
	}
	if r.Device != nil {
		argv = append(argv, gpuJobArgs(job)...)
	}

	if r.Device != nil {
		res := r.runServed(ctx, opts, argv[1:])
		if res.Kind == None && opts.Check {
			if res.Outputs, err = readOutputs(outPath, job.Args); err != nil {
				res.Kind, res.Msg = RuntimeError, err.Error()
			}
		}
		return res
	}
	prog := r.harness
	if len(r.Exec) > 0 {
		prog, argv = r.Exec[0], append(append(slices.Clone(r.Exec[1:]), r.harness), argv...)
	}
	cmd, tctx, cancel := groupCommand(ctx, opts.Timeout, prog, argv...)
	defer cancel()
	cmd.Env = childEnv(opts.Threads)
	stdout := &tailBuffer{max: 64 << 10}
	stderr := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err = cmd.Run()
	res := Result{RunTime: time.Since(start)}

	switch classify(ctx, tctx, err) {
	case canceled:
		res.Kind, res.Msg = RuntimeError, canceledMsg+": "+ctx.Err().Error()
		return res
	case timedOut:
		res.Kind, res.Msg = RunTimeout, withTail(fmt.Sprintf("killed after %v", opts.Timeout), stderr)
		return res
	}
	if err != nil {
		res.Kind, res.Msg = RuntimeError, withTail(exitReason(err), stderr)
		return res
	}
	res.Costs, res.Number, err = parseHarness(string(stdout.buf), opts.Repeat)
	if err != nil {
		res.Kind, res.Msg = RuntimeError, withTail(err.Error(), stderr)
		return res
	}
	if opts.Check {
		if res.Outputs, err = readOutputs(outPath, job.Args); err != nil {
			res.Kind, res.Msg = RuntimeError, err.Error()
		}
	}
	return res
}

// inputFile returns the file holding the job's input data. Random data is
// written once per (seed, input sizes) for the Runner's lifetime; explicit
// data is written per job and replaced by the next one.
func (r *Runner) inputFile(job Job) (string, error) {
	if job.Inputs != nil {
		path := filepath.Join(r.dataDir, "in-explicit.bin")
		return path, writeInputs(path, job.Args, job.Inputs)
	}
	var key strings.Builder
	fmt.Fprintf(&key, "%d", job.Seed)
	for _, a := range job.Args {
		if !a.Output {
			fmt.Fprintf(&key, ",%d:%v", a.Size, a.DType)
		}
	}
	if path, ok := r.inputs[key.String()]; ok {
		return path, nil
	}
	path := r.newFile("in")
	if err := writeInputs(path, job.Args, RandomInputs(job.Args, job.Seed)); err != nil {
		return "", err
	}
	r.inputs[key.String()] = path
	return path, nil
}

func (r *Runner) newFile(prefix string) string {
	r.seq++
	return filepath.Join(r.dataDir, fmt.Sprintf("%s-%d.bin", prefix, r.seq))
}

// childEnv is this process's environment with OMP_NUM_THREADS set.
func childEnv(threads int) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OMP_NUM_THREADS=")
	})
	return append(env, "OMP_NUM_THREADS="+strconv.Itoa(threads))
}

// exitReason describes a child that ended with an error of its own.
func exitReason(err error) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return "start harness: " + err.Error()
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + signalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ee.ExitCode())
}

func withTail(msg string, stderr *tailBuffer) string {
	if tail := stderr.lastLines(10); tail != "" {
		return msg + ": " + tail
	}
	return msg
}

// parseHarness reads the harness's result lines out of the child's stdout,
// ignoring anything the kernel printed.
func parseHarness(out string, repeat int) (costs []float64, number int, err error) {
	// The harness's own lines start at its last "number" line (on a line
	// of its own: the harness prints a newline first).
	if i := strings.LastIndex(out, "\ntessera number "); i >= 0 {
		out = out[i:]
	}
	r := tsrt.ParseReport(out)
	if len(r.Values["number"]) > 0 {
		if number, err = r.Int("number", 1); err != nil {
			return nil, 0, fmt.Errorf("harness output: %w", err)
		}
	}
	if costs, err = r.Seconds("cost"); err != nil {
		return nil, 0, fmt.Errorf("harness output: %w", err)
	}
	if !r.Done || number == 0 || len(costs) == 0 || len(costs) > repeat {
		return nil, 0, fmt.Errorf("harness output: incomplete (%d of %d costs)", len(costs), repeat)
	}
	return costs, number, nil
}
