package partition

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/te"
)

// The conformance test runs ONNX's own backend tests (Debian's
// libonnx-testdata): each model is decoded, bound to the shapes of its test
// inputs, simplified by the graph passes, lowered to te and evaluated by
// the reference evaluator, and every output is compared with the stored
// one. Tests using an op, a data type or a feature Tessera does not handle
// are counted as unsupported, with the reason.
//
// One liberty, what a user of the compiler does (tune --input name=value):
// an input whose contents an op needs as a constant (Reshape's shape,
// Clip's bounds, Pad's value, axes) is frozen to the test's value, since
// kernels are compiled for static shapes and parameters. Other inputs, of
// any dtype, are run-time data.

const testdataRoot = "/usr/share/libonnx-testdata/data"

var conformanceSuites = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// minNodePassed is the bar for the node suite.
const minNodePassed = 300

type outcome int

const (
	passed outcome = iota
	failed
	unsupported
	// unchanged: the data sets evaluate exactly what they evaluate with
	// every pass on (same DAG, same values fed), so they were not
	// evaluated again; TestConformance checks them.
	unchanged
)

// badExpected lists the tests whose stored data disagree with their own
// model, and why. A mismatch there is reported as such, neither a pass
// nor a failure.
var badExpected = map[string]string{
	"node/test_gridsample_bicubic": stored4Decimals,
	// Tessera's results equal onnxruntime 1.30's (checked with bench/ort's
	// onnxruntime-node), e.g. the window functions' 0.5 - 0.5 cos(2π 8/10)
	// = 0.3454915 where ONNX 1.12's data says 0.3455620.
	"node/test_blackmanwindow":                    windowDigits,
	"node/test_blackmanwindow_symmetric":          windowDigits,
	"node/test_hammingwindow":                     windowDigits,
	"node/test_hammingwindow_symmetric":           windowDigits,
	"node/test_hannwindow":                        windowDigits,
	"node/test_hannwindow_symmetric":              windowDigits,
	"node/test_blackmanwindow_expanded":           windowDigits,
	"node/test_blackmanwindow_symmetric_expanded": windowDigits,
	"node/test_hammingwindow_expanded":            windowDigits,
	"node/test_hammingwindow_symmetric_expanded":  windowDigits,
	"node/test_hannwindow_expanded":               windowDigits,
	"node/test_hannwindow_symmetric_expanded":     windowDigits,
	// ONNX 1.12's generator truncated float32 to bfloat16; onnxruntime
	// rounds to nearest even (onnx/onnx#3876), as Tessera does and as
	// the hardware's conversions do (test_cast_BFLOAT16_to_FLOAT passes).
	"node/test_cast_FLOAT_to_BFLOAT16": "stored output truncates to bfloat16 (Tessera rounds to nearest even, as onnxruntime does)",
	// The input like is [1] in the data, [3, 4] in the model.
	"node/test_castlike_BFLOAT16_to_FLOAT":          castLikeShape,
	"node/test_castlike_BFLOAT16_to_FLOAT_expanded": castLikeShape,
	"node/test_castlike_FLOAT_to_BFLOAT16":          castLikeShape,
	"node/test_castlike_FLOAT_to_BFLOAT16_expanded": castLikeShape,
}

const (
	stored4Decimals = "stored output rounded to 4 decimals: -0.1406 for -0.140625"
	windowDigits    = "stored output disagrees with the model (onnxruntime agrees with Tessera)"
	castLikeShape   = "stored input like has another shape than the model's"
)

type caseResult struct {
	suite, name string
	outcome     outcome
	reason      string
}

func TestConformance(t *testing.T) {
	results := runConformance(t, nil, nil)
	var counts [4]int
	nodePassed := 0
	why := map[string]int{}
	for _, r := range results {
		counts[r.outcome]++
		switch r.outcome {
		case passed:
			if r.suite == "node" {
				nodePassed++
			}
		case failed:
			t.Errorf("%s/%s: %s", r.suite, r.name, r.reason)
		case unsupported:
			why[r.reason]++
			if testing.Verbose() {
				t.Logf("unsupported %s/%s: %s", r.suite, r.name, r.reason)
			}
		}
	}
	reasons := make([]string, 0, len(why))
	for r := range why {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if why[reasons[i]] != why[reasons[j]] {
			return why[reasons[i]] > why[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	fmt.Println("unsupported, by reason:")
	for _, r := range reasons {
		fmt.Printf("  %4d  %s\n", why[r], r)
	}
	fmt.Printf("node suite: %d passed\n", nodePassed)
	fmt.Printf("%d passed, %d failed, %d unsupported\n", counts[passed], counts[failed], counts[unsupported])
	if nodePassed < minNodePassed {
		t.Errorf("%d node tests passed, want at least %d", nodePassed, minNodePassed)
	}
}

// TestConformanceEachPassOff runs the suites once per pass with that pass
// disabled (`--no-pass NAME`): a test may become unsupported (Shape is not
// lowered, so shape subgraphs need constant folding) but none may fail, so
// no pass is needed for correct numbers.
func TestConformanceEachPassOff(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the conformance suites once per pass")
	}
	// What each data set evaluates with every pass on; a pass that changes
	// nothing in a test (most do nothing to most node tests) leaves the
	// same DAG and values, whose outputs TestConformance checks.
	var base sync.Map // data set directory → fingerprint
	runConformance(t, nil, func(set, fp string) bool {
		base.Store(set, fp)
		return true
	})
	for _, p := range frontend.PassNames() {
		results := runConformance(t, map[string]bool{p: true}, func(set, fp string) bool {
			b, ok := base.Load(set)
			return ok && b.(string) == fp
		})
		var counts [4]int
		for _, r := range results {
			counts[r.outcome]++
			if r.outcome == failed {
				t.Errorf("without %s: %s/%s: %s", p, r.suite, r.name, r.reason)
			}
		}
		t.Logf("without %s: %d passed, %d failed, %d unsupported, %d unchanged by it", p, counts[passed], counts[failed], counts[unsupported], counts[unchanged])
	}
}

// skipFunc is given the fingerprint of a data set ready to evaluate
// (fingerprint) and says whether to skip evaluating it (the outcome is
// then unchanged).
type skipFunc func(set, fp string) bool

// runConformance runs every test of the suites, in parallel; skip, when not
// nil, may spare data sets their evaluation.
func runConformance(t *testing.T, disabled map[string]bool, skip skipFunc) []caseResult {
	t.Helper()
	if _, err := os.Stat(testdataRoot); err != nil {
		t.Fatalf("ONNX test data not found at %s: install Debian's libonnx-testdata (apt-get install libonnx-testdata; scripts/deps.sh does it)", testdataRoot)
	}
	type job struct{ suite, name, dir string }
	var jobs []job
	for _, s := range conformanceSuites {
		entries, err := os.ReadDir(filepath.Join(testdataRoot, s))
		if err != nil {
			t.Fatalf("reading suite %s: %v", s, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				jobs = append(jobs, job{s, e.Name(), filepath.Join(testdataRoot, s, e.Name())})
			}
		}
	}
	results := make([]caseResult, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				o, reason := runConformanceCase(j.dir, disabled, skip)
				if why, bad := badExpected[j.suite+"/"+j.name]; o == failed && bad {
					o, reason = unsupported, why
				}
				results[i] = caseResult{j.suite, j.name, o, reason}
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// runConformanceCase runs one test directory: every test_data_set_* must
// match. It is unchanged when every data set is.
func runConformanceCase(dir string, disabled map[string]bool, skip skipFunc) (outcome, string) {
	g, err := onnx.DecodeFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return classify(err)
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return failed, "no test_data_set_* directory"
	}
	sort.Strings(sets)
	all := unchanged
	for _, set := range sets {
		o, reason := runDataSet(g.Clone(), set, disabled, skip)
		switch o {
		case failed:
			return o, fmt.Sprintf("%s: %s", filepath.Base(set), reason)
		case passed:
			all = passed
		case unchanged:
		default:
			return o, reason
		}
	}
	return all, ""
}

// classify turns an error into unsupported (it wraps graph.ErrUnsupported)
// or failed; unsupported reasons are shortened to the op where there is
// one, so that the tally groups them.
func classify(err error) (outcome, string) {
	var uo *graph.UnsupportedOpError
	if errors.As(err, &uo) {
		return unsupported, "op " + uo.Op
	}
	if errors.Is(err, graph.ErrUnsupported) {
		msg := err.Error()
		for _, kind := range []string{"data type ", "has a "} {
			if i := strings.Index(msg, kind); i >= 0 {
				// group by the type, not by the value that has it
				return unsupported, strings.TrimSuffix(strings.TrimPrefix(msg[i:], "has a "), ": unsupported")
			}
		}
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			// "file: what at node N: feature: unsupported" → "what: feature"
			msg = msg[:i]
		}
		if i := strings.Index(msg, ".onnx: "); i >= 0 {
			msg = msg[i+len(".onnx: "):]
		}
		return unsupported, msg
	}
	return failed, err.Error()
}

func runDataSet(g *graph.Graph, set string, disabled map[string]bool, skip skipFunc) (outcome, string) {
	inputs := map[string]*graph.Tensor{}
	for i, name := range g.Inputs {
		data, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
		if err != nil {
			return failed, fmt.Sprintf("input %s: %v", name, err)
		}
		_, t, err := onnx.DecodeTensor(data)
		if err != nil {
			return classify(fmt.Errorf("input %s: %w", name, err))
		}
		inputs[name] = bfloat16Bits(t, g.Values[name].DType)
	}
	var want []*graph.Tensor
	for i := range g.Outputs {
		data, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
		if err != nil {
			return failed, fmt.Sprintf("output %d: %v", i, err)
		}
		_, t, err := onnx.DecodeTensor(data)
		if err != nil {
			return classify(fmt.Errorf("output %s: %w", g.Outputs[i], err))
		}
		want = append(want, bfloat16Bits(t, g.Declared[g.Outputs[i]].DType))
	}
	dims := map[string][]int{}
	for _, name := range g.Inputs {
		dims[name] = inputs[name].Shape
	}
	if err := g.Bind(dims); err != nil {
		return failed, err.Error()
	}
	l, err := lowerFreezing(g, inputs, disabled)
	if err != nil {
		return classify(err)
	}
	d, err := te.NewDAG(l.Outputs...)
	if err != nil {
		return failed, err.Error()
	}
	data := map[string][]float32{}
	for name, t := range inputs {
		if data[name], err = t.KernelData(); err != nil {
			return classify(fmt.Errorf("input %s: %w", name, err))
		}
	}
	feed, err := l.Feed(d, data)
	if err != nil {
		return failed, err.Error()
	}
	if skip != nil && skip(set, fingerprint(d, feed)) {
		return unchanged, ""
	}
	got, err := d.Eval(feed)
	if err != nil {
		return failed, err.Error()
	}
	for i, w := range want {
		atol := 1e-5
		if sumsOfMany[filepath.Base(filepath.Dir(set))] {
			atol = max(atol, 1e-6*maxAbs(w))
		}
		if msg := compare(got[i], l.Outputs[i].Shape, w, atol); msg != "" {
			return failed, fmt.Sprintf("output %s: %s", g.Outputs[i], msg)
		}
	}
	return passed, ""
}

// bfloat16Bits returns data tensor t of a value of type dt: t itself, or
// for a bfloat16 value stored as uint16 (ONNX 1.12's test generator wrote
// bfloat16 data as its bits, numpy having no bfloat16) the bfloat16
// values those bits are.
func bfloat16Bits(t *graph.Tensor, dt graph.DType) *graph.Tensor {
	if dt != graph.BFloat16 || t.DType != graph.Uint16 {
		return t
	}
	out := &graph.Tensor{DType: graph.BFloat16, Shape: t.Shape, F32: make([]float32, len(t.I64))}
	for i, v := range t.I64 {
		out.F32[i] = math.Float32frombits(uint32(v) << 16)
	}
	return out
}

// sumsOfMany lists the tests whose outputs are sums of many large terms
// that cancel (the transforms of ramps whose stored values are float64
// exact: a bin of 0 next to one of 4950): float32 computes them within a
// few float32 epsilons of the largest output, so they are compared with an
// absolute tolerance of 1e-6 of it. onnxruntime 1.30 misses the stored
// zeros by 3.4e-4 on test_dft.
var sumsOfMany = map[string]bool{
	"test_dft": true, "test_dft_axis": true, "test_dft_inverse": true, "test_stft": true, "test_stft_with_window": true,
}

func maxAbs(t *graph.Tensor) float64 {
	m := 0.0
	for _, v := range t.Float64s() {
		m = max(m, math.Abs(v))
	}
	return m
}

// fingerprint is a hash of what evaluating d on feed computes: d's
// canonical print and every value fed. Equal fingerprints evaluate alike.
func fingerprint(d *te.DAG, feed [][]float32) string {
	h := sha256.New()
	io.WriteString(h, d.CanonicalString())
	var b [4]byte
	for _, in := range feed {
		binary.LittleEndian.PutUint32(b[:], uint32(len(in)))
		h.Write(b[:])
		for _, v := range in {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			h.Write(b[:])
		}
	}
	return string(h.Sum(nil))
}

// compare checks got against want at rtol 1e-4 and the given atol.
func compare(got []float32, shape []int, want *graph.Tensor, atol float64) string {
	if graph.NumElems(shape) != want.Len() || len(shape) != len(want.Shape) {
		return fmt.Sprintf("shape %v, want %v", shape, want.Shape)
	}
	for i := range shape {
		if shape[i] != want.Shape[i] {
			return fmt.Sprintf("shape %v, want %v", shape, want.Shape)
		}
	}
	bad, first := 0, -1
	for i, w := range want.Float64s() {
		g := got[i]
		if !near(float64(g), w, atol) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Sprintf("%d of %d elements differ; first at %d: got %g, want %g", bad, len(got), first, got[first], want.Float64s()[first])
	}
	return ""
}

func near(g, w, atol float64) bool {
	switch {
	case math.IsNaN(w):
		return math.IsNaN(g)
	case math.IsInf(w, 0):
		return g == w
	}
	return math.Abs(g-w) <= atol+1e-4*math.Abs(w)
}

// A fingerprint changes with the DAG and with every value fed, or the pass
// runs above would skip data sets a pass changed.
func TestFingerprint(t *testing.T) {
	dag := func(op func(string, *te.Tensor) (*te.Tensor, error)) *te.DAG {
		y, err := op("y", te.Placeholder("x", 2, 3))
		if err != nil {
			t.Fatal(err)
		}
		d, err := te.NewDAG(y)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	relu, sigmoid := dag(te.Relu), dag(te.Sigmoid)
	feed := [][]float32{{1, 2, 3, 4, 5, 6}}
	other := [][]float32{{1, 2, 3, 4, 5, 7}}
	fp := fingerprint(relu, feed)
	if fingerprint(dag(te.Relu), feed) != fp {
		t.Error("two equal DAGs on equal values have different fingerprints")
	}
	if fingerprint(sigmoid, feed) == fp {
		t.Error("Relu and Sigmoid have one fingerprint")
	}
	if fingerprint(relu, other) == fp {
		t.Error("a changed input value keeps the fingerprint")
	}
}

// lowerFreezing runs the graph passes on g (bound) and lowers it; where an
// op needs the contents of a value computed from the inputs (Resize's
// scales, Reshape's shape), it freezes those inputs to their values and
// starts over. It returns the lowered graph (l.Graph, passes run).
func lowerFreezing(g *graph.Graph, inputs map[string]*graph.Tensor, disabled map[string]bool) (*Lowered, error) {
	for attempt := 0; ; attempt++ {
		base := g.Clone()
		err := frontend.RunPasses(g, disabled)
		var l *Lowered
		if err == nil {
			l, err = Lower(g)
		}
		var nc *graph.NotConstantError
		if errors.As(err, &nc) && attempt < 8 {
			// The op needs this value's contents: freeze the inputs it is
			// computed from and start over.
			g = base
			frozen := 0
			for _, name := range base.InputsBehind(nc.Value) {
				if err := g.Freeze(name, inputs[name]); err != nil {
					return nil, err
				}
				frozen++
			}
			if frozen > 0 {
				continue
			}
		}
		return l, err
	}
}

// TestResizeKeptAsArithmetic: the node tests of Resize whose axes are
// periodic (an integer or simple rational scale, no output outside a roi)
// keep their Resize node, lowered as index arithmetic (ops/resize.go) and
// checked against ONNX's reference outputs by TestConformance; the others
// are expanded into Gathers.
func TestResizeKeptAsArithmetic(t *testing.T) {
	kept := map[string]bool{}
	for _, name := range []string{
		"test_resize_upsample_scales_linear", "test_resize_upsample_scales_nearest", "test_resize_upsample_scales_cubic",
		"test_resize_downsample_scales_linear", "test_resize_upsample_sizes_nearest", "test_resize_upsample_scales_linear_align_corners",
		"test_resize_tf_crop_and_resize",
	} {
		dir := filepath.Join(testdataRoot, "node", name)
		g, err := onnx.DecodeFile(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		set := filepath.Join(dir, "test_data_set_0")
		inputs := map[string]*graph.Tensor{}
		dims := map[string][]int{}
		for i, in := range g.Inputs {
			data, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
			if err != nil {
				t.Fatal(err)
			}
			if _, inputs[in], err = onnx.DecodeTensor(data); err != nil {
				t.Fatal(err)
			}
			dims[in] = inputs[in].Shape
		}
		if err := g.Bind(dims); err != nil {
			t.Fatal(err)
		}
		l, err := lowerFreezing(g, inputs, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, n := range l.g.Nodes {
			kept[name] = kept[name] || n.OpType == "Resize"
		}
	}
	for name, want := range map[string]bool{
		"test_resize_upsample_scales_linear": true, "test_resize_upsample_scales_nearest": true, "test_resize_upsample_scales_cubic": true,
		"test_resize_downsample_scales_linear": true, "test_resize_upsample_sizes_nearest": true, "test_resize_upsample_scales_linear_align_corners": true,
		"test_resize_tf_crop_and_resize": false, // outputs outside the roi take the extrapolation value
	} {
		if kept[name] != want {
			t.Errorf("%s: Resize kept %v, want %v", name, kept[name], want)
		}
	}
}
