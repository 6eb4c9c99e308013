package te

import (
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// ConvTransposeAttrs are ConvTranspose's attributes; the zero value is
// ONNX's default. OutputShape, when given, sets the output's spatial
// extents (it may also list N and C first) and the pads are derived from
// it; auto_pad SAME_UPPER and SAME_LOWER make each extent input × stride.
type ConvTransposeAttrs struct {
	AutoPad       string
	Dilations     []int
	Group         int
	KernelShape   []int
	OutputPadding []int
	OutputShape   []int
	Pads          []int // [x1_begin, x2_begin, ..., x1_end, x2_end]
	Strides       []int
}

// ConvTranspose is ONNX ConvTranspose, the gradient of Conv with respect to
// its input: x [N, C, D...], w [C, M/group, K...], optional bias b [M].
// Output o of a spatial axis sums x[i]·w[k] over o + pad_begin = i·stride
// + k·dilation. Stages: name_dilate, the input with stride − 1 zeros
// between its elements and (K − 1)·dilation − pad zeros around them (a
// negative amount crops), then the reduction name over (C/group, K...) of
// a unit-stride convolution with the flipped kernel, and name_bias adding
// b. Pads may be negative (output_shape beyond the natural extent): the
// positions no input reaches are 0.
//
// Where phasesPay it is computed by phases (convTransposePhases), else
// as a GEMM and a sum of its columns (convTransposeCols); neither
// multiplies a zero of the dilated form.
func ConvTranspose(name string, x, w, b *Tensor, a ConvTransposeAttrs) (*Tensor, error) {
	return convTranspose(name, x, w, b, a, byAuto)
}

// convTransposeForm is how ConvTranspose is computed.
type convTransposeForm int

const (
	byAuto           convTransposeForm = iota // byPhases where phasesPay, else byCols
	byPhases                                  // convTransposePhases where it applies (unit dilations, strides dividing the kernel), else byCols; its layout by phasesChannelsLast
	byPhasesChannels                          // byPhases with the output channel last in the phases
	byPhasesSpatial                           // byPhases with the last spatial axis last in the phases
	byCols                                    // convTransposeCols
	byDilated                                 // convTransposeDilated, the definition (the reference of the tests)
)

// convTranspose is ConvTranspose computed in form.
func convTranspose(name string, x, w, b *Tensor, a ConvTransposeAttrs, form convTransposeForm) (*Tensor, error) {
	name = orDefault(name, "convtranspose")
	const op = "ConvTranspose"
	if err := checkInputs(op, name, x, w); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	if rank < 3 || len(w.Shape) != rank {
		return nil, opError(op, name, "input %v and weights %v must have the same rank >= 3", x.Shape, w.Shape)
	}
	ns := rank - 2
	N, C := x.Shape[0], x.Shape[1]
	G := a.Group
	if G == 0 {
		G = 1
	}
	if G < 0 || C%G != 0 || w.Shape[0] != C {
		return nil, opError(op, name, "group %d does not fit input channels %d, weights %v", G, C, w.Shape)
	}
	Mg := w.Shape[1]
	M, Cg := Mg*G, C/G
	k := w.Shape[2:]
	if a.KernelShape != nil && !slices.Equal(a.KernelShape, k) {
		return nil, opError(op, name, "kernel_shape %v but weights %v", a.KernelShape, w.Shape)
	}
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != M) {
		return nil, opError(op, name, "bias %v, want [%d]", b.Shape, M)
	}
	per := func(what string, v []int, def int) ([]int, error) {
		if len(v) == 0 {
			v = make([]int, ns)
			for i := range v {
				v[i] = def
			}
		}
		if len(v) != ns {
			return nil, opError(op, name, "%s %v for %d spatial axes", what, v, ns)
		}
		return v, nil
	}
	strides, err := per("strides", a.Strides, 1)
	if err != nil {
		return nil, err
	}
	dil, err := per("dilations", a.Dilations, 1)
	if err != nil {
		return nil, err
	}
	adj, err := per("output_padding", a.OutputPadding, 0)
	if err != nil {
		return nil, err
	}
	outShape := a.OutputShape
	if len(outShape) == rank {
		outShape = outShape[2:]
	}
	if len(outShape) != 0 && len(outShape) != ns {
		return nil, opError(op, name, "output_shape %v for %d spatial axes", a.OutputShape, ns)
	}
	if len(a.Pads) != 0 && len(a.Pads) != 2*ns {
		return nil, opError(op, name, "pads %v for %d spatial axes (want begin..., end...)", a.Pads, ns)
	}
	pb, pe := make([]int, ns), make([]int, ns)
	out := []int{N, M}
	for i := range ns {
		if strides[i] <= 0 || dil[i] <= 0 || k[i] <= 0 {
			return nil, opError(op, name, "axis %d: kernel %d, stride %d, dilation %d must be positive", i, k[i], strides[i], dil[i])
		}
		if adj[i] < 0 || (adj[i] >= strides[i] && adj[i] >= dil[i]) {
			return nil, opError(op, name, "output_padding %v must be below the stride or the dilation", adj)
		}
		full := (x.Shape[2+i]-1)*strides[i] + adj[i] + (k[i]-1)*dil[i] + 1 // the extent without pads
		switch {
		case len(outShape) != 0:
			pb[i], pe[i] = splitPads(full-outShape[i], a.AutoPad == "SAME_UPPER")
		case a.AutoPad == "SAME_UPPER" || a.AutoPad == "SAME_LOWER":
			pb[i], pe[i] = splitPads(full-x.Shape[2+i]*strides[i], a.AutoPad == "SAME_UPPER")
		case a.AutoPad == "" || a.AutoPad == "NOTSET":
			if len(a.Pads) != 0 {
				pb[i], pe[i] = a.Pads[i], a.Pads[i+ns]
				if pb[i] < 0 || pe[i] < 0 {
					return nil, opError(op, name, "negative pads %v", a.Pads)
				}
			}
		case a.AutoPad == "VALID":
		default:
			return nil, opError(op, name, "unknown auto_pad %q", a.AutoPad)
		}
		o := full - pb[i] - pe[i]
		if o <= 0 {
			return nil, opError(op, name, "axis %d: output extent %d", i, o)
		}
		out = append(out, o)
	}

	rshape := []int{}
	if Cg > 1 {
		rshape = append(rshape, Cg)
	}
	// With groups the reduction runs over [N, G, M/G, O...], so that every
	// weight index is a loop variable or a sum of them (a weight layout
	// rewrite needs that); name_group then lays it out as [N, M, O...].
	cshape := out
	if G > 1 {
		cshape = append([]int{N, G, Mg}, out[2:]...)
	}
	cname := name
	if G > 1 || b != nil {
		cname = name + "_sum"
	}
	last := (out[rank-1] + strides[ns-1] - 1) / strides[ns-1] // a phase's extent on the last axis
	chLast := phasesChannelsLast(Mg, last)
	switch {
	case form == byAuto && phasesPay(x.Shape[2:], out[2:], k, strides, dil, pb, Mg):
		form = byPhases
	case form == byAuto || form != byCols && form != byDilated && !phasesApply(k, strides, dil):
		form = byCols
	case form == byPhasesChannels || form == byPhasesSpatial:
		chLast = form == byPhasesChannels
		form = byPhases
	}
	var conv *Tensor
	switch form {
	case byPhases:
		conv = convTransposePhases(cname, x, w, cshape, k, strides, pb, G, Cg, chLast)
	case byCols:
		conv = convTransposeCols(cname, x, w, cshape, k, strides, dil, pb, G, Cg)
	default:
		conv = convTransposeDilated(cname, name, x, w, cshape, rshape, k, strides, dil, pb, out, G, Cg)
	}
	if cname == name {
		return conv, nil
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		var v tir.Expr
		if G > 1 {
			v = conv.At(append([]tir.Expr{i[0], idivc(i[1], Mg), imodc(i[1], Mg)}, i[2:]...)...)
		} else {
			v = conv.At(i...)
		}
		if b != nil {
			v = tir.AddE(v, b.At(i[1]))
		}
		return v
	}), nil
}

// phasesPay reports whether ConvTranspose of inputs in to outputs out
// (spatial extents) is computed by phases (convTransposePhases): unit
// dilations, strides that divide the kernel, at least minPhaseRow lanes on
// the phases' last axis (the one the tiling rules vectorize: the mg output
// channels of a group, or a phase's outputs on the last spatial axis,
// phasesChannelsLast), and at most half of the window's taps on padding;
// and a kernel other than the stride: where they are equal (a U-Net's 2×2
// of stride 2) no two windows overlap, the columns are the output itself
// and their GEMM is the whole work (a small U-Net's 64 → 32 channels at
// 32² → 64², one thread, Zen 3: 1.45 ms by columns, 1.95 by phases).
// Measured on a DCGAN generator's layers (4×4 kernels; one thread, Zen 5,
// default schedules): 4² → 8² (512 → 256 channels, 4 outputs a phase per
// row) 0.45 ms by phases with the channels last, 0.44 by columns (its 8
// MB weight, read from memory, bounds both); 8² → 16² 0.30 by phases with
// the channels last, 0.61 with the spatial axis last; 1² → 4² (stride 1,
// 15 of 16 taps on padding) stays by columns. On a Zen 3 with the spatial
// axis last (phases / columns): 4² → 8² 2.3 / 1.2, 8² → 16² 1.19 / 1.21,
// 16² → 32² 0.96 / 1.5, 32² → 64² 0.67 / 1.36.
func phasesPay(in, out, k, strides, dil, pb []int, mg int) bool {
	const minPhaseRow = 8
	if !phasesApply(k, strides, dil) || slices.Equal(k, strides) {
		return false
	}
	valid := 1.0
	for a := range k {
		s := strides[a]
		taps, T := k[a]/s, (out[a]+s-1)/s
		if a == len(k)-1 && max(T, mg) < minPhaseRow {
			return false
		}
		n := 0
		for r := range s {
			d := int(-floorDiv(int64(r-pb[a]), int64(s))) // ⌈(pad − r)/s⌉
			for t := range T {
				for j := range taps {
					if u := t + d - j; u >= 0 && u < in[a] {
						n++
					}
				}
			}
		}
		valid *= float64(n) / float64(s*T*taps)
	}
	return valid >= 0.5
}

// phasesChannelsLast reports whether the phases of a ConvTranspose keep
// its mg output channels of a group last (the tiling rules' vector axis,
// each input broadcast to a vector of channels, as a channels-last
// convolution does) rather than a phase's t outputs on the last spatial
// axis: where the channels are at least as many. A DCGAN layer 8² → 16²
// (128 channels, 8 outputs a phase per row: 8 of AVX-512's 16 lanes) ran
// 0.61 ms with the spatial axis last, 0.30 with the channels; its last
// layer (3 channels, 32 outputs a row) keeps the spatial axis.
func phasesChannelsLast(mg, t int) bool { return mg >= t }

// phasesApply reports whether convTransposePhases computes a
// ConvTranspose: unit dilations and strides that divide the kernel.
func phasesApply(k, strides, dil []int) bool {
	for a := range k {
		if dil[a] != 1 || k[a]%strides[a] != 0 {
			return false
		}
	}
	return true
}

// convTransposePhases is ConvTranspose of unit dilations whose strides
// divide the kernel as s^n convolutions, one per phase of the output,
// each a plain unit-stride convolution of the input with the K/s taps of
// its phase. Output o of an axis, at full position f = o + pad_begin,
// sums the taps k = r + s·j, r = f mod s, of the inputs f div s − j; the
// outputs of residue r are f div s = t + δ(r) for t = 0, 1, ..., where
// δ(r) = ⌈(pad_begin − r)/s⌉ is the first. So name_phases[n, (g,) m,
// r..., t...] = Σ_{c, j...} x[n, c, t + δ(r) − j...]·w[c, m, r + s·j...]:
// the weight does not depend on t (a broadcast when t is vectorized, and
// its index is made of loop variables, as rewrite_layout needs), the input
// is read at t + constant (a convolution's unit-stride window; the inputs
// out of range are its pads); name then interleaves the phases. Like the
// columns' form it multiplies no zero of the dilated form, and it is a
// convolution for the tiling rules, with no [positions × taps × channels]
// intermediate: a DCGAN layer's (256 → 128 channels, 4×4, stride 2,
// 16² → 32²) columns are 2 MiB, which left L2 between the GEMM and their
// sum. With chLast the phases keep m last instead, [n, (g,) r..., t...,
// m] (phasesChannelsLast): each input is then broadcast to a vector of
// output channels, and the weight is read along m.
func convTransposePhases(cname string, x, w *Tensor, cshape, k, strides, pb []int, G, Cg int, chLast bool) *Tensor {
	ns := len(k)
	lead := len(cshape) - ns // N, (G,) M
	taps := make([]int, ns)
	ts := make([]int, ns)
	for a := range ns {
		taps[a] = k[a] / strides[a]
		ts[a] = (cshape[lead+a] + strides[a] - 1) / strides[a]
	}
	// first is δ(r) = ⌈(pad_begin − r)/s⌉ of axis a.
	first := func(a int, r tir.Expr) tir.Expr {
		return idivc(iaddc(tir.SubE(tir.Const(0), r), pb[a]+strides[a]-1), strides[a])
	}
	// name_pad is the input with the zeros the windows read around it:
	// t + δ(r) − j spans [min δ − (taps − 1), T − 1 + max δ].
	ceilDiv := func(a, b int) int { return int(-floorDiv(int64(-a), int64(b))) }
	lo, padded := make([]int, ns), slices.Clone(x.Shape[:2])
	for a := range ns {
		s, in := strides[a], x.Shape[2+a]
		dmin, dmax := ceilDiv(pb[a]-(s-1), s), ceilDiv(pb[a], s)
		lo[a] = max(0, taps[a]-1-dmin)
		hi := max(0, ts[a]-1+dmax-(in-1))
		padded = append(padded, lo[a]+in+hi)
	}
	xp := Compute(cname+"_pad", padded, func(i []tir.Expr) tir.Expr {
		var valid tir.Expr
		src := slices.Clone(i[:2])
		for a := range ns {
			u := iaddc(i[2+a], -lo[a])
			valid = andCond(valid, tir.Cmp(tir.GE, u, tir.Const(0)))
			valid = andCond(valid, tir.Cmp(tir.LT, u, tir.Const(int64(x.Shape[2+a]))))
			src = append(src, tir.MinE(tir.MaxE(u, tir.Const(0)), tir.Const(int64(x.Shape[2+a]-1))))
		}
		return tir.SelectE(valid, x.At(src...), tir.F32(0))
	})
	// The phases are [n, (g,) m, r..., t...], or with chLast [n, (g,)
	// r..., t..., m]: at m, the index of the output channel, the spatial
	// indices from sp on.
	nl := lead - 1 // n (and g) before the channel
	m, sp := nl, nl+1
	pshape := slices.Clone(cshape[:lead])
	if chLast {
		m, sp = nl+2*ns, nl
		pshape = slices.Clone(cshape[:nl])
	}
	pshape = append(pshape, strides...)
	pshape = append(pshape, ts...)
	if chLast {
		pshape = append(pshape, cshape[nl])
	}
	phases := Reduce(cname+"_phases", pshape, Sum, append([]int{Cg}, taps...), func(i, r []tir.Expr) tir.Expr {
		var ch tir.Expr = r[0]
		if G > 1 {
			ch = iadd(imulc(i[1], Cg), r[0])
		}
		xi := []tir.Expr{i[0], ch}
		wi := []tir.Expr{ch, i[m]}
		for a := range ns {
			res, t, j := i[sp+a], i[sp+ns+a], r[1+a]
			xi = append(xi, iaddc(tir.SubE(iadd(t, first(a, res)), j), lo[a])) // t + δ(r) − j, in the padded input
			wi = append(wi, iadd(res, imulc(j, strides[a])))                   // r + s·j
		}
		return tir.MulE(xp.At(xi...), w.At(wi...))
	})
	return Compute(cname, cshape, func(i []tir.Expr) tir.Expr {
		pi := slices.Clone(i[:lead])
		if chLast {
			pi = slices.Clone(i[:nl])
		}
		res := make([]tir.Expr, ns)
		for a := range ns {
			res[a] = imodc(iaddc(i[lead+a], pb[a]), strides[a]) // f mod s
			pi = append(pi, res[a])
		}
		for a := range ns {
			t := idivc(iaddc(i[lead+a], pb[a]), strides[a]) // f div s
			pi = append(pi, tir.SubE(t, first(a, res[a])))
		}
		if chLast {
			pi = append(pi, i[nl])
		}
		return phases.At(pi...)
	})
}

// convTransposeCols is ConvTranspose as a matrix product and a sum of its
// columns (GEMM and col2im, onnxruntime's form): name_cols[n, g, i...,
// k..., m] = Σ_c x[n, g·C/G + c, i...]·w[g·C/G + c, m, k...], every input
// element times every tap, one GEMM of the input's positions by the output
// channels and taps that the tiling rules schedule like any matmul; then
// output o of an axis, at full position f = o + pad_begin, sums the columns
// of the (i, k) with i·s + k·d = f: for unit dilation the ⌈K/s⌉ taps
// k = f mod s + s·j of input f div s − j, else every tap whose f − k·d is
// a multiple of s. Nothing multiplies a zero: the dilated form's input
// holds s − 1 zeros for every element and reads them all (a stride-2 4×4
// kernel: 16 products per output, 4 of them not zero).
func convTransposeCols(cname string, x, w *Tensor, cshape, k, strides, dil, pb []int, G, Cg int) *Tensor {
	ns := len(k)
	N := x.Shape[0]
	Mg := w.Shape[1]
	// The columns: [N, (G,) I..., K..., M/G].
	colShape := []int{N}
	if G > 1 {
		colShape = append(colShape, G)
	}
	colShape = append(colShape, x.Shape[2:]...)
	colShape = append(colShape, k...)
	colShape = append(colShape, Mg)
	cols := Reduce(cname+"_cols", colShape, Sum, []int{Cg}, func(i, r []tir.Expr) tir.Expr {
		p := 1
		var ch tir.Expr = r[0]
		if G > 1 {
			ch = iadd(imulc(i[1], Cg), r[0])
			p = 2
		}
		xi := append([]tir.Expr{i[0], ch}, i[p:p+ns]...)
		wi := append([]tir.Expr{ch, i[p+2*ns]}, i[p+ns:p+2*ns]...)
		return tir.MulE(x.At(xi...), w.At(wi...))
	})
	// taps[a] are, for unit dilation, ⌈K/s⌉; else K.
	taps := make([]int, ns)
	for a := range ns {
		taps[a] = k[a]
		if dil[a] == 1 {
			taps[a] = (k[a] + strides[a] - 1) / strides[a]
		}
	}
	return Compute(cname, cshape, func(i []tir.Expr) tir.Expr {
		n, mo, sp := i[0], i[1], i[2:]
		var g tir.Expr
		if G > 1 {
			g, mo, sp = i[1], i[2], i[3:]
		}
		// Every combination of one tap per axis, in the order of the
		// flattened taps (the first axis slowest).
		var sum tir.Expr
		total := numElems(taps)
		for t := range total {
			var valid tir.Expr
			ci := []tir.Expr{n}
			if G > 1 {
				ci = append(ci, g)
			}
			src := make([]tir.Expr, ns)
			tap := make([]tir.Expr, ns)
			rest := t
			for a := ns - 1; a >= 0; a-- {
				j := rest % taps[a]
				rest /= taps[a]
				s, d, in := strides[a], dil[a], x.Shape[2+a]
				f := iaddc(sp[a], pb[a])
				var kk, ii tir.Expr
				if d == 1 {
					kk = iaddc(imodc(f, s), s*j) // f mod s + s·j
					ii = iaddc(idivc(f, s), -j)  // f div s − j
					if k[a]%s != 0 && s > 1 {
						valid = andCond(valid, tir.Cmp(tir.LT, kk, tir.Const(int64(k[a]))))
						kk = tir.MinE(kk, tir.Const(int64(k[a]-1)))
					}
				} else {
					kk = Idx(j)
					rel := iaddc(f, -j*d) // f − k·d
					if s > 1 {
						valid = andCond(valid, tir.Cmp(tir.EQ, imodc(rel, s), tir.Const(0)))
					}
					ii = idivc(rel, s)
				}
				valid = andCond(valid, tir.Cmp(tir.GE, ii, tir.Const(0)))
				valid = andCond(valid, tir.Cmp(tir.LT, ii, tir.Const(int64(in))))
				src[a] = tir.MinE(tir.MaxE(ii, tir.Const(0)), tir.Const(int64(in-1)))
				tap[a] = kk
			}
			ci = append(ci, src...)
			ci = append(ci, tap...)
			ci = append(ci, mo)
			term := tir.SelectE(valid, cols.At(ci...), tir.F32(0))
			if sum == nil {
				sum = term
			} else {
				sum = tir.AddE(sum, term)
			}
		}
		return sum
	})
}

// convTransposeDilated is ConvTranspose by its definition: the input with
// stride − 1 zeros between its elements (name_dilate), then a unit-stride
// convolution with the flipped kernel.
func convTransposeDilated(cname, name string, x, w *Tensor, cshape, rshape, k, strides, dil, pb, out []int, G, Cg int) *Tensor {
	ns := len(k)
	N, C := x.Shape[0], x.Shape[1]
	// The dilated input: element j of a spatial axis holds x[(j − lo)/s]
	// when j − lo is a multiple of s inside the input, else 0; lo is
	// (K − 1)·d − pad_begin. Its extent lets the flipped kernel slide over
	// every output.
	dshape := []int{N, C}
	lo := make([]int, ns)
	for i := range ns {
		lo[i] = (k[i]-1)*dil[i] - pb[i]
		dshape = append(dshape, out[2+i]+(k[i]-1)*dil[i])
	}
	dilated := Compute(name+"_dilate", dshape, func(j []tir.Expr) tir.Expr {
		idx := []tir.Expr{j[0], j[1]}
		var inside tir.Expr
		for i := range ns {
			s, in := strides[i], x.Shape[2+i]
			rel := iaddc(j[2+i], -lo[i])
			if lo[i] > 0 {
				inside = andCond(inside, tir.Cmp(tir.GE, rel, tir.Const(0)))
			}
			if dshape[2+i]-lo[i] > (in-1)*s+1 {
				inside = andCond(inside, tir.Cmp(tir.LT, rel, tir.Const(int64((in-1)*s+1))))
			}
			if s > 1 {
				inside = andCond(inside, tir.Cmp(tir.EQ, imodc(rel, s), tir.Const(0)))
			}
			idx = append(idx, idivc(rel, s))
		}
		if inside == nil {
			return x.At(idx...)
		}
		return tir.SelectE(inside, x.At(idx...), tir.F32(0))
	})
	rshape = append(slices.Clone(rshape), k...)
	return Reduce(cname, cshape, Sum, rshape, func(i, r []tir.Expr) tir.Expr {
		var rc tir.Expr = Idx(0)
		if Cg > 1 {
			rc, r = r[0], r[1:]
		}
		ch, mo, sp := rc, i[1], i[2:] // input channel, output channel in its group, spatial indices
		if G > 1 {
			ch, mo, sp = iadd(imulc(i[1], Cg), rc), i[2], i[3:]
		}
		xi := []tir.Expr{i[0], ch}
		wi := []tir.Expr{ch, mo}
		for s := range ns {
			// Weight k meets dilated input o + (K − 1 − k)·d: the kernel
			// flipped, read forward.
			xi = append(xi, iadd(sp[s], imulc(icsub(k[s]-1, r[s]), dil[s])))
			wi = append(wi, r[s])
		}
		return tir.MulE(dilated.At(xi...), w.At(wi...))
	})
}

// splitPads splits a total padding between the beginning and the end of an
// axis, the odd one at the end when upper, else at the beginning; a
// negative total (an output longer than the input reaches) halves with
// floor division, as ONNX's reference does.
func splitPads(total int, upper bool) (begin, end int) {
	half := int(floorDiv(int64(total), 2))
	if upper {
		return half, total - half
	}
	return total - half, half
}
