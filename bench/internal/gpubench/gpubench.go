// Package gpubench races Tessera's kernels on the cuda target against
// PyTorch's (cuBLAS, cuDNN) for one workload: bench/gemm and bench/conv
// with -target cuda. The contenders are the workload's default GPU
// schedule and, with a records database, its best record (optionally
// tuned into it first); PyTorch runs in a child process of its own
// (torch_op.py, float32 without TF32), alternating with Tessera's runner,
// on the same inputs, and every contender's output is compared with
// PyTorch's before any timing.
package gpubench

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/bench/internal/benchutil"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/search"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tuning"
)

//go:embed torch_op.py
var torchOp string

// Race is one workload raced on the GPU.
type Race struct {
	Name    string  // what the lines say: "gemm 4096"
	Label   string  // the size on the ratio line: "4096"
	DAG     *te.DAG // its inputs in the order Torch reads them
	Torch   string  // torch_op.py's OP: "matmul", "conv2d:PAD:STRIDE"
	Library string  // what PyTorch calls: "cublas", "cudnn"
	DB      string  // records: its best record of the workload races too
	Trials  int     // tune the workload into DB first (0: no tuning)
	TuneFor time.Duration
	Rounds  int
	Python  string // the interpreter with PyTorch; "" means python3

	// Target and TorchDevice replace the cuda target and PyTorch's "cuda"
	// device (the tests race PoCL's OpenCL against PyTorch on the CPU).
	Target      func(context.Context) (*backend.Target, error)
	TorchDevice string
}

// contender is one Tessera schedule.
type contender struct {
	name  string
	state *schedule.State
	job   measure.Job
	times []float64
}

// Run tunes (when asked), checks and races r, writing its lines to w.
func Run(ctx context.Context, r Race, w io.Writer) error {
	if r.Rounds <= 0 {
		r.Rounds = 3
	}
	if r.Python == "" {
		r.Python = "python3"
	}
	if r.Target == nil {
		r.Target = func(ctx context.Context) (*backend.Target, error) {
			return backend.CUDA(ctx, backend.GPUConfig{Host: &measure.Builder{}})
		}
	}
	if r.TorchDevice == "" {
		r.TorchDevice = "cuda"
	}
	tg, err := r.Target(ctx)
	if err != nil {
		return err
	}
	defer tg.Close()
	fmt.Fprintf(w, "%s on %s\n", r.Name, tg.Key())
	d := r.DAG
	if r.Trials > 0 {
		if err := tune(ctx, r, tg, w); err != nil {
			return err
		}
	}
	var cs []*contender
	def, _, err := sketch.Default(schedule.NewState(d), tg.Sketch)
	if err != nil {
		return fmt.Errorf("default schedule: %w", err)
	}
	cs = append(cs, &contender{name: "default", state: def})
	if r.DB != "" {
		st, ok, err := best(r.DB, d, tg.Key())
		if err != nil {
			return err
		}
		if ok {
			cs = append(cs, &contender{name: "record", state: st})
		} else {
			fmt.Fprintf(w, "%s: no record of %s on this device\n", r.DB, d.WorkloadKey())
		}
	}
	inputs := schedtest.Inputs(d, 1) // uniform in [-1, 1), seeded
	dir, err := os.MkdirTemp("", "gpubench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	inFile, script := filepath.Join(dir, "in.bin"), filepath.Join(dir, "torch_op.py")
	if err := writeFloats(inFile, inputs); err != nil {
		return err
	}
	if err := os.WriteFile(script, []byte(torchOp), 0o644); err != nil {
		return err
	}
	shapes := make([]string, len(d.Inputs))
	for i, t := range d.Inputs {
		s := make([]string, len(t.Shape))
		for k, n := range t.Shape {
			s[k] = strconv.Itoa(n)
		}
		shapes[i] = strings.Join(s, "x")
	}
	torch := func(out string, repeat int) ([]float64, error) {
		args := append([]string{script, r.Torch, inFile, out, strconv.Itoa(repeat), "100"}, shapes...)
		cmd := exec.CommandContext(ctx, r.Python, args...)
		cmd.Env = append(os.Environ(), "TORCH_DEVICE="+r.TorchDevice)
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("pytorch (%s %s): %w", r.Python, strings.Join(args, " "), err)
		}
		var costs []float64
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cost "); ok {
				c, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("pytorch: %q: %w", line, err)
				}
				costs = append(costs, c)
			}
		}
		if len(costs) == 0 {
			return nil, fmt.Errorf("pytorch printed no cost: %s", b)
		}
		return costs, nil
	}

	// Check: every contender's output against PyTorch's, same inputs.
	refFile := filepath.Join(dir, "torch.bin")
	if _, err := torch(refFile, 1); err != nil {
		return err
	}
	want, err := readFloats(refFile)
	if err != nil {
		return err
	}
	tol := measure.Tolerance(d)
	for _, c := range cs {
		var params []*tir.Buffer
		if c.job, params, err = jobOf(ctx, tg, c.state); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		c.job.Inputs = tir.PackArgs(params, inputs)
		res := tg.Runner.RunWith(ctx, measure.RunOptions{Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: 5 * time.Minute}, []measure.Job{c.job})[0]
		if res.Kind != measure.None {
			return fmt.Errorf("%s: %v: %s", c.name, res.Kind, res.Msg)
		}
		ok, msg := measure.Compare(res.Outputs[0], want, tol, tol)
		fmt.Fprintf(w, "check %s vs %s: %s\n", c.name, r.Library, okText(ok, msg))
		if !ok {
			return fmt.Errorf("%s: output differs from PyTorch's: %s", c.name, msg)
		}
		c.job.Inputs = nil
		c.job.Seed = 1
	}

	// Race: alternating processes, warm (no L2 flush) on both sides.
	opts := measure.RunOptions{Repeat: 5, MinRepeatMs: 100, Timeout: 5 * time.Minute}
	var lib []float64
	for round := 1; round <= r.Rounds; round++ {
		line := fmt.Sprintf("round %d:", round)
		for _, c := range cs {
			res := tg.Runner.RunWith(ctx, opts, []measure.Job{c.job})[0]
			if res.Kind != measure.None {
				return fmt.Errorf("%s: %v: %s", c.name, res.Kind, res.Msg)
			}
			c.times = append(c.times, res.Min())
			line += fmt.Sprintf(" %s %.4f ms", c.name, res.Min()*1e3)
		}
		costs, err := torch("-", 5)
		if err != nil {
			return err
		}
		m, _ := benchutil.MinMedian(costs)
		lib = append(lib, m)
		fmt.Fprintf(w, "%s %s %.4f ms\n", line, r.Library, m*1e3)
	}
	flops := d.FLOPs()
	lmin, lmed := benchutil.MinMedian(lib)
	fmt.Fprintf(w, "%-8s ms min %.4f median %.4f (%.1f TFLOP/s)\n", r.Library, lmin*1e3, lmed*1e3, flops/lmin/1e12)
	for _, c := range cs {
		tmin, tmed := benchutil.MinMedian(c.times)
		fmt.Fprintf(w, "%-8s ms min %.4f median %.4f (%.1f TFLOP/s)\n", c.name, tmin*1e3, tmed*1e3, flops/tmin/1e12)
	}
	// The ratio line: the best contender's speed against the library's
	// (its time over ours: above 1, Tessera is faster), min and median.
	bc := cs[len(cs)-1]
	tmin, tmed := benchutil.MinMedian(bc.times)
	fmt.Fprintf(w, "github.com/tessera-ml/tessera/%s %s = %.3f (min; median %.3f; Tessera's %s schedule)\n", r.Library, r.Label, lmin/tmin, lmed/tmed, bc.name)
	return nil
}

func okText(ok bool, msg string) string {
	if ok {
		return "ok"
	}
	return msg
}

// jobOf builds state s for the device into a runner job, and returns the
// kernel's parameters (how its inputs are packed).
func jobOf(ctx context.Context, tg *backend.Target, s *schedule.State) (measure.Job, []*tir.Buffer, error) {
	p, err := tg.Generate(s)
	if err != nil {
		return measure.Job{}, nil, err
	}
	b := tg.Builder.Build(ctx, []measure.Source{{Code: p.Code}})[0]
	if b.Kind != measure.None {
		return measure.Job{}, nil, fmt.Errorf("%v: %s", b.Kind, b.Msg)
	}
	return measure.Job{Lib: b.Path, Launches: p.Launches, Temps: p.Temps, Args: p.Args(s.DAG)}, p.Params, nil
}

// writeFloats writes bufs one after another as little-endian float32.
func writeFloats(path string, bufs [][]float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for _, b := range bufs {
		if err := binary.Write(bw, binary.LittleEndian, b); err != nil {
			f.Close()
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readFloats reads a file of little-endian float32.
func readFloats(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not float32s", path, len(b))
	}
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs, nil
}

// tune tunes the workload into r.DB on tg for r.Trials measurements (or
// until r.TuneFor has passed).
func tune(ctx context.Context, r Race, tg *backend.Target, w io.Writer) error {
	if r.DB == "" {
		return errors.New("-trials needs -db (where the records go)")
	}
	store, err := records.Open(r.DB)
	if err != nil {
		return err
	}
	defer store.Close()
	if r.TuneFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.TuneFor)
		defer cancel()
	}
	d := r.DAG
	so := search.DefaultOptions(tg)
	opts := tuning.DefaultOptions(so)
	opts.Trials = r.Trials
	start := time.Now()
	opts.Progress = append(opts.Progress, tuning.LogProgress(w, start))
	task := &partition.Task{Key: d.WorkloadKey(), DAG: d, Weight: 1, FLOPs: d.FLOPs()}
	s, err := tuning.New(store, []*partition.Task{task}, tg.Key(), tg.Measurer(false), opts)
	if err != nil {
		return err
	}
	sum, err := s.Run(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	tuning.WriteSummary(w, sum)
	fmt.Fprintf(w, "tuned %s in %v\n", r.Name, time.Since(start).Round(time.Second))
	return nil
}

// best returns the best record of d's workload on target key in the
// database at path.
func best(path string, d *te.DAG, key string) (*schedule.State, bool, error) {
	store, err := records.OpenReadOnly(path)
	if err != nil {
		return nil, false, err
	}
	defer store.Close()
	rec, ok, err := store.Best(d.WorkloadKey(), key)
	if err != nil || !ok {
		return nil, false, err
	}
	st, err := rec.State(schedule.NewState(d))
	if err != nil {
		return nil, false, fmt.Errorf("%s: the best record of %s does not replay: %w", path, d.WorkloadKey(), err)
	}
	return st, true, nil
}

// Options are a bench's GPU flags (Flags).
type Options struct {
	Target  string
	DB      string
	Trials  int
	TuneFor time.Duration
	Python  string
}

// Flags registers -target, -gpu-db, -trials, -tune-for and -python on fs.
func Flags(fs *flag.FlagSet) *Options {
	o := &Options{}
	fs.StringVar(&o.Target, "target", "cpu", "cpu, or cuda: race the workload on the GPU against PyTorch's library (cuBLAS, cuDNN), float32 without TF32")
	fs.StringVar(&o.DB, "gpu-db", "", "with -target cuda: records `FILE` of the GPU (tuned into with -trials); its best record races too")
	fs.IntVar(&o.Trials, "trials", 0, "with -target cuda: tune the workload into -gpu-db for this many measurements first")
	fs.DurationVar(&o.TuneFor, "tune-for", 0, "with -target cuda and -trials: stop tuning after this long (0: no limit)")
	fs.StringVar(&o.Python, "python", "python3", "with -target cuda: the Python with PyTorch (CUDA)")
	return o
}

// On reports whether the bench runs on the GPU.
func (o *Options) On() bool { return o.Target == "cuda" }

// Run runs race r with the flags' records, tuning and interpreter.
func (o *Options) Run(r Race) error {
	r.DB, r.Trials, r.TuneFor, r.Python = o.DB, o.Trials, o.TuneFor, o.Python
	return Run(context.Background(), r, os.Stdout)
}
