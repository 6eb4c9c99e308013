package frontend_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	. "github.com/tessera-ml/tessera/graph"
)

// TestConvertLayout: a chain of convolutions, elementwise ops and pools
// runs channels-last: the first Conv reads the NCHW graph input and writes
// a twin (out_layout), and one Transpose goes back where the graph output
// needs the NCHW value; the pooled [1, 1, 1, C]
// value goes back to NCHW as a Reshape (the same data), which
// merge-reshapes merges with the model's Flatten. The pass is idempotent.
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
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range g.Nodes {
		ops = append(ops, n.OpType)
		if n.OpType == "Conv" || n.OpType == "MaxPool" || n.OpType == "GlobalAveragePool" {
			in, out := "NHWC", ""
			if n.Name == "c1" {
				in, out = "NCHW", "NHWC"
			}
			l, _ := n.Str(LayoutAttr, "")
			o, _ := n.Str(OutLayoutAttr, "")
			if l != in || o != out {
				t.Errorf("%s %s: data_layout %q, out_layout %q; want %q, %q", n.OpType, n.Name, l, o, in, out)
			}
		}
	}
	want := "Conv,Add,Relu,MaxPool,Conv,Mul,Add,GlobalAveragePool,Reshape,Transpose"
	if got := strings.Join(ops, ","); got != want {
		t.Errorf("nodes %s\nwant  %s", got, want)
	}
	for name, shape := range map[string]string{"f": "[1 4 4 4]", "f_nhwc": "[1 4 4 4]", "c_nhwc": "[1 4 4 4]", "a_nhwc": "[1 8 8 4]", "h_nhwc": "[1 1 1 4]", "y": "[1 4]", "bias_nhwc": "[1 1 1 4]"} {
		v := g.Values[name]
		if v == nil {
			t.Errorf("no value %s", name)
			continue
		}
		if fmt.Sprint(v.Shape) != shape {
			t.Errorf("%s: shape %v, want %s", name, v.Shape, shape)
		}
	}
	if p := g.Producers()["y"]; p == nil || p.OpType != "Reshape" || p.Inputs[0] != "h_nhwc" {
		t.Errorf("y is written by %+v, want a Reshape of h_nhwc", p)
	}
	if b := g.Values["bias_nhwc"]; b.Const == nil || fmt.Sprint(b.Const.F32) != "[1 2 3 4]" {
		t.Errorf("bias_nhwc: %+v", b.Const)
	}
	before := len(g.Nodes)
	if err := frontend.RunPasses(g, nil); err != nil || len(g.Nodes) != before {
		t.Errorf("second run: %v, %d nodes, want %d", err, len(g.Nodes), before)
	}
	// Off, nothing changes.
	g2 := build(t, 17, []in{{"x", []int{1, 3, 8, 8}}}, map[string]*Tensor{"w1": w(4, 3, 3)},
		[]*Node{node("Conv c1 x,w1 -> y", nil)}, "y")
	if err := frontend.RunPasses(g2, map[string]bool{"convert-layout": true}); err != nil || len(g2.Nodes) != 1 || g2.Nodes[0].HasAttr(LayoutAttr) {
		t.Errorf("convert-layout off: %v, %d nodes", err, len(g2.Nodes))
	}
}

// TestConvertLayoutDenseBlock: a DenseNet block as PyTorch exports it —
// Concat of the block's features, BatchNormalization (which cannot fold:
// a Concat feeds it), Relu, Conv, then a transition's AveragePool, and a
// Split — runs channels-last from the first Conv (which reads the NCHW
// input) to the last Transpose:
// decompose-batchnorm writes the normalizations as Mul and Add, Concat
// and Split take the permuted axis, and no Transpose is left in between
// (y2, of one channel, goes back to NCHW as a Reshape).
func TestConvertLayoutDenseBlock(t *testing.T) {
	w := func(o, i, k int) *Tensor {
		data := make([]float32, o*i*k*k)
		for j := range data {
			data[j] = float32(j%5) - 2
		}
		return Float32Tensor([]int{o, i, k, k}, data)
	}
	consts := map[string]*Tensor{"w0": w(4, 3, 3), "w1": w(2, 4, 1), "w2": w(2, 6, 3), "w3": w(4, 8, 1), "sizes": i64(3, 1)}
	for _, c := range []struct {
		name string
		n    int
	}{{"n1", 4}, {"n2", 6}, {"n3", 8}} {
		v := make([]float32, c.n)
		for j := range v {
			v[j] = 1 + float32(j)/8
		}
		for _, p := range []string{"s", "b", "m", "v"} {
			consts[c.name+p] = Float32Tensor([]int{c.n}, v)
		}
	}
	bn := func(name, x, params, y string) *Node {
		return node("BatchNormalization "+name+" "+x+","+params+"s,"+params+"b,"+params+"m,"+params+"v -> "+y, nil)
	}
	g := build(t, 17, []in{{"x", []int{1, 3, 8, 8}}}, consts, []*Node{
		node("Conv c0 x,w0 -> a", map[string]Attr{"pads": ints(1, 1, 1, 1)}),
		bn("bn1", "a", "n1", "a1"),
		node("Relu r1 a1 -> a2", nil),
		node("Conv c1 a2,w1 -> f1", nil),
		node("Concat cat1 a,f1 -> k1", map[string]Attr{"axis": intA(1)}),
		bn("bn2", "k1", "n2", "k2"),
		node("Relu r2 k2 -> k3", nil),
		node("Conv c2 k3,w2 -> f2", map[string]Attr{"pads": ints(1, 1, 1, 1)}),
		node("Concat cat2 a,f1,f2 -> k4", map[string]Attr{"axis": intA(-3)}),
		bn("bn3", "k4", "n3", "k5"),
		node("Relu r3 k5 -> k6", nil),
		node("Conv c3 k6,w3 -> t1", nil),
		node("AveragePool ap t1 -> t2", map[string]Attr{"kernel_shape": ints(2, 2), "strides": ints(2, 2)}),
		node("Split sp t2,sizes -> y1,y2", map[string]Attr{"axis": intA(1)}),
	}, "y1", "y2")
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	want := "Conv,Mul,Add,Relu,Conv,Concat,Mul,Add,Relu,Conv,Concat,Mul,Add,Relu,Conv,AveragePool,Split,Transpose,Reshape"
	if got := ops(g); got != want {
		t.Errorf("nodes %s\nwant  %s", got, want)
	}
	for _, n := range g.Nodes {
		if a, _ := n.Int("axis", 0); (n.OpType == "Concat" || n.OpType == "Split") && a != 3 {
			t.Errorf("%s %s: axis %d, want 3 (channels-last)", n.OpType, n.Name, a)
		}
	}
	for name, shape := range map[string]string{"k4_nhwc": "[1 8 8 8]", "t2_nhwc": "[1 4 4 4]", "y1": "[1 3 4 4]", "y2": "[1 1 4 4]", "y2_nhwc": "[1 4 4 1]"} {
		if v := g.Values[name]; v == nil || fmt.Sprint(v.Shape) != shape {
			t.Errorf("%s: %v, want shape %s", name, v, shape)
		}
	}
}

// TestConvertLayoutQuantizedImage: a quantized model's first convolution
// reads the quantized three-channel image where it is, NCHW, and writes
// the channels-last twin, like a float model's (readsInputNCHW): the
// QuantizeLinear of the input stays an elementwise op on contiguous rows,
// with no Transpose after it.
func TestConvertLayoutQuantizedImage(t *testing.T) {
	u8 := func(v int64) *Tensor { return &Tensor{DType: Uint8, Shape: []int{}, I64: []int64{v}} }
	wq := &Tensor{DType: Int8, Shape: []int{4, 3, 3, 3}, I64: make([]int64, 4*3*3*3)}
	for i := range wq.I64 {
		wq.I64[i] = int64(i%9) - 4
	}
	g := build(t, 17, []in{{"x", []int{1, 3, 8, 8}}}, map[string]*Tensor{
		"xs": Float32Tensor([]int{}, []float32{0.02}), "xz": u8(128),
		"w": wq, "ws": Float32Tensor([]int{}, []float32{0.01}),
		"ys": Float32Tensor([]int{}, []float32{0.05}), "yz": u8(3),
	}, []*Node{
		node("QuantizeLinear qx x,xs,xz -> xq", nil),
		node("DequantizeLinear dx xq,xs,xz -> xf", nil),
		node("DequantizeLinear dw w,ws -> wf", nil),
		node("Conv c xf,wf -> a", map[string]Attr{"pads": ints(1, 1, 1, 1)}),
		node("QuantizeLinear q a,ys,yz -> aq", nil),
		node("DequantizeLinear d aq,ys,yz -> y", nil),
	}, "y")
	g.Integer = true
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range g.Nodes {
		ops = append(ops, n.OpType)
		if n.OpType == "QLinearConv" {
			l, _ := n.Str(LayoutAttr, "")
			o, _ := n.Str(OutLayoutAttr, "")
			if l != "NCHW" || o != "NHWC" || n.Inputs[0] != "xq" {
				t.Errorf("QLinearConv reads %s, data_layout %q, out_layout %q; want xq, NCHW, NHWC", n.Inputs[0], l, o)
			}
		}
	}
	if got, want := strings.Join(ops, ","), "QuantizeLinear,QLinearConv,DequantizeLinear,Transpose"; got != want {
		t.Errorf("nodes %s\nwant  %s", got, want)
	}
}
