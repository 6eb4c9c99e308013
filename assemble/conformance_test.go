package assemble

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// The model tests of ONNX's own backend test data (Debian's
// libonnx-testdata), built and run: each model is decoded, bound to the
// shapes of its test inputs, simplified, partitioned and built with
// default schedules; the library runs on the stored inputs and every
// output is compared with the stored one. As in partition's conformance
// test, the inputs behind a value an op needs as a constant (shapes, axes,
// bounds) are frozen to the test's values, other inputs of every dtype are
// run-time data, and a test using an op, a data type or a feature Tessera
// does not handle counts as unsupported.

const testdataRoot = "/usr/share/libonnx-testdata/data"

// modelSuites are the suites of whole models (the node suite tests single
// ops, which partition's conformance test covers with the evaluator).
var modelSuites = []string{"pytorch-converted", "simple"}

// nodeCases are node-suite tests of the ops added for exported models
// (issue 13), one or two per op (control flow and the expanded ops
// included), built and run like the models so that
// their lowerings go through scheduling and C code generation, not only
// through the evaluator.
var nodeCases = []string{
	"test_equal", "test_less", "test_greater_equal", "test_not_2d", "test_and2d", "test_or2d", "test_xor2d",
	"test_where_example", "test_mod_mixed_sign_int64", "test_mod_mixed_sign_float32", "test_div_uint8",
	"test_floor", "test_ceil", "test_round", "test_sign", "test_sin", "test_cos", "test_tan", "test_asin",
	"test_acos", "test_atan", "test_sinh", "test_cosh", "test_asinh", "test_acosh", "test_atanh",
	"test_reduce_prod_default_axes_keepdims_example", "test_argmax_default_axis_example",
	"test_argmin_keepdims_example_select_last_index", "test_hardmax_example", "test_hardmax_axis_0",
	"test_gather_0", "test_gather_elements_negative_indices", "test_onehot_with_axis", "test_tril",
	"test_triu_neg", "test_isnan", "test_isinf", "test_shrink_hard", "test_thresholdedrelu",
	"test_if", "test_loop11", "test_scan9_sum", "test_lstm_with_peepholes", "test_gru_with_initial_bias",
	"test_simple_rnn_batchwise", "test_resize_upsample_scales_cubic", "test_resize_downsample_sizes_linear_pytorch_half_pixel",
	"test_resize_tf_crop_and_resize", "test_upsample_nearest", "test_convtranspose_dilations", "test_convtranspose_autopad_same", "test_convtranspose_3d",
	"test_scatter_elements_with_duplicate_indices", "test_scatternd_multiply", "test_gathernd_example_int32_batch_dim1",
	"test_lrn", "test_mvn", "test_nllloss_NCd1d2_with_weight_reduction_mean", "test_sce_mean_no_weight_ii_3d_log_prob",
	"test_top_k", "test_reversesequence_time", "test_bitshift_right_uint16", "test_eyelike_populate_off_main_diagonal",
	"test_quantizelinear_axis", "test_dequantizelinear_axis", "test_dynamicquantizelinear_max_adjusted",
	"test_matmulinteger", "test_convinteger_with_padding", "test_qlinearmatmul_3D", "test_qlinearconv",
	"test_gridsample_bilinear", "test_gridsample_reflection_padding",
}

// minModelsPassed guards against a silent drop in what the build handles:
// the count measured last (161 passed, 16 unsupported: Gradient, sequence
// ops, string and double inputs).
const minModelsPassed = 161

type outcome int

const (
	passed outcome = iota
	failed
	unsupported
)

func TestConformanceModels(t *testing.T) {
	if _, err := os.Stat(testdataRoot); err != nil {
		t.Fatalf("ONNX test data not found at %s: install Debian's libonnx-testdata (scripts/deps.sh does it)", testdataRoot)
	}
	type job struct{ suite, name, dir string }
	var jobs []job
	for _, s := range modelSuites {
		entries, err := os.ReadDir(filepath.Join(testdataRoot, s))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				jobs = append(jobs, job{s, e.Name(), filepath.Join(testdataRoot, s, e.Name())})
			}
		}
	}
	for _, name := range nodeCases {
		jobs = append(jobs, job{"node", name, filepath.Join(testdataRoot, "node", name)})
	}
	builder := &measure.Builder{Timeout: LibraryTimeout}
	type result struct {
		o      outcome
		reason string
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				o, why := runModelCase(t, jobs[i].dir, builder)
				results[i] = result{o, why}
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()

	var counts [3]int
	why := map[string]int{}
	for i, r := range results {
		counts[r.o]++
		switch r.o {
		case failed:
			t.Errorf("%s/%s: %s", jobs[i].suite, jobs[i].name, r.reason)
		case unsupported:
			why[r.reason]++
			if testing.Verbose() {
				t.Logf("unsupported %s/%s: %s", jobs[i].suite, jobs[i].name, r.reason)
			}
		}
	}
	reasons := make([]string, 0, len(why))
	for r := range why {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	fmt.Println("built models, unsupported by reason:")
	for _, r := range reasons {
		fmt.Printf("  %3d  %s\n", why[r], r)
	}
	fmt.Printf("built models (%v and %d node tests): %d passed, %d failed, %d unsupported\n", modelSuites, len(nodeCases), counts[passed], counts[failed], counts[unsupported])
	if counts[passed] < minModelsPassed {
		t.Errorf("%d models passed, want at least %d", counts[passed], minModelsPassed)
	}
}

// runModelCase builds and runs one test directory: every test_data_set_*
// must match.
func runModelCase(t *testing.T, dir string, builder *measure.Builder) (outcome, string) {
	g, err := onnx.DecodeFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return classify(err)
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return failed, "no test_data_set_* directory"
	}
	sort.Strings(sets)
	for _, set := range sets {
		o, why := runModelDataSet(t, g.Clone(), set, builder)
		if o == failed {
			return o, filepath.Base(set) + ": " + why
		}
		if o != passed {
			return o, why
		}
	}
	return passed, ""
}

// readTensors reads PREFIX_0.pb, PREFIX_1.pb, ... for n values.
func readTensors(set, prefix string, n int) ([]*graph.Tensor, error) {
	out := make([]*graph.Tensor, n)
	for i := range out {
		data, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("%s_%d.pb", prefix, i)))
		if err != nil {
			return nil, err
		}
		if _, out[i], err = onnx.DecodeTensor(data); err != nil {
			return nil, fmt.Errorf("%s %d: %w", prefix, i, err)
		}
	}
	return out, nil
}

func runModelDataSet(t *testing.T, g *graph.Graph, set string, builder *measure.Builder) (outcome, string) {
	inputs, err := readTensors(set, "input", len(g.Inputs))
	if err != nil {
		return classify(err)
	}
	want, err := readTensors(set, "output", len(g.Outputs))
	if err != nil {
		return classify(err)
	}
	byName := map[string]*graph.Tensor{}
	dims := map[string][]int{}
	for i, name := range g.Inputs {
		byName[name] = inputs[i]
		dims[name] = inputs[i].Shape
	}
	if err := g.Bind(dims); err != nil {
		return failed, err.Error()
	}
	var plan *partition.Plan
	for attempt := 0; ; attempt++ {
		base := g.Clone()
		err := frontend.RunPasses(g, nil)
		if err == nil {
			plan, err = partition.Extract(g, partition.Options{})
		}
		var nc *graph.NotConstantError
		if errors.As(err, &nc) && attempt < 8 {
			// The op needs this value's contents: freeze the inputs it is
			// computed from (as tune --input name=value does) and start over.
			g = base
			frozen := 0
			for _, name := range base.InputsBehind(nc.Value) {
				if err := g.Freeze(name, byName[name]); err != nil {
					return failed, err.Error()
				}
				frozen++
			}
			if frozen > 0 {
				continue
			}
		}
		if err != nil {
			return classify(err)
		}
		break
	}
	dir := t.TempDir()
	if _, err := Build(context.Background(), g, plan, dir, Options{Target: testTarget("", builder), Model: "model.onnx"}); err != nil {
		return classify(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		return failed, err.Error()
	}
	data := make([][]float32, len(g.Inputs))
	for i, name := range g.Inputs {
		if data[i], err = byName[name].KernelData(); err != nil {
			return classify(err)
		}
	}
	got, err := m.RunFloat32(context.Background(), data, tsrt.RunOptions{Threads: 1})
	if err != nil {
		return failed, err.Error()
	}
	for i, w := range want {
		wf, err := w.KernelData()
		if err != nil {
			return classify(err)
		}
		if ok, msg := measure.Compare(got[i], wf, 1e-4, 1e-5); !ok {
			return failed, fmt.Sprintf("output %s: %s", g.Outputs[i], msg)
		}
	}
	return passed, ""
}

// classify tells unsupported features from failures; unsupported reasons
// are shortened to the op where there is one, so that the tally groups
// them.
func classify(err error) (outcome, string) {
	var uo *graph.UnsupportedOpError
	switch {
	case errors.As(err, &uo):
		return unsupported, "op " + uo.Op
	case errors.Is(err, graph.ErrUnsupported):
		msg := err.Error()
		if i := strings.Index(msg, ".onnx: "); i >= 0 {
			msg = msg[i+len(".onnx: "):] // the file is in the test's name
		}
		return unsupported, msg
	}
	return failed, err.Error()
}
