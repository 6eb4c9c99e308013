package te

import (
	"math"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// MatMul is numpy matmul: a 1-D a is promoted to [1, K] and a 1-D b to
// [K, 1], the promoted axes are removed from the result, and the batch
// dimensions (all but the last two) broadcast. One reduction stage.
func MatMul(name string, a, b *Tensor) (*Tensor, error) {
	return matMul(name, a, b, tir.MulE, dotForm{n: 1})
}

// MatMulDot is MatMul with k in groups of dot adjacent elements (dot
// divides k), each group's products summed in the body, as IntMatMul's
// Dot sums its groups: the form of a float dot-product instruction that
// sums pairs (x86's vdpbf16ps, aarch64's bfdot: dot 2) over operands
// rounded to bfloat16 (the bf16 precision), its constant operand packed by
// RewriteLayout so that each group lies together.
func MatMulDot(name string, a, b *Tensor, dot int) (*Tensor, error) {
	return matMul(name, a, b, tir.MulE, dotForm{n: max(dot, 1)})
}

// IntMatMul is MatMul on integers: a and b hold integers (of an integer
// type, or float32 values that are integers), and the result is the int32
// sum of their int32 products. Zero points are the caller's to subtract
// (or to fold into a bias); the sums must stay within int32.
func IntMatMul(name string, a, b *Tensor, o IntMatMulOptions) (*Tensor, error) {
	df := dotForm{n: max(o.Dot, 1), saturate: o.SaturatePairs}
	if df.saturate && (df.n%2 != 0 || a.DType() != tir.Uint8 || b.DType() != tir.Int8) {
		return nil, opError("MatMul", orDefault(name, "matmul"), "saturated pairs need uint8 a, int8 b and an even group (%v, %v, %d)", a.DType(), b.DType(), df.n)
	}
	return matMul(name, a, b, intProduct, df)
}

// IntMatMulOptions shape IntMatMul's reduction as IntConvOptions' Dot and
// SaturatePairs shape a convolution's: Dot adjacent k summed in the body
// (Dot divides k), each pair saturated to int16 with SaturatePairs.
type IntMatMulOptions struct {
	Dot           int
	SaturatePairs bool
}

// intProduct is the int32 product of two integer operands.
func intProduct(a, b tir.Expr) tir.Expr { return tir.MulE(toInt32(a), toInt32(b)) }

// toInt32 converts an integer operand (of an integer type, or a float32
// holding an integer) to int32.
func toInt32(x tir.Expr) tir.Expr {
	if x.Type() == tir.Int32 {
		return x
	}
	return &tir.Cast{To: tir.Int32, X: x}
}

func matMul(name string, a, b *Tensor, mul func(a, b tir.Expr) tir.Expr, df dotForm) (*Tensor, error) {
	name = orDefault(name, "matmul")
	if err := checkInputs("MatMul", name, a, b); err != nil {
		return nil, err
	}
	ra, rb := len(a.Shape), len(b.Shape)
	if ra == 0 || rb == 0 {
		return nil, opError("MatMul", name, "scalar operand (%v, %v)", a.Shape, b.Shape)
	}
	var aBatch, bBatch []int
	var ka, kb, m, n int
	if ra == 1 {
		ka = a.Shape[0]
	} else {
		aBatch, m, ka = a.Shape[:ra-2], a.Shape[ra-2], a.Shape[ra-1]
	}
	if rb == 1 {
		kb = b.Shape[0]
	} else {
		bBatch, kb, n = b.Shape[:rb-2], b.Shape[rb-2], b.Shape[rb-1]
	}
	if ka != kb {
		return nil, opError("MatMul", name, "inner dimensions differ: %v · %v", a.Shape, b.Shape)
	}
	batch, err := BroadcastShapes(aBatch, bBatch)
	if err != nil {
		return nil, opError("MatMul", name, "batch dimensions: %v", err)
	}
	out := append([]int(nil), batch...)
	if ra > 1 {
		out = append(out, m)
	}
	if rb > 1 {
		out = append(out, n)
	}
	if df.n < 1 || ka%df.n != 0 {
		return nil, opError("MatMul", name, "groups of %d over an inner dimension of %d", df.n, ka)
	}
	nb := len(batch)
	return Reduce(name, out, Sum, []int{ka / df.n}, func(i, r []tir.Expr) tir.Expr {
		terms := make([]tir.Expr, df.n)
		for g := range df.n {
			k := r[0]
			if df.n > 1 {
				k = iaddc(imulc(r[0], df.n), g)
			}
			ai := broadcastIndex(aBatch, batch, i[:nb])
			bi := broadcastIndex(bBatch, batch, i[:nb])
			j := nb
			if ra > 1 {
				ai = append(ai, i[j], k)
				j++
			} else {
				ai = append(ai, k)
			}
			if rb > 1 {
				bi = append(bi, k, i[j])
			} else {
				bi = append(bi, k)
			}
			terms[g] = mul(a.At(ai...), b.At(bi...))
		}
		return df.sum(terms)
	}), nil
}

// GemmAttrs are Gemm's attributes; ONNX's defaults are in DefaultGemmAttrs.
type GemmAttrs struct {
	Alpha, Beta    float32
	TransA, TransB bool
	// Dot > 1 sums the product's reduction in groups of Dot adjacent k
	// in the body, as MatMulDot does (a bf16 graph's pairs); it must
	// divide k.
	Dot int
}

// DefaultGemmAttrs returns alpha = beta = 1, no transposes.
func DefaultGemmAttrs() GemmAttrs { return GemmAttrs{Alpha: 1, Beta: 1} }

// Gemm is alpha * A' B' + beta * C with A' = transA ? Aᵀ : A (and B' the
// same); c may be nil, else it broadcasts unidirectionally to [M, N]. The
// product is a reduction stage; scaling and C are added in a second stage
// when needed (the product is then named name_matmul).
func Gemm(name string, a, b, c *Tensor, attrs GemmAttrs) (*Tensor, error) {
	name = orDefault(name, "gemm")
	if err := checkInputs("Gemm", name, a, b); err != nil {
		return nil, err
	}
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return nil, opError("Gemm", name, "A %v and B %v must be 2-D", a.Shape, b.Shape)
	}
	m, k := a.Shape[0], a.Shape[1]
	if attrs.TransA {
		m, k = k, m
	}
	kb, n := b.Shape[0], b.Shape[1]
	if attrs.TransB {
		kb, n = n, kb
	}
	if k != kb {
		return nil, opError("Gemm", name, "inner dimensions differ: A %v (transA=%v), B %v (transB=%v)", a.Shape, attrs.TransA, b.Shape, attrs.TransB)
	}
	out := []int{m, n}
	if c != nil && !broadcastsTo(c.Shape, out) {
		return nil, opError("Gemm", name, "C %v does not broadcast to %v", c.Shape, out)
	}
	epilogue := c != nil || attrs.Alpha != 1
	mmName := name
	if epilogue {
		mmName = name + "_matmul"
	}
	df := dotForm{n: max(attrs.Dot, 1)}
	if k%df.n != 0 {
		return nil, opError("Gemm", name, "groups of %d over an inner dimension of %d", df.n, k)
	}
	mm := Reduce(mmName, out, Sum, []int{k / df.n}, func(i, r []tir.Expr) tir.Expr {
		terms := make([]tir.Expr, df.n)
		for g := range df.n {
			kk := r[0]
			if df.n > 1 {
				kk = iaddc(imulc(r[0], df.n), g)
			}
			av := a.At(i[0], kk)
			if attrs.TransA {
				av = a.At(kk, i[0])
			}
			bv := b.At(kk, i[1])
			if attrs.TransB {
				bv = b.At(i[1], kk)
			}
			terms[g] = tir.MulE(av, bv)
		}
		return df.sum(terms)
	})
	if !epilogue {
		return mm, nil
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		v := mm.At(i...)
		if attrs.Alpha != 1 {
			v = tir.MulE(tir.F32(float64(attrs.Alpha)), v)
		}
		if c != nil {
			cv := bcastAt(c, out, i)
			if attrs.Beta != 1 {
				cv = tir.MulE(tir.F32(float64(attrs.Beta)), cv)
			}
			v = tir.AddE(v, cv)
		}
		return v
	}), nil
}

// window is the geometry of one spatial axis of a sliding-window op: input
// extent, kernel extent, stride, dilation, pads before and after, output
// extent. Output o reads input o*s + k*d - pb, k in [0, K).
type window struct {
	in, k, s, d, pb, pe, out int
}

// span is the number of padded-input positions one window covers.
func (w window) span() int { return (w.k-1)*w.d + 1 }

// liveTaps returns the taps [lo, hi) of the window that read the input
// (not only padding) for some output: tap k of output y reads padded
// position y·s + k·d, which is the input's when pb ≤ it < pb + in. A tap
// outside them reads padding for every output, so a convolution can leave
// it out: a 3×3 of dilation 36 on a 33×33 map is a 1×1 (ASPP's largest
// rate on a small map).
func (w window) liveTaps() (lo, hi int) {
	lo, hi = w.k, 0
	for k := range w.k {
		// the outputs y whose position y·s + k·d lies in [pb, pb + in)
		first := max(0, ceilDiv(w.pb-k*w.d, w.s))
		if first < w.out && first*w.s+k*w.d < w.pb+w.in {
			lo, hi = min(lo, k), max(hi, k+1)
		}
	}
	if lo >= hi { // no tap reads the input: keep one, it reads padding
		return 0, 1
	}
	return lo, hi
}

func ceilDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

// padded is the extent of the padded input the windows read: the explicit
// pads, extended when ceil mode lets the last window run past them.
func (w window) padded() int { return max(w.in+w.pb+w.pe, (w.out-1)*w.s+w.span()) }

// windows resolves strides, dilations, pads and auto_pad for the spatial
// axes of extents in with kernel extents k.
func windows(op, name string, in, k, strides, dilations, pads []int, autoPad string, ceil bool) ([]window, error) {
	n := len(in)
	if len(k) != n {
		return nil, opError(op, name, "kernel shape %v for %d spatial axes", k, n)
	}
	get := func(what string, v []int, i, def int) (int, error) {
		if len(v) == 0 {
			return def, nil
		}
		if len(v) != n {
			return 0, opError(op, name, "%s %v for %d spatial axes", what, v, n)
		}
		return v[i], nil
	}
	if len(pads) != 0 && len(pads) != 2*n {
		return nil, opError(op, name, "pads %v for %d spatial axes (want begin..., end...)", pads, n)
	}
	ws := make([]window, n)
	for i := range ws {
		w := window{in: in[i], k: k[i]}
		var err error
		if w.s, err = get("strides", strides, i, 1); err != nil {
			return nil, err
		}
		if w.d, err = get("dilations", dilations, i, 1); err != nil {
			return nil, err
		}
		if w.k <= 0 || w.s <= 0 || w.d <= 0 {
			return nil, opError(op, name, "axis %d: kernel %d, stride %d, dilation %d must be positive", i, w.k, w.s, w.d)
		}
		switch autoPad {
		case "", "NOTSET":
			if len(pads) != 0 {
				w.pb, w.pe = pads[i], pads[i+n]
			}
			if w.pb < 0 || w.pe < 0 {
				return nil, opError(op, name, "negative pads %v", pads)
			}
		case "VALID":
		case "SAME_UPPER", "SAME_LOWER":
			w.out = (w.in + w.s - 1) / w.s
			total := max(0, (w.out-1)*w.s+w.span()-w.in)
			if autoPad == "SAME_UPPER" {
				w.pb = total / 2
			} else {
				w.pb = total - total/2
			}
			w.pe = total - w.pb
			ws[i] = w
			continue
		default:
			return nil, opError(op, name, "unknown auto_pad %q", autoPad)
		}
		room := w.in + w.pb + w.pe - w.span()
		if room < 0 {
			return nil, opError(op, name, "axis %d: window of %d (kernel %d, dilation %d) is larger than the padded input %d", i, w.span(), w.k, w.d, w.in+w.pb+w.pe)
		}
		if ceil {
			w.out = (room+w.s-1)/w.s + 1
			// a window that would start in the end padding is dropped
			if (w.out-1)*w.s >= w.in+w.pb {
				w.out--
			}
		} else {
			w.out = room/w.s + 1
		}
		ws[i] = w
	}
	return ws, nil
}

// padStage pads the spatial axes (2, 3, ...) of x for the windows with the
// value v, as a separate stage named name_pad; it returns x itself when no
// padding is needed.
func padStage(name string, x *Tensor, ws []window, v float64) *Tensor {
	return padAxes(name, x, 2, ws, v)
}

// maxPoolFill is the padding of a max pool over x: -Inf for floats, the
// type's smallest value for integers (a quantized MaxPool), which no
// window's maximum can be below: every window holds an element of x.
func maxPoolFill(x *Tensor) tir.Expr {
	if dt := x.DType(); dt.IntElem() {
		lo, _ := dt.Range()
		return tir.IntOf(dt, lo)
	}
	return tir.F32(math.Inf(-1))
}

// padAxes pads the axes first, first+1, ... of x (one per window) with v,
// as a stage name_pad; it returns x itself when no padding is needed.
func padAxes(name string, x *Tensor, first int, ws []window, v float64) *Tensor {
	return padFill(name, x, first, ws, tir.F32(v))
}

// padFill is padAxes with the fill value an expression of x's type.
func padFill(name string, x *Tensor, first int, ws []window, fill tir.Expr) *Tensor {
	return padWindow(name, x, first, ws, fill, nil)
}

// padWindow is padFill with each element of x converted by conv (nil: as
// it is) in the padded stage, which it then makes even where no axis
// needs padding; fill is of conv's type.
func padWindow(name string, x *Tensor, first int, ws []window, fill tir.Expr, conv func(tir.Expr) tir.Expr) *Tensor {
	shape := append([]int(nil), x.Shape...)
	need := conv != nil
	for i, w := range ws {
		shape[first+i] = w.padded()
		need = need || w.pb > 0 || shape[first+i] > w.in
	}
	if !need {
		return x
	}
	if conv == nil {
		conv = func(e tir.Expr) tir.Expr { return e }
	}
	return Compute(name+"_pad", shape, func(i []tir.Expr) tir.Expr {
		idx := append([]tir.Expr(nil), i...)
		var inside tir.Expr
		for k, w := range ws {
			a := i[first+k]
			if w.pb > 0 {
				inside = andCond(inside, tir.Cmp(tir.GE, a, tir.Const(int64(w.pb))))
			}
			if shape[first+k] > w.pb+w.in {
				inside = andCond(inside, tir.Cmp(tir.LT, a, tir.Const(int64(w.pb+w.in))))
			}
			idx[first+k] = iaddc(a, -w.pb)
		}
		if inside == nil {
			return conv(x.At(idx...))
		}
		return tir.SelectE(inside, conv(x.At(idx...)), fill)
	})
}

// checkConvOperands checks Conv's group against C input channels and the
// weights [M, C/group, K...], the kernel_shape attribute against the
// weights, and the bias against [M]; it returns the group count.
func checkConvOperands(name string, C int, w, b *Tensor, a ConvAttrs) (int, error) {
	M, Cg := w.Shape[0], w.Shape[1]
	G := a.Group
	if G == 0 {
		G = 1
	}
	if G < 0 || C%G != 0 || M%G != 0 || Cg != C/G {
		return 0, opError("Conv", name, "group %d does not fit input channels %d, weights %v", G, C, w.Shape)
	}
	if a.KernelShape != nil && !slices.Equal(a.KernelShape, w.Shape[2:]) {
		return 0, opError("Conv", name, "kernel_shape %v but weights %v", a.KernelShape, w.Shape)
	}
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != M) {
		return 0, opError("Conv", name, "bias %v, want [%d]", b.Shape, M)
	}
	return G, nil
}

// ConvAttrs are Conv's attributes. The zero value is ONNX's default
// (NOTSET padding with no pads, unit strides and dilations, one group);
// KernelShape, when given, must match the weights.
type ConvAttrs struct {
	AutoPad     string // "", "NOTSET", "SAME_UPPER", "SAME_LOWER" or "VALID"
	Dilations   []int
	Group       int   // 0 means 1
	KernelShape []int // optional
	Pads        []int // [x1_begin, x2_begin, ..., x1_end, x2_end]
	Strides     []int
}

// Conv is ONNX Conv for any number of spatial axes (1-D and 2-D in
// practice): x [N, C, D...], w [M, C/group, K...], optional bias b [M].
// Stages: name_pad (when padding is needed), the reduction name over
// (C/group, K...) (the channel axis is left out when C/group is 1, as in
// depthwise convolution), and name_bias adding b.
func Conv(name string, x, w, b *Tensor, a ConvAttrs) (*Tensor, error) {
	conv, err := conv(name, x, w, b, a, tir.F32(0), tir.MulE)
	if err != nil || b == nil {
		return conv, err
	}
	return Compute(conv.Name+"_bias", conv.Shape, func(i []tir.Expr) tir.Expr {
		return tir.AddE(conv.At(i...), b.At(i[1]))
	}), nil
}

// IntConvOptions say how IntConv lays out and computes a convolution.
type IntConvOptions struct {
	// NHWC: x and the result are channels-last (ConvNHWC); FromNCHW with
	// it: x is NCHW (ConvToNHWC).
	NHWC, FromNCHW bool
	// Dot, with NHWC and not FromNCHW, groups the channel reduction: it
	// runs over groups of Dot adjacent input channels (Dot divides the
	// channels of a group) and sums each group's Dot products in the
	// body, the shape of a CPU's dot-product instruction (four u8×s8
	// products into an int32 lane: x86's vpdpbusd, aarch64's udot), which
	// code generation emits where the weights, packed by rewrite_layout,
	// hold a group's Dot elements together for each output channel. 0 or
	// 1: one channel at a time.
	Dot int
	// SaturatePairs, with Dot even, a uint8 x and int8 weights, saturates
	// the sum of each pair of adjacent products to int16 before adding it
	// (x86's vpmaddubsw, twice the products per instruction of an exact
	// 16-bit multiply-add): the caller chooses it where no pair can reach
	// ±32767 (255·(|w0|+|w1|) ≤ 32767 for weights of one sign), so that the
	// sum is the exact one.
	SaturatePairs bool
	// DotW, with Dot and FromNCHW, groups the taps of the kernel's last
	// axis instead of channels (an image's first convolution: 3 channels,
	// but 7 taps along a row whose bytes lie side by side): w is [M, C,
	// KH, KW'], KW' a multiple of Dot holding a.KernelShape's KW taps and
	// zeros after them; the W dilation must be 1 and every W tap must read
	// the input somewhere (DotWFits). The padding is read past the last
	// tap, times the zero weights.
	DotW bool
	// Float: w is float32 holding integers, and the products and their
	// sums are float32, exact where the caller bounds every partial sum
	// within ±2^24 (a quantized depthwise convolution, which has no
	// groups of channels for a dot instruction): the float kernels, x
	// converted as it is read and padded with xZero like the integer
	// form, so that no tap subtracts the zero point.
	Float bool
}

// DotWFits reports whether a convolution over an input of spatial
// dimensions spatial with kernel k [KH, KW] and attributes a can group its
// W taps (IntConvOptions.DotW): dilation 1 along W and no W tap that reads
// only padding (the sums of the weights IntConv's caller subtracts for the
// zero point count every tap).
func DotWFits(spatial, k []int, a ConvAttrs) bool {
	if len(spatial) != 2 || len(k) != 2 {
		return false
	}
	ws, err := windows("Conv", "conv", spatial, k, a.Strides, a.Dilations, a.Pads, a.AutoPad, false)
	if err != nil || ws[1].d != 1 {
		return false
	}
	lo, hi := ws[1].liveTaps()
	return lo == 0 && hi == k[1]
}

// IntConv is Conv on integers: x holds integers (of an integer type, or
// float32 values that are integers) and is padded with xZero (x's zero
// point, so that a padded tap contributes nothing once the caller
// subtracts xZero·Σw), w holds integers, and the result sums their
// int32 products over the live taps (see window.liveTaps: the caller's
// correction sums w over those taps only, LiveWeightSums). The sums must
// stay within int32 (with o.Float, within ±2^24: float32 sums).
func IntConv(name string, x, w *Tensor, xZero int64, a ConvAttrs, o IntConvOptions) (*Tensor, error) {
	fill := tir.Expr(tir.F32(float64(xZero)))
	if dt := x.DType(); dt.IntElem() {
		fill = tir.IntOf(dt, xZero)
	}
	mul := intProduct
	if o.Float {
		if w.DType() != tir.Float32 || o.Dot > 1 || o.SaturatePairs {
			return nil, opError("Conv", orDefault(name, "conv"), "float products need float32 weights (%v) and no channel groups", w.DType())
		}
		mul = floatProduct
	}
	if o.NHWC {
		return convNHWC(name, x, w, nil, a, o.FromNCHW, fill, mul, dotForm{n: max(o.Dot, 1), saturate: o.SaturatePairs, alongW: o.DotW})
	}
	if o.Dot > 1 || o.SaturatePairs || o.DotW {
		return nil, opError("Conv", orDefault(name, "conv"), "channel groups (Dot %d) need channels-last input", o.Dot)
	}
	return conv(name, x, w, nil, a, fill, mul)
}

// floatProduct is the float32 product of an input element (converted) and
// a float32 weight.
func floatProduct(a, b tir.Expr) tir.Expr { return tir.MulE(toFloat32(a), b) }

// toFloat32 converts an operand to float32 (itself if it is one).
func toFloat32(x tir.Expr) tir.Expr {
	if x.Type() == tir.Float32 {
		return x
	}
	return &tir.Cast{To: tir.Float32, X: x}
}

// LiveWeightSums returns, for Conv's weights w (data wdata, row-major) of
// a convolution over an input of spatial dimensions spatial with
// attributes a, the sum of the
// weights of each output channel over the taps the reduction visits
// (IntConv's correction of the zero point).
func LiveWeightSums(spatial, wShape []int, wdata []int64, a ConvAttrs) ([]int64, error) {
	if len(spatial)+2 != len(wShape) {
		return nil, opError("Conv", "conv", "spatial dimensions %v and weights %v", spatial, wShape)
	}
	ws, err := windows("Conv", "conv", spatial, wShape[2:], a.Strides, a.Dilations, a.Pads, a.AutoPad, false)
	if err != nil {
		return nil, err
	}
	// live[t] says whether flat tap index t (over the kernel's axes) is
	// visited: every axis of it within its window's live taps.
	taps := wShape[2:]
	grid := numElems(taps)
	live := make([]bool, grid)
	for t := range live {
		rest, ok := t, true
		for s := len(taps) - 1; s >= 0; s-- {
			lo, hi := ws[s].liveTaps()
			i := rest % taps[s]
			rest /= taps[s]
			ok = ok && i >= lo && i < hi
		}
		live[t] = ok
	}
	M := wShape[0]
	per := len(wdata) / M
	sums := make([]int64, M)
	for m := range M {
		row := wdata[m*per : (m+1)*per]
		for k, v := range row {
			if live[k%grid] {
				sums[m] += v
			}
		}
	}
	return sums, nil
}

// conv is Conv's reduction: x padded with fill, mul the product of an
// input and a weight element.
func conv(name string, x, w, b *Tensor, a ConvAttrs, fill tir.Expr, mul func(a, b tir.Expr) tir.Expr) (*Tensor, error) {
	name = orDefault(name, "conv")
	if err := checkInputs("Conv", name, x, w); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	if rank < 3 || len(w.Shape) != rank {
		return nil, opError("Conv", name, "input %v and weights %v must have the same rank >= 3", x.Shape, w.Shape)
	}
	N, C := x.Shape[0], x.Shape[1]
	M, Cg := w.Shape[0], w.Shape[1]
	G, err := checkConvOperands(name, C, w, b, a)
	if err != nil {
		return nil, err
	}
	k := w.Shape[2:]
	ws, err := windows("Conv", name, x.Shape[2:], k, a.Strides, a.Dilations, a.Pads, a.AutoPad, false)
	if err != nil {
		return nil, err
	}
	src := padFill(name, x, 2, ws, fill)
	out := []int{N, M}
	rshape := []int{}
	if Cg > 1 {
		rshape = append(rshape, Cg)
	}
	// The reduction runs over the live taps only (window.liveTaps): from
	// first[s] on, live[s] of them.
	first := make([]int, len(ws))
	for s, w := range ws {
		lo, hi := w.liveTaps()
		first[s] = lo
		out = append(out, w.out)
		rshape = append(rshape, hi-lo)
	}
	mPerG := M / G
	return Reduce(name, out, Sum, rshape, func(i, r []tir.Expr) tir.Expr {
		var rc tir.Expr = Idx(0)
		if Cg > 1 {
			rc, r = r[0], r[1:]
		}
		ch := rc // input channel
		if G > 1 {
			ch = iadd(imulc(idivc(i[1], mPerG), Cg), rc)
		}
		xi := []tir.Expr{i[0], ch}
		wi := []tir.Expr{i[1], rc}
		for s, w := range ws {
			tap := iaddc(r[s], first[s])
			xi = append(xi, iadd(imulc(i[2+s], w.s), imulc(tap, w.d)))
			wi = append(wi, tap)
		}
		return mul(src.At(xi...), w.At(wi...))
	}), nil
}

// PoolAttrs are the attributes of MaxPool and AveragePool. KernelShape is
// required; the zero value of the rest is ONNX's default. CountIncludePad
// is AveragePool's; Dilations apply to both (AveragePool since opset 19).
type PoolAttrs struct {
	AutoPad         string
	CeilMode        bool
	CountIncludePad bool
	Dilations       []int
	KernelShape     []int
	Pads            []int
	Strides         []int
}

func poolWindows(op, name string, x *Tensor, a PoolAttrs) ([]window, error) {
	if err := checkInputs(op, name, x); err != nil {
		return nil, err
	}
	if len(x.Shape) < 3 {
		return nil, opError(op, name, "input %v must be [N, C, D...]", x.Shape)
	}
	if len(a.KernelShape) == 0 {
		return nil, opError(op, name, "kernel_shape is required")
	}
	return windows(op, name, x.Shape[2:], a.KernelShape, a.Strides, a.Dilations, a.Pads, a.AutoPad, a.CeilMode)
}

func poolShapes(x *Tensor, ws []window) (out, rshape []int) {
	out = append(out, x.Shape[:2]...)
	for _, w := range ws {
		out = append(out, w.out)
		rshape = append(rshape, w.k)
	}
	return out, rshape
}

// poolIndex is the padded-input index of output i at kernel offset r.
func poolIndex(ws []window, i, r []tir.Expr) []tir.Expr {
	idx := []tir.Expr{i[0], i[1]}
	for s, w := range ws {
		idx = append(idx, iadd(imulc(i[2+s], w.s), imulc(r[s], w.d)))
	}
	return idx
}

// MaxPool is ONNX MaxPool (output Y only): a -inf padding stage name_pad
// when padding is needed, then a max reduction over the window.
func MaxPool(name string, x *Tensor, a PoolAttrs) (*Tensor, error) {
	name = orDefault(name, "max_pool")
	ws, err := poolWindows("MaxPool", name, x, a)
	if err != nil {
		return nil, err
	}
	src := padFill(name, x, 2, ws, maxPoolFill(x))
	out, rshape := poolShapes(x, ws)
	return maxOver(name, x.DType(), out, rshape, func(i, r []tir.Expr) tir.Expr {
		return src.At(poolIndex(ws, i, r)...)
	}), nil
}

// maxOver is the max reduction of a pool over elements of type dt: for an
// integer type, the maximum of their int32 values (tir computes no
// arithmetic on narrower integers) converted back to dt in a stage name,
// the reduction named name_max.
func maxOver(name string, dt tir.DType, out, rshape []int, elem func(i, r []tir.Expr) tir.Expr) *Tensor {
	if !dt.IntElem() || dt == tir.Int32 {
		return Reduce(name, out, MaxReduce, rshape, elem)
	}
	m := Reduce(name+"_max", out, MaxReduce, rshape, func(i, r []tir.Expr) tir.Expr {
		return &tir.Cast{To: tir.Int32, X: elem(i, r)}
	})
	return Compute(name, out, func(i []tir.Expr) tir.Expr { return &tir.Cast{To: dt, X: m.At(i...)} })
}

// AveragePool is ONNX AveragePool: a zero padding stage name_pad when
// padding is needed, the window sum name_sum, and the division by the
// window's element count. With count_include_pad the count includes the
// explicit pads (but not the positions past them that ceil mode adds),
// without it only the input elements; the count is a constant when it is
// the same for every output, else an integer min/max expression of the
// output index.
func AveragePool(name string, x *Tensor, a PoolAttrs) (*Tensor, error) {
	name = orDefault(name, "average_pool")
	ws, err := poolWindows("AveragePool", name, x, a)
	if err != nil {
		return nil, err
	}
	return averagePool(name, x, a, ws, 2), nil
}

// averagePool is AveragePool over the axes first, first+1, ... of x, one
// per window: 2 for NCHW, 1 for NHWC.
func averagePool(name string, x *Tensor, a PoolAttrs, ws []window, first int) *Tensor {
	src := padAxes(name, x, first, ws, 0)
	out := slices.Clone(x.Shape)
	var rshape []int
	for s, w := range ws {
		out[first+s] = w.out
		rshape = append(rshape, w.k)
	}
	sum := Reduce(name+"_sum", out, Sum, rshape, func(i, r []tir.Expr) tir.Expr {
		idx := slices.Clone(i)
		for s, w := range ws {
			idx[first+s] = iadd(imulc(i[first+s], w.s), imulc(r[s], w.d))
		}
		return src.At(idx...)
	})
	// counted region per axis, in input coordinates: [lo, hi)
	region := func(w window) (int, int) {
		if a.CountIncludePad {
			return -w.pb, w.in + w.pe
		}
		return 0, w.in
	}
	constCount := 1
	var varAxes []int
	for s, w := range ws {
		lo, hi := region(w)
		c0 := windowCount(w, 0, lo, hi)
		same := true
		for o := 1; o < w.out; o++ {
			if windowCount(w, o, lo, hi) != c0 {
				same = false
				break
			}
		}
		if same {
			constCount *= c0
		} else {
			varAxes = append(varAxes, s)
		}
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		if len(varAxes) == 0 {
			return tir.DivE(sum.At(i...), tir.F32(float64(constCount)))
		}
		var cnt tir.Expr
		for _, s := range varAxes {
			w := ws[s]
			lo, hi := region(w)
			c := windowCountExpr(w, i[first+s], lo, hi)
			if cnt == nil {
				cnt = c
			} else {
				cnt = tir.MulE(cnt, c)
			}
		}
		return tir.DivE(sum.At(i...), toFloat(imulc(cnt, constCount)))
	})
}

// windowCount counts the taps of window o inside [lo, hi).
func windowCount(w window, o, lo, hi int) int {
	n := 0
	for k := 0; k < w.k; k++ {
		if p := o*w.s + k*w.d - w.pb; p >= lo && p < hi {
			n++
		}
	}
	return n
}

// windowCountExpr is windowCount as an expression of the output index o:
// the taps k in [0, K) with lo <= o*s - pb + k*d < hi.
func windowCountExpr(w window, o tir.Expr, lo, hi int) tir.Expr {
	os := imulc(o, w.s) // window start is os - pb
	if w.d == 1 {
		// min(start + K, hi) - max(start, lo), leaving out clamps that
		// never apply
		end := iaddc(os, w.k-w.pb)
		if (w.out-1)*w.s+w.k-w.pb > hi {
			end = tir.MinE(end, tir.Const(int64(hi)))
		}
		begin := iaddc(os, -w.pb)
		if -w.pb < lo {
			begin = tir.MaxE(begin, tir.Const(int64(lo)))
		}
		return tir.SubE(end, begin)
	}
	// first tap: ceil((lo - start) / d) clamped at 0;
	// last tap: floor((hi - 1 - start) / d) clamped at K-1
	first := tir.MaxE(idivc(icsub(lo+w.pb+w.d-1, os), w.d), tir.Const(0))
	last := tir.MinE(idivc(icsub(hi-1+w.pb, os), w.d), tir.Const(int64(w.k-1)))
	return iaddc(tir.SubE(last, first), 1)
}

// GlobalAveragePool averages over the spatial axes: a sum stage name_sum
// [N, C], then the division; the output is [N, C, 1, ...].
func GlobalAveragePool(name string, x *Tensor) (*Tensor, error) {
	name = orDefault(name, "global_average_pool")
	if err := checkInputs("GlobalAveragePool", name, x); err != nil {
		return nil, err
	}
	if len(x.Shape) < 3 {
		return nil, opError("GlobalAveragePool", name, "input %v must be [N, C, D...]", x.Shape)
	}
	sp := x.Shape[2:]
	sum := Reduce(name+"_sum", x.Shape[:2], Sum, sp, func(i, r []tir.Expr) tir.Expr {
		return x.At(append([]tir.Expr{i[0], i[1]}, r...)...)
	})
	out := globalShape(x)
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		return tir.DivE(sum.At(i[0], i[1]), tir.F32(float64(numElems(sp))))
	}), nil
}

// GlobalMaxPool is the maximum over the spatial axes; the output is
// [N, C, 1, ...].
func GlobalMaxPool(name string, x *Tensor) (*Tensor, error) {
	name = orDefault(name, "global_max_pool")
	if err := checkInputs("GlobalMaxPool", name, x); err != nil {
		return nil, err
	}
	if len(x.Shape) < 3 {
		return nil, opError("GlobalMaxPool", name, "input %v must be [N, C, D...]", x.Shape)
	}
	return Reduce(name, globalShape(x), MaxReduce, x.Shape[2:], func(i, r []tir.Expr) tir.Expr {
		return x.At(append([]tir.Expr{i[0], i[1]}, r...)...)
	}), nil
}

func globalShape(x *Tensor) []int {
	out := append([]int(nil), x.Shape[:2]...)
	for range x.Shape[2:] {
		out = append(out, 1)
	}
	return out
}

// BatchNormalization is inference-mode batch normalization of x [N, C,
// ...] with per-channel scale, bias, mean and variance [C]: a stage
// name_factor [C] = scale / sqrt(var + epsilon), then
// (x - mean) * factor + bias. (ONNX default epsilon 1e-5.)
func BatchNormalization(name string, x, scale, bias, mean, variance *Tensor, epsilon float32) (*Tensor, error) {
	name = orDefault(name, "batch_norm")
	if err := checkInputs("BatchNormalization", name, x, scale, bias, mean, variance); err != nil {
		return nil, err
	}
	if len(x.Shape) < 2 {
		return nil, opError("BatchNormalization", name, "input %v must be [N, C, ...]", x.Shape)
	}
	c := x.Shape[1]
	for _, p := range []*Tensor{scale, bias, mean, variance} {
		if len(p.Shape) != 1 || p.Shape[0] != c {
			return nil, opError("BatchNormalization", name, "parameter %s has shape %v, want [%d]", p.Name, p.Shape, c)
		}
	}
	factor := Compute(name+"_factor", []int{c}, func(i []tir.Expr) tir.Expr {
		return tir.DivE(scale.At(i[0]), tir.CallE("sqrt", tir.AddE(variance.At(i[0]), tir.F32(float64(epsilon)))))
	})
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		ch := i[1]
		return tir.AddE(tir.MulE(tir.SubE(x.At(i...), mean.At(ch)), factor.At(ch)), bias.At(ch))
	}), nil
}

// LayerNormalization (opset 17) normalizes x over the axes [axis, rank):
// stages name_mean and name_var (reductions scaled by 1/n), name_rstd =
// 1/sqrt(var + epsilon), then (x - mean) * rstd * scale + bias. scale and
// the optional bias broadcast unidirectionally to x. Only the output Y is
// produced. (ONNX defaults: axis -1, epsilon 1e-5.)
func LayerNormalization(name string, x, scale, bias *Tensor, axis int, epsilon float32) (*Tensor, error) {
	name = orDefault(name, "layer_norm")
	if err := checkInputs("LayerNormalization", name, x, scale); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	axis, err := normAxis("LayerNormalization", name, axis, rank)
	if err != nil {
		return nil, err
	}
	for _, p := range []*Tensor{scale, bias} {
		if p != nil && !broadcastsTo(p.Shape, x.Shape) {
			return nil, opError("LayerNormalization", name, "%s %v does not broadcast to %v", p.Name, p.Shape, x.Shape)
		}
	}
	lead, norm := x.Shape[:axis], x.Shape[axis:]
	inv := 1 / float64(numElems(norm))
	at := func(i, r []tir.Expr) tir.Expr { return x.At(append(append([]tir.Expr(nil), i...), r...)...) }
	mean := Reduce(name+"_mean", lead, Sum, norm, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(at(i, r), tir.F32(inv))
	})
	variance := Reduce(name+"_var", lead, Sum, norm, func(i, r []tir.Expr) tir.Expr {
		d := tir.SubE(at(i, r), mean.At(i...))
		return tir.MulE(tir.MulE(d, d), tir.F32(inv))
	})
	rstd := Compute(name+"_rstd", lead, func(i []tir.Expr) tir.Expr {
		return tir.DivE(tir.F32(1), tir.CallE("sqrt", tir.AddE(variance.At(i...), tir.F32(float64(epsilon)))))
	})
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		v := tir.MulE(tir.MulE(tir.SubE(x.At(i...), mean.At(i[:axis]...)), rstd.At(i[:axis]...)), bcastAt(scale, x.Shape, i))
		if bias != nil {
			v = tir.AddE(v, bcastAt(bias, x.Shape, i))
		}
		return v
	}), nil
}

// softmaxAxis checks x and normalizes the (Log)Softmax axis.
func softmaxAxis(op, name string, x *Tensor, axis int) (int, error) {
	if err := checkInputs(op, name, x); err != nil {
		return 0, err
	}
	if len(x.Shape) == 0 {
		return 0, opError(op, name, "scalar input")
	}
	return normAxis(op, name, axis, len(x.Shape))
}

// Softmax (opset 13) along one axis (ONNX default -1): stages name_max
// (max over the axis), name_exp = exp(x - max), name_sum (sum of exp over
// the axis), then exp / sum.
func Softmax(name string, x *Tensor, axis int) (*Tensor, error) {
	name = orDefault(name, "softmax")
	axis, err := softmaxAxis("Softmax", name, x, axis)
	if err != nil {
		return nil, err
	}
	rs := dropAxis(x.Shape, axis)
	ext := []int{x.Shape[axis]}
	mx := Reduce(name+"_max", rs, MaxReduce, ext, func(i, r []tir.Expr) tir.Expr {
		return x.At(insertAxis(i, axis, r[0])...)
	})
	e := Compute(name+"_exp", x.Shape, func(i []tir.Expr) tir.Expr {
		return tir.CallE("exp", tir.SubE(x.At(i...), mx.At(dropAxis(i, axis)...)))
	})
	sum := Reduce(name+"_sum", rs, Sum, ext, func(i, r []tir.Expr) tir.Expr {
		return e.At(insertAxis(i, axis, r[0])...)
	})
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		return tir.DivE(e.At(i...), sum.At(dropAxis(i, axis)...))
	}), nil
}

// LogSoftmax (opset 13) along one axis (ONNX default -1): stages name_max,
// name_sum = sum of exp(x - max) over the axis, then x - max - log(sum).
func LogSoftmax(name string, x *Tensor, axis int) (*Tensor, error) {
	name = orDefault(name, "log_softmax")
	axis, err := softmaxAxis("LogSoftmax", name, x, axis)
	if err != nil {
		return nil, err
	}
	rs := dropAxis(x.Shape, axis)
	ext := []int{x.Shape[axis]}
	mx := Reduce(name+"_max", rs, MaxReduce, ext, func(i, r []tir.Expr) tir.Expr {
		return x.At(insertAxis(i, axis, r[0])...)
	})
	sum := Reduce(name+"_sum", rs, Sum, ext, func(i, r []tir.Expr) tir.Expr {
		return tir.CallE("exp", tir.SubE(x.At(insertAxis(i, axis, r[0])...), mx.At(i...)))
	})
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		ri := dropAxis(i, axis)
		return tir.SubE(tir.SubE(x.At(i...), mx.At(ri...)), tir.CallE("log", sum.At(ri...)))
	}), nil
}
