package ops

import (
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
)

// indexNode returns a graph with float32 inputs of the shapes given
// (named x0, x1, ...; the one at idx an int64 input, or the constant
// indices when consts is not nil) and node op reading them.
func indexNode(op string, shapes [][]int, idx int, consts []int64, attrs map[string]graph.Attr) (*graph.Graph, *graph.Node) {
	g := graph.New("t", 17)
	var ins []string
	for i, s := range shapes {
		name := "x" + string(rune('0'+i))
		switch {
		case i == idx && consts != nil:
			g.AddConst(name, graph.Int64Tensor(s, consts))
		case i == idx:
			g.AddInput(name, graph.Int64, s)
		default:
			g.AddInput(name, graph.Float32, s)
		}
		ins = append(ins, name)
	}
	n := g.AddNode(&graph.Node{Name: "n", OpType: op, Inputs: ins, Outputs: []string{"y"}, Attrs: attrs})
	g.Outputs = []string{"y"}
	return g, n
}

// inferOne runs the shape rule of node n of g, its inputs typed, as shape
// inference (package frontend) does.
func inferOne(g *graph.Graph, n *graph.Node) error {
	c := &InferCtx{G: g, N: n, Opset: g.OpsetOf(n)}
	for _, in := range n.Inputs {
		c.In = append(c.In, g.Values[in])
	}
	for _, o := range n.Outputs {
		c.Out = append(c.Out, g.Value(o))
	}
	return LookupNode(n).InferNode(c)
}

func intAttrs(kv ...any) map[string]graph.Attr {
	m := map[string]graph.Attr{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = graph.Attr{Kind: graph.AttrInt, I: int64(kv[i+1].(int))}
	}
	return m
}

// TestIndexOperands: each op that reads indices at run time says which
// input holds them, the data's axes they index and their bounds (ONNX's:
// [-d, d-1]; sequence_lens [0, T]); ops that do not read indices, or
// whose out-of-range indices ONNX defines (OneHot), say none.
func TestIndexOperands(t *testing.T) {
	cases := []struct {
		op     string
		shapes [][]int
		attrs  map[string]graph.Attr
		axes   []int // nil: no operand
		lo, hi []int64
		what   string
	}{
		{"Gather", [][]int{{1000, 4}, {2, 3}}, nil, []int{0}, []int64{-1000}, []int64{999}, `Gather "n" (indices "x1", axis 0 of "x0")`},
		{"Gather", [][]int{{5, 7, 2}, {3}}, intAttrs("axis", -2), []int{1}, []int64{-7}, []int64{6}, ""},
		{"GatherElements", [][]int{{3, 5}, {3, 2}}, intAttrs("axis", 1), []int{1}, []int64{-5}, []int64{4}, ""},
		{"ScatterElements", [][]int{{4, 3}, {2, 3}, {2, 3}}, nil, []int{0}, []int64{-4}, []int64{3}, ""},
		{"Scatter", [][]int{{4, 3}, {4, 2}, {4, 2}}, intAttrs("axis", 1), []int{1}, []int64{-3}, []int64{2}, ""},
		{"GatherND", [][]int{{4, 5, 6}, {3, 2}}, nil, []int{0, 1}, []int64{-4, -5}, []int64{3, 4}, `GatherND "n" (indices "x1", axes 0, 1 of "x0")`},
		{"GatherND", [][]int{{2, 5, 6}, {2, 3, 2}}, intAttrs("batch_dims", 1), []int{1, 2}, []int64{-5, -6}, []int64{4, 5}, ""},
		{"ScatterND", [][]int{{4, 5, 6}, {3, 1}, {3, 5, 6}}, nil, []int{0}, []int64{-4}, []int64{3}, ""},
		{"ReverseSequence", [][]int{{4, 3, 2}, {3}}, nil, []int{0}, []int64{0}, []int64{4}, `ReverseSequence "n" (sequence_lens "x1", axis 0 of "x0")`},
		{"ReverseSequence", [][]int{{3, 4, 2}, {3}}, intAttrs("time_axis", 1, "batch_axis", 0), []int{1}, []int64{0}, []int64{4}, ""},
		{"OneHot", [][]int{{5}, {}, {2}}, nil, nil, nil, nil, ""},
		{"Slice", [][]int{{5}, {1}, {1}}, nil, nil, nil, nil, ""},
	}
	for _, c := range cases {
		g, n := indexNode(c.op, c.shapes, 1, nil, c.attrs)
		ios, err := IndexOperands(g, n)
		if err != nil {
			t.Errorf("%s %v: %v", c.op, c.shapes, err)
			continue
		}
		if c.axes == nil {
			if len(ios) != 0 || ReadsIndices(g, n, "x1") {
				t.Errorf("%s: operands %+v, want none", c.op, ios)
			}
			continue
		}
		if len(ios) != 1 || ios[0].Input != 1 || ios[0].Data != 0 || !slices.Equal(ios[0].Axes, c.axes) {
			t.Errorf("%s %v: operands %+v, want input 1 indexing axes %v of input 0", c.op, c.shapes, ios, c.axes)
			continue
		}
		lo, hi := ios[0].Bounds(c.shapes[0])
		if !slices.Equal(lo, c.lo) || !slices.Equal(hi, c.hi) {
			t.Errorf("%s %v: bounds %v..%v, want %v..%v", c.op, c.shapes, lo, hi, c.lo, c.hi)
		}
		if c.what != "" && ios[0].Describe(n) != c.what {
			t.Errorf("%s: %q, want %q", c.op, ios[0].Describe(n), c.what)
		}
		if !ReadsIndices(g, n, "x1") || ReadsIndices(g, n, "x0") {
			t.Errorf("%s: ReadsIndices(x1) %v, ReadsIndices(x0) %v", c.op, ReadsIndices(g, n, "x1"), ReadsIndices(g, n, "x0"))
		}
	}
}

// TestConstantIndicesChecked: shape inference refuses constant indices
// out of their bounds, for every op with index operands (one place:
// Op.Indices), and accepts those within, negative ones included.
func TestConstantIndicesChecked(t *testing.T) {
	cases := []struct {
		op      string
		shapes  [][]int
		attrs   map[string]graph.Attr
		good    []int64
		bad     []int64
		wantBad string
	}{
		{"Gather", [][]int{{10, 4}, {3}}, nil, []int64{0, -10, 9}, []int64{0, 10, 1}, "indices x1 element 1 is 10, outside [-10, 9] (axis 0 of x0, of extent 10)"},
		{"GatherElements", [][]int{{3, 5}, {3, 1}}, intAttrs("axis", 1), []int64{4, -5, 0}, []int64{4, -6, 0}, "element 1 is -6, outside [-5, 4]"},
		{"GatherND", [][]int{{4, 5}, {2, 2}}, nil, []int64{3, 4, -4, -5}, []int64{3, 4, -4, 5}, "element 3 is 5, outside [-5, 4]"},
		{"ScatterElements", [][]int{{4, 3}, {1, 3}, {1, 3}}, nil, []int64{3, -4, 0}, []int64{3, 4, 0}, "element 1 is 4, outside [-4, 3]"},
		{"ScatterND", [][]int{{4, 3}, {2, 1}, {2, 3}}, nil, []int64{3, -4}, []int64{3, -5}, "element 1 is -5, outside [-4, 3]"},
		{"ReverseSequence", [][]int{{4, 3, 2}, {3}}, nil, []int64{4, 0, 2}, []int64{4, 5, 2}, "element 1 is 5, outside [0, 4]"},
	}
	for _, c := range cases {
		if err := inferOne(indexNode(c.op, c.shapes, 1, c.good, c.attrs)); err != nil {
			t.Errorf("%s with indices %v: %v", c.op, c.good, err)
		}
		if err := inferOne(indexNode(c.op, c.shapes, 1, c.bad, c.attrs)); err == nil || !strings.Contains(err.Error(), c.wantBad) {
			t.Errorf("%s with indices %v: %v, want an error containing %q", c.op, c.bad, err, c.wantBad)
		}
	}
}
