package te

import (
	"github.com/tessera-ml/tessera/tir"
)

// Transpose permutes the axes: out.Shape[i] = x.Shape[perm[i]]. A nil perm
// reverses the axes (the ONNX default).
func Transpose(name string, x *Tensor, perm []int) (*Tensor, error) {
	name = orDefault(name, "transpose")
	if err := checkInputs("Transpose", name, x); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	if perm == nil {
		perm = make([]int, rank)
		for i := range perm {
			perm[i] = rank - 1 - i
		}
	}
	if len(perm) != rank {
		return nil, opError("Transpose", name, "perm %v has %d entries for rank %d", perm, len(perm), rank)
	}
	perm, err := normAxes("Transpose", name, perm, rank)
	if err != nil {
		return nil, err
	}
	out := make([]int, rank)
	for i, p := range perm {
		out[i] = x.Shape[p]
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		idx := make([]tir.Expr, rank)
		for k, p := range perm {
			idx[p] = i[k]
		}
		return x.At(idx...)
	}), nil
}

// reshapeIndex maps indices into a tensor of shape out to indices into a
// tensor of shape in with the same elements in row-major order. Extent-1
// axes are dropped, the others are grouped into runs with equal products;
// axes that match one to one map directly, a run is linearized and
// unraveled with floordiv/floormod.
func reshapeIndex(in, out []int, idx []tir.Expr) []tir.Expr {
	res := make([]tir.Expr, len(in))
	var ii, oi []int
	for i, d := range in {
		if d == 1 {
			res[i] = Idx(0)
		} else {
			ii = append(ii, i)
		}
	}
	for j, d := range out {
		if d != 1 {
			oi = append(oi, j)
		}
	}
	a, b := 0, 0
	for a < len(ii) && b < len(oi) {
		ga, pa := []int{ii[a]}, in[ii[a]]
		gb, pb := []int{oi[b]}, out[oi[b]]
		a++
		b++
		for pa != pb {
			if pa < pb {
				ga = append(ga, ii[a])
				pa *= in[ii[a]]
				a++
			} else {
				gb = append(gb, oi[b])
				pb *= out[oi[b]]
				b++
			}
		}
		if len(ga) == 1 && len(gb) == 1 {
			res[ga[0]] = idx[gb[0]]
			continue
		}
		// linear index within the run: sum of idx[j] * stride_j
		var lin tir.Expr = tir.Const(0)
		stride := pb
		for _, j := range gb {
			stride /= out[j]
			lin = iadd(lin, imulc(idx[j], stride))
		}
		stride = pa
		for k, i := range ga {
			stride /= in[i]
			e := idivc(lin, stride)
			if k > 0 {
				e = imodc(e, in[i])
			}
			res[i] = e
		}
	}
	return res
}

// reshapeTo is the stage that views x with shape out (same element count).
func reshapeTo(name string, x *Tensor, out []int) *Tensor {
	return Compute(name, out, func(i []tir.Expr) tir.Expr { return x.At(reshapeIndex(x.Shape, out, i)...) })
}

// Reshape gives x a new shape with ONNX semantics: 0 copies the input's
// dimension at that position (allowzero=0), one -1 is inferred from the
// element count. allowZero (allowzero=1) makes 0 a literal empty dimension,
// which te cannot hold, so it is an error when shape contains 0.
func Reshape(name string, x *Tensor, shape []int, allowZero bool) (*Tensor, error) {
	name = orDefault(name, "reshape")
	if err := checkInputs("Reshape", name, x); err != nil {
		return nil, err
	}
	out := make([]int, len(shape))
	infer := -1
	known := 1
	for i, d := range shape {
		switch {
		case d == 0 && !allowZero:
			if i >= len(x.Shape) {
				return nil, opError("Reshape", name, "shape %v: 0 at position %d but the input %v has rank %d", shape, i, x.Shape, len(x.Shape))
			}
			out[i] = x.Shape[i]
		case d == -1:
			if infer >= 0 {
				return nil, opError("Reshape", name, "shape %v has more than one -1", shape)
			}
			infer = i
			continue
		case d <= 0:
			return nil, opError("Reshape", name, "shape %v: invalid dimension %d", shape, d)
		default:
			out[i] = d
		}
		known *= out[i]
	}
	n := numElems(x.Shape)
	if infer >= 0 {
		if n%known != 0 {
			return nil, opError("Reshape", name, "cannot infer -1 in %v for %d elements", shape, n)
		}
		out[infer] = n / known
	} else if known != n {
		return nil, opError("Reshape", name, "shape %v has %d elements, input %v has %d", out, known, x.Shape, n)
	}
	return reshapeTo(name, x, out), nil
}

// Flatten reshapes x to 2-D: [numElems(shape[:axis]), numElems(shape[axis:])];
// axis is in [-rank, rank].
func Flatten(name string, x *Tensor, axis int) (*Tensor, error) {
	name = orDefault(name, "flatten")
	if err := checkInputs("Flatten", name, x); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	if axis < -rank || axis > rank {
		return nil, opError("Flatten", name, "axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return reshapeTo(name, x, []int{numElems(x.Shape[:axis]), numElems(x.Shape[axis:])}), nil
}

// Squeeze removes the listed extent-1 axes, or every extent-1 axis when
// axes is empty.
func Squeeze(name string, x *Tensor, axes []int) (*Tensor, error) {
	name = orDefault(name, "squeeze")
	if err := checkInputs("Squeeze", name, x); err != nil {
		return nil, err
	}
	drop := make([]bool, len(x.Shape))
	if len(axes) == 0 {
		for i, d := range x.Shape {
			drop[i] = d == 1
		}
	} else {
		ax, err := normAxes("Squeeze", name, axes, len(x.Shape))
		if err != nil {
			return nil, err
		}
		for _, a := range ax {
			if x.Shape[a] != 1 {
				return nil, opError("Squeeze", name, "axis %d has extent %d, not 1", a, x.Shape[a])
			}
			drop[a] = true
		}
	}
	out := []int{}
	for i, d := range x.Shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return reshapeTo(name, x, out), nil
}

// Unsqueeze inserts extent-1 axes at the listed positions of the output
// (negative positions count from the output's end).
func Unsqueeze(name string, x *Tensor, axes []int) (*Tensor, error) {
	name = orDefault(name, "unsqueeze")
	if err := checkInputs("Unsqueeze", name, x); err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return nil, opError("Unsqueeze", name, "no axes")
	}
	rank := len(x.Shape) + len(axes)
	ax, err := normAxes("Unsqueeze", name, axes, rank)
	if err != nil {
		return nil, err
	}
	ins := make([]bool, rank)
	for _, a := range ax {
		ins[a] = true
	}
	out := make([]int, rank)
	k := 0
	for i := range out {
		if ins[i] {
			out[i] = 1
		} else {
			out[i] = x.Shape[k]
			k++
		}
	}
	return reshapeTo(name, x, out), nil
}

// Concat joins the inputs along axis; the definition is a select chain over
// the inputs' index ranges.
func Concat(name string, axis int, xs ...*Tensor) (*Tensor, error) {
	name = orDefault(name, "concat")
	if len(xs) == 0 {
		return nil, opError("Concat", name, "no inputs")
	}
	if err := checkInputs("Concat", name, xs...); err != nil {
		return nil, err
	}
	rank := len(xs[0].Shape)
	axis, err := normAxis("Concat", name, axis, rank)
	if err != nil {
		return nil, err
	}
	out := append([]int(nil), xs[0].Shape...)
	offs := make([]int, len(xs))
	out[axis] = 0
	for k, x := range xs {
		if len(x.Shape) != rank {
			return nil, opError("Concat", name, "input %d has rank %d, input 0 has rank %d", k, len(x.Shape), rank)
		}
		for i, d := range x.Shape {
			if i != axis && d != out[i] {
				return nil, opError("Concat", name, "input %d has shape %v, input 0 has %v (they must agree off axis %d)", k, x.Shape, xs[0].Shape, axis)
			}
		}
		offs[k] = out[axis]
		out[axis] += x.Shape[axis]
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		at := func(k int) tir.Expr {
			idx := append([]tir.Expr(nil), i...)
			idx[axis] = iaddc(i[axis], -offs[k])
			return xs[k].At(idx...)
		}
		e := at(len(xs) - 1)
		for k := len(xs) - 2; k >= 0; k-- {
			e = tir.SelectE(tir.Cmp(tir.LT, i[axis], tir.Const(int64(offs[k+1]))), at(k), e)
		}
		return e
	}), nil
}

// SliceAttrs are ONNX Slice's inputs starts, ends, axes and steps (given as
// constants). Axes defaults to [0, len(Starts)), Steps to all 1. Starts and
// ends are clamped as ONNX defines, so math.MaxInt64 / math.MinInt64 work as
// "to the end".
type SliceAttrs struct {
	Starts, Ends, Axes, Steps []int
}

// Slice takes x[start:end:step] along the listed axes (numpy semantics,
// negative steps included); the output index i of a sliced axis reads
// start + i*step.
func Slice(name string, x *Tensor, a SliceAttrs) (*Tensor, error) {
	name = orDefault(name, "slice")
	if err := checkInputs("Slice", name, x); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	n := len(a.Starts)
	if len(a.Ends) != n {
		return nil, opError("Slice", name, "%d starts and %d ends", n, len(a.Ends))
	}
	axes := a.Axes
	if axes == nil {
		axes = make([]int, n)
		for i := range axes {
			axes[i] = i
		}
	}
	if len(axes) != n {
		return nil, opError("Slice", name, "%d axes for %d starts", len(axes), n)
	}
	if a.Steps != nil && len(a.Steps) != n {
		return nil, opError("Slice", name, "%d steps for %d starts", len(a.Steps), n)
	}
	axes, err := normAxes("Slice", name, axes, rank)
	if err != nil {
		return nil, err
	}
	start := make([]int, rank)
	step := make([]int, rank)
	out := append([]int(nil), x.Shape...)
	for i := range step {
		step[i] = 1
	}
	for k, ax := range axes {
		dim := x.Shape[ax]
		s, e, st := a.Starts[k], a.Ends[k], 1
		if a.Steps != nil {
			st = a.Steps[k]
		}
		if st == 0 {
			return nil, opError("Slice", name, "step 0 on axis %d", ax)
		}
		if s < 0 {
			s += dim
		}
		if e < 0 {
			e += dim
		}
		var cnt int
		if st > 0 {
			s = min(max(s, 0), dim)
			e = min(max(e, 0), dim)
			cnt = (e - s + st - 1) / st
		} else {
			s = min(max(s, 0), dim-1)
			e = min(max(e, -1), dim-1)
			cnt = (s - e - st - 1) / -st
		}
		if cnt <= 0 {
			return nil, opError("Slice", name, "axis %d is empty after slicing (empty tensors are not supported)", ax)
		}
		start[ax], step[ax], out[ax] = s, st, cnt
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		idx := make([]tir.Expr, rank)
		for ax := range idx {
			idx[ax] = iaddc(imulc(i[ax], step[ax]), start[ax])
		}
		return x.At(idx...)
	}), nil
}

// PadAttrs are ONNX Pad's attributes and constant inputs. Mode is
// "constant" (or ""), "reflect", "edge" or "wrap". Pads is [x1_begin,
// x2_begin, ..., x1_end, x2_end] for the listed Axes (default all);
// negative pads crop. Value is the constant of mode "constant".
type PadAttrs struct {
	Mode  string
	Pads  []int
	Value float32
	Axes  []int
}

// Pad pads x. Constant padding selects between x and the value; edge
// clamps the index with min/max; reflect mirrors it with
// (n-1) - |(n-1) - |j||, or with a floormod when the pads exceed the extent;
// wrap takes floormod(j, n).
func Pad(name string, x *Tensor, a PadAttrs) (*Tensor, error) {
	name = orDefault(name, "pad")
	if err := checkInputs("Pad", name, x); err != nil {
		return nil, err
	}
	rank := len(x.Shape)
	axes := a.Axes
	if axes == nil {
		axes = make([]int, rank)
		for i := range axes {
			axes[i] = i
		}
	}
	axes, err := normAxes("Pad", name, axes, rank)
	if err != nil {
		return nil, err
	}
	if len(a.Pads) != 2*len(axes) {
		return nil, opError("Pad", name, "%d pads for %d axes", len(a.Pads), len(axes))
	}
	mode := a.Mode
	switch mode {
	case "":
		mode = "constant"
	case "constant", "reflect", "edge", "wrap":
	default:
		return nil, opError("Pad", name, "unknown mode %q", a.Mode)
	}
	pb := make([]int, rank)
	pe := make([]int, rank)
	for k, ax := range axes {
		pb[ax], pe[ax] = a.Pads[k], a.Pads[k+len(axes)]
	}
	// Negative pads crop first; the cropped extent is then padded.
	out := make([]int, rank)
	for i, d := range x.Shape {
		out[i] = d + pb[i] + pe[i]
		if kept := d - max(0, -pb[i]) - max(0, -pe[i]); kept <= 0 || out[i] <= 0 {
			return nil, opError("Pad", name, "axis %d: pads %d, %d leave nothing of extent %d", i, pb[i], pe[i], d)
		}
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		idx := make([]tir.Expr, rank)
		var inside tir.Expr
		for ax, d := range x.Shape {
			cropB := max(0, -pb[ax])
			padB, padE := max(0, pb[ax]), max(0, pe[ax])
			n := d - cropB - max(0, -pe[ax]) // extent after cropping
			j := iaddc(i[ax], -padB)         // index into the cropped axis
			if padB > 0 || padE > 0 {
				switch mode {
				case "constant":
					if padB > 0 {
						inside = andCond(inside, tir.Cmp(tir.GE, i[ax], tir.Const(int64(padB))))
					}
					if padE > 0 {
						inside = andCond(inside, tir.Cmp(tir.LT, i[ax], tir.Const(int64(padB+n))))
					}
				case "edge":
					if padB > 0 {
						j = tir.MaxE(j, tir.Const(0))
					}
					if padE > 0 {
						j = tir.MinE(j, tir.Const(int64(n-1)))
					}
				case "reflect":
					switch {
					case n == 1:
						j = tir.Const(0)
					case padB <= n-1 && padE <= n-1:
						if padB > 0 {
							j = iabs(j)
						}
						if padE > 0 {
							j = icsub(n-1, iabs(icsub(n-1, j)))
						}
					default:
						j = icsub(n-1, iabs(icsub(n-1, imodc(j, 2*(n-1)))))
					}
				case "wrap":
					j = imodc(j, n)
				}
			}
			idx[ax] = iaddc(j, cropB)
		}
		v := x.At(idx...)
		if inside != nil {
			v = tir.SelectE(inside, v, tir.F32(float64(a.Value)))
		}
		return v
	}), nil
}
