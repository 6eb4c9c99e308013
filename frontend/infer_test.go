package frontend_test

import (
	"errors"
	"github.com/tessera-ml/tessera/frontend"
	. "github.com/tessera-ml/tessera/graph"
	"slices"
	"strings"
	"testing"
)

func TestInferShapes(t *testing.T) {
	tests := []struct {
		name   string
		opset  int
		inputs []in
		consts map[string]*Tensor
		node   *Node
		want   []int
	}{
		{"conv same_upper stride 2", 0, []in{{"x", []int{1, 3, 7, 7}}}, map[string]*Tensor{"w": Float32Tensor([]int{8, 3, 3, 3}, make([]float32, 216))},
			node("Conv c x,w -> y", map[string]Attr{"auto_pad": {Kind: AttrString, S: "SAME_UPPER"}, "strides": ints(2, 2)}), []int{1, 8, 4, 4}},
		{"conv pads dilations", 0, []in{{"x", []int{1, 3, 10, 10}}}, map[string]*Tensor{"w": Float32Tensor([]int{2, 3, 3, 3}, make([]float32, 54))},
			node("Conv c x,w -> y", map[string]Attr{"pads": ints(1, 1, 1, 1), "dilations": ints(2, 2)}), []int{1, 2, 8, 8}},
		{"maxpool ceil", 0, []in{{"x", []int{1, 1, 5, 5}}}, nil,
			node("MaxPool p x -> y", map[string]Attr{"kernel_shape": ints(2, 2), "strides": ints(2, 2), "ceil_mode": intA(1)}), []int{1, 1, 3, 3}},
		{"matmul batch broadcast", 0, []in{{"a", []int{2, 1, 3, 4}}, {"b", []int{5, 4, 6}}}, nil,
			node("MatMul m a,b -> y", nil), []int{2, 5, 3, 6}},
		{"matmul vector", 0, []in{{"a", []int{4}}, {"b", []int{2, 4, 6}}}, nil,
			node("MatMul m a,b -> y", nil), []int{2, 6}},
		{"gemm transposed", 0, []in{{"a", []int{4, 3}}, {"b", []int{5, 4}}}, nil,
			node("Gemm g a,b -> y", map[string]Attr{"transA": intA(1), "transB": intA(1)}), []int{3, 5}},
		{"slice negative step", 0, []in{{"x", []int{10, 4}}}, map[string]*Tensor{"s": i64(-1), "e": i64(-100), "a": i64(0), "st": i64(-3)},
			node("Slice s x,s,e,a,st -> y", nil), []int{4, 4}},
		{"slice attributes (opset 9)", 9, []in{{"x", []int{10, 4}}}, nil,
			node("Slice s x -> y", map[string]Attr{"starts": ints(1), "ends": ints(1000), "axes": ints(1)}), []int{10, 3}},
		{"reduce keepdims", 0, []in{{"x", []int{2, 3, 4}}}, nil,
			node("ReduceMean r x -> y", map[string]Attr{"axes": ints(-1, 0)}), []int{1, 3, 1}},
		{"reducesum axes input", 13, []in{{"x", []int{2, 3, 4}}}, map[string]*Tensor{"a": i64(1)},
			node("ReduceSum r x,a -> y", map[string]Attr{"keepdims": intA(0)}), []int{2, 4}},
		{"squeeze axes attribute (opset 11)", 11, []in{{"x", []int{1, 3, 1}}}, nil,
			node("Squeeze s x -> y", map[string]Attr{"axes": ints(0)}), []int{3, 1}},
		{"squeeze axes input (opset 13)", 13, []in{{"x", []int{1, 3, 1}}}, map[string]*Tensor{"a": i64(2)},
			node("Squeeze s x,a -> y", nil), []int{1, 3}},
		{"unsqueeze", 13, []in{{"x", []int{3}}}, map[string]*Tensor{"a": i64(0, -1)},
			node("Unsqueeze u x,a -> y", nil), []int{1, 3, 1}},
		{"reshape 0 and -1", 0, []in{{"x", []int{2, 3, 4}}}, map[string]*Tensor{"s": i64(0, -1)},
			node("Reshape r x,s -> y", nil), []int{2, 12}},
		{"pad attribute (opset 2)", 2, []in{{"x", []int{2, 3}}}, nil,
			node("Pad p x -> y", map[string]Attr{"pads": ints(1, 0, 1, 2)}), []int{4, 5}},
		{"depth to space", 0, []in{{"x", []int{1, 8, 2, 3}}}, nil,
			node("DepthToSpace d x -> y", map[string]Attr{"blocksize": intA(2)}), []int{1, 2, 4, 6}},
		{"prelu channel slope (opset 6)", 6, []in{{"x", []int{2, 3, 4}}, {"s", []int{3}}}, nil,
			node("PRelu p x,s -> y", nil), []int{2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.opset, tc.inputs, tc.consts, []*Node{tc.node}, "y")
			if err := frontend.InferShapes(g); err != nil {
				t.Fatal(err)
			}
			if got := g.Values["y"].Shape; !slices.Equal(got, tc.want) {
				t.Errorf("shape %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInferShapesErrors(t *testing.T) {
	tests := []struct {
		name   string
		inputs []in
		node   *Node
		want   string
		is     any
	}{
		{"unknown op", []in{{"x", []int{2}}}, node("Frobnicate f x -> y", nil), "unsupported op Frobnicate (opset 17) at node f", new(*UnsupportedOpError)},
		{"reshape shape not constant", []in{{"x", []int{2}}, {"s", []int{1}}}, node("Reshape r x,s -> y", nil), "shape input s must be a constant", new(*NotConstantError)},
		{"matmul mismatch", []in{{"a", []int{2, 3}}, {"b", []int{4, 5}}}, node("MatMul m a,b -> y", nil), "MatMul at node m: te: MatMul y: inner dimensions differ", nil},
		{"maxpool indices", []in{{"x", []int{1, 1, 4, 4}}}, node("MaxPool m x -> y,i", map[string]Attr{"kernel_shape": ints(2, 2)}), "output 1 (Indices)", &ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, 0, tc.inputs, nil, []*Node{tc.node}, "y")
			err := frontend.InferShapes(g)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			switch target := tc.is.(type) {
			case **UnsupportedOpError:
				if !errors.As(err, target) {
					t.Errorf("%v is not an *UnsupportedOpError", err)
				}
			case **NotConstantError:
				if !errors.As(err, target) {
					t.Errorf("%v is not a *NotConstantError", err)
				}
			case *error:
				if !errors.Is(err, *target) {
					t.Errorf("%v does not wrap %v", err, *target)
				}
			}
		})
	}
}

// TestInferBound: shapes are inferred once the dynamic dimensions are
// bound, and not before.
func TestInferBound(t *testing.T) {
	g := New("m", 17)
	v := g.AddInput("x", Float32, []int{-1, 3, -1})
	v.DimParams = []string{"batch", "", ""}
	g.AddNode(node("Relu r x -> z", nil))
	g.Outputs = []string{"z"}
	var unbound *UnboundDimsError
	if err := frontend.InferShapes(g); !errors.As(err, &unbound) || !strings.Contains(err.Error(), "x[0] (batch), x[2]") {
		t.Fatalf("unbound: error %v, want an *UnboundDimsError naming x[0] (batch) and x[2]", err)
	}
	if err := g.Bind(map[string][]int{"x": {1, 3, 5}}); err != nil {
		t.Fatal(err)
	}
	if err := frontend.InferShapes(g); err != nil {
		t.Fatal(err)
	}
	if s := g.Values["z"].Shape; !slices.Equal(s, []int{1, 3, 5}) {
		t.Errorf("z has shape %v", s)
	}
}

func TestShapeSubgraphIsKnown(t *testing.T) {
	// Shape → Gather → Unsqueeze → Concat: the contents are known after
	// binding, so Reshape's shape resolves.
	g := build(t, 13, []in{{"x", []int{2, 3, 4}}}, map[string]*Tensor{
		"i0": Int64Tensor([]int{}, []int64{0}), "ax": i64(0), "m1": i64(-1),
	}, []*Node{
		node("Shape s x -> shp", nil),
		node("Gather g shp,i0 -> n", nil),
		node("Unsqueeze u n,ax -> n1", nil),
		node("Concat c n1,m1 -> target", map[string]Attr{"axis": intA(0)}),
		node("Reshape r x,target -> y", nil),
	}, "y")
	if err := frontend.InferShapes(g); err != nil {
		t.Fatal(err)
	}
	if k := g.Values["target"].Known; k == nil || !slices.Equal(k.I64, []int64{2, -1}) {
		t.Fatalf("target known as %v", k)
	}
	if s := g.Values["y"].Shape; !slices.Equal(s, []int{2, 12}) {
		t.Errorf("y has shape %v", s)
	}
}

// TestDropoutTrainingMode: a Dropout in training mode is refused unless
// its ratio is 0, where it drops and scales nothing (torchvision's Swin
// exports its attention dropout so).
func TestDropoutTrainingMode(t *testing.T) {
	for _, tc := range []struct {
		ratio float32
		want  string // error substring, "" for success
	}{{0, ""}, {0.1, "training mode with ratio 0.1"}} {
		consts := map[string]*Tensor{"r": Float32Tensor([]int{}, []float32{tc.ratio}), "m": {DType: Bool, Shape: []int{}, I64: []int64{1}}}
		g := build(t, 13, []in{{"x", []int{2, 3}}}, consts, []*Node{node("Dropout d x,r,m -> y", nil)}, "y")
		err := frontend.InferShapes(g)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ratio %g: %v", tc.ratio, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ratio %g: error %v, want one containing %q", tc.ratio, err, tc.want)
		}
	}
}
