package frontend

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// fuseQLinear rewrites the quantized convolutions and matmuls of a QDQ
// model (onnxruntime's quantize_static, tune quantize) as the QLinear ops
// that run on integers (ops.WhyFloat):
//
//	Q(Conv(DQ(x), DQ(w)[, DQ(b)]))  → QLinearConv(x, w[, b])
//	Q(Relu(Conv(…)))                → Max(QLinearConv(…), y_zero)
//	Q(MatMul(DQ(x), DQ(w)))         → QLinearMatMul(x, w)
//	Q(Relu(MatMul(…)))              → Max(QLinearMatMul(…), y_zero)
//
// where w and b are constants (a MatMul's w may be computed at run time,
// attention's keys and values: ops' zeroPointForm), b's scale is x's
// scale times w's and its zero point 0, the float value between has no
// other reader, and the QLinear node has an integer form; anything else
// stays as it is and runs in float. The Relu becomes a Max with the output's zero point: Q is
// monotonic and Q(0) is that zero point, so Q(Relu(v)) = max(Q(v), Q(0)).
// An op that only moves or selects values (MaxPool, Reshape, Transpose,
// ...: integerMoves) between a DequantizeLinear and a QuantizeLinear of the
// same scalar scale and zero point runs on the integers themselves:
//
//	Q(MaxPool(DQ(x, s, z)), s, z) → MaxPool(x)
//
// exact, because DQ is increasing (s > 0) and Q(DQ(v)) = v for every v of
// the type: the float round trip's error is far below half a step. A
// QuantizeLinear of a Concat of dequantized 8-bit tensors quantizes each
// input instead (concatOfQuantized), so the Concat moves bytes and each
// input's requantization is a table (lookup-tables) or nothing.
//
// It runs before constant folding, which would turn DQ(w) into float
// weights, and only where the graph runs on integer kernels
// (graph.Graph.Integer).
func fuseQLinear(g *graph.Graph) (bool, error) {
	if !g.Integer {
		return false, nil
	}
	producers, consumers := g.Producers(), g.Consumers()
	replace := map[*graph.Node][]*graph.Node{} // a QuantizeLinear → the nodes in its place
	for _, q := range g.Nodes {
		nodes, why := qlinearOf(g, q, producers, consumers)
		if n := integerMove(g, q, producers, consumers); n != nil {
			nodes = []*graph.Node{n}
		} else if c := concatOfQuantized(g, q, producers, consumers); c != nil {
			nodes = c
		}
		if nodes != nil {
			replace[q] = nodes
		} else if why != "" {
			g.Note("%s", why)
		}
	}
	if len(replace) == 0 {
		return false, nil
	}
	var nodes []*graph.Node
	for _, n := range g.Nodes {
		if r, ok := replace[n]; ok {
			nodes = append(nodes, r...)
			continue
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	return true, nil
}

// qlinearOf returns the nodes that compute QuantizeLinear node q's output
// on integers, or nil and, where q quantizes a Conv, MatMul or Gemm of
// dequantized operands, a note that names it and says why not.
func qlinearOf(g *graph.Graph, q *graph.Node, producers map[string]*graph.Node, consumers map[string][]*graph.Node) (nodes []*graph.Node, note string) {
	nodes, why, op := qlinearNodes(g, q, producers, consumers)
	if why == "" {
		return nodes, ""
	}
	return nil, "the quantized " + op.OpType + " at node " + op.Name + " runs in float: " + why
}

// qlinearNodes is qlinearOf's matching: the nodes, or why not and the
// node left in float (why "": no quantized Conv, MatMul or Gemm).
func qlinearNodes(g *graph.Graph, q *graph.Node, producers map[string]*graph.Node, consumers map[string][]*graph.Node) ([]*graph.Node, string, *graph.Node) {
	if !isOp(q, "QuantizeLinear", -1) || len(q.Inputs) < 2 || q.HasAttr("output_dtype") || q.HasAttr("block_size") {
		return nil, "", nil
	}
	v, reader := q.Inputs[0], q
	var relu *graph.Node
	if p := producers[v]; isOp(p, "Relu", 1) && onlyReader(g, v, consumers) == q {
		relu, v, reader = p, p.Inputs[0], p
	}
	op := producers[v]
	if op == nil || op.HasAttr(ops.DataLayout) {
		return nil, "", nil
	}
	conv := isOp(op, "Conv", -1)
	gemm := isOp(op, "Gemm", -1) && isOp(producers[op.Inputs[0]], "DequantizeLinear", -1)
	if gemm {
		if why := gemmAsConv(g, op); why != "" {
			return nil, why, op
		}
	}
	if !conv && !gemm && !isOp(op, "MatMul", 2) {
		return nil, "", nil
	}
	if onlyReader(g, v, consumers) != reader {
		return nil, "its float output has other readers than the QuantizeLinear", op
	}
	dq := func(i int) *graph.Node {
		if i >= len(op.Inputs) || op.Inputs[i] == "" {
			return nil
		}
		d := producers[op.Inputs[i]]
		if !isOp(d, "DequantizeLinear", -1) || len(d.Inputs) < 2 || d.HasAttr("block_size") {
			return nil
		}
		return d
	}
	dx, dw := dq(0), dq(1)
	if dx == nil || dw == nil {
		return nil, "", nil
	}
	if g.ConstOf(dw.Inputs[0]) == nil && (conv || gemm) {
		return nil, "its weights are computed at run time", op
	}
	// Per-channel weights: along the output channels (a Conv's axis 0, a
	// [K, N] MatMul weight's axis 1, a Gemm's N axis).
	outAxis := map[bool]int{true: 0, false: 1}[conv]
	if gemm && transB(op) {
		outAxis = 0
	}
	if s := g.ConstOf(dw.Inputs[1]); s == nil || s.Len() > 1 && quantAxis(dw, len(g.Values[dw.Inputs[0]].Shape)) != outAxis {
		return nil, "its weights' scale is not a constant per output channel", op
	}
	ins := []string{dx.Inputs[0], dx.Inputs[1], dx.Input(2), dw.Inputs[0], dw.Inputs[1], dw.Input(2), q.Inputs[1], q.Input(2)}
	var reshapeX *graph.Node
	if gemm {
		// y = x·Wᵀ + b is a 1×1 convolution of x [M, K] as [M, K, 1, 1]
		// with W [N, K] as [N, K, 1, 1], its output [M, N, 1, 1].
		reshapeX, ins[0], ins[3] = gemmOperands(g, op, dx.Inputs[0], dw.Inputs[0])
		conv = true
	}
	if conv && len(op.Inputs) > 2 && op.Inputs[2] != "" {
		db := dq(2)
		if db == nil || !biasScaleFits(g, db, dx, dw) {
			return nil, "its bias is not an int32 constant of scale x_scale·w_scale and zero point 0", op
		}
		ins = append(ins, db.Inputs[0])
	}
	n := &graph.Node{Name: op.Name + "/qlinear", Domain: "", Inputs: ins, Outputs: []string{q.Outputs[0]}}
	switch {
	case gemm:
		n.OpType, n.Attrs = "QLinearConv", map[string]graph.Attr{}
	case conv:
		n.OpType = "QLinearConv"
		n.Attrs = op.Attrs
	default:
		n.OpType = "QLinearMatMul"
	}
	out := q.Outputs[0]
	var back *graph.Node
	if gemm {
		// The convolution writes [M, N, 1, 1]; a Reshape gives [M, N].
		y := g.Values[out]
		y4 := g.FreshName(out + "/conv")
		g.Value(y4).DType, g.Value(y4).Shape = y.DType, []int{y.Shape[0], y.Shape[1], 1, 1}
		n.Outputs[0] = y4
		shape := g.FreshName(out + "/shape")
		g.AddConst(shape, graph.Int64Tensor([]int{2}, []int64{int64(y.Shape[0]), int64(y.Shape[1])}))
		back = &graph.Node{Name: op.Name + "/qlinear/reshape", OpType: "Reshape", Inputs: []string{y4, shape}, Outputs: []string{out}, Attrs: map[string]graph.Attr{}}
	}
	if why := ops.WhyFloat(g, n); why != "" {
		return nil, why, op // dce removes the values made for it
	}
	nodes := []*graph.Node{n}
	if gemm {
		nodes = []*graph.Node{reshapeX, n, back}
		n = back // a Relu's Max follows the Reshape
	}
	if relu == nil {
		return nodes, "", nil
	}
	zero := q.Input(2)
	if zero == "" {
		zero = g.FreshName(q.Outputs[0] + "/zero")
		g.AddConst(zero, &graph.Tensor{DType: graph.Uint8, Shape: []int{}, I64: []int64{0}})
	}
	unclamped := g.FreshName(q.Outputs[0] + "/unclamped")
	g.Value(unclamped).DType = g.Values[q.Outputs[0]].DType
	g.Value(unclamped).Shape = slices.Clone(g.Values[q.Outputs[0]].Shape)
	n.Outputs[0] = unclamped
	return append(nodes, &graph.Node{Name: relu.Name + "/qlinear", OpType: "Max", Inputs: []string{unclamped, zero}, Outputs: []string{q.Outputs[0]}, Attrs: map[string]graph.Attr{}}), "", nil
}

// transB reports whether Gemm node n multiplies by its B transposed.
func transB(n *graph.Node) bool {
	t, err := n.Int("transB", 0)
	return err == nil && t != 0
}

// gemmAsConv returns why the quantized Gemm n cannot run as a 1×1
// QLinearConv, or "": y = x·B (Bᵀ with transB) + C with alpha and beta 1,
// x of rank 2 and not transposed, B a constant.
func gemmAsConv(g *graph.Graph, n *graph.Node) string {
	alpha, errA := n.Float("alpha", 1)
	beta, errB := n.Float("beta", 1)
	ta, errT := n.Int("transA", 0)
	x, y := g.Values[n.Inputs[0]], g.Values[n.Outputs[0]]
	switch {
	case errA != nil || errB != nil || errT != nil || alpha != 1 || beta != 1 && len(n.Inputs) > 2 && n.Inputs[2] != "":
		return "Gemm has an integer form for alpha 1 and beta 1 only"
	case ta != 0:
		return "Gemm has no integer form with transA"
	case x == nil || len(x.Shape) != 2 || y == nil || len(y.Shape) != 2 || x.Shape[0] < 1 || y.Shape[1] < 1:
		return "Gemm has an integer form for static [M, K] inputs only"
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		if c := g.Values[n.Inputs[2]]; c == nil || graph.NumElems(c.Shape) != y.Shape[1] {
			return "Gemm has an integer form for a bias of one value per output column only"
		}
	}
	return ""
}

// gemmOperands returns the Reshape of Gemm n's quantized input x to
// [M, K, 1, 1] and its output value, and the int8 constant weights w as a
// new [N, K, 1, 1] constant (transposed from [K, N] without transB).
func gemmOperands(g *graph.Graph, n *graph.Node, x, w string) (*graph.Node, string, string) {
	xv, wt := g.Values[x], g.ConstOf(w)
	M, K := xv.Shape[0], xv.Shape[1]
	x4, shape := g.FreshName(x+"/as_nchw"), g.FreshName(x+"/as_nchw_shape")
	g.AddConst(shape, graph.Int64Tensor([]int{4}, []int64{int64(M), int64(K), 1, 1}))
	g.Value(x4).DType, g.Value(x4).Shape = xv.DType, []int{M, K, 1, 1}
	reshape := &graph.Node{Name: n.Name + "/qlinear/as_nchw", OpType: "Reshape", Inputs: []string{x, shape}, Outputs: []string{x4}, Attrs: map[string]graph.Attr{}}
	N := wt.Shape[0]
	data := slices.Clone(wt.I64)
	if !transB(n) { // [K, N] → [N, K]
		N = wt.Shape[1]
		for k := range K {
			for j := range N {
				data[j*K+k] = wt.I64[k*N+j]
			}
		}
	}
	w4 := g.FreshName(w + "/as_oihw")
	g.AddConst(w4, &graph.Tensor{DType: wt.DType, Shape: []int{N, K, 1, 1}, I64: data})
	return reshape, x4, w4
}

// quantAxis returns the axis of a DequantizeLinear's per-axis parameters
// (attribute axis, default 1) in [0, rank).
func quantAxis(d *graph.Node, rank int) int {
	a, err := d.Int("axis", 1)
	if err != nil {
		return -1
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a)
}

// biasScaleFits reports whether the bias's DequantizeLinear db has zero
// point 0 and scale x_scale·w_scale (per channel, as a float32 product,
// within a rounding): its int32 values are then the sums' own units.
func biasScaleFits(g *graph.Graph, db, dx, dw *graph.Node) bool {
	b, bs, xs, ws := g.ConstOf(db.Inputs[0]), g.ConstOf(db.Inputs[1]), g.ConstOf(dx.Inputs[1]), g.ConstOf(dw.Inputs[1])
	if b == nil || b.DType != graph.Int32 || bs == nil || xs == nil || ws == nil || xs.Len() != 1 {
		return false
	}
	if z := db.Input(2); z != "" {
		zt := g.ConstOf(z)
		if zt == nil || slices.ContainsFunc(zt.I64, func(v int64) bool { return v != 0 }) {
			return false
		}
	}
	x := float32(xs.Float64s()[0])
	wf, bf := ws.Float64s(), bs.Float64s()
	for m := range b.Len() {
		w := wf[0]
		if len(wf) > 1 {
			w = wf[m]
		}
		s := bf[0]
		if len(bf) > 1 {
			s = bf[m]
		}
		want := float64(x * float32(w))
		if math.Abs(s-want) > 1e-6*math.Abs(want) {
			return false
		}
	}
	return true
}

// integerMoves are the ops integerMove runs on quantized values: each
// output element is one of the input's, unchanged, or (MaxPool) the
// largest of some, so they commute with an increasing affine map.
var integerMoves = map[string]bool{
	"MaxPool": true, "Reshape": true, "Flatten": true, "Transpose": true, "Squeeze": true,
	"Unsqueeze": true, "Identity": true, "DepthToSpace": true, "SpaceToDepth": true,
}

// integerMove returns op(x) in place of QuantizeLinear q when q quantizes
// op(DequantizeLinear(x)) with the same scalar scale and zero point as the
// DequantizeLinear's, op one of integerMoves whose only reader is q; else
// nil.
func integerMove(g *graph.Graph, q *graph.Node, producers map[string]*graph.Node, consumers map[string][]*graph.Node) *graph.Node {
	if !isOp(q, "QuantizeLinear", -1) || len(q.Inputs) < 2 || q.HasAttr("output_dtype") || q.HasAttr("block_size") {
		return nil
	}
	op := producers[q.Inputs[0]]
	if op == nil || op.Domain != "" || len(op.Outputs) != 1 || !integerMoves[op.OpType] || op.HasAttr(ops.DataLayout) || onlyReader(g, q.Inputs[0], consumers) != q {
		return nil
	}
	dq := producers[op.Inputs[0]]
	if !isOp(dq, "DequantizeLinear", -1) || len(dq.Inputs) < 2 || dq.HasAttr("block_size") {
		return nil
	}
	x, y := g.Values[dq.Inputs[0]], g.Values[q.Outputs[0]]
	if x == nil || y == nil || x.DType != y.DType || (x.DType != graph.Uint8 && x.DType != graph.Int8) {
		return nil
	}
	if !sameScalar(g, dq.Inputs[1], q.Inputs[1]) || !sameZeroPoint(g, dq.Input(2), q.Input(2)) {
		return nil
	}
	n := &graph.Node{Name: op.Name + "/integer", OpType: op.OpType, Attrs: op.Attrs, Inputs: slices.Clone(op.Inputs), Outputs: []string{q.Outputs[0]}}
	n.Inputs[0] = dq.Inputs[0]
	return n
}

// concatOfQuantized returns the nodes that compute QuantizeLinear q of a
// Concat of dequantized 8-bit tensors (each DequantizeLinear of its own
// scalar scale and zero point) as a Concat of the inputs quantized by q's
// scale and zero point, which is the same (q is elementwise, Concat only
// moves values):
//
//	Q(Concat(DQ(a, s_a, z_a), DQ(b, s_b, z_b)), s, z) → Concat(Q(DQ(a, s_a, z_a), s, z), Q(DQ(b, ...), s, z))
//
// so the Concat moves bytes, and each input's Q(DQ(·)) is a table
// (lookup-tables) or, of q's own scale and zero point, nothing. nil where
// q quantizes no such Concat, the Concat has another reader, or a
// parameter is not one constant.
func concatOfQuantized(g *graph.Graph, q *graph.Node, producers map[string]*graph.Node, consumers map[string][]*graph.Node) []*graph.Node {
	if !isOp(q, "QuantizeLinear", -1) || len(q.Inputs) < 2 || q.HasAttr("output_dtype") || q.HasAttr("block_size") {
		return nil
	}
	c := producers[q.Inputs[0]]
	if !isOp(c, "Concat", -1) || onlyReader(g, q.Inputs[0], consumers) != q || !sameScalar(g, q.Inputs[1], q.Inputs[1]) || !sameZeroPoint(g, q.Input(2), q.Input(2)) {
		return nil
	}
	y := g.Values[q.Outputs[0]]
	if y == nil || y.DType != graph.Uint8 && y.DType != graph.Int8 {
		return nil
	}
	var nodes []*graph.Node
	ins := make([]string, len(c.Inputs))
	for i, v := range c.Inputs {
		dq := producers[v]
		if !isOp(dq, "DequantizeLinear", -1) || len(dq.Inputs) < 2 || dq.HasAttr("block_size") ||
			!sameScalar(g, dq.Inputs[1], dq.Inputs[1]) || !sameZeroPoint(g, dq.Input(2), dq.Input(2)) {
			return nil
		}
		if x := g.Values[dq.Inputs[0]]; x == nil || x.DType != graph.Uint8 && x.DType != graph.Int8 {
			return nil
		}
		ins[i] = g.FreshName(fmt.Sprintf("%s/q%d", q.Outputs[0], i))
		g.Value(ins[i])
		nodes = append(nodes, &graph.Node{Name: fmt.Sprintf("%s/q%d", q.Name, i), OpType: "QuantizeLinear", Attrs: q.Attrs,
			Inputs: append([]string{v}, q.Inputs[1:]...), Outputs: []string{ins[i]}})
	}
	return append(nodes, &graph.Node{Name: c.Name + "/integer", OpType: "Concat", Attrs: c.Attrs, Inputs: ins, Outputs: []string{q.Outputs[0]}})
}

// sameScalar reports whether values a and b are one-element float
// constants of the same value.
func sameScalar(g *graph.Graph, a, b string) bool {
	ta, tb := g.ConstOf(a), g.ConstOf(b)
	if ta == nil || tb == nil || ta.Len() != 1 || tb.Len() != 1 || !ta.DType.IsFloat() || !tb.DType.IsFloat() {
		return false
	}
	va, vb := ta.Float64s()[0], tb.Float64s()[0]
	return va == vb && va > 0
}

// sameZeroPoint reports whether zero points a and b (a value, or "" for
// the default 0) are the same one-element integer.
func sameZeroPoint(g *graph.Graph, a, b string) bool {
	v := func(name string) (int64, bool) {
		if name == "" {
			return 0, true
		}
		t := g.ConstOf(name)
		if t == nil || t.Len() != 1 || len(t.I64) != 1 {
			return 0, false
		}
		return t.I64[0], true
	}
	va, okA := v(a)
	vb, okB := v(b)
	return okA && okB && va == vb
}
