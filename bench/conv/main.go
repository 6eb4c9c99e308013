// Command conv races, side by side in one run, kernels of one convolution:
// the 3×3 convolution of ResNet-18's first stage (64 → 64 channels, 56×56,
// pad 1, stride 1, float32), on channels-last activations as the models'
// convert-layout pass makes them (-layout nchw: as the ONNX model gives
// them), or with -fused that convolution with its bias and ReLU,
// ResNet-18's Conv+Relu task (the same DAG and workload key, so the records
// of a ResNet-18 tuning run apply). The contenders, each in its own
// process, in turn, round after round, on the same thread count:
//
//	naive    the DAG's initial schedule (-naive=false leaves it out)
//	default  sketch.Default, what a build without records runs
//	expert   a schedule written only as schedule steps
//	record   the best record of the workload in -db FILE, when there is one:
//	         any schedule the search can express (weight layout rewrites
//	         included; the kernel then reads its weights packed)
//	winograd the same convolution by Winograd F(m×m, 3×3) (-m, default 4), the alternative
//	         a tuning run measures against the direct one (the task
//	         partition builds, weights transformed beforehand): its default
//	         schedule, and as winograd-record its best record in -db FILE
//	         (-winograd=false leaves both out)
//	onednn   oneDNN's convolution with format_tag::any, so that it picks its
//	         best layouts and implementation (onednn/onednn.c)
//
// Every contender's output is first checked against the reference
// evaluator. It prints each contender's GFLOP/s, then speed ratios per
// round (median over rounds); the last line is
//
//	tessera/onednn = R
//
// for the fastest Tessera contender but naive (by median over rounds; the
// line before names it): above 1, Tessera is faster. The Winograd kernels
// are checked against the direct convolution within te.WinogradTolerance.
//
//	go run ./bench/conv
//	go run ./bench/conv -threads 2 -fused -db tuning.db
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/bench/internal/benchutil"
	"github.com/tessera-ml/tessera/bench/internal/gpubench"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

//go:embed onednn/onednn.c
var onednnSrc string

func main() {
	threads := flag.Int("threads", 1, "threads for every contender")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	db := flag.String("db", "", "records `FILE`: race the workload's best record too, when it has one")
	fused := flag.Bool("fused", false, "the conv with its bias and ReLU (ResNet-18's Conv+Relu task)")
	layout := flag.String("layout", "nhwc", "activation layout: nhwc (the models' after the convert-layout pass) or nchw")
	naive := flag.Bool("naive", true, "also time the naive schedule")
	cpu := flag.String("cpu", "native", "compile for native, a level (x86-64-v2, x86-64-v3, x86-64-v4) or a -march name; oneDNN is restricted to its level")
	winograd := flag.Bool("winograd", true, "also race the Winograd F(m×m, 3×3) alternative (its default schedule and its record in -db)")
	flag.IntVar(&winogradTile, "m", winogradTile, fmt.Sprintf("the Winograd output tile m, one of %v", te.WinogradTileSizes()))
	gpu := gpubench.Flags(flag.CommandLine)
	flag.Parse()
	if gpu.On() {
		// On the GPU the convolution races cuDNN's in PyTorch's layout
		// (NCHW, OIHW weights), the direct algorithm only.
		d, err := convDAG(false, false)
		if err != nil {
			benchutil.Fatal(err)
		}
		err = gpu.Run(gpubench.Race{Name: fmt.Sprintf("conv %dx%dx%dx%d -> %d, %dx%d", conv.n, conv.c, conv.h, conv.w, conv.k, conv.r, conv.s),
			Label: "resnet-3x3", DAG: d, Torch: fmt.Sprintf("conv2d:%d:%d", conv.pad, conv.stride), Library: "cudnn", Rounds: *rounds})
		if err != nil {
			benchutil.Fatal(err)
		}
		return
	}
	if flag.NArg() > 0 || *threads < 1 || *rounds < 1 || (*layout != "nhwc" && *layout != "nchw") {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(options{threads: *threads, rounds: *rounds, db: *db, fused: *fused, nhwc: *layout == "nhwc", naive: *naive, winograd: *winograd, cpu: *cpu}); err != nil {
		benchutil.Fatal(err)
	}
}

type options struct {
	threads, rounds int
	db              string
	fused, nhwc     bool
	naive, winograd bool
	cpu             string
}

// conv is the problem: input 1×64×56×56, 64 filters of 3×3, pad 1, stride
// 1; the weights OIHW as the ONNX model gives them.
var conv = struct {
	n, c, h, w, k, r, s, pad, stride int
}{1, 64, 56, 56, 64, 3, 3, 1, 1}

// convDAG builds the benchmark's DAG as partition builds ResNet-18's: the
// activations channels-last (nhwc) or not, the weights (and the bias)
// constants; fused adds the bias and the ReLU of ResNet-18 after
// BatchNormalization is folded. Every contender and the record lookup take
// the DAG from here: another layout or algorithm of the same convolution
// is a change to this function (and to expert).
func convDAG(nhwc, fused bool) (*te.DAG, error) {
	w := te.Constant("W", conv.k, conv.c, conv.r, conv.s)
	var bias *te.Tensor
	if fused {
		bias = te.Constant("bias", conv.k)
	}
	p := conv.pad
	a := te.ConvAttrs{Pads: []int{p, p, p, p}, Strides: []int{conv.stride, conv.stride}}
	var c *te.Tensor
	var err error
	if nhwc {
		c, err = te.ConvNHWC("conv", convInput(nhwc), w, bias, a)
	} else {
		c, err = te.Conv("conv", convInput(nhwc), w, bias, a)
	}
	if err != nil {
		return nil, err
	}
	if fused {
		if c, err = te.Relu("relu", c); err != nil {
			return nil, err
		}
	}
	return te.NewDAG(c)
}

// convInput is the convolution's input X, channels-last when nhwc.
func convInput(nhwc bool) *te.Tensor {
	if nhwc {
		return te.Placeholder("X", conv.n, conv.h, conv.w, conv.c)
	}
	return te.Placeholder("X", conv.n, conv.c, conv.h, conv.w)
}

// winogradTile is the m of the Winograd F(m×m, 3×3) alternative raced
// (-m): partition gives this convolution (56×56 outputs) F(4×4, 3×3).
var winogradTile = 4

// winogradDAG is convDAG computed by Winograd F(m×m, 3×3) as partition
// builds a convolution's alternative: the weights a constant U [α, α, C,
// K] transformed when the plan is made (te.WinogradWeights of W), the bias
// added after the output transform.
func winogradDAG(nhwc, fused bool, m int) (*te.DAG, error) {
	a := m + 2
	u := te.Constant("U", a, a, conv.c, conv.k)
	p := conv.pad
	pads := []int{p, p, p, p}
	wino, channel := te.WinogradConv2D, 1
	if nhwc {
		wino, channel = te.WinogradConv2DNHWC, 3
	}
	c, err := wino("conv", convInput(nhwc), u, m, pads)
	if err != nil {
		return nil, err
	}
	if fused {
		bias := te.Constant("bias", conv.k)
		y := c
		c = te.Compute("conv_bias", y.Shape, func(i []tir.Expr) tir.Expr {
			return tir.AddE(y.At(i...), bias.At(i[channel]))
		})
		if c, err = te.Relu("relu", c); err != nil {
			return nil, err
		}
	}
	return te.NewDAG(c)
}

func stage(s *schedule.State, name string) (int, error) {
	for i, st := range s.Stages {
		if st.Tensor.Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no stage %s", name)
}

// expert is a conv schedule in steps: the padded input computed once at the
// root; the conv accumulates into a register tile, tiled SSRSRS; the output
// stage (the cache-write copy, or with the bias and ReLU the ReLU with the
// bias inlined) follows the tile, its outer loops fused and parallel, its
// lanes vectorized.
//
// The register tile follows the machine (lanes float32 lanes, regs vector
// registers; sketch.TileRows bounds its rows). NCHW: up to 16 output
// channels × 8 pixels of a row, the pixels in the vector lanes (on
// AVX-512, 16 registers of 8 lanes; on AVX2, 8 of 8), over (n, f, h, w |
// rc, rh, rw). NHWC: up to 7 pixels of a row × two vectors of output
// channels, the channels in the vector lanes (on AVX-512, 14 registers of
// 16 lanes; on AVX2, 4 pixels: 8 of 8 lanes), over (n, h, w, f | rh, rw, rc),
// the weights repacked (RewriteLayout) so that the lanes load contiguously.
func expert(d *te.DAG, nhwc bool, lanes, regs int) (*schedule.State, error) {
	s := schedule.NewState(d)
	divisor := func(n, limit int) int {
		for n%limit != 0 {
			limit--
		}
		return limit
	}
	pixels := divisor(conv.w, min(7, sketch.TileRows(2, regs)))                  // NHWC rows: two vectors each
	channels := divisor(conv.k, min(16, sketch.TileRows(8/min(8, lanes), regs))) // NCHW rows of 8 lanes
	c, err := stage(s, "conv")
	if err != nil {
		return nil, err
	}
	// Step 0 makes the output stage: a cache write (conv.local takes
	// conv's index, conv moves one down), or the bias inlined into the ReLU.
	first := schedule.Step(&schedule.CacheWrite{Stage: c, Scope: tir.Local})
	cl, out := c, c+1
	if bias, err := stage(s, "conv_bias"); err == nil {
		if out, err = stage(s, "relu"); err != nil {
			return nil, err
		}
		first = &schedule.ComputeInline{Stage: bias}
	}
	var steps []schedule.Step
	if nhwc {
		w, err := stage(s, "W")
		if err != nil {
			return nil, err
		}
		steps = []schedule.Step{
			first,
			// conv: n h w f rh rw rc
			&schedule.Split{Stage: cl, Iter: 3, Lengths: []int{2, lanes}},  // step 1: f.0 f.1 f.2
			&schedule.Split{Stage: cl, Iter: 1, Lengths: []int{1, 1}},      // h.0 h.1 h.2
			&schedule.Split{Stage: cl, Iter: 4, Lengths: []int{1, pixels}}, // step 3: w.0 w.1 w.2
			&schedule.Split{Stage: cl, Iter: 10, Lengths: []int{3}},        // rh.0 rh.1
			&schedule.Split{Stage: cl, Iter: 12, Lengths: []int{3}},        // rw.0 rw.1
			&schedule.Split{Stage: cl, Iter: 14, Lengths: []int{4}},        // rc.0 rc.1
			// n h.0 w.0 f.0 rh.0 rw.0 rc.0 h.1 w.1 f.1 rh.1 rw.1 rc.1 h.2 w.2 f.2
			&schedule.Reorder{Stage: cl, Order: []int{0, 1, 4, 7, 10, 12, 14, 2, 5, 8, 11, 13, 15, 3, 6, 9}},
			&schedule.Annotate{Stage: cl, Iter: 15, Ann: schedule.Vectorize},
			&schedule.Pragma{Stage: cl, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: 512},
			// output: n h w f → n h w.0 f.0 w.1 f.1
			&schedule.FollowSplit{Stage: out, Iter: 3, SrcStep: 1, NParts: 2},
			&schedule.FollowSplit{Stage: out, Iter: 2, SrcStep: 3, NParts: 2},
			&schedule.Reorder{Stage: out, Order: []int{0, 1, 2, 4, 3, 5}},
			&schedule.ComputeAt{Stage: cl, TargetStage: out, TargetIter: 3},
			&schedule.Fuse{Stage: out, Iters: []int{0, 1, 2}},
			&schedule.Annotate{Stage: out, Iter: 0, Ann: schedule.Parallel},
			&schedule.Annotate{Stage: out, Iter: 3, Ann: schedule.Vectorize},
			&schedule.RewriteLayout{Stage: w},
		}
	} else {
		steps = []schedule.Step{
			first,
			// conv: n f h w rc rh rw
			&schedule.Split{Stage: cl, Iter: 1, Lengths: []int{1, channels}}, // step 1: f.0 f.1 f.2
			&schedule.Split{Stage: cl, Iter: 4, Lengths: []int{1, 1}},        // h.0 h.1 h.2
			&schedule.Split{Stage: cl, Iter: 7, Lengths: []int{1, 8}},        // step 3: w.0 w.1 w.2
			&schedule.Split{Stage: cl, Iter: 10, Lengths: []int{4}},          // rc.0 rc.1
			&schedule.Split{Stage: cl, Iter: 12, Lengths: []int{3}},          // rh.0 rh.1
			&schedule.Split{Stage: cl, Iter: 14, Lengths: []int{3}},          // rw.0 rw.1
			// n f.0 h.0 w.0 rc.0 rh.0 rw.0 f.1 h.1 w.1 rc.1 rh.1 rw.1 f.2 h.2 w.2
			&schedule.Reorder{Stage: cl, Order: []int{0, 1, 4, 7, 10, 12, 14, 2, 5, 8, 11, 13, 15, 3, 6, 9}},
			&schedule.Annotate{Stage: cl, Iter: 15, Ann: schedule.Vectorize},
			&schedule.Pragma{Stage: cl, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: 512},
			// output: n f h w → n f.0 h w.0 f.1 w.1
			&schedule.FollowSplit{Stage: out, Iter: 1, SrcStep: 1, NParts: 2},
			&schedule.FollowSplit{Stage: out, Iter: 4, SrcStep: 3, NParts: 2},
			&schedule.Reorder{Stage: out, Order: []int{0, 1, 3, 4, 2, 5}},
			&schedule.ComputeAt{Stage: cl, TargetStage: out, TargetIter: 3},
			&schedule.Fuse{Stage: out, Iters: []int{0, 1, 2}},
			&schedule.Annotate{Stage: out, Iter: 0, Ann: schedule.Parallel},
			&schedule.Annotate{Stage: out, Iter: 3, Ann: schedule.Vectorize},
		}
	}
	if pad, err := stage(s, "conv_pad"); err == nil {
		// The padded copy: rows in parallel.
		steps = append(steps,
			&schedule.Fuse{Stage: pad, Iters: []int{0, 1, 2}},
			&schedule.Annotate{Stage: pad, Iter: 0, Ann: schedule.Parallel},
		)
	}
	return schedule.Replay(s, steps)
}

// tuned returns the best record of the workload in the records database at
// path measured on this machine with threads threads, else the best one
// measured with another thread count (a schedule tuned for 2 threads still
// runs on 1), and the target key it was measured on; ok is false when the
// database has none.
func tuned(path, key string, threads int, b *measure.Builder, m machine.Machine) (rec records.Record, on string, ok bool, err error) {
	if _, err := os.Stat(path); err != nil {
		return rec, "", false, fmt.Errorf("-db: %w", err)
	}
	st, err := records.Open(path)
	if err != nil {
		return rec, "", false, fmt.Errorf("-db: %w", err)
	}
	defer st.Close()
	counts := []int{threads}
	for t := 1; t <= max(runtime.NumCPU(), threads); t++ {
		if t != threads {
			counts = append(counts, t)
		}
	}
	for _, t := range counts {
		on = backend.CPU(backend.CPUConfig{Threads: t, Builder: b, Machine: m}).Key()
		rec, ok, err = st.Best(key, on)
		if err != nil || ok {
			return rec, on, ok, err
		}
	}
	return rec, "", false, nil
}

// buildTimeout is the compiler's limit per kernel: unrolled register tiles
// take gcc seconds, more on a loaded machine, and a benchmark waits for them.
const buildTimeout = 5 * time.Minute

// contender is one Tessera schedule to race: of the direct convolution's
// DAG, or of the Winograd alternative's.
type contender struct {
	name     string
	state    *schedule.State
	winograd bool
}

// record returns a contender of the best record of d in the records
// database at path, ok false (and a line on standard error why) when there
// is none.
func record(name, path string, d *te.DAG, threads int, b *measure.Builder, m machine.Machine) (c contender, ok bool, err error) {
	key := d.WorkloadKey()
	rec, on, ok, err := tuned(path, key, threads, b, m)
	switch {
	case err != nil:
		return c, false, err
	case !ok:
		fmt.Fprintf(os.Stderr, "conv: %s has no record of workload %s on this machine: no %s races\n", path, key, name)
		return c, false, nil
	}
	st, err := rec.State(schedule.NewState(d))
	if err != nil {
		fmt.Fprintf(os.Stderr, "conv: the best record of %s in %s does not replay (%v): no %s races\n", key, path, err, name)
		return c, false, nil
	}
	fmt.Fprintf(os.Stderr, "conv: %s: record of %s from %s (%s, measured %.4f ms)\n", name, key, path, on, rec.Cost()*1e3)
	return contender{name: name, state: st}, true, nil
}

func run(o options) error {
	ctx := context.Background()
	d, err := convDAG(o.nhwc, o.fused)
	if err != nil {
		return err
	}
	b := &measure.Builder{Timeout: buildTimeout}
	m, err := benchutil.CPU(ctx, o.cpu, b)
	if err != nil {
		return err
	}
	tg := backend.CPU(backend.CPUConfig{Threads: o.threads, Builder: b, Machine: m.Machine})
	defer tg.Close()

	var cs []contender
	if o.naive {
		cs = append(cs, contender{name: "naive", state: schedule.NewState(d)})
	}
	def, _, err := sketch.Default(schedule.NewState(d), tg.Sketch)
	if err != nil {
		return fmt.Errorf("default schedule: %w", err)
	}
	ex, err := expert(d, o.nhwc, m.Lanes(), m.VectorRegs)
	if err != nil {
		return fmt.Errorf("expert schedule: %w", err)
	}
	cs = append(cs, contender{name: "default", state: def}, contender{name: "expert", state: ex})
	key := d.WorkloadKey()
	if o.db != "" {
		c, ok, err := record("record", o.db, d, o.threads, b, m.Machine)
		if err != nil {
			return err
		}
		if ok {
			cs = append(cs, c)
		}
	}
	var wd *te.DAG
	if o.winograd {
		if wd, err = winogradDAG(o.nhwc, o.fused, winogradTile); err != nil {
			return err
		}
		wdef, _, err := sketch.Default(schedule.NewState(wd), tg.Sketch)
		if err != nil {
			return fmt.Errorf("winograd default schedule: %w", err)
		}
		cs = append(cs, contender{name: "winograd", state: wdef, winograd: true})
		if o.db != "" {
			c, ok, err := record("winograd-record", o.db, wd, o.threads, b, m.Machine)
			if err != nil {
				return err
			}
			if ok {
				c.winograd = true
				cs = append(cs, c)
			}
		}
	}

	// Lower every Tessera contender; a parameter the schedule packs (a
	// weight layout rewrite) gets its packed size and packed inputs.
	names := make([]string, len(cs))
	progs := make([]measure.Program, len(cs))
	params := make([][]*tir.Buffer, len(cs))
	var packed []string // the weight layouts the schedules chose
	for i, c := range cs {
		p, err := tg.Generate(c.state)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		names[i], progs[i], params[i] = c.name, p, p.Params
		for _, b := range p.Params {
			if b.Packed != nil {
				packed = append(packed, fmt.Sprintf("%s: %s packed %v", c.name, b.Name, b.Packed))
			}
		}
	}
	ks, err := benchutil.Build(ctx, b, names, progs, nil)
	if err != nil {
		return err
	}
	for i := range ks {
		ks[i].Args = argsOf(params[i], len(d.Outputs))
	}
	one, err := onednn(ctx, d, o.nhwc)
	if err != nil {
		return err
	}
	ks = append(ks, one)
	params = append(params, nil)

	// Every contender must compute what the reference evaluator computes:
	// the direct convolution's output; a Winograd kernel, given the
	// transformed weights, within te.WinogradTolerance of it.
	inputs := measure.RandomInputs(measure.Args(d), 1)[:len(d.Inputs)]
	want, err := d.Eval(inputs)
	if err != nil {
		return err
	}
	var winoInputs [][]float32
	if wd != nil {
		if winoInputs, err = winogradInputs(d, wd, inputs, winogradTile); err != nil {
			return err
		}
	}
	infoFile := filepath.Join(os.TempDir(), fmt.Sprintf("tessera-onednn-%d.txt", os.Getpid()))
	defer os.Remove(infoFile)
	if err := os.Setenv("TESSERA_ONEDNN_INFO", infoFile); err != nil {
		return err
	}
	checker := &measure.Runner{Builder: b, Opts: measure.RunOptions{Threads: o.threads, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: 120e9}}
	defer checker.Close()
	tol := measure.Tolerance(d)
	scale := 0.0
	for _, v := range want[0] {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i, k := range ks {
		in, rtol, atol := inputs, tol, tol
		if i < len(cs) && cs[i].winograd {
			in, rtol, atol = winoInputs, 0, tol+te.WinogradTolerance(winogradTile, conv.c)*scale
		}
		job := k.Job()
		job.Seed, job.Inputs = 0, tir.PackArgs(params[i], in)
		res := checker.Run(ctx, []measure.Job{job})[0]
		if res.Kind != measure.None {
			return fmt.Errorf("%s: %v: %s", k.Name, res.Kind, res.Msg)
		}
		if ok, msg := measure.Compare(res.Outputs[0], want[0], rtol, atol); !ok {
			return fmt.Errorf("%s: wrong result: %s", k.Name, msg)
		}
	}
	os.Unsetenv("TESSERA_ONEDNN_INFO")

	what, layout := "conv 3×3", "NCHW"
	if o.fused {
		what = "conv 3×3 + bias + relu"
	}
	if o.nhwc {
		layout = "NHWC"
	}
	fmt.Printf("%s 64 → 64 channels, 56×56, pad 1, %s, float32, workload %s, %d thread(s), %d alternating rounds, each kernel in its own process\n",
		what, layout, key, o.threads, o.rounds)
	if wd != nil {
		fmt.Printf("winograd: F(%d×%d, 3×3), workload %s (GFLOP/s below count the direct convolution's FLOPs)\n", winogradTile, winogradTile, wd.WorkloadKey())
	}
	if info, err := os.ReadFile(infoFile); err == nil {
		fmt.Printf("onednn: %s\n", strings.TrimSpace(string(info)))
	}
	for _, p := range packed {
		fmt.Println(p)
	}
	r := &measure.Runner{Builder: b, Opts: measure.RunOptions{Threads: o.threads, Repeat: 3, MinRepeatMs: 200, Timeout: 600e9}}
	defer r.Close()
	tm, err := benchutil.Alternate(ctx, r, ks, o.rounds)
	if err != nil {
		return err
	}
	report(d.FLOPs(), tm, ks, m, o.threads)
	return nil
}

// report prints every contender's GFLOP/s (of the direct convolution's
// FLOPs, so that Winograd's are comparable), the per-round speed ratios,
// and last the line "github.com/tessera-ml/tessera/onednn = R" for the fastest Tessera contender
// but naive.
func report(flops float64, tm benchutil.Timings, ks []benchutil.Kernel, m benchutil.Machine, threads int) {
	for _, k := range ks {
		lo, med := benchutil.MinMedian(tm[k.Name])
		fmt.Printf("%s GFLOP/s = %.2f (median; best %.2f) = %s\n", k.Name, flops/med/1e9, flops/lo/1e9, m.Share(flops/med/1e9, threads))
	}
	ratio := func(fast, base string) float64 {
		_, med := benchutil.MinMedian(benchutil.Ratios(tm[base], tm[fast]))
		return med
	}
	if _, ok := tm["naive"]; ok {
		fmt.Printf("github.com/tessera-ml/tessera/naive = %.2f\n", ratio("expert", "naive"))
	}
	best, bestMed := "", 0.0
	for _, name := range []string{"default", "expert", "record", "winograd", "winograd-record"} {
		if _, ok := tm[name]; !ok {
			continue
		}
		fmt.Printf("%s/onednn = %.3f\n", name, ratio(name, "onednn"))
		if _, med := benchutil.MinMedian(tm[name]); best == "" || med < bestMed {
			best, bestMed = name, med
		}
	}
	fmt.Printf("tessera = %s\n", best)
	fmt.Printf("github.com/tessera-ml/tessera/onednn = %.3f\n", ratio(best, "onednn"))
}

// argsOf returns the kernel arguments of lowered parameters: the last
// outputs of them are written; a packed constant has its packed size.
func argsOf(params []*tir.Buffer, outputs int) []measure.Arg {
	args := make([]measure.Arg, len(params))
	for i, p := range params {
		args[i] = measure.Arg{Name: p.Name, Size: p.Size(), Output: i >= len(params)-outputs}
	}
	return args
}

// winogradInputs returns the inputs of the Winograd DAG wd for the inputs
// of the direct one d: the same activations and bias, the weights W
// transformed into U for F(m×m, 3×3).
func winogradInputs(d, wd *te.DAG, inputs [][]float32, m int) ([][]float32, error) {
	byName := map[string][]float32{}
	for i, t := range d.Inputs {
		byName[t.Name] = inputs[i]
	}
	u, err := te.WinogradWeights(byName["W"], conv.k, conv.c, m)
	if err != nil {
		return nil, err
	}
	byName["U"] = u
	out := make([][]float32, len(wd.Inputs))
	for i, t := range wd.Inputs {
		v, ok := byName[t.Name]
		if !ok {
			return nil, fmt.Errorf("winograd: no input %s", t.Name)
		}
		out[i] = v
	}
	return out, nil
}

// onednn builds the oneDNN contender for d's convolution (see
// onednn/onednn.c), its arguments those of d: activations channels-last
// when nhwc.
func onednn(ctx context.Context, d *te.DAG, nhwc bool) (benchutil.Kernel, error) {
	pos := map[string]int{"X": -1, "W": -1, "bias": -1}
	for i, t := range d.Inputs {
		pos[t.Name] = i
	}
	if pos["X"] < 0 || pos["W"] < 0 || len(d.Outputs) != 1 {
		return benchutil.Kernel{}, errors.New("onednn: the DAG's inputs are not X, W (and bias)")
	}
	fused, argB, channelsLast := 0, 0, 0
	if pos["bias"] >= 0 {
		fused, argB = 1, pos["bias"]
	}
	if nhwc {
		channelsLast = 1
	}
	p := conv.pad
	var defs strings.Builder
	for _, m := range []struct {
		name  string
		value int
	}{
		{"N", conv.n}, {"IC", conv.c}, {"IH", conv.h}, {"IW", conv.w}, {"OC", conv.k}, {"KH", conv.r}, {"KW", conv.s},
		{"PAD_T", p}, {"PAD_L", p}, {"PAD_B", p}, {"PAD_R", p}, {"STRIDE_H", conv.stride}, {"STRIDE_W", conv.stride},
		{"FUSED", fused}, {"NHWC", channelsLast}, {"ARG_X", pos["X"]}, {"ARG_W", pos["W"]}, {"ARG_B", argB}, {"ARG_Y", len(d.Inputs)},
	} {
		fmt.Fprintf(&defs, "#define CONV_%s %d\n", m.name, m.value)
	}
	b := &measure.Builder{Flags: append(measure.DefaultFlags(), "-Wl,--no-as-needed", "-ldnnl"), Timeout: buildTimeout}
	ks, err := benchutil.Build(ctx, b, []string{"onednn"}, []measure.Program{{Code: defs.String() + onednnSrc}}, measure.Args(d))
	if err != nil {
		return benchutil.Kernel{}, fmt.Errorf("%w (is libdnnl-dev installed? scripts/deps.sh installs it)", err)
	}
	return ks[0], nil
}
