package te

import (
	"math"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// Channels-last (NHWC) variants of the 2-D sliding-window ops, for the
// graph's layout pass (package graph, "convert-layout"): the activations
// are [N, H, W, C], so the channel is the contiguous axis that vector loads
// and register tiles of output channels use; the weights stay [M, C/g, KH,
// KW] as the model gives them (a schedule's RewriteLayout packs them for
// its loops). Window geometry and padding rules are the NCHW ops'.

// spatialNHWC returns the spatial extents of a [N, H, W, C] tensor.
func spatialNHWC(op, name string, x *Tensor) ([]int, error) {
	if len(x.Shape) != 4 {
		return nil, opError(op, name, "NHWC input %v must be [N, H, W, C]", x.Shape)
	}
	return x.Shape[1:3], nil
}

// ConvNHWC is Conv on channels-last activations: x [N, H, W, C], w [M,
// C/group, KH, KW], optional bias b [M]; the output is [N, OH, OW, M]. The
// reduction runs over (KH, KW, C/group), the input channel innermost, so
// that it walks x contiguously.
func ConvNHWC(name string, x, w, b *Tensor, a ConvAttrs) (*Tensor, error) {
	return convNHWC(name, x, w, b, a, false, tir.F32(0), tir.MulE, dotForm{n: 1})
}

// ConvNHWCDot is ConvNHWC with the channel reduction in groups of dot
// adjacent input channels (dot divides the channels of a group), each
// group's products summed in the body, as IntConvOptions.Dot sums an
// integer convolution's: the form of a float dot-product instruction that
// sums pairs (x86's vdpbf16ps, aarch64's bfdot: dot 2) over operands
// rounded to bfloat16 (the bf16 precision), the weights packed by
// RewriteLayout so that each group lies together.
func ConvNHWCDot(name string, x, w, b *Tensor, a ConvAttrs, dot int) (*Tensor, error) {
	return convNHWC(name, x, w, b, a, false, tir.F32(0), tir.MulE, dotForm{n: max(dot, 1)})
}

// ConvToNHWCDotW is ConvToNHWC with the taps of the kernel's W axis
// summed in groups of dot, each group's products summed in the body
// (IntConvOptions.DotW's form for float products): the bf16 form of an
// image's first convolution, whose 3 channels make no pairs but whose W
// taps lie side by side in an NCHW row, so that a bf16 dot-product
// instruction sums two of them. w is [M, C, KH, KW'], KW' a multiple of
// dot holding a.KernelShape's KW taps and zeros after them; the W
// dilation must be 1 and every W tap must read the input (DotWFits).
// With roundBF16 the padded window is a stage of x rounded to bfloat16
// (to nearest, ties to even: the bf16 precision's operand), its elements
// converted back to float32 in the products. The zero taps read the input
// (or its zero padding) past the last real tap: an infinite input element
// there makes NaN where the plain form's sum does not read it.
func ConvToNHWCDotW(name string, x, w, b *Tensor, a ConvAttrs, dot int, roundBF16 bool) (*Tensor, error) {
	return convNHWC(name, x, w, b, a, true, tir.F32(0), tir.MulE, dotForm{n: max(dot, 1), alongW: true, roundBF16: roundBF16})
}

// ConvToNHWC is Conv from NCHW activations x [N, C, H, W] to channels-last
// ones [N, OH, OW, M] (Relay's conv2d with data_layout NCHW and out_layout
// NHWC): the first convolution of a model whose input is NCHW, which
// reads the input where it is instead of transposing it first, as
// oneDNN's first-convolution kernels read a plain input into a blocked
// output. The reduction is ConvNHWC's.
func ConvToNHWC(name string, x, w, b *Tensor, a ConvAttrs) (*Tensor, error) {
	return convNHWC(name, x, w, b, a, true, tir.F32(0), tir.MulE, dotForm{n: 1})
}

// dotForm is how a convolution's body sums its channels: n at a time
// (IntConvOptions.Dot), each pair's sum saturated to int16 with saturate
// (IntConvOptions.SaturatePairs).
type dotForm struct {
	n        int
	saturate bool
	alongW   bool // groups of taps along the kernel's W axis (IntConvOptions.DotW)
	// roundBF16: the padded input holds x rounded to bfloat16, read back
	// as float32 (ConvToNHWCDotW): one pass that pads and rounds, a stage
	// of 2-byte elements.
	roundBF16 bool
}

// sum adds a group's products: in order, or with saturate each adjacent
// pair's sum saturated to int16 first.
func (df dotForm) sum(terms []tir.Expr) tir.Expr {
	if df.saturate {
		pairs := make([]tir.Expr, 0, len(terms)/2)
		for j := 0; j+1 < len(terms); j += 2 {
			pairs = append(pairs, sat16(tir.AddE(terms[j], terms[j+1])))
		}
		terms = pairs
	}
	sum := terms[0]
	for _, t := range terms[1:] {
		sum = tir.AddE(sum, t)
	}
	return sum
}

// sat16 is the int32 e saturated to int16's range, widened back: a pair of
// u8×s8 products summed as x86's vpmaddubsw sums them.
func sat16(e tir.Expr) tir.Expr {
	c := tir.MinE(tir.MaxE(e, tir.IntOf(tir.Int32, math.MinInt16)), tir.IntOf(tir.Int32, math.MaxInt16))
	return &tir.Cast{To: tir.Int32, X: &tir.Cast{To: tir.Int16, X: c}}
}

// convNHWC is ConvNHWC, or ConvToNHWC when fromNCHW is set, with x padded
// with fill and mul the product of an input and a weight element. With
// dot.n > 1 the channel reduction runs over groups of dot.n adjacent input
// channels, each group's products summed in the body (IntConvOptions.Dot).
func convNHWC(name string, x, w, b *Tensor, a ConvAttrs, fromNCHW bool, fill tir.Expr, mul func(a, b tir.Expr) tir.Expr, df dotForm) (*Tensor, error) {
	dot := df.n
	name = orDefault(name, "conv")
	if err := checkInputs("Conv", name, x, w); err != nil {
		return nil, err
	}
	// The axes of x: batch, the first spatial axis, channels.
	xN, xH, xC := 0, 1, 3
	if fromNCHW {
		xH, xC = 2, 1
	}
	if len(x.Shape) != 4 {
		if fromNCHW {
			return nil, opError("Conv", name, "NCHW input %v must be [N, C, H, W]", x.Shape)
		}
		return nil, opError("Conv", name, "NHWC input %v must be [N, H, W, C]", x.Shape)
	}
	sp := x.Shape[xH : xH+2]
	if len(w.Shape) != 4 {
		return nil, opError("Conv", name, "weights %v must be [M, C/group, KH, KW]", w.Shape)
	}
	N, C := x.Shape[xN], x.Shape[xC]
	M, Cg := w.Shape[0], w.Shape[1]
	checked := a
	if df.alongW {
		checked.KernelShape = nil // the weights' taps padded: checked below
	}
	G, err := checkConvOperands(name, C, w, b, checked)
	if err != nil {
		return nil, err
	}
	k := w.Shape[2:]
	if df.alongW {
		// w holds KW' ≥ KW taps along W, the last ones zero.
		if !fromNCHW || dot < 2 || len(a.KernelShape) != 2 || a.KernelShape[0] != k[0] || a.KernelShape[1] > k[1] || k[1]%dot != 0 {
			return nil, opError("Conv", name, "groups of %d W taps need NCHW input and weights %v holding kernel_shape %v padded to a multiple of %d", dot, w.Shape, a.KernelShape, dot)
		}
		if !DotWFits(sp, a.KernelShape, a) {
			return nil, opError("Conv", name, "groups of W taps need dilation 1 and every W tap reading the input (kernel %v over %v)", a.KernelShape, sp)
		}
		k = a.KernelShape
	}
	ws, err := windows("Conv", name, sp, k, a.Strides, a.Dilations, a.Pads, a.AutoPad, false)
	if err != nil {
		return nil, err
	}
	if df.alongW {
		ws[1].k = w.Shape[3] // the padded taps read the fill (see padded)
	}
	var src *Tensor
	if df.roundBF16 {
		if x.DType() != tir.Float32 {
			return nil, opError("Conv", name, "rounding a %v input to bfloat16", x.DType())
		}
		bf := func(e tir.Expr) tir.Expr { return &tir.Cast{To: tir.BFloat16, X: e} }
		src = padWindow(name, x, xH, ws, bf(tir.F32(0)), bf)
		inner := mul
		mul = func(a, b tir.Expr) tir.Expr { return inner(&tir.Cast{To: tir.Float32, X: a}, b) }
	} else {
		src = padFill(name, x, xH, ws, fill)
	}
	out := []int{N, ws[0].out, ws[1].out, M}
	// The kernel axes run over their live taps only (window.liveTaps):
	// from first[s] on, live[s] of them; an axis of one live tap is no
	// reduce axis (a dilated 3×3 whose outer taps read only padding is a
	// 1×1).
	var rshape []int
	first, live := make([]int, len(ws)), make([]int, len(ws))
	for s, w := range ws {
		lo, hi := w.liveTaps()
		if df.alongW && s == 1 {
			lo, hi = 0, w.k/dot // groups of dot taps
		}
		first[s], live[s] = lo, hi-lo
		if live[s] > 1 {
			rshape = append(rshape, live[s])
		}
	}
	cdot := dot // the channels of a group
	if df.alongW {
		cdot = 1
	}
	if dot < 1 || Cg%cdot != 0 || dot > 1 && fromNCHW && !df.alongW {
		return nil, opError("Conv", name, "channel groups of %d over %d input channels (from NCHW: %v)", dot, Cg, fromNCHW)
	}
	if df.saturate && (dot%2 != 0 || x.DType() != tir.Uint8 || w.DType() != tir.Int8) {
		return nil, opError("Conv", name, "saturated pairs need uint8 input, int8 weights and an even group (%v, %v, %d)", x.DType(), w.DType(), dot)
	}
	if Cg/cdot > 1 || len(rshape) == 0 {
		rshape = append(rshape, Cg/cdot)
	}
	mPerG := M / G
	conv := Reduce(name, out, Sum, rshape, func(i, r []tir.Expr) tir.Expr {
		// r: the kernel axes wider than 1, then the input channel of
		// the group (left out when it is 1 and a kernel axis remains).
		taps := []tir.Expr{Idx(first[0]), Idx(first[1])}
		p := 0
		for s := range ws {
			if live[s] > 1 {
				taps[s] = iaddc(r[p], first[s])
				p++
			}
		}
		var rc tir.Expr = Idx(0)
		if p < len(r) {
			rc = r[p]
		}
		xi := make([]tir.Expr, 4)
		xi[xN] = i[0]
		for s, w := range ws {
			xi[xH+s] = iadd(imulc(i[1+s], w.s), imulc(taps[s], w.d))
		}
		terms := make([]tir.Expr, dot)
		for j := range dot {
			c, tw := rc, taps[1]   // the weights' input channel and W tap
			xj := slices.Clone(xi) // At keeps its indices
			switch {
			case df.alongW:
				tw = iaddc(imulc(taps[1], dot), j)
				xj[xH+1] = iadd(imulc(i[2], ws[1].s), tw) // dilation 1
			case dot > 1:
				c = iaddc(imulc(rc, dot), j)
			}
			xj[xC] = c
			if G > 1 {
				xj[xC] = iadd(imulc(idivc(i[3], mPerG), Cg), c)
			}
			terms[j] = mul(src.At(xj...), w.At(i[3], c, taps[0], tw))
		}
		return df.sum(terms)
	})
	if b == nil {
		return conv, nil
	}
	return Compute(name+"_bias", out, func(i []tir.Expr) tir.Expr {
		return tir.AddE(conv.At(i...), b.At(i[3]))
	}), nil
}

// poolWindowsNHWC checks the input of pool op on channels-last x [N, H, W,
// C] and returns its windows over H and W (poolWindows for NHWC).
func poolWindowsNHWC(op, name string, x *Tensor, a PoolAttrs) ([]window, error) {
	if err := checkInputs(op, name, x); err != nil {
		return nil, err
	}
	sp, err := spatialNHWC(op, name, x)
	if err != nil {
		return nil, err
	}
	if len(a.KernelShape) == 0 {
		return nil, opError(op, name, "kernel_shape is required")
	}
	return windows(op, name, sp, a.KernelShape, a.Strides, a.Dilations, a.Pads, a.AutoPad, a.CeilMode)
}

// MaxPoolNHWC is MaxPool on channels-last activations x [N, H, W, C].
func MaxPoolNHWC(name string, x *Tensor, a PoolAttrs) (*Tensor, error) {
	name = orDefault(name, "max_pool")
	ws, err := poolWindowsNHWC("MaxPool", name, x, a)
	if err != nil {
		return nil, err
	}
	src := padFill(name, x, 1, ws, maxPoolFill(x))
	out := []int{x.Shape[0], ws[0].out, ws[1].out, x.Shape[3]}
	return maxOver(name, x.DType(), out, []int{ws[0].k, ws[1].k}, func(i, r []tir.Expr) tir.Expr {
		return src.At(i[0], iadd(imulc(i[1], ws[0].s), imulc(r[0], ws[0].d)), iadd(imulc(i[2], ws[1].s), imulc(r[1], ws[1].d)), i[3])
	}), nil
}

// AveragePoolNHWC is AveragePool on channels-last activations x [N, H, W,
// C]: the same windows and counts as AveragePool, over axes 1 and 2.
func AveragePoolNHWC(name string, x *Tensor, a PoolAttrs) (*Tensor, error) {
	name = orDefault(name, "average_pool")
	ws, err := poolWindowsNHWC("AveragePool", name, x, a)
	if err != nil {
		return nil, err
	}
	return averagePool(name, x, a, ws, 1), nil
}

// GlobalAveragePoolNHWC averages x [N, H, W, C] over H and W: a sum stage
// name_sum [N, C], then the division; the output is [N, 1, 1, C].
func GlobalAveragePoolNHWC(name string, x *Tensor) (*Tensor, error) {
	name = orDefault(name, "global_average_pool")
	if err := checkInputs("GlobalAveragePool", name, x); err != nil {
		return nil, err
	}
	sp, err := spatialNHWC("GlobalAveragePool", name, x)
	if err != nil {
		return nil, err
	}
	sum := Reduce(name+"_sum", []int{x.Shape[0], x.Shape[3]}, Sum, sp, func(i, r []tir.Expr) tir.Expr {
		return x.At(i[0], r[0], r[1], i[1])
	})
	return Compute(name, []int{x.Shape[0], 1, 1, x.Shape[3]}, func(i []tir.Expr) tir.Expr {
		return tir.DivE(sum.At(i[0], i[3]), tir.F32(float64(sp[0]*sp[1])))
	}), nil
}
