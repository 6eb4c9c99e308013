package assemble

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
	"github.com/tessera-ml/tessera/tuning"
)

// The run-time index checks (indices.go): a model whose indices are
// data, built and run through the runtime; in-range indices give the
// reference evaluator's outputs, an index out of range the status
// ValueOutOfRange with a message naming the node and the element.

// indexGraph starts a graph of one output, "y".
func indexGraph(name string) *graph.Graph {
	g := graph.New(name, 17)
	g.Outputs = []string{"y"}
	return g
}

func axisAttr(a int64) map[string]graph.Attr {
	return map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: a}}
}

// runtimeInputs makes the runtime's tensors of inputs (in g's input
// order, integers as float32 values) at the shapes given (g's when nil).
func runtimeInputs(g *graph.Graph, in [][]float32, shapes [][]int) []tsrt.Tensor {
	out := make([]tsrt.Tensor, len(in))
	for i, name := range g.Inputs {
		v := g.Values[name]
		shape := v.Shape
		if shapes != nil {
			shape = shapes[i]
		}
		s := make([]int64, len(shape))
		for k, d := range shape {
			s[k] = int64(d)
		}
		if v.DType == graph.Int64 {
			ints := make([]int64, len(in[i]))
			for k, x := range in[i] {
				ints[k] = int64(x)
			}
			out[i] = tsrt.NewTensor(s, ints)
		} else {
			out[i] = tsrt.NewTensor(s, in[i])
		}
	}
	return out
}

// runRuntime runs model m on inputs and returns its outputs as float32.
func runRuntime(t *testing.T, m *tsrt.Model, in []tsrt.Tensor) ([][]float32, error) {
	t.Helper()
	outs, err := m.Run(context.Background(), in)
	if err != nil {
		return nil, err
	}
	var got [][]float32
	for _, o := range outs {
		v, err := tsrt.Values[float32](o)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	return got, nil
}

// wantOutOfRange checks that err is the runtime's ValueOutOfRange whose
// message holds every string of want.
func wantOutOfRange(t *testing.T, err error, want ...string) {
	t.Helper()
	var e *tsrt.Error
	if !errors.As(err, &e) || e.Status != tsrt.ValueOutOfRange {
		t.Errorf("got %v, want a *runtime.Error of status ValueOutOfRange", err)
		return
	}
	for _, w := range want {
		if !strings.Contains(e.Msg, w) {
			t.Errorf("message %q does not name %q", e.Msg, w)
		}
	}
}

// TestIndexChecks builds one model per op that reads indices at run time
// (and one whose indices the model computes), runs each on in-range
// indices (negative ones among them) against the reference evaluator,
// and on indices out of range, which the library refuses naming the
// node, the indices, the element and the bounds.
func TestIndexChecks(t *testing.T) {
	type bad struct {
		in   [][]float32 // the inputs, one index changed
		want []string    // in the message, besides the node's description
	}
	cases := []struct {
		name  string
		graph func() *graph.Graph
		good  [][]float32
		what  string // the node's description in the message
		bad   []bad
	}{
		{
			// The embedding of a BERT: 1,000 rows.
			name: "Gather",
			graph: func() *graph.Graph {
				g := indexGraph("gather")
				g.AddInput("input_ids", graph.Int64, []int{2, 3})
				weights(g, 3, 1)("embeddings.word_embeddings.weight", 1000, 4)
				g.AddNode(&graph.Node{Name: "/embeddings/word_embeddings/Gather", OpType: "Gather", Inputs: []string{"embeddings.word_embeddings.weight", "input_ids"}, Outputs: []string{"y"}})
				return g
			},
			good: [][]float32{{0, 999, 17, -1, -1000, 500}},
			what: `Gather "/embeddings/word_embeddings/Gather" (indices "input_ids", axis 0 of "embeddings.word_embeddings.weight")`,
			bad: []bad{
				{[][]float32{{0, 999, 17, -1, 1000, 500}}, []string{"element 4 is 1000, outside [-1000, 999]"}},
				{[][]float32{{5000, 999, 17, -1, 1, 500}}, []string{"element 0 is 5000, outside [-1000, 999]"}},
				{[][]float32{{0, 999, 17, -1, 1, -1001}}, []string{"element 5 is -1001, outside [-1000, 999]"}},
			},
		},
		{
			name: "GatherElements",
			graph: func() *graph.Graph {
				g := indexGraph("gather_elements")
				g.AddInput("x", graph.Float32, []int{3, 5})
				g.AddInput("idx", graph.Int64, []int{3, 2})
				g.AddNode(&graph.Node{Name: "ge", OpType: "GatherElements", Inputs: []string{"x", "idx"}, Outputs: []string{"y"}, Attrs: axisAttr(1)})
				return g
			},
			good: [][]float32{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, {0, 4, -5, -1, 2, 3}},
			what: `GatherElements "ge" (indices "idx", axis 1 of "x")`,
			bad:  []bad{{[][]float32{make([]float32, 15), {0, 4, -5, -1, 5, 3}}, []string{"element 4 is 5, outside [-5, 4]"}}},
		},
		{
			// Tuples of two indices into axes 0 and 1 of [4, 5, 6].
			name: "GatherND",
			graph: func() *graph.Graph {
				g := indexGraph("gather_nd")
				weights(g, 4, 1)("data", 4, 5, 6)
				g.AddInput("idx", graph.Int64, []int{3, 2})
				g.AddNode(&graph.Node{Name: "gnd", OpType: "GatherND", Inputs: []string{"data", "idx"}, Outputs: []string{"y"}})
				return g
			},
			good: [][]float32{{0, 0, 3, 4, -4, -5}},
			what: `GatherND "gnd" (indices "idx", axes 0, 1 of "data")`,
			bad: []bad{
				{[][]float32{{0, 0, 3, 5, -4, -5}}, []string{"element 3 is 5, outside [-5, 4]"}},
				{[][]float32{{0, 0, 4, 4, -4, -5}}, []string{"element 2 is 4, outside [-4, 3]"}},
			},
		},
		{
			// batch_dims 1: the tuple of one indexes axis 1.
			name: "GatherND batch_dims",
			graph: func() *graph.Graph {
				g := indexGraph("gather_nd_batch")
				g.AddInput("data", graph.Float32, []int{2, 5, 3})
				g.AddInput("idx", graph.Int64, []int{2, 2, 1})
				g.AddNode(&graph.Node{Name: "gnd", OpType: "GatherND", Inputs: []string{"data", "idx"}, Outputs: []string{"y"},
					Attrs: map[string]graph.Attr{"batch_dims": {Kind: graph.AttrInt, I: 1}}})
				return g
			},
			good: [][]float32{ramp(30), {4, -5, 0, 2}},
			what: `GatherND "gnd" (indices "idx", axis 1 of "data")`,
			bad:  []bad{{[][]float32{ramp(30), {4, -5, 0, -6}}, []string{"element 3 is -6, outside [-5, 4]"}}},
		},
		{
			name: "ScatterElements",
			graph: func() *graph.Graph {
				g := indexGraph("scatter_elements")
				g.AddInput("data", graph.Float32, []int{4, 3})
				g.AddInput("idx", graph.Int64, []int{2, 3})
				g.AddInput("upd", graph.Float32, []int{2, 3})
				g.AddNode(&graph.Node{Name: "se", OpType: "ScatterElements", Inputs: []string{"data", "idx", "upd"}, Outputs: []string{"y"}, Attrs: axisAttr(0)})
				return g
			},
			good: [][]float32{ramp(12), {0, -1, 2, 3, 1, -4}, {100, 101, 102, 103, 104, 105}},
			what: `ScatterElements "se" (indices "idx", axis 0 of "data")`,
			bad:  []bad{{[][]float32{ramp(12), {0, -1, 2, 3, 4, -4}, ramp(6)}, []string{"element 4 is 4, outside [-4, 3]"}}},
		},
		{
			name: "ScatterND",
			graph: func() *graph.Graph {
				g := indexGraph("scatter_nd")
				g.AddInput("data", graph.Float32, []int{4, 3})
				g.AddInput("idx", graph.Int64, []int{2, 1})
				g.AddInput("upd", graph.Float32, []int{2, 3})
				g.AddNode(&graph.Node{Name: "snd", OpType: "ScatterND", Inputs: []string{"data", "idx", "upd"}, Outputs: []string{"y"}})
				return g
			},
			good: [][]float32{ramp(12), {-1, 1}, {100, 101, 102, 103, 104, 105}},
			what: `ScatterND "snd" (indices "idx", axis 0 of "data")`,
			bad:  []bad{{[][]float32{ramp(12), {-5, 1}, ramp(6)}, []string{"element 0 is -5, outside [-4, 3]"}}},
		},
		{
			// sequence_lens count along the time axis: [0, T].
			name: "ReverseSequence",
			graph: func() *graph.Graph {
				g := indexGraph("reverse_sequence")
				g.AddInput("x", graph.Float32, []int{4, 3, 2})
				g.AddInput("lens", graph.Int64, []int{3})
				g.AddNode(&graph.Node{Name: "rs", OpType: "ReverseSequence", Inputs: []string{"x", "lens"}, Outputs: []string{"y"}})
				return g
			},
			good: [][]float32{ramp(24), {4, 0, 2}},
			what: `ReverseSequence "rs" (sequence_lens "lens", axis 0 of "x")`,
			bad:  []bad{{[][]float32{ramp(24), {4, 5, 2}}, []string{"element 1 is 5, outside [0, 4]"}}},
		},
		{
			// The model computes the indices: ids + 1, then the lookup.
			name: "computed by Add",
			graph: func() *graph.Graph {
				g := indexGraph("computed_add")
				g.AddInput("ids", graph.Int64, []int{4})
				weights(g, 5, 1)("table", 100, 8)
				g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
				g.AddNode(&graph.Node{Name: "next", OpType: "Add", Inputs: []string{"ids", "one"}, Outputs: []string{"next_ids"}})
				g.AddNode(&graph.Node{Name: "lookup", OpType: "Gather", Inputs: []string{"table", "next_ids"}, Outputs: []string{"y"}})
				return g
			},
			good: [][]float32{{0, 98, -1, -101}},
			what: `Gather "lookup" (indices "next_ids", axis 0 of "table")`,
			bad:  []bad{{[][]float32{{0, 99, -1, 3}}, []string{"element 1 is 100, outside [-100, 99]"}}},
		},
		{
			// ArgMax picks a row of a table too short for some of them.
			name: "computed by ArgMax",
			graph: func() *graph.Graph {
				g := indexGraph("computed_argmax")
				g.AddInput("scores", graph.Float32, []int{2, 6})
				weights(g, 6, 1)("table", 4, 3)
				g.AddNode(&graph.Node{Name: "best", OpType: "ArgMax", Inputs: []string{"scores"}, Outputs: []string{"pick"}, Attrs: axisAttr(1)})
				g.AddNode(&graph.Node{Name: "row", OpType: "Gather", Inputs: []string{"table", "pick"}, Outputs: []string{"y"}})
				return g
			},
			good: [][]float32{{0, 0, 0, 9, 0, 0, 1, 2, 3, 4, 0, 0}},
			what: `Gather "row" (indices "pick", axis 0 of "table")`,
			bad:  []bad{{[][]float32{{0, 0, 0, 9, 0, 0, 1, 2, 3, 4, 0, 5}}, []string{"element 1 is 5, outside [-4, 3]"}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := prepare(t, c.graph())
			dir := t.TempDir()
			if _, err := Build(context.Background(), p.g, p.plan, dir, Options{Target: testTarget(recordsKey, nil)}); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join(dir, SourceFile))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "tsr_check_indices(") {
				t.Errorf("model.c checks no indices")
			}
			m, err := tsrt.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			got, err := runRuntime(t, m, runtimeInputs(p.g, c.good, nil))
			if err != nil {
				t.Fatalf("in range: %v", err)
			}
			want, err := Reference(p.g, c.good)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[0], want[0]) {
				t.Errorf("in range: got %v, want %v", got[0], want[0])
			}
			for _, b := range c.bad {
				_, err := runRuntime(t, m, runtimeInputs(p.g, b.in, nil))
				wantOutOfRange(t, err, append([]string{"tessera_run: " + c.what + ": "}, b.want...)...)
			}
			// The model runs on after a refusal.
			if again, err := runRuntime(t, m, runtimeInputs(p.g, c.good, nil)); err != nil || !slices.Equal(again[0], want[0]) {
				t.Errorf("in range after a refusal: %v", err)
			}
		})
	}
}

// ramp returns 0, 1, ..., n-1.
func ramp(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i)
	}
	return out
}

// TestIndexChecksComputedApart: fusion leaves indices the model computes
// in a buffer of their own, so the executor checks them there; the Add
// before the Gather is a group apart, the Gather's group reads its output.
func TestIndexChecksComputedApart(t *testing.T) {
	g := indexGraph("apart")
	g.AddInput("ids", graph.Int64, []int{4})
	weights(g, 5, 1)("table", 100, 8)
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "next", OpType: "Add", Inputs: []string{"ids", "one"}, Outputs: []string{"next_ids"}})
	g.AddNode(&graph.Node{Name: "lookup", OpType: "Gather", Inputs: []string{"table", "next_ids"}, Outputs: []string{"g"}})
	g.AddNode(&graph.Node{Name: "act", OpType: "Relu", Inputs: []string{"g"}, Outputs: []string{"y"}})
	p := prepare(t, g)
	var ops []string
	for _, grp := range p.plan.Groups {
		ops = append(ops, grp.Ops())
	}
	if !slices.Equal(ops, []string{"Add", "Gather+Relu"}) {
		t.Fatalf("groups %v, want [Add Gather+Relu]", ops)
	}
	f, err := Generate(p.g, p.plan, Options{Target: testTarget(recordsKey, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// The check reads the Add's output in the arena, in step 1 only.
	_, step1, _ := strings.Cut(f.Source, "/* step 1:")
	step0, _, _ := strings.Cut(f.Source, "/* step 1:")
	check := `static const int64_t lo[] = {-100}, hi[] = {99};
      if ((rc = tsr_check_indices(a + `
	if !strings.Contains(step1, check) || !strings.Contains(step1, `, 4, 1, lo, hi, "Gather \"lookup\" (indices \"next_ids\", axis 0 of \"table\")")`) {
		t.Errorf("step 1 checks no indices in the arena:\n%s", step1)
	}
	if strings.Contains(step0, "tsr_check_indices(") {
		t.Errorf("step 0 checks indices:\n%s", step0)
	}
}

// TestIndexChecksInsideGroup: were indices computed inside the group
// that reads them, the build would fail rather than leave them unchecked.
func TestIndexChecksInsideGroup(t *testing.T) {
	g := indexGraph("inside")
	g.AddInput("ids", graph.Int64, []int{4})
	weights(g, 5, 1)("table", 100, 8)
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "next", OpType: "Add", Inputs: []string{"ids", "one"}, Outputs: []string{"next_ids"}})
	g.AddNode(&graph.Node{Name: "lookup", OpType: "Gather", Inputs: []string{"table", "next_ids"}, Outputs: []string{"y"}})
	p := prepare(t, g)
	// One group of both, as fusion made it before the checks.
	one := &partition.Group{Nodes: p.g.Nodes, Outputs: []string{"y"}, Inputs: []string{"ids", "table"}}
	_, err := indexChecks(p.g, one, map[string]place{"ids": {kind: inInput}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "internal error") || !strings.Contains(err.Error(), "computes next_ids") {
		t.Errorf("got %v, want an internal error naming next_ids", err)
	}
}

// TestIndexChecksBatch builds a lookup over a dynamic batch N=1..4: an id
// out of range in the last sample of a run at N=3 is found, named by its
// element in the whole batch.
func TestIndexChecksBatch(t *testing.T) {
	g := indexGraph("lookup_batch")
	ids := g.AddInput("ids", graph.Int64, []int{-1, 3})
	ids.DimParams = []string{"N", ""}
	weights(g, 7, 1)("table", 1000, 4)
	g.AddNode(&graph.Node{Name: "lookup", OpType: "Gather", Inputs: []string{"table", "ids"}, Outputs: []string{"y"}})
	path := filepath.Join(t.TempDir(), "lookup_batch.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Build(context.Background(), bp.One.Graph, bp.One.Plan, dir, Options{Target: testTarget(recordsKey, nil), Batch: bp}); err != nil {
		t.Fatal(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := []float32{0, 1, 2, 999, -1, -1000, 7, 8, 9}
	shapes := [][]int{{3, 3}}
	got, err := runRuntime(t, m, runtimeInputs(bp.One.Graph, [][]float32{in}, shapes))
	if err != nil {
		t.Fatal(err)
	}
	want := referenceAt(t, path, map[string][]int{"ids": {3, 3}}, [][]float32{in})
	if !slices.Equal(got[0], want[0]) {
		t.Errorf("N=3: got %v, want %v", got[0], want[0])
	}
	in[8] = 1000
	_, err = runRuntime(t, m, runtimeInputs(bp.One.Graph, [][]float32{in}, shapes))
	wantOutOfRange(t, err, `Gather "lookup" (indices "ids", axis 0 of "table")`, "element 8 is 1000, outside [-1000, 999]")
}

// TestIndexChecksDim builds a GatherElements along a dimension given at
// run time, S=2..6, over a batch B=1..4, its indices computed by the
// model: the bounds and the count are the run's S, and the indices (an
// arena value, a sample a slot of the largest S apart) are checked in
// each sample.
func TestIndexChecksDim(t *testing.T) {
	g := indexGraph("gather_dim")
	for _, name := range []string{"x", "idx"} {
		dt := graph.Float32
		if name == "idx" {
			dt = graph.Int64
		}
		v := g.AddInput(name, dt, []int{-1, -1})
		v.DimParams = []string{"B", "S"}
	}
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "shift", OpType: "Add", Inputs: []string{"idx", "one"}, Outputs: []string{"next"}})
	g.AddNode(&graph.Node{Name: "ge", OpType: "GatherElements", Inputs: []string{"x", "next"}, Outputs: []string{"y"}, Attrs: axisAttr(1)})
	path := filepath.Join(t.TempDir(), "gather_dim.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	r, err := tuning.LoadRange(path, frontend.LoadOptions{}, map[string][2]int{"B": {1, 4}, "S": {2, 6}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, bp, dp, err := r.Dims()
	if err != nil {
		t.Fatal(err)
	}
	if bp == nil || dp == nil {
		t.Fatalf("batch %v, dimension %v", bp, dp)
	}
	dir := t.TempDir()
	if _, err := Build(context.Background(), dp.Hi().Graph, dp.Hi().Plan, dir, Options{Target: testTarget(recordsKey, nil), Batch: bp, Dim: dp}); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, SourceFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "lo[] = {(-dim)}, hi[] = {(dim - 1)}") {
		t.Errorf("model.c has no bounds of dim:\n%s", src)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const b, s = 2, 4
	x := ramp(b * s)
	idx := []float32{-5, 0, 1, 2, 2, 1, 0, -1} // +1: [-4, 3] at S=4
	shapes := [][]int{{b, s}, {b, s}}
	got, err := runRuntime(t, m, runtimeInputs(dp.Hi().Graph, [][]float32{x, idx}, shapes))
	if err != nil {
		t.Fatal(err)
	}
	want := referenceAt(t, path, map[string][]int{"x": {b, s}, "idx": {b, s}}, [][]float32{x, idx})
	if !slices.Equal(got[0], want[0]) {
		t.Errorf("B=%d, S=%d: got %v, want %v", b, s, got[0], want[0])
	}
	idx[6] = 3 // 4 in the second sample: out of [-4, 3]
	_, err = runRuntime(t, m, runtimeInputs(dp.Hi().Graph, [][]float32{x, idx}, shapes))
	wantOutOfRange(t, err, `GatherElements "ge" (indices "next", axis 1 of "x"), in one sample`, "element 2 is 4, outside [-4, 3]")
}

// TestOneHotOutOfRange: OneHot is not checked, since ONNX defines an
// index outside [-depth, depth-1] as a row of off_value; the built model
// and the reference evaluator give exactly that.
func TestOneHotOutOfRange(t *testing.T) {
	g := indexGraph("onehot")
	g.AddInput("idx", graph.Int64, []int{5})
	g.AddConst("depth", graph.Int64Tensor([]int{}, []int64{3}))
	g.AddConst("values", graph.Float32Tensor([]int{2}, []float32{-1, 7}))
	g.AddNode(&graph.Node{Name: "oh", OpType: "OneHot", Inputs: []string{"idx", "depth", "values"}, Outputs: []string{"y"}})
	p := prepare(t, g)
	dir := t.TempDir()
	if _, err := Build(context.Background(), p.g, p.plan, dir, Options{Target: testTarget(recordsKey, nil)}); err != nil {
		t.Fatal(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := [][]float32{{1, -1, 3, -4, 1000}}
	want := []float32{
		-1, 7, -1, // 1
		-1, -1, 7, // -1: 2
		-1, -1, -1, // 3: out of range
		-1, -1, -1, // -4: out of range
		-1, -1, -1, // 1000: out of range
	}
	got, err := runRuntime(t, m, runtimeInputs(p.g, in, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference(p.g, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0], want) || !slices.Equal(ref[0], want) {
		t.Errorf("built %v, reference %v, want %v", got[0], ref[0], want)
	}
}

// TestGPUIndexChecks builds a model for the opencl target (PoCL here)
// whose lookups read ids given by the caller, checked on the host before
// the upload, and ids the device computes, downloaded and checked before
// the group that reads them.
func TestGPUIndexChecks(t *testing.T) {
	tg, err := backend.OpenCL(context.Background(), backend.GPUConfig{Host: &measure.Builder{Timeout: LibraryTimeout}})
	if errors.Is(err, measure.ErrNoDevice) && os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") == "" {
		t.Skipf("no OpenCL device (scripts/deps.sh installs PoCL): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	g := indexGraph("gpu_lookup")
	g.AddInput("ids", graph.Int64, []int{4})
	weights(g, 5, 1)("table", 100, 8)
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "next", OpType: "Add", Inputs: []string{"ids", "one"}, Outputs: []string{"next_ids"}})
	g.AddNode(&graph.Node{Name: "lookup", OpType: "Gather", Inputs: []string{"table", "next_ids"}, Outputs: []string{"g1"}})
	g.AddNode(&graph.Node{Name: "lookup2", OpType: "Gather", Inputs: []string{"table", "ids"}, Outputs: []string{"g2"}})
	g.AddNode(&graph.Node{Name: "sum", OpType: "Add", Inputs: []string{"g1", "g2"}, Outputs: []string{"y"}})
	p := prepare(t, g)
	dir := t.TempDir()
	if _, err := Build(context.Background(), p.g, p.plan, dir, Options{Records: emptyRecords{}, Target: tg}); err != nil {
		t.Fatal(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	good := [][]float32{{0, 98, -1, -100}}
	got, err := runRuntime(t, m, runtimeInputs(p.g, good, nil))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Reference(p.g, good)
	if err != nil {
		t.Fatal(err)
	}
	if ok, msg := compareOutputs(got[0], want[0]); !ok {
		t.Errorf("in range: %s", msg)
	}
	_, err = runRuntime(t, m, runtimeInputs(p.g, [][]float32{{0, 99, -1, 3}}, nil))
	wantOutOfRange(t, err, `Gather "lookup" (indices "next_ids", axis 0 of "table")`, "element 1 is 100, outside [-100, 99]")
	_, err = runRuntime(t, m, runtimeInputs(p.g, [][]float32{{0, 1, -101, 3}}, nil))
	wantOutOfRange(t, err, `Gather "lookup2" (indices "ids", axis 0 of "table")`, "element 2 is -101, outside [-100, 99]")
	if again, err := runRuntime(t, m, runtimeInputs(p.g, good, nil)); err != nil || !slices.Equal(again[0], got[0]) {
		t.Errorf("in range after a refusal: %v", err)
	}
}
