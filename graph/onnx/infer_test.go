package onnx_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/graph/onnx/onnxpb"
)

// Decoded models through shape inference and the passes (package
// frontend): what the decoder reads is what the ops compute on.

// TestDecodedModelInfers: the sample model, encoded and decoded, binds
// and infers to the shapes its ops give.
func TestDecodedModelInfers(t *testing.T) {
	data, err := onnx.Encode(onnx.Sample())
	if err != nil {
		t.Fatal(err)
	}
	h, err := onnx.Decode(data, "sample.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Bind(map[string][]int{"x": {2, 3, 4, 4}}); err != nil {
		t.Fatal(err)
	}
	if err := frontend.RunPasses(h, nil); err != nil {
		t.Fatal(err)
	}
	if y := h.Values["y"].Shape; !slices.Equal(y, []int{2, 32}) {
		t.Errorf("y has shape %v", y)
	}
}

func TestSubgraphRoundTrip(t *testing.T) {
	data, err := onnx.Encode(onnx.WithIf())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sr   int64
		want []float32
	}{{16000, []float32{2, -4}}, {8000, []float32{1, -2}}} {
		g, err := onnx.Decode(data, "withif.onnx")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Freeze("sr", graph.Int64Tensor([]int{}, []int64{tc.sr})); err != nil {
			t.Fatal(err)
		}
		if err := g.Freeze("x", graph.Float32Tensor([]int{2}, []float32{1, -2})); err != nil {
			t.Fatal(err)
		}
		if err := frontend.RunPasses(g, nil); err != nil {
			t.Fatal(err)
		}
		if y := g.Values["y"].Const; y == nil || !slices.Equal(y.F32, tc.want) {
			t.Errorf("sr=%d: y = %v, want %v", tc.sr, y, tc.want)
		}
	}
}

// TestDeclaredOutputs: a declared output type that contradicts what the
// graph computes is refused by name once shapes are inferred (the
// declaration was ignored).
func TestDeclaredOutputs(t *testing.T) {
	model := func(edit func(m *onnxpb.ModelProto)) []byte { return onnx.Edited(t, onnx.Sample(), edit) }
	declare := func(shape []int64, elem onnxpb.TensorProto_DataType) []byte {
		return model(func(m *onnxpb.ModelProto) {
			var dims []*onnxpb.TensorShapeProto_Dimension
			for _, d := range shape {
				if d < 0 {
					dims = append(dims, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "n"}})
				} else {
					dims = append(dims, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
				}
			}
			m.Graph.Output[0].Type = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
				ElemType: int32(elem), Shape: &onnxpb.TensorShapeProto{Dim: dims}}}}
		})
	}
	for _, c := range []struct {
		name string
		data []byte
		want string // "" when it must pass
	}{
		{"matching", declare([]int64{2, 32}, onnxpb.TensorProto_FLOAT), ""},
		{"dynamic dimension", declare([]int64{-1, 32}, onnxpb.TensorProto_FLOAT), ""},
		{"wrong shape", declare([]int64{2, 2}, onnxpb.TensorProto_FLOAT), "output y is declared with shape [2,2], but the graph computes [2,32]"},
		{"wrong rank", declare([]int64{64}, onnxpb.TensorProto_FLOAT), "declared with shape [64]"},
		{"wrong dtype", declare([]int64{2, 32}, onnxpb.TensorProto_INT64), "output y is declared int64, but the graph computes float32"},
	} {
		g, err := onnx.Decode(c.data, "m.onnx")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		err = g.Bind(map[string][]int{"x": {2, 3, 4, 4}})
		if err == nil {
			err = frontend.InferShapes(g)
		}
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
