package tuning

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/partition"
)

// dynamicModel writes a model of a dynamic batch N and sequence length S
// (a MatMul by a weight, then Relu) and returns its path.
func dynamicModel(t *testing.T, named bool) string {
	t.Helper()
	g := graph.New("dyn", 17)
	x := g.AddInput("x", graph.Float32, []int{-1, -1, 8})
	x.DimParams = []string{"N", "S", ""}
	if !named {
		x.DimParams[1] = ""
	}
	w := make([]float32, 8*4)
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	g.AddConst("w", graph.Float32Tensor([]int{8, 4}, w))
	g.AddNode(&graph.Node{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"m"}})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"m"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	path := filepath.Join(t.TempDir(), "dyn.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadRange: a model's dynamic dimensions, named by the file and
// ranged by the caller, give a symbolic plan whose task writes [N, S, 4];
// an unnamed one may be named by --input (x=N,T,8); binding one input
// leaves no symbol of it; a symbol without a range, a range of no symbol,
// an unnamed dynamic dimension and a name for a dimension the model fixes
// are errors that say what to do, and so is a named dimension given to a
// plain Load.
func TestLoadRange(t *testing.T) {
	path := dynamicModel(t, true)
	r, err := LoadRange(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}, "S": {16, 128}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp := r.Plan
	if len(sp.Tasks) != 1 {
		t.Fatalf("%d tasks", len(sp.Tasks))
	}
	var dims []string
	for _, p := range sp.Tasks[0].Output {
		dims = append(dims, p.String())
	}
	if got := strings.Join(dims, ","); got != "N,S,4" {
		t.Errorf("output [%s], want [N,S,4]", got)
	}
	// The unnamed dimension named on the command line (--input x=N,T,8).
	named := frontend.LoadOptions{Inputs: map[string][]int{"x": {-1, -1, 8}}, DimNames: map[string][]string{"x": {"N", "T", ""}}}
	if r, err := LoadRange(dynamicModel(t, false), named, map[string][2]int{"N": {1, 8}, "T": {4, 64}}, partition.Options{}); err != nil || r.Plan.Tasks[0].Output[1].String() != "T" {
		t.Errorf("--input x=N,T,8: %v", err)
	}
	if _, err := frontend.Load(path, named); err == nil || !strings.Contains(err.Error(), "--range N=lo..hi") {
		t.Errorf("Load of a named dimension: %v", err)
	}
	for _, c := range []struct {
		name   string
		path   string
		lo     frontend.LoadOptions
		ranges map[string][2]int
		want   string
	}{
		{"no range", path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}}, "dimension 1 (S) is dynamic: give it a range with --range S=lo..hi"},
		{"unknown", path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}, "S": {16, 128}, "T": {1, 4}}, "--range T: no dynamic dimension"},
		{"bound", path, frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}, map[string][2]int{"N": {1, 8}}, "--range N: no dynamic dimension"},
		{"unnamed", dynamicModel(t, false), frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}}, "dimension 1 is dynamic and has no name"},
		{"narrow", path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 3}, "S": {16, 128}}, "too narrow"},
		{"fixed named", path, frontend.LoadOptions{Inputs: map[string][]int{"x": {-1, -1, -1}}, DimNames: map[string][]string{"x": {"N", "S", "C"}}},
			map[string][2]int{"N": {1, 8}, "S": {16, 128}, "C": {2, 9}}, "dimension 2 is named C, but"},
	} {
		if _, err := LoadRange(c.path, c.lo, c.ranges, partition.Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// batchModel writes a model of input x [N, 4] whose node op (attributes
// attrs) makes y of it, and returns its path.
func batchModel(t *testing.T, op string, attrs map[string]graph.Attr) string {
	t.Helper()
	g := graph.New("batch_"+op, 17)
	x := g.AddInput("x", graph.Float32, []int{-1, 4})
	x.DimParams = []string{"N", ""}
	g.AddNode(&graph.Node{Name: "n", OpType: op, Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: attrs})
	g.Outputs = []string{"y"}
	path := filepath.Join(t.TempDir(), op+".onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadBatch: a model whose groups compute each sample apart loads at
// batch 1 with its batched values named; one whose groups combine samples
// (a reduction over the batch), moves the batch off the leading dimension
// (a transpose), has an output that folds the batch with another axis
// ([2·N, 2]; inside the model that is allowed: build's
// TestBatchBuildFolded) or ranges over two dimensions is refused, saying
// why.
func TestLoadBatch(t *testing.T) {
	lo := frontend.LoadOptions{Inputs: map[string][]int{"x": {-1, 5, 8}}, DimNames: map[string][]string{"x": {"N", "", ""}}}
	l, bp, err := LoadBatch(dynamicModel(t, true), lo, map[string][2]int{"N": {1, 8}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Graph.Values["x"].Shape; !slices.Equal(got, []int{1, 5, 8}) || !bp.Batched["x"] || !bp.Batched["y"] || bp.Symbol != (partition.Symbol{Name: "N", Lo: 1, Hi: 8}) {
		t.Errorf("at batch 1: x %v, batched %v, symbol %v", got, bp.Batched, bp.Symbol)
	}
	if _, _, err := LoadBatch(batchModel(t, "Softmax", map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 1}}), frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}}, partition.Options{}); err != nil {
		t.Errorf("softmax over the features: %v", err)
	}
	// A reshape that folds the batch with another axis: [N, 4] → [2·N, 2].
	g := graph.New("fold", 17)
	g.AddInput("x", graph.Float32, []int{-1, 4}).DimParams = []string{"N", ""}
	g.AddConst("shape", &graph.Tensor{DType: graph.Int64, Shape: []int{2}, I64: []int64{-1, 2}})
	g.AddNode(&graph.Node{Name: "r", OpType: "Reshape", Inputs: []string{"x", "shape"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	fold := filepath.Join(t.TempDir(), "fold.onnx")
	if err := onnx.EncodeFile(fold, g); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		lo         frontend.LoadOptions
		ranges     map[string][2]int
		want       string
	}{
		{"an output folding the batch", fold, frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}}, "value y, a model input or output: shape [2 2] at batch 1, [4 2] at 2: its leading dimension is 2·N"},
		{"two dimensions", dynamicModel(t, true), frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}, "S": {16, 128}}, "takes one dynamic dimension, the batch"},
		{"softmax over the batch", batchModel(t, "Softmax", map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 0}}), frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}}, "T1 depends on the batch other than by its leading extent"},
		{"transpose", batchModel(t, "Transpose", map[string]graph.Attr{"perm": {Kind: graph.AttrInts, Ints: []int64{1, 0}}}), frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}}, "only the leading dimension may be the batch"},
	} {
		if _, _, err := LoadBatch(c.path, c.lo, c.ranges, partition.Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestRangeEmphasis: weights on sequence lengths weigh the tasks of the
// tuning point nearest each (S=16..128: points 24, 48, 96), averaging 1
// over the points; a weight outside the range is an error naming it.
func TestRangeEmphasis(t *testing.T) {
	_, _, dp, err := LoadDims(dynamicModel(t, true), frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}, "S": {16, 128}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := dp.Symbol.TunePoints(); !slices.Equal(got, []int{24, 48, 96}) {
		t.Fatalf("tuning points %v", got)
	}
	em, note, err := RangeEmphasis(dp, map[int]float64{16: 1, 128: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{24: 0.75, 48: 0, 96: 2.25}
	for p, w := range want {
		key := dp.At[p-dp.Symbol.Lo].Plan.Tasks[0].Key
		if em[key] != w {
			t.Errorf("the task at S=%d weighs %v, want %v", p, em[key], w)
		}
	}
	if len(em) != 3 || note != "S=24 weighs 0.75, S=48 weighs 0.00, S=96 weighs 2.25" {
		t.Errorf("%d tasks weighed; note %q", len(em), note)
	}
	if _, _, err := RangeEmphasis(dp, map[int]float64{129: 1}); err == nil || !strings.Contains(err.Error(), "S=129, outside the range S=16..128") {
		t.Errorf("a weight outside the range: %v", err)
	}
}

// TestRangeSupport: a batch and a sequence length are taken, each said
// how; three dynamic dimensions are not, said why.
func TestRangeSupport(t *testing.T) {
	r, err := LoadRange(dynamicModel(t, true), frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}, "S": {16, 128}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Support("N=1..4,S=16..128")
	if !s.Yes || s.Ranges != "N=1..4,S=16..128" || len(s.How) != 2 || !strings.Contains(s.How[0], "one sample at a time (the model at N=1") ||
		!strings.Contains(s.How[1], "given to the kernels at run time (tuned at S=[24 48 96], 3 workloads") {
		t.Errorf("N and S: %+v", s)
	}
	g := graph.New("relu3", 17)
	g.AddInput("x", graph.Float32, []int{-1, -1, -1}).DimParams = []string{"N", "S", "C"}
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	path := filepath.Join(t.TempDir(), "relu3.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	if r, err = LoadRange(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}, "S": {16, 64}, "C": {4, 16}}, partition.Options{}); err != nil {
		t.Fatal(err)
	}
	if s := r.Support("N=1..4,S=16..64,C=4..16"); s.Yes || len(s.How) != 0 || !strings.Contains(s.Why, "takes a batch and one other dynamic dimension at most") {
		t.Errorf("N, S and C: %+v", s)
	}
}

// TestLoadPlan: without ranges the model as bound; over a batch the model
// at batch 1; over a batch and a sequence length, or a sequence length
// alone, the model at batch 1 and the sequence's largest value, which a
// build generates from (RangeModel); a range LoadDims refuses is its
// error.
func TestLoadPlan(t *testing.T) {
	path := dynamicModel(t, true)
	bound := frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}
	seq := frontend.LoadOptions{Inputs: map[string][]int{"x": {3, -1, 8}}, DimNames: map[string][]string{"x": {"", "S", ""}}}
	batch := frontend.LoadOptions{Inputs: map[string][]int{"x": {-1, 5, 8}}, DimNames: map[string][]string{"x": {"N", "", ""}}}
	for _, c := range []struct {
		name   string
		lo     frontend.LoadOptions
		ranges map[string][2]int
		x      []int // the shape of x in the model planned
		err    string
	}{
		{"no ranges", bound, nil, []int{2, 5, 8}, ""},
		{"a batch", batch, map[string][2]int{"N": {1, 8}}, []int{1, 5, 8}, ""},
		{"a sequence length", seq, map[string][2]int{"S": {16, 32}}, []int{3, 32, 8}, ""},
		{"a batch and a sequence length", frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}, "S": {16, 32}}, []int{1, 32, 8}, ""},
		{"a range of no dimension", bound, map[string][2]int{"T": {1, 4}}, nil, "no dynamic dimension of the inputs"},
	} {
		l, plan, err := LoadPlan(path, c.lo, c.ranges, partition.Options{})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := l.Graph.Values["x"].Shape; !slices.Equal(got, c.x) || len(plan.Tasks) != 1 {
			t.Errorf("%s: x %v, %d tasks; want x %v, 1 task", c.name, got, len(plan.Tasks), c.x)
		}
		if got := plan.Tasks[0].DAG.Tensors[0].Shape; len(c.ranges) > 0 && !slices.Equal(got, c.x) {
			t.Errorf("%s: the task reads %v, want %v", c.name, got, c.x)
		}
	}
}

// TestRangeDAGRow: the form of a task over the ranges, none for a
// negative task, and an error for a task the plan lacks.
func TestRangeDAGRow(t *testing.T) {
	r, err := LoadRange(dynamicModel(t, true), frontend.LoadOptions{}, map[string][2]int{"N": {1, 8}, "S": {16, 128}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int
		row  bool
		want string // in the form, or the error
	}{
		{-1, false, ""},
		{0, true, "S"},
		{1, false, "--dag 1: the model has 1 tasks"},
		{5, false, "--dag 5: the model has 1 tasks"},
	} {
		row, err := r.DAGRow(c.n)
		switch {
		case c.row && (err != nil || row == nil):
			t.Errorf("DAGRow(%d) = %v, %v; want a row", c.n, row, err)
		case c.row:
			tk := r.Plan.Tasks[0]
			if row.Task != c.n || row.Ops != tk.Ops || row.Key != tk.Key || row.Form != tk.Form || !strings.Contains(row.Form, c.want) {
				t.Errorf("DAGRow(%d) = %+v; want task %d's ops, key and form (over %s)", c.n, row, c.n, c.want)
			}
		case c.want == "" && (row != nil || err != nil):
			t.Errorf("DAGRow(%d) = %v, %v; want none", c.n, row, err)
		case c.want != "" && (row != nil || err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("DAGRow(%d) = %v, %v; want the error %q", c.n, row, err, c.want)
		}
	}
}
