package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/graph/onnx/onnxpb"
)

// The crafted models of the hostile-input campaign (campaign_test.go):
// each is a small graph built with the graph package and written with
// tessera's own ONNX encoder, sometimes edited as a protobuf afterwards
// (versions, declared types) where the graph cannot say it. Most are
// invalid on purpose; the valid ones are small enough to tune and build
// in a second.

// craftedModel is one model file of the campaign.
type craftedModel struct {
	name  string
	build func() *graph.Graph
	edit  func(m *onnxpb.ModelProto) // nil: written as encoded
}

// gb starts a graph of the default opset with float32 inputs.
type gb struct{ g *graph.Graph }

func newGB(name string, inputs map[string][]int) *gb {
	b := &gb{graph.New(name, 17)}
	for _, n := range sortedKeys(inputs) {
		b.g.AddInput(n, graph.Float32, inputs[n])
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func (b *gb) node(name, op string, in, out []string, attrs map[string]graph.Attr) *gb {
	b.g.AddNode(&graph.Node{Name: name, OpType: op, Inputs: in, Outputs: out, Attrs: attrs})
	return b
}

func (b *gb) out(names ...string) *graph.Graph {
	b.g.Outputs = names
	return b.g
}

func ints(v ...int64) graph.Attr  { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
func intA(v int64) graph.Attr     { return graph.Attr{Kind: graph.AttrInt, I: v} }
func strA(v string) graph.Attr    { return graph.Attr{Kind: graph.AttrString, S: v} }
func floatA(v float32) graph.Attr { return graph.Attr{Kind: graph.AttrFloat, F: v} }
func at(kv ...any) map[string]graph.Attr {
	m := map[string]graph.Attr{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(graph.Attr)
	}
	return m
}

// unary is one op on x of the given shape.
func unary(name, op string, shape []int, attrs map[string]graph.Attr) func() *graph.Graph {
	return func() *graph.Graph {
		return newGB(name, map[string][]int{"x": shape}).node("n", op, []string{"x"}, []string{"y"}, attrs).out("y")
	}
}

// chain is n Adds in a row, each of the previous value and x.
func chain(n int) func() *graph.Graph {
	return func() *graph.Graph {
		b := newGB(fmt.Sprintf("chain%d", n), map[string][]int{"x": {1, 16}})
		prev := "x"
		for i := range n {
			o := fmt.Sprintf("v%d", i)
			b.node(fmt.Sprintf("add%d", i), "Add", []string{prev, "x"}, []string{o}, nil)
			prev = o
		}
		return b.out(prev)
	}
}

// matmul multiplies x [m,k] by a constant [k,n].
func matmul(m, k, n int, constant bool) func() *graph.Graph {
	return func() *graph.Graph {
		ins := map[string][]int{"x": {m, k}}
		if !constant {
			ins["w"] = []int{k, n}
		}
		b := newGB("matmul", ins)
		if constant {
			b.g.AddConst("w", graph.Float32Tensor([]int{k, n}, make([]float32, k*n)))
		}
		return b.node("mm", "MatMul", []string{"x", "w"}, []string{"y"}, nil).out("y")
	}
}

// withConst is x op c for a constant c of the given shape and data.
func withConst(name, op string, x, c []int, data []float32, attrs map[string]graph.Attr) func() *graph.Graph {
	return func() *graph.Graph {
		b := newGB(name, map[string][]int{"x": x})
		b.g.AddConst("c", graph.Float32Tensor(c, data))
		return b.node("n", op, []string{"x", "c"}, []string{"y"}, attrs).out("y")
	}
}

// withInts is op(x, an int64 constant), for the shape-taking ops.
func withInts(name, op string, x []int, vals ...[]int64) func() *graph.Graph {
	return func() *graph.Graph {
		b := newGB(name, map[string][]int{"x": x})
		in := []string{"x"}
		for i, v := range vals {
			c := fmt.Sprintf("c%d", i)
			b.g.AddConst(c, graph.Int64Tensor([]int{len(v)}, v))
			in = append(in, c)
		}
		return b.node("n", op, in, []string{"y"}, nil).out("y")
	}
}

// named is a Relu whose node, input and output carry the given names.
func named(node, in, out string) func() *graph.Graph {
	return func() *graph.Graph {
		return newGB("named", map[string][]int{in: {1, 4}}).node(node, "Relu", []string{in}, []string{out}, nil).out(out)
	}
}

// setOutputType declares output 0 as float32 (or elem) of the given dims.
func setOutputType(elem onnxpb.TensorProto_DataType, dims ...int64) func(m *onnxpb.ModelProto) {
	return func(m *onnxpb.ModelProto) {
		var ds []*onnxpb.TensorShapeProto_Dimension
		for _, d := range dims {
			ds = append(ds, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		m.Graph.Output[0].Type = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: int32(elem), Shape: &onnxpb.TensorShapeProto{Dim: ds}}}}
	}
}

// craftedModels lists the campaign's models. valid says whether tune
// must accept the model (tune inspect exits 0).
var craftedModels = []struct {
	craftedModel
	valid bool
}{
	{craftedModel{"relu", unary("relu", "Relu", []int{1, 3, 8, 8}, nil), nil}, true},
	{craftedModel{"sigmoid", unary("sigmoid", "Sigmoid", []int{2, 5}, nil), nil}, true},
	{craftedModel{"softmax", unary("softmax", "Softmax", []int{2, 7}, at("axis", intA(1))), nil}, true},
	{craftedModel{"chain300", chain(300), nil}, true},
	{craftedModel{"matmul", matmul(4, 8, 6, true), nil}, true},
	{craftedModel{"relu_2p40", unary("big", "Relu", []int{1, 1 << 40}, nil), nil}, true},
	{craftedModel{"matmul_65536", matmul(65536, 65536, 65536, false), nil}, true},
	{craftedModel{"shadowed_input", func() *graph.Graph {
		return withConst("shadow", "Add", []int{1, 4}, []int{1, 4}, []float32{1, 2, 3, 4}, nil)()
	}, func(m *onnxpb.ModelProto) {
		m.Graph.Input = append(m.Graph.Input, &onnxpb.ValueInfoProto{Name: "c", Type: m.Graph.Input[0].Type})
	}}, true},
	{craftedModel{"escape_names", named("\x1b[31mred\x1b[0m", "in\x1b]0;title\x07", "out\nline"), nil}, true},
	{craftedModel{"long_names", named(strings.Repeat("n", 10000), strings.Repeat("i", 5000), strings.Repeat("o", 5000)), nil}, true},
	{craftedModel{"path_names", named("../../etc", "../in", "../../../tmp/out"), nil}, true},
	{craftedModel{"colliding_outputs", func() *graph.Graph {
		return newGB("collide", map[string][]int{"x": {1, 4}}).
			node("a", "Relu", []string{"x"}, []string{"a/b"}, nil).
			node("b", "Sigmoid", []string{"x"}, []string{"a_b"}, nil).out("a/b", "a_b")
	}, nil}, true},
	{craftedModel{"declared_ok", unary("decl", "Relu", []int{1, 4}, nil), setOutputType(onnxpb.TensorProto_FLOAT, 1, 4)}, true},

	// Invalid: every one must be a one-line error naming what is wrong.
	{craftedModel{"empty_graph", func() *graph.Graph { return newGB("empty", map[string][]int{"x": {1}}).out() }, nil}, false},
	{craftedModel{"undefined_output", func() *graph.Graph { return unary("u", "Relu", []int{1, 4}, nil)() }, func(m *onnxpb.ModelProto) { m.Graph.Output[0].Name = "nothing" }}, false},
	{craftedModel{"cycle", func() *graph.Graph {
		return newGB("cycle", map[string][]int{"x": {1, 4}}).
			node("a", "Add", []string{"x", "b"}, []string{"a"}, nil).
			node("b", "Relu", []string{"a"}, []string{"b"}, nil).out("b")
	}, nil}, false},
	{craftedModel{"self_loop", func() *graph.Graph {
		return newGB("self", map[string][]int{"x": {1, 4}}).node("a", "Add", []string{"x", "a"}, []string{"a"}, nil).out("a")
	}, nil}, false},
	{craftedModel{"duplicate_output", func() *graph.Graph {
		return newGB("dup", map[string][]int{"x": {1, 4}}).
			node("a", "Relu", []string{"x"}, []string{"y"}, nil).
			node("b", "Sigmoid", []string{"x"}, []string{"y"}, nil).out("y")
	}, nil}, false},
	{craftedModel{"unknown_op", unary("unk", "NoSuchOp", []int{1, 4}, nil), nil}, false},
	{craftedModel{"custom_domain", unary("dom", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.Graph.Node[0].Domain = "com.example" }}, false},
	{craftedModel{"relu_two_inputs", func() *graph.Graph {
		return newGB("arity", map[string][]int{"x": {1, 4}}).node("n", "Relu", []string{"x", "x"}, []string{"y"}, nil).out("y")
	}, nil}, false},
	{craftedModel{"add_no_inputs", func() *graph.Graph {
		return newGB("arity0", map[string][]int{"x": {1, 4}}).node("n", "Add", nil, []string{"y"}, nil).out("y")
	}, nil}, false},
	{craftedModel{"matmul_mismatch", matmul(4, 8, 6, false), func(m *onnxpb.ModelProto) {
		for _, in := range m.Graph.Input {
			if in.Name == "w" {
				in.Type.GetTensorType().Shape.Dim[0].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 9}
			}
		}
	}}, false},
	{craftedModel{"conv_channels", withConst("conv", "Conv", []int{1, 3, 8, 8}, []int{4, 5, 3, 3}, make([]float32, 4*5*9), nil), nil}, false},
	{craftedModel{"conv_kernel_too_big", withConst("convk", "Conv", []int{1, 3, 4, 4}, []int{4, 3, 9, 9}, make([]float32, 4*3*81), nil), nil}, false},
	{craftedModel{"conv_zero_stride", withConst("convs", "Conv", []int{1, 3, 8, 8}, []int{4, 3, 3, 3}, make([]float32, 4*27), at("strides", ints(0, 1))), nil}, false},
	{craftedModel{"conv_huge_pads", withConst("convp", "Conv", []int{1, 3, 8, 8}, []int{4, 3, 3, 3}, make([]float32, 4*27), at("pads", ints(1<<40, 0, 1<<40, 0))), nil}, false},
	{craftedModel{"maxpool_no_kernel", unary("mp", "MaxPool", []int{1, 3, 8, 8}, nil), nil}, false},
	{craftedModel{"maxpool_negative_kernel", unary("mpn", "MaxPool", []int{1, 3, 8, 8}, at("kernel_shape", ints(-2, 2))), nil}, false},
	{craftedModel{"reshape_wrong_size", withInts("reshape", "Reshape", []int{2, 6}, []int64{5, 5}), nil}, false},
	{craftedModel{"reshape_two_minus_one", withInts("reshape2", "Reshape", []int{2, 6}, []int64{-1, -1}), nil}, false},
	{craftedModel{"transpose_bad_perm", unary("tp", "Transpose", []int{2, 3}, at("perm", ints(0, 0))), nil}, false},
	{craftedModel{"transpose_perm_range", unary("tp2", "Transpose", []int{2, 3}, at("perm", ints(0, 7))), nil}, false},
	{craftedModel{"concat_axis", func() *graph.Graph {
		return newGB("cat", map[string][]int{"x": {2, 3}}).node("n", "Concat", []string{"x", "x"}, []string{"y"}, at("axis", intA(5))).out("y")
	}, nil}, false},
	{craftedModel{"softmax_axis", unary("sm", "Softmax", []int{2, 3}, at("axis", intA(-9))), nil}, false},
	{craftedModel{"attr_wrong_kind", unary("ak", "Softmax", []int{2, 3}, at("axis", strA("one"))), nil}, false},
	{craftedModel{"slice_zero_step", withInts("slice", "Slice", []int{4, 4}, []int64{0}, []int64{4}, []int64{0}, []int64{0}), nil}, false},
	{craftedModel{"gather_out_of_range", func() *graph.Graph {
		b := newGB("gather", map[string][]int{"x": {4, 3}})
		b.g.AddConst("i", graph.Int64Tensor([]int{2}, []int64{1, 99}))
		return b.node("n", "Gather", []string{"x", "i"}, []string{"y"}, nil).out("y")
	}, nil}, false},
	{craftedModel{"expand_incompatible", withInts("expand", "Expand", []int{3, 4}, []int64{5, 5}), nil}, false},
	{craftedModel{"pad_negative_huge", withInts("pad", "Pad", []int{1, 4}, []int64{0, -1 << 40, 0, 0}), nil}, false},
	{craftedModel{"split_wrong_sizes", func() *graph.Graph {
		b := newGB("split", map[string][]int{"x": {6}})
		b.g.AddConst("s", graph.Int64Tensor([]int{2}, []int64{4, 4}))
		return b.node("n", "Split", []string{"x", "s"}, []string{"a", "b"}, nil).out("a", "b")
	}, nil}, false},
	{craftedModel{"too_many_elements", unary("huge", "Relu", []int{1 << 31, 1 << 31}, nil), nil}, false},
	{craftedModel{"ir_version_99", unary("ir", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.IrVersion = 99 }}, false},
	{craftedModel{"ir_version_0", unary("ir0", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.IrVersion = 0 }}, false},
	{craftedModel{"opset_99", unary("op99", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.OpsetImport[0].Version = 99 }}, false},
	{craftedModel{"no_opset_import", unary("noop", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.OpsetImport = nil }}, false},
	{craftedModel{"declared_shape_wrong", unary("declw", "Relu", []int{1, 4}, nil), setOutputType(onnxpb.TensorProto_FLOAT, 1, 2)}, false},
	{craftedModel{"declared_dtype_wrong", unary("decld", "Relu", []int{1, 4}, nil), setOutputType(onnxpb.TensorProto_INT64, 1, 4)}, false},
	{craftedModel{"float16_input", unary("f16", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_FLOAT16)
		setOutputType(onnxpb.TensorProto_FLOAT, 1, 4)(m) // a float16 Relu declared float32
	}}, false},
	{craftedModel{"float16_undeclared", unary("f16u", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_FLOAT16)
	}}, true},
	{craftedModel{"float16_model", unary("f16ok", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_FLOAT16)
		setOutputType(onnxpb.TensorProto_FLOAT16, 1, 4)(m)
	}}, true},
	{craftedModel{"bfloat16_input", unary("bf16", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_BFLOAT16)
		setOutputType(onnxpb.TensorProto_BFLOAT16, 1, 4)(m)
	}}, true},
	{craftedModel{"string_input", unary("str", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_STRING)
	}}, false},
	{craftedModel{"negative_dim", unary("neg", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input[0].Type.GetTensorType().Shape.Dim[1].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: -4}
	}}, false},
	{craftedModel{"initializer_short_data", withConst("short", "Add", []int{1, 4}, []int{1, 4}, []float32{1, 2, 3, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Initializer[0].Dims = []int64{1 << 20, 1 << 20}
	}}, false},
	{craftedModel{"external_data", withConst("ext", "Add", []int{1, 4}, []int{1, 4}, []float32{1, 2, 3, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Initializer[0].RawData, m.Graph.Initializer[0].DataLocation = nil, onnxpb.TensorProto_EXTERNAL
	}}, false},
	{craftedModel{"no_graph", unary("ng", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.Graph = nil }}, false},
	{craftedModel{"unnamed_input", unary("ui", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.Graph.Input[0].Name = "" }}, false},
	{craftedModel{"unnamed_output", unary("uo", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) { m.Graph.Output[0].Name = "" }}, false},
	{craftedModel{"input_twice", unary("twice", "Relu", []int{1, 4}, nil), func(m *onnxpb.ModelProto) {
		m.Graph.Input = append(m.Graph.Input, m.Graph.Input[0])
	}}, false},
}

// writeModel encodes m (and applies its edit) into dir/NAME.onnx.
func writeModel(t *testing.T, dir string, m craftedModel) string {
	t.Helper()
	p, err := onnx.ToProto(m.build())
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	if m.edit != nil {
		m.edit(p)
	}
	data, err := proto.Marshal(p)
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	path := filepath.Join(dir, m.name+".onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// damaged returns n truncations and n single-byte flips of data, drawn
// from seed: (name, bytes) pairs.
func damaged(data []byte, n int, seed uint64) [][2]string {
	rng := rand.New(rand.NewPCG(seed, 11))
	var out [][2]string
	for i := range n {
		cut := rng.IntN(len(data))
		out = append(out, [2]string{fmt.Sprintf("truncated%02d_at%d", i, cut), string(data[:cut])})
	}
	for i := range n {
		b := []byte(string(data))
		at := rng.IntN(len(b))
		b[at] ^= byte(1 + rng.IntN(255))
		out = append(out, [2]string{fmt.Sprintf("flipped%02d_at%d", i, at), string(b)})
	}
	return out
}
