package onnx

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx/onnxpb"
)

// sample is a small model exercising every attribute kind Encode writes.
func sample() *graph.Graph {
	g := graph.New("sample", 13)
	x := g.AddInput("x", graph.Float32, []int{-1, 3, 4, 4})
	x.DimParams = []string{"batch", "", "", ""}
	g.AddConst("w", graph.Float32Tensor([]int{2, 3, 1, 1}, []float32{1, 2, 3, 4, 5, 6}))
	g.AddConst("shape", graph.Int64Tensor([]int{2}, []int64{0, -1}))
	g.AddNode(&graph.Node{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"c"},
		Attrs: map[string]graph.Attr{"strides": {Kind: graph.AttrInts, Ints: []int64{1, 1}}, "auto_pad": {Kind: graph.AttrString, S: "VALID"}}})
	g.AddNode(&graph.Node{Name: "act", OpType: "LeakyRelu", Inputs: []string{"c"}, Outputs: []string{"a"},
		Attrs: map[string]graph.Attr{"alpha": {Kind: graph.AttrFloat, F: 0.25}}})
	g.AddNode(&graph.Node{Name: "flat", OpType: "Reshape", Inputs: []string{"a", "shape"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	return g
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	g := sample()
	data, err := Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Decode(data, "sample.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if h.Opset != 13 || h.Name != "sample" || !slices.Equal(h.Inputs, []string{"x"}) || !slices.Equal(h.Outputs, []string{"y"}) {
		t.Fatalf("decoded opset %d, name %s, inputs %v, outputs %v", h.Opset, h.Name, h.Inputs, h.Outputs)
	}
	if x := h.Values["x"]; !slices.Equal(x.Shape, []int{-1, 3, 4, 4}) || x.DimParams[0] != "batch" {
		t.Errorf("x decoded as %v %v", x.Shape, x.DimParams)
	}
	if len(h.Nodes) != 3 {
		t.Fatalf("%d nodes", len(h.Nodes))
	}
	for i, n := range g.Nodes {
		m := h.Nodes[i]
		if m.Name != n.Name || m.OpType != n.OpType || !slices.Equal(m.Inputs, n.Inputs) || !slices.Equal(m.Outputs, n.Outputs) || len(m.Attrs) != len(n.Attrs) {
			t.Errorf("node %d: %+v, want %+v", i, m, n)
		}
	}
	if a := h.Nodes[1].Attrs["alpha"]; a.Kind != graph.AttrFloat || a.F != 0.25 {
		t.Errorf("alpha decoded as %+v", a)
	}
	if w := h.Values["w"].Const; w == nil || !slices.Equal(w.F32, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("w decoded as %v", w)
	}
	if s := h.Values["shape"].Const; s == nil || !slices.Equal(s.I64, []int64{0, -1}) {
		t.Errorf("shape decoded as %v", s)
	}
}

func TestDecodeTypedData(t *testing.T) {
	// float_data, int64_data and int32_data (float16's and bfloat16's
	// bits) instead of raw_data.
	for _, tp := range []*onnxpb.TensorProto{
		{Name: "f", DataType: int32(onnxpb.TensorProto_FLOAT), Dims: []int64{2}, FloatData: []float32{1.5, -2}},
		{Name: "i", DataType: int32(onnxpb.TensorProto_INT64), Dims: []int64{1, 2}, Int64Data: []int64{7, -8}},
		{Name: "h", DataType: int32(onnxpb.TensorProto_FLOAT16), Dims: []int64{4}, Int32Data: []int32{0x3e00, 0xc000, 0x7bff, 0x0001}},
		{Name: "b", DataType: int32(onnxpb.TensorProto_BFLOAT16), Dims: []int64{4}, Int32Data: []int32{0x3fc0, 0xc000, 0x7f7f, 0x0001}},
	} {
		got, err := TensorFromProto(tp)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := TensorFromProto(TensorToProto(tp.Name, got))
		if !slices.Equal(got.F32, want.F32) || !slices.Equal(got.I64, want.I64) || !slices.Equal(got.Shape, want.Shape) || got.DType != want.DType {
			t.Errorf("%s: %v, raw round trip %v", tp.Name, got, want)
		}
		if tp.Name == "h" && !slices.Equal(got.F32, []float32{1.5, -2, 65504, 0x1p-24}) {
			t.Errorf("float16 bits %#x decoded as %v", tp.Int32Data, got.F32)
		}
		if tp.Name == "b" && !slices.Equal(got.F32, []float32{1.5, -2, 0x1.fep127, 0x1p-133}) {
			t.Errorf("bfloat16 bits %#x decoded as %v", tp.Int32Data, got.F32)
		}
	}
}

// edited encodes g, lets edit change the protobuf, and returns its bytes.
func edited(t *testing.T, g *graph.Graph, edit func(m *onnxpb.ModelProto)) []byte {
	t.Helper()
	m, err := ToProto(g)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeErrors(t *testing.T) {
	model := func(edit func(m *onnxpb.ModelProto)) []byte { return edited(t, sample(), edit) }
	init := func(m *onnxpb.ModelProto, name string) *onnxpb.TensorProto {
		for _, tp := range m.Graph.Initializer {
			if tp.Name == name {
				return tp
			}
		}
		t.Fatalf("no initializer %s", name)
		return nil
	}
	tests := []struct {
		name        string
		data        []byte
		want        string
		unsupported bool
	}{
		{"garbage", []byte("\xff\xff\xff\xff"), "m.onnx: not an ONNX model", false},
		{"no graph", model(func(m *onnxpb.ModelProto) { m.Graph = nil }), "model has no graph", false},
		{"external data", model(func(m *onnxpb.ModelProto) {
			w := init(m, "w")
			w.RawData, w.DataLocation = nil, onnxpb.TensorProto_EXTERNAL
		}), "tensor w: external data", true},
		{"double initializer", model(func(m *onnxpb.ModelProto) { init(m, "shape").DataType = int32(onnxpb.TensorProto_DOUBLE) }), "tensor shape: data type DOUBLE", true},
		{"raw data too short", model(func(m *onnxpb.ModelProto) { init(m, "w").RawData = make([]byte, 8) }), "tensor w: 8 bytes of raw data for shape [2 3 1 1]", false},
		{"huge dims, little data", model(func(m *onnxpb.ModelProto) { init(m, "w").Dims = []int64{1 << 20, 1 << 18} }), "tensor w: 24 bytes of raw data for shape [1048576 262144]", false},
		{"dims past the element cap", model(func(m *onnxpb.ModelProto) { init(m, "w").Dims = []int64{1 << 30, 1 << 30} }), "tensor w: dims", false},
		{"bfloat16 raw data too short", model(func(m *onnxpb.ModelProto) {
			w := init(m, "w")
			w.DataType, w.RawData = int32(onnxpb.TensorProto_BFLOAT16), make([]byte, 13)
		}), "tensor w: 13 bytes of raw bfloat16 data for shape [2 3 1 1]", false},
		{"int4 initializer", model(func(m *onnxpb.ModelProto) { init(m, "w").DataType = 22 }), "tensor w: data type INT4", true},
		{"float8 input", model(func(m *onnxpb.ModelProto) {
			m.Graph.Input[0].Type.GetTensorType().ElemType = 17
		}), "input x: data type FLOAT8E4M3FN", true},
		{"float16 raw data too short", model(func(m *onnxpb.ModelProto) {
			w := init(m, "w")
			w.DataType, w.RawData = int32(onnxpb.TensorProto_FLOAT16), make([]byte, 11)
		}), "tensor w: 11 bytes of raw float16 data for shape [2 3 1 1]", false},
		{"float16 beyond 16 bits", model(func(m *onnxpb.ModelProto) {
			w := init(m, "w")
			w.DataType, w.RawData, w.Int32Data = int32(onnxpb.TensorProto_FLOAT16), nil, []int32{0, 1, 2, 3, 4, 1 << 16}
		}), "tensor w: float16 element 5 is stored as 65536, not 16 bits", false},
		{"sequence input", model(func(m *onnxpb.ModelProto) {
			m.Graph.Input[0].Type = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{}}}
		}), "input x has a sequence type", true},
		{"undefined input", model(func(m *onnxpb.ModelProto) { m.Graph.Node[0].Input[0] = "nothing" }), "reads nothing, which is not defined", false},
		{"Tessera's TableLookup", model(func(m *onnxpb.ModelProto) { m.Graph.Node[0].OpType = graph.TableLookupOp }),
			"node conv: op TableLookup is not ONNX's", false},
	}
	for _, attr := range []string{graph.LayoutAttr, graph.OutLayoutAttr} {
		tests = append(tests, struct {
			name        string
			data        []byte
			want        string
			unsupported bool
		}{"Tessera's " + attr, model(func(m *onnxpb.ModelProto) {
			m.Graph.Node[0].Attribute = append(m.Graph.Node[0].Attribute, &onnxpb.AttributeProto{Name: attr, Type: onnxpb.AttributeProto_STRING, S: []byte("NHWC")})
		}), "node conv (Conv): attribute " + attr + " is not ONNX's", false})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data, "m.onnx")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if errors.Is(err, graph.ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v", !tc.unsupported, tc.unsupported)
			}
		})
	}
}

// withIf is a model whose output depends on an If on the scalar input sr;
// the then branch holds a constant and reads x from the outer scope.
func withIf() *graph.Graph {
	g := graph.New("withif", 16)
	g.AddInput("x", graph.Float32, []int{2})
	g.AddInput("sr", graph.Int64, []int{})
	g.AddConst("k", graph.Int64Tensor([]int{}, []int64{16000}))
	g.AddNode(&graph.Node{Name: "eq", OpType: "Equal", Inputs: []string{"sr", "k"}, Outputs: []string{"c"}})
	then := graph.New("then", 16)
	then.AddConst("two", graph.Float32Tensor([]int{}, []float32{2}))
	then.AddNode(&graph.Node{Name: "mul", OpType: "Mul", Inputs: []string{"x", "two"}, Outputs: []string{"t"}})
	then.Outputs = []string{"t"}
	els := graph.New("else", 16)
	els.Outputs = []string{"x"} // an outer value as the branch's output
	g.AddNode(&graph.Node{Name: "if", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"y"},
		Attrs: map[string]graph.Attr{"then_branch": {Kind: graph.AttrGraph, G: then}, "else_branch": {Kind: graph.AttrGraph, G: els}}})
	g.Outputs = []string{"y"}
	return g
}

func TestDecodeSubgraphErrors(t *testing.T) {
	model := func(edit func(m *onnxpb.ModelProto)) []byte { return edited(t, withIf(), edit) }
	branch := func(m *onnxpb.ModelProto) *onnxpb.GraphProto {
		for _, a := range m.Graph.Node[1].Attribute {
			if a.Name == "then_branch" {
				return a.G
			}
		}
		t.Fatal("no then_branch")
		return nil
	}
	nest := func(m *onnxpb.ModelProto, depth int) {
		g := branch(m)
		for range depth {
			inner := &onnxpb.GraphProto{Name: "deep", Output: []*onnxpb.ValueInfoProto{{Name: "x"}}}
			g.Node = append(g.Node, &onnxpb.NodeProto{OpType: "If", Input: []string{"c"}, Output: []string{"unused"},
				Attribute: []*onnxpb.AttributeProto{{Name: "then_branch", Type: onnxpb.AttributeProto_GRAPH, G: inner}}})
			g = inner
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"branch reads an undefined value", model(func(m *onnxpb.ModelProto) { branch(m).Node[0].Input[0] = "nothing" }),
			"node if (If) attribute then_branch: graph then: node mul (Mul) reads nothing"},
		{"graph attribute on a Conv", model(func(m *onnxpb.ModelProto) { m.Graph.Node[1].OpType = "Conv" }), "only control-flow ops take"},
		{"graph attribute without a graph", model(func(m *onnxpb.ModelProto) { m.Graph.Node[1].Attribute[0].G = nil }), "graph attribute without a graph"},
		{"graphs attribute", model(func(m *onnxpb.ModelProto) { m.Graph.Node[1].Attribute[0].Type = onnxpb.AttributeProto_GRAPHS }), "attribute type GRAPHS"},
		{"nested too deep", model(func(m *onnxpb.ModelProto) { nest(m, maxNesting+1) }), "nest more than 64 deep"},
		{"double in a branch", model(func(m *onnxpb.ModelProto) {
			branch(m).Initializer[0].DataType = int32(onnxpb.TensorProto_DOUBLE)
		}), "data type DOUBLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data, "m.onnx")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Nesting up to the limit decodes.
	if _, err := Decode(model(func(m *onnxpb.ModelProto) { nest(m, maxNesting-1) }), "m.onnx"); err != nil {
		t.Errorf("nesting %d deep: %v", maxNesting, err)
	}
}

// TestDecodeVersionsAndDeclarations: a model outside the versions tessera
// reads and one without an opset import are refused by name (they were
// read as "opset 0", or as if their versions were known); an initializer
// that shadows an input is taken as a constant and reported in
// Graph.Shadowed. (A declared output type that contradicts what the graph
// computes: TestDeclaredOutputs.)
func TestDecodeVersionsAndDeclarations(t *testing.T) {
	model := func(edit func(m *onnxpb.ModelProto)) []byte { return edited(t, sample(), edit) }
	for _, c := range []struct {
		name string
		edit func(m *onnxpb.ModelProto)
		want string
	}{
		{"IR version 99", func(m *onnxpb.ModelProto) { m.IrVersion = 99 }, "IR version 99: tessera reads IR versions 3 to 10"},
		{"no IR version", func(m *onnxpb.ModelProto) { m.IrVersion = 0 }, "IR version 0"},
		{"opset 99", func(m *onnxpb.ModelProto) { m.OpsetImport[0].Version = 99 }, "opset 99 of the default ONNX domain: tessera knows its operators up to opset 21"},
		{"no opset import", func(m *onnxpb.ModelProto) { m.OpsetImport = nil }, `node "conv" (Conv) is of the default ONNX domain, but the model imports no version of it`},
		{"no outputs", func(m *onnxpb.ModelProto) { m.Graph.Output = nil }, "the graph has no outputs"},
	} {
		_, err := Decode(model(c.edit), "m.onnx")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}

	// An initializer named like an input.
	g, err := Decode(model(func(m *onnxpb.ModelProto) {
		m.Graph.Input = append(m.Graph.Input, &onnxpb.ValueInfoProto{Name: "w", Type: m.Graph.Input[0].Type})
	}), "m.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Shadowed, []string{"w"}) || slices.Contains(g.Inputs, "w") {
		t.Errorf("shadowed %v, inputs %v: want w shadowed, not an input", g.Shadowed, g.Inputs)
	}
}
