package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Integer QLinearConv and QLinearMatMul. Where the weights, scales, zero
// points and bias are constants, the weights' zero point is 0 and the
// int32 sums cannot overflow (integerForm), the op runs on integers:
//
//	acc[m]  = Σ x·w                       int32, x padded with its zero point
//	y       = saturate(rint(float(acc + bias'[m]) · mult[m]) + y_zero)
//
// with bias'[m] = bias[m] − x_zero·Σ w[m] (the zero point's share, summed
// over the taps the reduction visits) and mult[m] = x_scale·w_scale[m] /
// y_scale in float32, the requantization onnxruntime's integer kernels
// compute. The two derived constants are added to the graph under names
// made of the node's output (qlinearConsts), the same every time the node
// is lowered. Any other form expands into float arithmetic
// (expandIntegerOp), which is exact within ±2^24. Where no sum of a
// channel can leave ±2^24, the sums run in float32 on float32 copies of
// the weights (qlinearForm.float): the same integers, on the float
// kernels; a convolution sums x·w with x padded with its zero point on
// bias' where bias' is exact in float32 (qlinearForm.foldZero), else, as a
// matmul does, Σ(x − x_zero)·w + bias (padded with 0).

// qlinearInputs are the positions of QLinear's operands: x, x_scale,
// x_zero, w, w_scale, w_zero, y_scale, y_zero, [bias].
const (
	qX, qXScale, qXZero, qW, qWScale, qWZero, qYScale, qYZero, qBias = 0, 1, 2, 3, 4, 5, 6, 7, 8
)

// qlinearForm is what the integer form of a QLinear node needs.
type qlinearForm struct {
	xZero, yZero int64
	yType        graph.DType
	mult         []float32 // per output channel (Conv) or column (MatMul), or one
	bias         []int64   // per output channel or column: the bias (float form) or bias' (int32 form, integerForm withBias)
	// float: no sum of a channel can leave ±2^24 (maxExactSum), so float32
	// arithmetic on the integers is exact: the sums run on the float
	// kernels, with the weights as float32 (a derived constant).
	float bool
	// foldZero, with float, for a convolution: bias' (bias − x_zero·Σw)
	// is exact in float32 too, so the float form sums x·w over x padded
	// with its zero point on bias', as the int32 form does, instead of
	// subtracting the zero point from every tap it reads (a depthwise
	// convolution's inner loop: one add in four of its instructions).
	foldZero bool
	// dynamic: a QLinearMatMul whose b is computed at run time, summed by
	// te.ZeroPointMatMul with wZero, b's zero point (mult one element).
	dynamic bool
	wZero   int64
}

// outType is the element type of the requantized output.
func (f *qlinearForm) outType() tir.DType {
	if f.yType == graph.Int8 {
		return tir.Int8
	}
	return tir.Uint8
}

// dotGroup is the group of input channels a channels-last integer
// convolution sums in its body (te.IntConvOptions.Dot): four u8×s8
// products, the operand of the CPU's dot-product instructions, which code
// generation emits for it (codegen's tsr_dot4).
const dotGroup = 4

// maxExactSum bounds the integers float32 holds exactly.
const maxExactSum = 1 << 24

// integerForm returns the integer form of QLinearConv (conv) or
// QLinearMatMul node n of g, or why it has none. The reason names the
// operand, for tune inspect. Whether there is one costs a pass over the
// weights; the int32 form's bias' (withBias) a second, which only the
// lowering needs: shape inference asks on every round.
func integerForm(g *graph.Graph, n *graph.Node, conv, withBias bool) (*qlinearForm, string) {
	in := func(i int) *graph.Value { return g.Values[n.Input(i)] }
	x, w := in(qX), in(qW)
	if x == nil || w == nil || x.Shape == nil || w.Shape == nil {
		return nil, "shapes unknown"
	}
	if x.DType != graph.Uint8 && x.DType != graph.Int8 {
		return nil, fmt.Sprintf("input x is %s", x.DType)
	}
	if w.Const == nil {
		if conv {
			return nil, "the weights are computed at run time"
		}
		return zeroPointForm(g, n, x, w)
	}
	if w.DType != graph.Int8 && w.DType != graph.Uint8 {
		return nil, fmt.Sprintf("the weights are %s", w.DType)
	}
	consts := func(i int) (*graph.Tensor, bool) {
		if n.Input(i) == "" {
			return nil, true
		}
		c := g.ConstOf(n.Input(i))
		return c, c != nil
	}
	var cs [9]*graph.Tensor
	for _, i := range []int{qXScale, qXZero, qWScale, qWZero, qYScale, qYZero, qBias} {
		c, ok := consts(i)
		if !ok {
			return nil, fmt.Sprintf("input %d (%s) is computed at run time", i, n.Input(i))
		}
		cs[i] = c
	}
	if cs[qXScale].Len() != 1 || cs[qYScale].Len() != 1 || (cs[qXZero] != nil && cs[qXZero].Len() != 1) || (cs[qYZero] != nil && cs[qYZero].Len() != 1) {
		return nil, "x or y is quantized per axis"
	}
	if z := cs[qWZero]; z != nil && slices.ContainsFunc(z.I64, func(v int64) bool { return v != 0 }) {
		return nil, "the weights' zero point is not 0"
	}
	// Output channels: a Conv's M (weights [M, C/g, k...]), a MatMul's N
	// (weights [..., K, N], 2-D only here).
	var outs, per int
	if conv {
		outs = w.Shape[0]
	} else {
		if len(w.Shape) != 2 {
			return nil, fmt.Sprintf("the weights have rank %d (2 runs on integers)", len(w.Shape))
		}
		outs = w.Shape[1]
	}
	per = w.Const.Len() / outs
	ws := cs[qWScale]
	if ws.Len() != 1 && ws.Len() != outs {
		return nil, fmt.Sprintf("the weights' scale has %d elements for %d output channels", ws.Len(), outs)
	}
	f := &qlinearForm{yType: graph.Uint8}
	if cs[qXZero] != nil {
		f.xZero = cs[qXZero].I64[0]
	}
	if cs[qYZero] != nil {
		f.yZero, f.yType = cs[qYZero].I64[0], cs[qYZero].DType
	}
	if f.yType != graph.Uint8 && f.yType != graph.Int8 {
		return nil, fmt.Sprintf("the output is %s", f.yType)
	}
	// Σ|w| per output channel: the largest sum |x|·Σ|w| can reach.
	absW := make([]int64, outs)
	for i, v := range w.Const.I64 {
		m := i % outs // a MatMul's [K, N]
		if conv {
			m = i / per // a Conv's [M, ...]
		}
		absW[m] += max(v, -v)
	}
	xMax := int64(255)
	if x.DType == graph.Int8 {
		xMax = 128
	}
	xs, ys := float32(cs[qXScale].Float64s()[0]), float32(cs[qYScale].Float64s()[0])
	wsf := ws.Float64s()
	f.float = true
	f.foldZero = conv
	for m := range outs {
		s := wsf[0]
		if len(wsf) > 1 {
			s = wsf[m]
		}
		mult := xs * float32(s) / ys
		if mult == 0 || math.IsInf(float64(mult), 0) || math.IsNaN(float64(mult)) {
			return nil, fmt.Sprintf("the requantization scale of channel %d is %g", m, mult)
		}
		f.mult = append(f.mult, mult)
		b := int64(0)
		if cs[qBias] != nil {
			b = cs[qBias].I64[m]
		}
		f.bias = append(f.bias, b)
		// The float form sums (x − x_zero)·w, |x − x_zero| ≤ 255, on the
		// bias; the int32 form sums x·w on bias' = bias − x_zero·Σw, of
		// magnitude at most |bias| + |x_zero|·Σ|w|.
		zw := max(f.xZero, -f.xZero) * absW[m]
		if xMax*absW[m]+max(b, -b)+zw > math.MaxInt32 {
			return nil, fmt.Sprintf("channel %d could overflow an int32 sum", m)
		}
		f.float = f.float && 255*absW[m]+max(b, -b) < maxExactSum
		f.foldZero = f.foldZero && max(b, -b)+zw < maxExactSum
	}
	if !slices.ContainsFunc(f.mult, func(v float32) bool { return v != f.mult[0] }) {
		f.mult = f.mult[:1]
	}
	if f.float && (saturatedDots(g, n) || g.ExactDots && dotGroups(g, n)) {
		// vpmaddubsw's kernels outrun the float ones (ResNet-18's 3×3
		// convolutions of layer 3 with 7-bit weights, Zen 3: 3.8 ms
		// summed in float32, 1.4 ms by saturated pairs), and so does
		// one exact instruction per group (VNNI, sdot) for any weights.
		f.float = false
	}
	f.foldZero = f.foldZero && f.float
	if f.float && !f.foldZero || !withBias {
		return f, ""
	}
	// Σ w per output channel, over the taps the reduction visits.
	var sums []int64
	if conv {
		a, err := convAttrsOf(n)
		if err != nil {
			return nil, err.Error()
		}
		in, _, err := layouts(n)
		if err != nil {
			return nil, err.Error()
		}
		spatial := x.Shape[2:]
		if in {
			spatial = x.Shape[1 : len(x.Shape)-1]
		}
		if sums, err = te.LiveWeightSums(spatial, w.Shape, w.Const.I64, a); err != nil {
			return nil, err.Error()
		}
	} else {
		sums = make([]int64, outs)
		for k := range per {
			for j := range outs {
				sums[j] += w.Const.I64[k*outs+j]
			}
		}
	}
	for m := range outs {
		f.bias[m] -= f.xZero * sums[m]
	}
	return f, ""
}

// zeroPointForm is integerForm for a QLinearMatMul whose b is computed at
// run time (attention's products, te.ZeroPointMatMul), or why it has none:
// per-tensor constant scales and zero points, k a multiple of four, and a
// target that sums four u8·s8 products exactly in one instruction
// (graph.Graph.ExactDots: VNNI, sdot), since b's bytes span the whole
// int8 range once shifted, where saturated pairs would clip.
func zeroPointForm(g *graph.Graph, n *graph.Node, x, w *graph.Value) (*qlinearForm, string) {
	const computed = "the weights are computed at run time"
	switch {
	case !g.ExactDots:
		return nil, computed + " (integer sums of two computed operands need a CPU that sums four 8-bit products exactly: VNNI, sdot)"
	case w.DType != graph.Uint8 && w.DType != graph.Int8:
		return nil, fmt.Sprintf("the weights are %s", w.DType)
	case len(x.Shape) < 2 || len(w.Shape) < 2:
		return nil, computed + " and an operand has rank 1"
	}
	k := w.Shape[len(w.Shape)-2]
	switch {
	case k%dotGroup != 0:
		return nil, fmt.Sprintf("%s and k (%d) is not a multiple of %d", computed, k, dotGroup)
	case 4*int64(k)*255*255 > math.MaxInt32: // four terms of up to k·255·255 each: no partial sum leaves int32
		return nil, fmt.Sprintf("%s and k (%d) could overflow an int32 sum", computed, k)
	}
	var cs [8]*graph.Tensor
	for _, i := range []int{qXScale, qXZero, qWScale, qWZero, qYScale, qYZero} {
		if n.Input(i) == "" {
			continue
		}
		c := g.ConstOf(n.Input(i))
		if c == nil {
			return nil, fmt.Sprintf("input %d (%s) is computed at run time", i, n.Input(i))
		}
		if c.Len() != 1 {
			return nil, computed + " and quantized per axis"
		}
		cs[i] = c
	}
	f := &qlinearForm{yType: graph.Uint8, dynamic: true}
	if cs[qXZero] != nil {
		f.xZero = cs[qXZero].I64[0]
	}
	if cs[qWZero] != nil {
		f.wZero = cs[qWZero].I64[0]
	}
	if cs[qYZero] != nil {
		f.yZero, f.yType = cs[qYZero].I64[0], cs[qYZero].DType
	}
	if f.yType != graph.Uint8 && f.yType != graph.Int8 {
		return nil, fmt.Sprintf("the output is %s", f.yType)
	}
	xs, ws, ys := float32(cs[qXScale].Float64s()[0]), float32(cs[qWScale].Float64s()[0]), float32(cs[qYScale].Float64s()[0])
	mult := xs * ws / ys
	if mult == 0 || math.IsInf(float64(mult), 0) || math.IsNaN(float64(mult)) {
		return nil, fmt.Sprintf("the requantization scale is %g", mult)
	}
	f.mult = []float32{mult}
	return f, ""
}

// lowerZeroPointMatMul lowers a QLinearMatMul in its dynamic form f.
func lowerZeroPointMatMul(c *lowerCtx, f *qlinearForm) ([]*te.Tensor, error) {
	name := c.n.Outputs[0] + "_qmult"
	if err := addDerived(c.g, c.n, name, graph.Float32Tensor([]int{1}, f.mult)); err != nil {
		return nil, err
	}
	mult, err := c.src(name)
	if err != nil {
		return nil, err
	}
	x, err := c.raw(qX)
	if err != nil {
		return nil, err
	}
	w, err := c.raw(qW)
	if err != nil {
		return nil, err
	}
	acc, err := te.ZeroPointMatMul(c.sub("acc"), x, w, f.xZero, f.wZero)
	if err != nil {
		return nil, err
	}
	return one(te.Requantize(c.name(0), acc, nil, mult, len(acc.Shape)-1, f.yZero, f.outType()))
}

// convAttrsOf reads a convolution node's attributes.
func convAttrsOf(n *graph.Node) (te.ConvAttrs, error) {
	var a te.ConvAttrs
	var err error
	if a.AutoPad, err = n.Str("auto_pad", "NOTSET"); err != nil {
		return a, err
	}
	g, err := n.Int("group", 1)
	if err != nil {
		return a, err
	}
	a.Group = int(g)
	for attr, dst := range map[string]*[]int{"dilations": &a.Dilations, "kernel_shape": &a.KernelShape, "pads": &a.Pads, "strides": &a.Strides} {
		vs, err := n.Ints(attr)
		if err != nil {
			return a, err
		}
		for _, v := range vs {
			*dst = append(*dst, int(v))
		}
	}
	return a, nil
}

// qlinearConsts adds f's derived constants to g (or finds them there) and
// returns their names: bias' (int32) and the multipliers (float32).
func qlinearConsts(g *graph.Graph, n *graph.Node, f *qlinearForm) (bias, mult, weights string, err error) {
	bias, mult = n.Outputs[0]+"_qbias", n.Outputs[0]+"_qmult"
	want := map[string]*graph.Tensor{
		bias: {DType: graph.Int32, Shape: []int{len(f.bias)}, I64: f.bias},
		mult: graph.Float32Tensor([]int{len(f.mult)}, f.mult),
	}
	if f.float {
		// The weights as float32, for the float kernels.
		w := g.Values[n.Input(qW)].Const
		wf := make([]float32, len(w.I64))
		for i, v := range w.I64 {
			wf[i] = float32(v)
		}
		weights = n.Outputs[0] + "_qweights"
		want[weights] = graph.Float32Tensor(slices.Clone(w.Shape), wf)
	}
	for name, t := range want {
		if err := addDerived(g, n, name, t); err != nil {
			return "", "", "", err
		}
	}
	return bias, mult, weights, nil
}

// addDerived adds constant t of node n to g as name, or finds it there.
func addDerived(g *graph.Graph, n *graph.Node, name string, t *graph.Tensor) error {
	v := g.Values[name]
	switch {
	case v == nil:
		g.AddConst(name, t)
	case v.Const == nil || v.Const.DType != t.DType || !slices.Equal(v.Const.I64, t.I64) || !slices.Equal(v.Const.F32, t.F32):
		return fmt.Errorf("%s at node %s: the graph has a value %s already", n.OpType, n.Name, name)
	}
	return nil
}

// saturatedDots reports whether QLinearConv or QLinearMatMul node n of g,
// in its int32 form, sums its channels (its k) four at a time in saturated
// pairs (te.IntConvOptions.SaturatePairs): groups that fit (dotGroups),
// weights whose pairs fitInt16, and a target without an exact dot
// instruction (graph.Graph.ExactDots: there groups sum exactly).
func saturatedDots(g *graph.Graph, n *graph.Node) bool {
	if g.ExactDots || !dotGroups(g, n) {
		return false
	}
	w := g.Values[n.Input(qW)].Const
	if n.OpType == "QLinearMatMul" {
		return pairsFitInt16(w, 0)
	}
	if in, _, _ := layouts(n); !in {
		return true // an NCHW image: tapGroupWeights checked its pairs
	}
	return pairsFitInt16(w, 1)
}

// dotGroups reports whether QLinearConv or QLinearMatMul node n of g can
// sum its products four at a time in its int32 form: uint8 input, int8
// weights, and groups of channels (a channels-last convolution's, per
// group), of rows (a 2-D matmul's k) or, for an NCHW image read into
// NHWC, of W taps (tapGroupWeights).
func dotGroups(g *graph.Graph, n *graph.Node) bool {
	x, w := g.Values[n.Input(qX)], g.Values[n.Input(qW)]
	if x == nil || w == nil || w.Const == nil || len(w.Shape) < 2 || x.DType != graph.Uint8 || w.DType != graph.Int8 {
		return false
	}
	if n.OpType == "QLinearMatMul" {
		return len(w.Shape) == 2 && w.Shape[0]%dotGroup == 0
	}
	in, out, err := layouts(n)
	switch {
	case err != nil || !out:
		return false
	case !in:
		return tapGroupWeights(g, n) != nil
	}
	return w.Shape[1]%dotGroup == 0
}

// tapGroupWeights returns the weights of QLinearConv node n of g padded
// along W to a multiple of dotGroup taps with zeros, for a convolution
// that reads its uint8 input NCHW and writes NHWC (an image's first
// layer: 3 channels, too few for groups of channels) and sums its W taps
// in dot groups (te.IntConvOptions.DotW): int8 weights of 2-D kernels at
// least 3 taps wide whose pairs of adjacent taps fit int16 (saturated
// pairs; any weights where the target sums groups exactly, graph.Graph.
// ExactDots), one group, W dilation 1 and every W tap live (te.DotWFits).
// Otherwise nil.
func tapGroupWeights(g *graph.Graph, n *graph.Node) *graph.Tensor {
	x, w := g.Values[n.Input(qX)], g.Values[n.Input(qW)]
	if x == nil || w == nil || w.Const == nil || len(w.Shape) != 4 || len(x.Shape) != 4 || x.DType != graph.Uint8 || w.DType != graph.Int8 || w.Shape[3] < 3 {
		return nil
	}
	a, err := convAttrsOf(n)
	if err != nil || a.Group > 1 || !te.DotWFits(x.Shape[2:], w.Shape[2:], a) {
		return nil
	}
	kw := w.Shape[3]
	kwp := (kw + dotGroup - 1) / dotGroup * dotGroup
	padded := &graph.Tensor{DType: graph.Int8, Shape: []int{w.Shape[0], w.Shape[1], w.Shape[2], kwp}, I64: padRows(w.Const.I64, kw, kwp)}
	if !g.ExactDots && !pairsFitInt16(padded, 3) {
		return nil
	}
	return padded
}

// padRows returns src, rows of n elements, with each row padded with
// zeros to width elements: a kernel's W taps padded to whole dot groups
// (tapGroupWeights, tapPairWeights).
func padRows[T any](src []T, n, width int) []T {
	rows := len(src) / n
	out := make([]T, rows*width)
	for r := range rows {
		copy(out[r*width:], src[r*n:(r+1)*n])
	}
	return out
}

// pairsFitInt16 reports whether no two weights a dot group pairs (indices
// 2k and 2k+1 along axis, the input channels of a convolution's [M, C,
// k...] or the rows of a matmul's [K, N], everything else equal) can make
// a sum of two u8×s8 products leave int16: for each pair, 255 times the
// larger of the sums of its positive and of its negative weights is at
// most 32767. Then a pair summed with saturation (te.IntConvOptions.
// SaturatePairs: vpmaddubsw) is summed exactly. Weights quantized to 7
// bits (onnxruntime's reduce_range, tune quantize --reduce-range) always
// fit; full-range int8 weights rarely do.
func pairsFitInt16(w *graph.Tensor, axis int) bool {
	if w == nil || axis >= len(w.Shape) || w.Shape[axis]%2 != 0 {
		return false
	}
	inner := 1
	for _, d := range w.Shape[axis+1:] {
		inner *= d
	}
	n := w.Shape[axis]
	for i, v := range w.I64 {
		if (i/inner)%n%2 != 0 {
			continue // the second of its pair
		}
		pos, neg := int64(0), int64(0)
		for _, x := range []int64{v, w.I64[i+inner]} {
			if x > 0 {
				pos += x
			} else {
				neg -= x
			}
		}
		if 255*max(pos, neg) > math.MaxInt16 {
			return false
		}
	}
	return true
}

// lowerQLinear lowers QLinearConv (conv) and QLinearMatMul in their
// integer form.
func lowerQLinear(conv bool) func(c *lowerCtx) ([]*te.Tensor, error) {
	return func(c *lowerCtx) ([]*te.Tensor, error) {
		f, why := integerForm(c.g, c.n, conv, true)
		if f == nil {
			return nil, fmt.Errorf("no integer form (%s)", why)
		}
		if f.dynamic {
			return lowerZeroPointMatMul(c, f)
		}
		biasName, multName, weightsName, err := qlinearConsts(c.g, c.n, f)
		if err != nil {
			return nil, err
		}
		x, err := c.raw(qX)
		if err != nil {
			return nil, err
		}
		var w *te.Tensor
		if f.float {
			w, err = c.src(weightsName)
		} else {
			w, err = c.raw(qW)
		}
		if err != nil {
			return nil, err
		}
		bias, err := c.src(biasName)
		if err != nil {
			return nil, err
		}
		mult, err := c.src(multName)
		if err != nil {
			return nil, err
		}
		var acc *te.Tensor
		channel := 1 // the axis of the output channel
		if conv {
			a, err := convAttrsOf(c.n)
			if err != nil {
				return nil, err
			}
			in, out, err := c.nhwc()
			if err != nil {
				return nil, err
			}
			switch {
			case f.float && f.foldZero:
				acc, err = te.IntConv(c.sub("acc"), x, w, f.xZero, a, te.IntConvOptions{NHWC: out, FromNCHW: out && !in, Float: true})
			case !f.float:
				o := te.IntConvOptions{NHWC: out, FromNCHW: out && !in}
				if cg := w.Shape[1]; in && out && cg%dotGroup == 0 {
					o.Dot = dotGroup
					o.SaturatePairs = x.DType() == tir.Uint8 && w.DType() == tir.Int8 && saturatedDots(c.g, c.n)
				}
				if o.FromNCHW {
					if wp := tapGroupWeights(c.g, c.n); wp != nil {
						name := c.n.Outputs[0] + "_qweights_w4"
						if err := addDerived(c.g, c.n, name, wp); err != nil {
							return nil, err
						}
						if w, err = c.src(name); err != nil {
							return nil, err
						}
						a.KernelShape = []int{wp.Shape[2], c.g.Values[c.n.Input(qW)].Shape[3]}
						o.Dot, o.DotW, o.SaturatePairs = dotGroup, true, !c.g.ExactDots
					}
				}
				acc, err = te.IntConv(c.sub("acc"), x, w, f.xZero, a, o)
			case in:
				acc, err = te.ConvNHWC(c.sub("acc"), te.Shifted(c.sub("x_shifted"), x, f.xZero), w, nil, a)
			case out:
				acc, err = te.ConvToNHWC(c.sub("acc"), te.Shifted(c.sub("x_shifted"), x, f.xZero), w, nil, a)
			default:
				acc, err = te.Conv(c.sub("acc"), te.Shifted(c.sub("x_shifted"), x, f.xZero), w, nil, a)
			}
			if err != nil {
				return nil, err
			}
			if out {
				channel = len(acc.Shape) - 1
			}
		} else {
			if f.float {
				acc, err = te.MatMul(c.sub("acc"), te.Shifted(c.sub("x_shifted"), x, f.xZero), w)
			} else {
				var o te.IntMatMulOptions
				if w.Shape[0]%dotGroup == 0 {
					o.Dot = dotGroup
					o.SaturatePairs = x.DType() == tir.Uint8 && w.DType() == tir.Int8 && saturatedDots(c.g, c.n)
				}
				acc, err = te.IntMatMul(c.sub("acc"), x, w, o)
			}
			if err != nil {
				return nil, err
			}
			channel = len(acc.Shape) - 1
		}
		return one(te.Requantize(c.name(0), acc, bias, mult, channel, f.yZero, f.outType()))
	}
}

// WhyFloat returns why QLinearConv or QLinearMatMul node n of g runs in
// float arithmetic (integerForm's reason), or "" when it runs on integers.
// Any other node: "not a QLinear op".
func WhyFloat(g *graph.Graph, n *graph.Node) string {
	if n.OpType != "QLinearConv" && n.OpType != "QLinearMatMul" {
		return "not a QLinear op"
	}
	_, why := integerForm(g, n, n.OpType == "QLinearConv", false)
	return why
}

// inferQLinear is QLinearConv's (conv) and QLinearMatMul's shape rule: the
// convolution's or matmul's on placeholders of the operands' shapes, in
// the node's layout. Deriving it from the lowering would build the derived
// constants on every round of shape inference.
func inferQLinear(conv bool) func(c *InferCtx) error {
	return func(c *InferCtx) error {
		x, w := te.Placeholder("x", c.Shape(qX)...), te.Placeholder("w", c.Shape(qW)...)
		var y *te.Tensor
		var err error
		if conv {
			var a te.ConvAttrs
			if a, err = convAttrsOf(c.N); err != nil {
				return err
			}
			in, out, lerr := layouts(c.N)
			switch {
			case lerr != nil:
				return lerr
			case in:
				y, err = te.ConvNHWC("y", x, w, nil, a)
			case out:
				y, err = te.ConvToNHWC("y", x, w, nil, a)
			default:
				y, err = te.Conv("y", x, w, nil, a)
			}
		} else {
			y, err = te.MatMul("y", x, w)
		}
		if err != nil {
			return c.Errorf("%v", err)
		}
		c.Set(0, qlinearType(c), slices.Clone(y.Shape))
		return nil
	}
}
