package sketch

import (
	"errors"
	"github.com/tessera-ml/tessera/backend/machine"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

func sketches(t *testing.T, name string) []*schedule.State {
	t.Helper()
	d := tetest.DAGs()[name]
	if d == nil {
		t.Fatalf("no example DAG %q", name)
	}
	return sketchesOfDAG(t, d)
}

// testOptions are the CPU options of an AVX-512 machine with 2 cores
// (x86-64-v4: 16 lanes, 32 registers), whatever the host: the sketch tests
// run no compiled code, and the rfactor rule depends on the core count.
func testOptions() Options {
	return testOptionsFor("x86-64-v4")
}

// testOptionsFor are the CPU options of a portable level with 2 cores
// and a 1 MiB L2, whatever the host has.
func testOptionsFor(level string) Options {
	m, err := machine.Level(level)
	if err != nil {
		panic(err)
	}
	m.Cores, m.L2 = 2, 1<<20
	return CPUOptions(m)
}

// sketchesOf returns the sketches of the DAG computing out.
func sketchesOf(t *testing.T, out *te.Tensor) []*schedule.State {
	t.Helper()
	d, err := te.NewDAG(out)
	if err != nil {
		t.Fatal(err)
	}
	return sketchesOfDAG(t, d)
}

func sketchesOfDAG(t *testing.T, d *te.DAG) []*schedule.State {
	t.Helper()
	sk, err := Generate(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// stageLine returns the preview line of the stage named name, or "".
func stageLine(s *schedule.State, name string) string {
	for _, line := range strings.Split(s.String(), "\n") {
		if strings.HasPrefix(line, name+":") {
			return line
		}
	}
	return ""
}

func countSteps[T schedule.Step](s *schedule.State) int {
	n := 0
	for _, st := range s.Steps {
		if _, ok := st.(T); ok {
			n++
		}
	}
	return n
}

func TestSketchMatmul(t *testing.T) {
	sk := sketches(t, "matmul")
	// Cache write fused at spatial levels 1 and 2, and plain tiling.
	if len(sk) != 3 {
		t.Fatalf("%d sketches, want 3:\n%v", len(sk), sk)
	}
	for k, s := range sk[:2] {
		local := stageLine(s, "matmul.local")
		if !strings.Contains(local, "@matmul.") || !strings.HasSuffix(local, "i0.0(?) i1.0(?) i0.1(?) i1.1(?) r0.0(?) i0.2(?) i1.2(?) r0.1(?) i0.3(?) i1.3(?)") {
			t.Errorf("sketch %d: local stage not SSRSRS-tiled and attached: %q", k, local)
		}
		out := stageLine(s, "matmul")
		if want := 2 * (k + 2); strings.Count(out, "(?)") != want {
			t.Errorf("sketch %d: output copy %q should follow %d tile levels", k, out, k+1)
		}
	}
	if countSteps[*schedule.CacheWrite](sk[2]) != 0 || !strings.Contains(stageLine(sk[2], "matmul"), "r0.1(?) i0.3(?) i1.3(?)") {
		t.Errorf("third sketch should tile without a cache write:\n%v", sk[2])
	}
}

func TestSketchConvBiasRelu(t *testing.T) {
	sk := sketches(t, "conv_bias_relu")
	// Fusion at two levels × the padding inlined or kept as a stage (the
	// conv reads it through its 3×3 window).
	if len(sk) != 4 {
		t.Fatalf("%d sketches, want 4 (fusion at two levels, padding inlined or kept):\n%v", len(sk), sk)
	}
	kept := 0
	for k, s := range sk {
		if !strings.Contains(s.String(), "conv_bias: inline") {
			t.Errorf("sketch %d: want the bias inlined:\n%v", k, s)
		}
		switch pad := stageLine(s, "conv_pad"); {
		case pad == "conv_pad: inline":
		case strings.HasPrefix(pad, "conv_pad: i0(") && !strings.Contains(pad, "@"):
			kept++
		default:
			t.Errorf("sketch %d: padding neither inlined nor an untouched root stage: %q", k, pad)
		}
		conv := stageLine(s, "conv")
		if !strings.Contains(conv, "@relu.") || strings.Count(conv, "(?)") != 4*4+3*2 {
			t.Errorf("sketch %d: conv not tiled SSRSRS inside relu: %q", k, conv)
		}
		if countSteps[*schedule.CacheWrite](s) != 0 {
			t.Errorf("sketch %d: the relu consumer fuses; no cache write expected", k)
		}
	}
	if kept != 2 {
		t.Errorf("padding kept as a stage in %d sketches, want 2", kept)
	}
}

// TestSketchSteppedWindowKept: ConvTranspose by phases reads its padded
// input at t + ⌈(pad − r)/s⌉ − j, an index that steps with the phase r;
// the first sketch (the default schedule's) keeps the padding as a stage,
// where a float convolution's (conv_bias_relu) inlines it first.
func TestSketchSteppedWindowKept(t *testing.T) {
	x := te.Placeholder("X", 1, 16, 8, 8)
	w := te.Constant("W", 16, 8, 4, 4)
	ct, err := te.ConvTranspose("ct", x, w, nil, te.ConvTransposeAttrs{Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	sk := sketchesOf(t, ct)
	if pad := stageLine(sk[0], "ct_pad"); pad == "ct_pad: inline" || !strings.HasPrefix(pad, "ct_pad: ") {
		t.Errorf("first sketch: padding %q, want it kept as a stage:\n%v", pad, sk[0])
	}
	if pad := stageLine(sketches(t, "conv_bias_relu")[0], "conv_pad"); pad != "conv_pad: inline" {
		t.Errorf("conv_bias_relu's first sketch: padding %q, want it inlined", pad)
	}
}

// TestSketchConcatSummedKept: a Concat along the axis a matmul sums
// (ASPP's projection of its concatenated branches) is kept as a stage in
// the first sketch: inlined, its guard would run at every step of the
// reduction. So is a Concat along the matmul's rows that it reads again
// for each of minGuardReuse columns or more (guardReused: Swin's roll
// before its qkv projection); with fewer columns it stays inlined.
func TestSketchConcatSummedKept(t *testing.T) {
	for _, c := range []struct {
		axis, cols int
		kept       bool
	}{{1, 16, true}, {0, minGuardReuse, true}, {0, minGuardReuse / 2, false}} {
		a, b := te.Placeholder("A", 8, 16), te.Placeholder("B", 8, 16)
		cat, err := te.Concat("cat", c.axis, a, b)
		if err != nil {
			t.Fatal(err)
		}
		w := te.Constant("W", cat.Shape[1], c.cols)
		mm, err := te.MatMul("mm", cat, w)
		if err != nil {
			t.Fatal(err)
		}
		sk := sketchesOf(t, mm)
		if line := stageLine(sk[0], "cat"); (line != "cat: inline") != c.kept {
			t.Errorf("concat along axis %d, %d columns: first sketch has %q, want kept = %v:\n%v", c.axis, c.cols, line, c.kept, sk[0])
		}
	}
}

// TestSketchPaddingReadOnce: a padded tensor that is only copied (read
// once per element, no window) is always inlined.
func TestSketchPaddingReadOnce(t *testing.T) {
	x := te.Placeholder("X", 1, 8, 10, 10)
	p, err := te.Pad("pad", x, te.PadAttrs{Pads: []int{0, 0, 1, 1, 0, 0, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := te.Relu("relu", p)
	if err != nil {
		t.Fatal(err)
	}
	sk := sketchesOf(t, r)
	for _, s := range sk {
		if stageLine(s, "pad") != "pad: inline" {
			t.Errorf("padding read once is not inlined:\n%v", s)
		}
	}
}

func TestSketchSoftmax(t *testing.T) {
	sk := sketches(t, "softmax")
	// Each of the two row reductions: rfactor of the outer part, of the
	// inner part, or none: 3 × 3. No multi-level tiling (no data reuse).
	if len(sk) != 9 {
		t.Fatalf("%d sketches, want 9", len(sk))
	}
	rf := 0
	for _, s := range sk {
		if countSteps[*schedule.Split](s) > countSteps[*schedule.Rfactor](s) {
			t.Errorf("softmax sketch has splits besides the rfactor ones:\n%v", s)
		}
		rf += countSteps[*schedule.Rfactor](s)
	}
	if rf != 2*6 {
		t.Errorf("%d rfactors over all sketches, want 12", rf)
	}
}

func TestSketchSmallOutputReduction(t *testing.T) {
	sk := sketches(t, "reduce_small_output")
	if len(sk) != 3 {
		t.Fatalf("%d sketches, want 3 (rfactor outer, rfactor inner, plain)", len(sk))
	}
	var parts []int
	for _, s := range sk[:2] {
		var rfIter = -1
		for _, st := range s.Steps {
			if r, ok := st.(*schedule.Rfactor); ok {
				rfIter = r.Iter
			}
		}
		parts = append(parts, rfIter)
		if !strings.Contains(s.String(), ".rf:") {
			t.Errorf("no partial-reduction stage:\n%v", s)
		}
	}
	sort.Ints(parts)
	if parts[0] == parts[1] {
		t.Errorf("both rfactor sketches factor the same part %v", parts)
	}
}

// TestSketchReduceOutsideLanes: NHWC max pooling reads the channels
// contiguously, so besides the plain sketch it gets one with the window
// loops outside a split of the channel axis, whose inner part the
// annotator vectorizes; the default schedule is that sketch. NCHW pooling
// reads its last axis through the window (w·2 + r1) and gets no such
// sketch, nor does softmax (it reduces the last axis).
func TestSketchReduceOutsideLanes(t *testing.T) {
	pool, err := te.MaxPoolNHWC("pool", te.Placeholder("X", 1, 9, 9, 32), te.PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	sk := sketchesOf(t, pool)
	d := sk[0].DAG
	opts := testOptions()
	lanes := 0
	for _, s := range sk {
		lanes += countSteps[*schedule.Reorder](s)
	}
	if lanes == 0 {
		t.Fatalf("no reduce_outside_lanes sketch among %d:\n%v", len(sk), sk)
	}
	def, _, err := Default(schedule.NewState(d), opts)
	if err != nil {
		t.Fatal(err)
	}
	out := def.Stages[len(def.Stages)-1]
	n := len(out.Iters)
	if out.Tensor.Name != "pool" || out.Iters[n-1].Kind != schedule.Spatial || out.Iters[n-1].Ann != schedule.Vectorize || out.Iters[n-2].Kind != schedule.Reduce {
		t.Errorf("default schedule does not vectorize the channels inside the window loops:\n%v", def)
	}
	// A classifier's Gemm with transB reads its weights along the
	// reduction; its default schedule repacks them so that the outputs
	// vectorize.
	def, _, err = Default(schedule.NewState(tetest.DAGs()["classifier"]), opts)
	if err != nil {
		t.Fatal(err)
	}
	if countSteps[*schedule.RewriteLayout](def) != 1 || countSteps[*schedule.Reorder](def) != 1 || !strings.Contains(def.String(), "vectorize") {
		t.Errorf("classifier default schedule does not repack and vectorize:\n%v\n%v", def.Steps, def)
	}
	for _, name := range []string{"max_pool", "global_average_pool", "softmax"} {
		for _, s := range sketches(t, name) {
			for _, st := range s.Steps {
				if r, ok := st.(*schedule.Reorder); ok {
					t.Errorf("%s: unexpected reorder %v in a sketch:\n%v", name, r, s)
				}
			}
		}
	}
}

func TestSketchElementwiseChain(t *testing.T) {
	sk := sketches(t, "elemwise_chain")
	if len(sk) != 1 {
		t.Fatalf("%d sketches, want 1", len(sk))
	}
	s := sk[0]
	live := 0
	for _, st := range s.Stages {
		if !st.IsPlaceholder() && st.Attach == schedule.Root {
			live++
		}
	}
	// Cheap producers inline; expensive ones (tanh, sigmoid) are left to
	// annotation, which may inline them or attach them.
	if countSteps[*schedule.Split](s) != 0 || live == 0 {
		t.Errorf("elementwise chain sketch:\n%v", s)
	}
}

// TestSamplesLowerAndMatch samples random complete states from the
// sketches of every example DAG and checks each, lowered and interpreted,
// against the reference evaluator: at least 1,000 samples in all.
func TestSamplesLowerAndMatch(t *testing.T) {
	dags := tetest.DAGs()
	names := sortedNames(dags)
	total, failedLower := 0, 0
	for i, name := range names {
		d := dags[name]
		sk, err := Generate(schedule.NewState(d), testOptions())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 77))
		for k := 0; k < 20; k++ {
			s, err := Sample(rng, sk[k%len(sk)], testOptions())
			if err != nil {
				t.Fatalf("%s: sample: %v", name, err)
			}
			f, err := schedule.Lower(s, "k")
			if err != nil {
				failedLower++
				t.Errorf("%s: sampled state does not lower: %v\n%v", name, err, s)
				continue
			}
			if err := schedtest.Check(d, f, uint64(k)); err != nil {
				t.Fatalf("%s: %v\nsteps: %v\n%v\n%v", name, err, s.Steps, s, f)
			}
			total++
		}
	}
	if total < 1000 {
		t.Errorf("only %d samples checked", total)
	}
	t.Logf("%d samples checked, %d did not lower", total, failedLower)
}

// TestMutationsKeepCorrectness mutates sampled states of several DAGs with
// every mutation and crossover, and checks each child against the
// reference evaluator; it also checks that the mutations change something.
func TestMutationsKeepCorrectness(t *testing.T) {
	opts := testOptions()
	for _, name := range []string{"matmul", "conv_bias_relu", "softmax", "layernorm", "matmul_bias_relu", "conv_strided"} {
		d := tetest.DAGs()[name]
		sk, err := Generate(schedule.NewState(d), opts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, uint64(len(name))))
		applied := map[string]int{}
		for k := 0; k < 60; k++ {
			parent, err := Sample(rng, sk[k%len(sk)], opts)
			if err != nil {
				t.Fatal(err)
			}
			other, err := Sample(rng, sk[k%len(sk)], opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range CPUMutations {
				child, err := m.Apply(rng, parent, opts)
				if errors.Is(err, ErrNotApplicable) {
					continue
				}
				if err != nil {
					t.Fatalf("%s: %s: %v\n%v\n%v", name, m.Name, err, parent, parent.Steps)
				}
				applied[m.Name]++
				checkChild(t, name+" "+m.Name, child)
			}
			if child, err := Crossover(rng, parent, other); err == nil {
				applied["crossover"]++
				checkChild(t, name+" crossover", child)
			} else if !errors.Is(err, ErrNotApplicable) {
				t.Fatal(err)
			}
		}
		splits := 0
		for _, k := range sk {
			splits += countSteps[*schedule.Split](k)
		}
		if applied["tile_size"] == 0 && splits > 0 {
			t.Errorf("%s: tile-size mutation never applied (%v)", name, applied)
		}
		t.Logf("%s: %v", name, applied)
	}
}

func checkChild(t *testing.T, what string, s *schedule.State) {
	t.Helper()
	f, err := schedule.Lower(s, "k")
	if err != nil {
		t.Fatalf("%s: child does not lower: %v\n%v", what, err, s)
	}
	if err := schedtest.Check(s.DAG, f, 3); err != nil {
		t.Fatalf("%s: %v\n%v", what, err, s)
	}
}

// TestSketchPrologue: fusion puts reshapes and transposes in front of an
// attention MatMul; the sketch inlines them and tiles the MatMul.
func TestSketchPrologue(t *testing.T) {
	x := te.Placeholder("X", 1, 16, 32)
	r, err := te.Reshape("reshape", x, []int{1, 16, 4, 8}, false)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := te.Transpose("transpose", r, []int{0, 2, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	k := te.Placeholder("K", 1, 4, 8, 16)
	mm, err := te.MatMul("scores", tr, k)
	if err != nil {
		t.Fatal(err)
	}
	sk := sketchesOf(t, mm)
	if len(sk) == 0 {
		t.Fatal("no sketch")
	}
	for _, s := range sk {
		text := s.String()
		for _, want := range []string{"reshape: inline", "transpose: inline"} {
			if !strings.Contains(text, want) {
				t.Errorf("want %q:\n%s", want, text)
			}
		}
		if countSteps[*schedule.Split](s) < 4 {
			t.Errorf("matmul not multi-level tiled:\n%s", text)
		}
		f, err := Sample(rand.New(rand.NewPCG(1, 1)), s, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		checkChild(t, "prologue", f)
	}
}

// sortedNames returns the names of the example DAGs in order.
func sortedNames(dags map[string]*te.DAG) []string {
	names := make([]string, 0, len(dags))
	for n := range dags {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// The tiles of a reduction over a constant matrix sit under its unrolled
// loops: sampled schedules keep the innermost one within a vector, or a
// 64-channel Winograd transform prints as a megabyte of unrolled scalar C.
func TestSampleConstTensorTilesFitVectors(t *testing.T) {
	u := te.Constant("U", 6, 6, 64, 64)
	c, err := te.WinogradConv2DNHWC("conv", te.Placeholder("X", 1, 14, 14, 64), u, 4, []int{1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	sk, opts := sketchesOf(t, c), testOptions()
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for k := range 64 {
		s, err := Sample(rng, sk[k%len(sk)], opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range s.Stages {
			if st.Attach == schedule.Inlined || len(constMatrixIndexVars(st.Tensor)) == 0 {
				continue
			}
			last := st.Iters[len(st.Iters)-1]
			if last.Kind == schedule.Spatial && last.Extent > opts.MaxVectorLanes {
				t.Errorf("%s: innermost tile of %d lanes (at most %d):\n%v", st.Tensor.Name, last.Extent, opts.MaxVectorLanes, s)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no stage reads a constant matrix")
	}
}

// A small elementwise stage (a GRU step's gates, 256 elements) keeps a
// vector's worth of its innermost loop out of the parallel loop, which used
// to take every loop and leave nothing to vectorize; one exactly a vector
// long keeps it whole; a large one is unchanged (TestSampleVectorizesLong-
// Elementwise). Below minParallelWork the stage is serial, its innermost
// loop still vectorized: a parallel region costs more than it computes.
func TestSampleVectorizesSmallElementwise(t *testing.T) {
	opts := testOptions()
	for _, c := range []struct {
		shape    []int
		parallel int // the extent of the parallel loop; 0: none
	}{
		{[]int{1, 256}, 0},
		{[]int{3, opts.MaxVectorLanes}, 0},
		{[]int{8, minParallelWork / 8}, 8 * minParallelWork / 8 / opts.MaxVectorLanes},
		{[]int{8, minParallelWork / 16}, 0},
	} {
		s, st := sampledSigmoid(t, c.shape, opts)
		last := st.Iters[len(st.Iters)-1]
		parallel := 0
		for _, it := range st.Iters {
			if it.Ann == schedule.Parallel {
				parallel = it.Extent
			}
		}
		if st.Tensor.Name != "sig" || last.Ann != schedule.Vectorize || last.Extent != opts.MaxVectorLanes || parallel != c.parallel {
			t.Errorf("%v: want a parallel loop of %d (0: none) and %d lanes vectorized:\n%v", c.shape, c.parallel, opts.MaxVectorLanes, s)
		}
	}
	// The same work of scalar libm calls (a square root, computed lane by
	// lane), or over a loop no vector divides, stays parallel.
	for _, c := range []struct {
		name  string
		shape []int
		f     func(string, *te.Tensor) (*te.Tensor, error)
	}{
		{"sqrt", []int{8, minParallelWork / 16}, te.Sqrt},
		{"sigmoid of 3 columns", []int{minParallelWork / 16, 3}, te.Sigmoid},
	} {
		e, err := c.f("f", te.Placeholder("X", c.shape...))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Sample(rand.New(rand.NewPCG(7, 8)), sketchesOf(t, e)[0], opts)
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stages[len(s.Stages)-1]
		if !slices.ContainsFunc(st.Iters, func(it schedule.Iter) bool { return it.Ann == schedule.Parallel }) {
			t.Errorf("%s %v: no parallel loop:\n%v", c.name, c.shape, s)
		}
	}
}

// sampledSigmoid samples the first sketch of a sigmoid over X of shape
// (seed 7, 8) and returns the state and the sigmoid's stage.
func sampledSigmoid(t *testing.T, shape []int, opts Options) (*schedule.State, *schedule.Stage) {
	t.Helper()
	e, err := te.Sigmoid("sig", te.Placeholder("X", shape...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Sample(rand.New(rand.NewPCG(7, 8)), sketchesOf(t, e)[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Stages[len(s.Stages)-1]
}

// An elementwise stage no rule tiles, whose innermost loop is longer than a
// vector (a GELU over a matmul's 3,072 columns), is vectorized a vector's
// worth at a time: its math is vector code, not a libm call per element.
func TestSampleVectorizesLongElementwise(t *testing.T) {
	e, err := te.Erf("erf", te.Placeholder("X", 1, 128, 3072))
	if err != nil {
		t.Fatal(err)
	}
	sk, opts := sketchesOf(t, e), testOptions()
	rng := rand.New(rand.NewPCG(7, 8))
	for k := range 8 {
		s, err := Sample(rng, sk[k%len(sk)], opts)
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stages[len(s.Stages)-1]
		last := st.Iters[len(st.Iters)-1]
		if st.Tensor.Name != "erf" || last.Ann != schedule.Vectorize || last.Extent != opts.MaxVectorLanes {
			t.Errorf("innermost loop of the erf stage not vectorized %d lanes at a time:\n%v", opts.MaxVectorLanes, s)
		}
	}
}

// An elementwise stage whose innermost loop is a multiple of one vector but
// not of MaxVectorLanes (72 channels of a MobileNetV3 layer, where AVX2's
// register tile takes 16 lanes) is vectorized a vector at a time, large
// (split off from the loop Sample parallelizes) or small (kept out of the
// parallel loop); it ran scalar, a quantized squeeze-excite's division per
// element. A loop of no multiple of a vector is vectorized by the largest
// part of one that divides it, of minLanes lanes or more (120 channels at
// AVX-512's 16 lanes: 8), and, where none does and it spans more than
// maxWholeVectors vectors, by whole vectors, the last one guarded (90
// columns: 11 vectors and 2 lanes; an int8 stem's padded rows of 226
// bytes ran scalar, half of MobileNetV3's first convolution on Zen 5).
func TestSampleVectorizesOneVector(t *testing.T) {
	v3, v4 := testOptionsFor("x86-64-v3"), testOptionsFor("x86-64-v4")
	if v3.MaxVectorLanes == v3.Lanes {
		t.Fatalf("MaxVectorLanes %d equals Lanes: the case is not exercised", v3.MaxVectorLanes)
	}
	for _, c := range []struct {
		opts  Options
		shape []int
		lanes int // the vectorized loop's extent (0: none)
	}{
		{v3, []int{784, 72}, v3.Lanes},
		{v3, []int{3, 72}, v3.Lanes},
		{v3, []int{784, 60}, v3.Lanes / 2},
		{v3, []int{784, 90}, v3.Lanes},
		{v4, []int{784, 120}, v4.Lanes / 2},
	} {
		opts := c.opts
		s, st := sampledSigmoid(t, c.shape, opts)
		got := 0
		for _, it := range st.Iters {
			if it.Ann == schedule.Vectorize {
				got = it.Extent
			}
		}
		if st.Tensor.Name != "sig" || got != c.lanes {
			t.Errorf("%v: %d lanes vectorized, want %d:\n%v", c.shape, got, c.lanes, s)
		}
	}
}

// TestSketchWinogradInlined: a Winograd convolution's padding and its
// transform matrices stay inlined in the first sketch (the default
// schedule's): its data pack reads the padding at floor(p / tiles)·m + ν,
// which is no stepped window (steppedWindow), and a constant matrix's
// selects are its entries, which simplifyConstTensor turns into literals
// (reduceGuarded). Kept, the transforms were a local table and the data
// pack read a copy of the padded input.
func TestSketchWinogradInlined(t *testing.T) {
	for _, name := range []string{"winograd4_nhwc_bias_relu", "winograd2_bias_relu"} {
		for _, line := range strings.Split(sketches(t, name)[0].String(), "\n") {
			if (strings.Contains(line, "_pad: ") || strings.Contains(line, "_BT: ") || strings.Contains(line, "_B: ")) && !strings.HasSuffix(strings.TrimSpace(line), ": inline") {
				t.Errorf("%s: first sketch keeps %q", name, strings.TrimSpace(line))
			}
		}
	}
}
