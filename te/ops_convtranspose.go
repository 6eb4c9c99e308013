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
func ConvTranspose(name string, x, w, b *Tensor, a ConvTransposeAttrs) (*Tensor, error) {
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
	rshape := []int{}
	if Cg > 1 {
		rshape = append(rshape, Cg)
	}
	rshape = append(rshape, k...)
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
	conv := Reduce(cname, cshape, Sum, rshape, func(i, r []tir.Expr) tir.Expr {
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
