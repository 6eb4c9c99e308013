package graph_test

import (
	"fmt"
	"strings"
	"testing"

	. "tessera/graph"
)

// TestConvertLayout: a chain of convolutions, elementwise ops and pools
// runs channels-last, with one Transpose where the chain begins and one
// where an NCHW reader (Flatten) and the graph output need the NCHW value;
// the pass is idempotent.
func TestConvertLayout(t *testing.T) {
	w := func(o, i, k int) *Tensor {
		data := make([]float32, o*i*k*k)
		for j := range data {
			data[j] = float32(j%7) - 3
		}
		return Float32Tensor([]int{o, i, k, k}, data)
	}
	g := build(t, 17, []in{{"x", []int{1, 3, 8, 8}}}, map[string]*Tensor{
		"w1": w(4, 3, 3), "w2": w(4, 4, 1), "half": f32(0.5),
		"bias": Float32Tensor([]int{4, 1, 1}, []float32{1, 2, 3, 4}),
	}, []*Node{
		node("Conv c1 x,w1 -> a", map[string]Attr{"pads": ints(1, 1, 1, 1)}),
		node("Add bb a,bias -> ab", nil),
		node("Relu r1 ab -> b", nil),
		node("MaxPool p b -> c", map[string]Attr{"kernel_shape": ints(2, 2), "strides": ints(2, 2)}),
		node("Conv c2 c,w2 -> d", nil),
		node("Mul m d,half -> e", nil),
		node("Add s e,c -> f", nil),
		node("GlobalAveragePool g f -> h", nil),
		node("Flatten fl h -> y", nil),
	}, "y", "f")
	if err := RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range g.Nodes {
		ops = append(ops, n.OpType)
		if n.OpType == "Conv" || n.OpType == "MaxPool" || n.OpType == "GlobalAveragePool" {
			if l, _ := n.Str(LayoutAttr, ""); l != "NHWC" {
				t.Errorf("%s %s: layout %q", n.OpType, n.Name, l)
			}
		}
	}
	want := "Transpose,Conv,Add,Relu,MaxPool,Conv,Mul,Add,GlobalAveragePool,Transpose,Flatten,Transpose"
	if got := strings.Join(ops, ","); got != want {
		t.Errorf("nodes %s\nwant  %s", got, want)
	}
	for name, shape := range map[string]string{"f": "[1 4 4 4]", "f_nhwc": "[1 4 4 4]", "c_nhwc": "[1 4 4 4]", "a_nhwc": "[1 8 8 4]", "h_nhwc": "[1 1 1 4]", "h": "[1 4 1 1]", "y": "[1 4]", "bias_nhwc": "[1 1 1 4]"} {
		v := g.Values[name]
		if v == nil {
			t.Errorf("no value %s", name)
			continue
		}
		if fmt.Sprint(v.Shape) != shape {
			t.Errorf("%s: shape %v, want %s", name, v.Shape, shape)
		}
	}
	if b := g.Values["bias_nhwc"]; b.Const == nil || fmt.Sprint(b.Const.F32) != "[1 2 3 4]" {
		t.Errorf("bias_nhwc: %+v", b.Const)
	}
	before := len(g.Nodes)
	if err := RunPasses(g, nil); err != nil || len(g.Nodes) != before {
		t.Errorf("second run: %v, %d nodes, want %d", err, len(g.Nodes), before)
	}
	// Off, nothing changes.
	g2 := build(t, 17, []in{{"x", []int{1, 3, 8, 8}}}, map[string]*Tensor{"w1": w(4, 3, 3)},
		[]*Node{node("Conv c1 x,w1 -> y", nil)}, "y")
	if err := RunPasses(g2, map[string]bool{"convert-layout": true}); err != nil || len(g2.Nodes) != 1 || g2.Nodes[0].HasAttr(LayoutAttr) {
		t.Errorf("convert-layout off: %v, %d nodes", err, len(g2.Nodes))
	}
}
