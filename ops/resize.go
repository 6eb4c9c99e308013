package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Resize (opsets 10 to 19) and Upsample (7, 9) expand, axis after axis from
// the last, into Gathers of constant index tables, each tap scaled by a
// constant coefficient column and summed: shapes, scales and sizes are
// static, so where each output element reads and with what weight is known
// at compile time, worked out in float64 as ONNX's reference does. Every
// mode (nearest with its four roundings, linear, cubic with
// cubic_coeff_a and exclude_outside) and coordinate transformation
// (half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners,
// asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize with
// extrapolation_value) is covered, and from opset 18 axes and
// keep_aspect_ratio_policy; antialias is not. Before opset 11 (Resize-10,
// Upsample) coordinates are asymmetric and nearest rounds as onnxruntime
// does (down when upsampling, up when downsampling).

//
// Where every resized axis is periodic (output i = P·q + r reads input Q·q
// + offset[r] with coefficients of r alone: an integer or rational scale
// without roi or exclude_outside, the usual upsampling of segmentation and
// detection models), the node stays: it lowers to one stage per axis whose
// indices and coefficients are arithmetic of the output index (floordiv,
// floormod, a select over r), no tables read, and, layout-free along the
// axes it does not resize, it goes channels-last with its neighbours, so a
// bilinear upsample reads whole channel vectors. Its numbers are those of
// the expansion: the same taps, coefficients and order of operations.

func init() {
	define(
		&Op{Name: "Resize", MinIn: 1, MaxIn: 4, Expand: expandResize, Lower: lowerResize, Pattern: Injective,
			Layout: LayoutAxes, PermuteAxes: permuteResize},
		&Op{Name: "Upsample", MinIn: 1, MaxIn: 2, Expand: expandResize},
	)
}

// resizeParams are a Resize node's attributes.
type resizeParams struct {
	mode, coord, nearest string
	cubicA               float64
	excludeOutside       bool
	extrapolation        float64
	legacy               bool // Resize-10 and Upsample
}

func expandResize(c *InferCtx) ([]*graph.Node, error) {
	plan, err := planResize(c)
	if err != nil {
		return nil, fmt.Errorf("%s (opset %d) at node %s: %w", c.N.OpType, c.Opset, c.N.Name, err)
	}
	if c.N.OpType == "Resize" && plan.periodic() {
		return []*graph.Node{c.N}, nil // lowered as arithmetic (lowerResize)
	}
	e := newExpander(c)
	cur := c.N.Inputs[0]
	for _, ax := range plan.axes {
		cur = ax.taps.emit(e, cur, ax.axis, len(plan.in), c.DType(0))
	}
	e.write(c.N.Outputs[0], "Identity", nil, cur)
	return e.nodes, nil
}

// resizePlan is how a Resize resizes: each axis it changes, in the order
// they are resized (from the last), with its taps.
type resizePlan struct {
	in, out []int
	axes    []resizeAxis
}

type resizeAxis struct {
	axis int
	taps *resizeTaps
}

// periodic reports whether every resized axis is periodic (see above).
func (p *resizePlan) periodic() bool {
	for _, ax := range p.axes {
		if ax.taps.period() == nil {
			return false
		}
	}
	return true
}

func planResize(c *InferCtx) (*resizePlan, error) {
	n := c.N
	x := c.Shape(0)
	rank := len(x)
	p, err := resizeAttrs(n, c.Opset)
	if err != nil {
		return nil, err
	}
	if p.mode != "nearest" && c.DType(0) != graph.Float32 {
		return nil, graph.Unsupportedf("%s interpolation of a %s tensor", p.mode, c.DType(0))
	}
	if a, err := n.Int("antialias", 0); err != nil || a != 0 {
		return nil, graph.Unsupportedf("antialias")
	}
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	if v, err := n.Ints("axes"); err != nil {
		return nil, err
	} else if v != nil {
		if axes, err = c.NormAxes(v, rank); err != nil {
			return nil, err
		}
	}

	// The operands: scales (attribute of Upsample-7, input 1 of Upsample-9
	// and Resize-10, input 2 after), sizes (input 3) and roi (input 1).
	var scales []float64
	var sizes []int64
	roi := make([]float64, 2*len(axes))
	for i := range axes {
		roi[len(axes)+i] = 1
	}
	constant := func(i int, what string) (*graph.Tensor, error) {
		if !c.Has(i) {
			return nil, nil
		}
		t := c.G.ConstOf(n.Inputs[i])
		if t == nil {
			return nil, &graph.NotConstantError{Value: n.Inputs[i], Node: n.Name, Op: n.OpType, What: what}
		}
		if t.Len() == 0 {
			return nil, nil
		}
		return t, nil
	}
	scaleIn := 2
	if p.legacy {
		scaleIn = 1
	}
	if n.OpType == "Upsample" && c.Opset < 9 {
		f, err := n.Floats("scales")
		if err != nil {
			return nil, err
		}
		for _, v := range f {
			scales = append(scales, float64(v))
		}
	} else if t, err := constant(scaleIn, "scales"); err != nil {
		return nil, err
	} else if t != nil {
		scales = t.Float64s()
	}
	if !p.legacy {
		t, err := constant(3, "sizes")
		if err != nil {
			return nil, err
		}
		if t != nil {
			sizes = t.Int64s()
		}
		if r, err := constant(1, "roi"); err != nil {
			return nil, err
		} else if r != nil && p.coord == "tf_crop_and_resize" {
			if r.Len() != 2*len(axes) {
				return nil, fmt.Errorf("roi has %d values for %d axes", r.Len(), len(axes))
			}
			roi = r.Float64s()
		}
	}
	if (scales == nil) == (sizes == nil) {
		return nil, fmt.Errorf("want exactly one of scales (%d values) and sizes (%d values)", len(scales), len(sizes))
	}

	// The output shape and each axis's scale.
	out := slices.Clone(x)
	scale := make([]float64, rank)
	for i := range scale {
		scale[i] = 1
	}
	if scales != nil {
		if len(scales) != len(axes) {
			return nil, fmt.Errorf("%d scales for %d axes", len(scales), len(axes))
		}
		for k, a := range axes {
			if !(scales[k] > 0) || math.IsInf(scales[k], 0) {
				return nil, fmt.Errorf("scale %g", scales[k])
			}
			scale[a] = scales[k]
			out[a] = int(scales[k] * float64(x[a]))
		}
	} else {
		if len(sizes) != len(axes) {
			return nil, fmt.Errorf("%d sizes for %d axes", len(sizes), len(axes))
		}
		policy, err := n.Str("keep_aspect_ratio_policy", "stretch")
		if err != nil {
			return nil, err
		}
		keep := 0.0
		for k, a := range axes {
			if sizes[k] <= 0 || sizes[k] > graph.MaxElems {
				return nil, fmt.Errorf("size %d", sizes[k])
			}
			s := float64(sizes[k]) / float64(x[a])
			switch {
			case policy == "stretch":
				scale[a], out[a] = s, int(sizes[k])
			case policy == "not_larger" && (k == 0 || s < keep), policy == "not_smaller" && (k == 0 || s > keep):
				keep = s
			case policy != "not_larger" && policy != "not_smaller":
				return nil, fmt.Errorf("keep_aspect_ratio_policy %q", policy)
			}
		}
		if policy != "stretch" {
			for _, a := range axes {
				scale[a], out[a] = keep, int(keep*float64(x[a])+0.5)
			}
		}
	}
	for a, d := range out {
		if d <= 0 {
			return nil, fmt.Errorf("output dimension %d is %d", a, d)
		}
	}

	plan := &resizePlan{in: x, out: out}
	for k := len(axes) - 1; k >= 0; k-- {
		a := axes[k]
		tab := resizeTable(p, x[a], out[a], scale[a], roi[k], roi[len(axes)+k])
		if !tab.identity() {
			plan.axes = append(plan.axes, resizeAxis{axis: a, taps: tab})
		}
	}
	return plan, nil
}

func resizeAttrs(n *graph.Node, opset int) (resizeParams, error) {
	p := resizeParams{legacy: n.OpType == "Upsample" || opset < 11}
	var err error
	if p.mode, err = n.Str("mode", "nearest"); err != nil {
		return p, err
	}
	if p.mode == "bilinear" && n.OpType == "Upsample" {
		p.mode = "linear"
	}
	if p.mode != "nearest" && p.mode != "linear" && (p.mode != "cubic" || p.legacy) {
		return p, fmt.Errorf("mode %q", p.mode)
	}
	p.coord, p.nearest = "asymmetric", ""
	if p.legacy {
		return p, nil
	}
	if p.coord, err = n.Str("coordinate_transformation_mode", "half_pixel"); err != nil {
		return p, err
	}
	switch p.coord {
	case "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize":
	default:
		return p, fmt.Errorf("coordinate_transformation_mode %q", p.coord)
	}
	if p.nearest, err = n.Str("nearest_mode", "round_prefer_floor"); err != nil {
		return p, err
	}
	switch p.nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return p, fmt.Errorf("nearest_mode %q", p.nearest)
	}
	a, err := n.Float("cubic_coeff_a", -0.75)
	if err != nil {
		return p, err
	}
	p.cubicA = float64(a)
	ex, err := n.Int("exclude_outside", 0)
	if err != nil {
		return p, err
	}
	p.excludeOutside = ex != 0
	v, err := n.Float("extrapolation_value", 0)
	p.extrapolation = float64(v)
	return p, err
}

// resizeTaps is where the outputs along one axis read: output i is
// Σ_k coef[k][i]·x[idx[k][i]], or the extrapolation value where outside[i].
type resizeTaps struct {
	in            int
	idx           [][]int64
	raw           [][]int64 // idx before it is clamped to the axis
	coef          [][]float64
	outside       []bool
	extrapolation float64
}

// resizeTable works out one axis of in elements resized to out with the
// given scale (and, for tf_crop_and_resize, the axis's roi).
func resizeTable(p resizeParams, in, out int, scale, roiStart, roiEnd float64) *resizeTaps {
	taps := map[string]int{"nearest": 1, "linear": 2, "cubic": 4}[p.mode]
	t := &resizeTaps{in: in, idx: make([][]int64, taps), raw: make([][]int64, taps), coef: make([][]float64, taps), outside: make([]bool, out), extrapolation: p.extrapolation}
	width := scale * float64(in) // the output's length in input units, as the reference has it
	for i := range out {
		xf := float64(i)
		var xo float64
		switch p.coord {
		case "half_pixel":
			xo = (xf+0.5)/scale - 0.5
		case "half_pixel_symmetric":
			offset := float64(in) / 2 * (1 - float64(out)/width)
			xo = offset + (xf+0.5)/scale - 0.5
		case "pytorch_half_pixel":
			xo = -0.5
			if width != 1 {
				xo = (xf+0.5)/scale - 0.5
			}
		case "align_corners":
			if width != 1 {
				xo = xf * float64(in-1) / (width - 1)
			}
		case "asymmetric":
			xo = xf / scale
		case "tf_half_pixel_for_nn":
			xo = (xf + 0.5) / scale
		case "tf_crop_and_resize":
			if width == 1 {
				xo = (roiEnd - roiStart) * float64(in-1) / 2
			} else {
				xo = xf * (roiEnd - roiStart) * float64(in-1) / (width - 1)
			}
			xo += roiStart * float64(in-1)
			t.outside[i] = xo < 0 || xo > float64(in-1)
		}
		// The taps sit around the pixel left of xo (xo itself when it is
		// an integer, with ratio 1).
		left := math.Floor(xo)
		ratio := xo - left
		if ratio == 0 {
			left, ratio = left-1, 1
		}
		var idx []float64
		var coef []float64
		switch p.mode {
		case "nearest":
			var j float64
			switch {
			case p.legacy && scale < 1:
				j = math.Ceil(xo)
			case p.legacy:
				j = math.Trunc(xo)
			case ratio == 1:
				j = left + 1
			case p.nearest == "round_prefer_floor" && ratio <= 0.5, p.nearest == "round_prefer_ceil" && ratio < 0.5, p.nearest == "floor":
				j = left
			default:
				j = left + 1
			}
			idx, coef = []float64{j}, []float64{1}
		case "linear":
			idx, coef = []float64{left, left + 1}, []float64{1 - ratio, ratio}
		case "cubic":
			a, r, s := p.cubicA, ratio, 1-ratio
			idx = []float64{left - 1, left, left + 1, left + 2}
			coef = []float64{
				((a*(r+1)-5*a)*(r+1)+8*a)*(r+1) - 4*a,
				((a+2)*r-(a+3))*r*r + 1,
				((a+2)*s-(a+3))*s*s + 1,
				((a*(s+1)-5*a)*(s+1)+8*a)*(s+1) - 4*a,
			}
		}
		if p.excludeOutside {
			sum := 0.0
			for k, j := range idx {
				if j < 0 || j >= float64(in) {
					coef[k] = 0
				}
				sum += coef[k]
			}
			for k := range coef {
				coef[k] /= sum
			}
		}
		for k, j := range idx {
			t.idx[k] = append(t.idx[k], int64(min(max(j, 0), float64(in-1))))
			t.raw[k] = append(t.raw[k], int64(j))
			t.coef[k] = append(t.coef[k], coef[k])
		}
	}
	return t
}

// identity reports whether the axis is left as it is.
func (t *resizeTaps) identity() bool {
	if len(t.outside) != t.in {
		return false
	}
	for i := range t.outside {
		if t.outside[i] {
			return false
		}
		for k := range t.idx {
			if c := t.coef[k][i]; c != 0 && (c != 1 || t.idx[k][i] != int64(i)) {
				return false
			}
		}
	}
	return true
}

// emit appends the nodes that resize x along axis a.
func (t *resizeTaps) emit(e *expander, x string, a, rank int, dt graph.DType) string {
	out := len(t.outside)
	col := make([]int, rank-a) // a column along axis a that broadcasts over the axes after it
	col[0] = out
	for i := 1; i < len(col); i++ {
		col[i] = 1
	}
	gather := func(k int) string {
		return e.op("Gather", map[string]graph.Attr{"axis": intAttr(int64(a))}, x, e.constant(graph.Int64Tensor([]int{out}, t.idx[k])))
	}
	sum := ""
	for k := range t.idx {
		unit, zero := true, true
		for _, c := range t.coef[k] {
			unit, zero = unit && c == 1, zero && c == 0
		}
		if zero {
			continue
		}
		term := gather(k)
		if !unit {
			w := make([]float32, out)
			for i, c := range t.coef[k] {
				w[i] = float32(c)
			}
			term = e.op("Mul", nil, term, e.constant(graph.Float32Tensor(slices.Clone(col), w)))
		}
		if sum == "" {
			sum = term
		} else {
			sum = e.op("Add", nil, sum, term)
		}
	}
	if sum == "" { // every coefficient zero: the axis is all extrapolation
		sum = e.op("Mul", nil, gather(0), e.scalar(0))
	}
	if slices.Contains(t.outside, true) {
		m := make([]int64, out)
		for i, o := range t.outside {
			if o {
				m[i] = 1
			}
		}
		mask := e.constant(&graph.Tensor{DType: graph.Bool, Shape: slices.Clone(col), I64: m})
		v := &graph.Tensor{DType: dt, Shape: []int{}, F32: []float32{float32(t.extrapolation)}}
		if dt.IsInt() {
			v.F32, v.I64 = nil, []int64{dt.Wrap(int64(t.extrapolation))}
		}
		sum = e.op("Where", nil, mask, e.constant(v), sum)
	}
	return sum
}

// resizePeriod is the periodic form of an axis's taps: output i = P·q + r
// reads, for tap k, input clamp(Q·q + offset[k][r]) with coefficient
// coef[k][r] (as float32, which the kernels multiply by).
type resizePeriod struct {
	P, Q   int
	offset [][]int64
	coef   [][]float32
}

// maxResizePeriod bounds the period looked for: its offsets and
// coefficients become a select over r in every output element.
const maxResizePeriod = 16

// period returns the taps' periodic form, or nil when they have none of at
// most maxResizePeriod outputs (a scale that is no simple ratio), or when
// an output lies outside the input (tf_crop_and_resize's extrapolation).
func (t *resizeTaps) period() *resizePeriod {
	out := len(t.outside)
	if slices.Contains(t.outside, true) || out == 0 {
		return nil
	}
	for P := 1; P <= min(out, maxResizePeriod); P++ {
		Q := int64(0)
		if P < out {
			Q = t.raw[0][P] - t.raw[0][0]
		}
		ok := true
		for k := range t.raw {
			for i := P; i < out && ok; i++ {
				ok = t.raw[k][i] == t.raw[k][i-P]+Q && float32(t.coef[k][i]) == float32(t.coef[k][i-P])
			}
		}
		if !ok {
			continue
		}
		pr := &resizePeriod{P: P, Q: int(Q), offset: make([][]int64, len(t.raw)), coef: make([][]float32, len(t.raw))}
		for k := range t.raw {
			for r := range P {
				pr.offset[k] = append(pr.offset[k], t.raw[k][r])
				pr.coef[k] = append(pr.coef[k], float32(t.coef[k][r]))
			}
		}
		return pr
	}
	return nil
}

// lowerResize lowers a Resize that expandResize kept: one stage per
// resized axis, output element i along it Σ_k coef_k(r)·x[clamp(Q·q +
// offset_k(r))], q and r the quotient and remainder of i by P, summed as
// the expansion sums its Gather, Mul and Add (taps of all-zero coefficients
// left out, unit ones not multiplied).
func lowerResize(c *lowerCtx) ([]*te.Tensor, error) {
	in := make([]*graph.Value, len(c.n.Inputs))
	for i, name := range c.n.Inputs {
		if name != "" {
			in[i] = c.g.Values[name]
		}
	}
	plan, err := planResize(&InferCtx{G: c.g, N: c.n, Opset: c.opset, In: in})
	if err != nil {
		return nil, err
	}
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	if len(plan.axes) == 0 {
		return one(te.Compute(c.name(0), slices.Clone(x.Shape), func(i []tir.Expr) tir.Expr { return x.At(i...) }), nil)
	}
	cur := x
	for n, ax := range plan.axes {
		pr := ax.taps.period()
		if pr == nil {
			return nil, fmt.Errorf("internal error: axis %d of the Resize is not periodic", ax.axis)
		}
		shape := slices.Clone(cur.Shape)
		shape[ax.axis] = plan.out[ax.axis]
		name := c.name(0)
		if n < len(plan.axes)-1 {
			name = c.sub(fmt.Sprintf("axis%d", ax.axis))
		}
		prev, a, inExt := cur, ax.axis, ax.taps.in
		cur = te.Compute(name, shape, func(i []tir.Expr) tir.Expr {
			q, r := i[a], tir.Expr(tir.Const(0))
			if pr.P > 1 {
				q, r = tir.FloorDivE(i[a], tir.Const(int64(pr.P))), tir.FloorModE(i[a], tir.Const(int64(pr.P)))
			}
			var sum tir.Expr
			for k := range pr.offset {
				unit, zero := true, true
				for _, v := range pr.coef[k] {
					unit, zero = unit && v == 1, zero && v == 0
				}
				if zero {
					continue
				}
				off := selectOver(r, pr.offset[k], func(v int64) tir.Expr { return tir.Const(v) })
				idx := tir.AddE(off, tir.MulE(q, tir.Const(int64(pr.Q))))
				idx = tir.MinE(tir.MaxE(idx, tir.Const(0)), tir.Const(int64(inExt-1)))
				at := slices.Clone(i)
				at[a] = idx
				term := prev.At(at...)
				if !unit {
					term = tir.MulE(term, selectOver(r, pr.coef[k], func(v float32) tir.Expr { return tir.F32(float64(v)) }))
				}
				if sum == nil {
					sum = term
				} else {
					sum = tir.AddE(sum, term)
				}
			}
			if sum == nil { // every coefficient zero
				at := slices.Clone(i)
				at[a] = tir.Const(0)
				sum = tir.MulE(prev.At(at...), tir.F32(0))
			}
			return sum
		})
	}
	return []*te.Tensor{cur}, nil
}

// selectOver returns the expression of vals[r] for r in [0, len(vals)): a
// constant where they are all equal, else a chain of selects.
func selectOver[T comparable](r tir.Expr, vals []T, lit func(T) tir.Expr) tir.Expr {
	same := true
	for _, v := range vals {
		same = same && v == vals[0]
	}
	if same {
		return lit(vals[0])
	}
	e := lit(vals[len(vals)-1])
	for j := len(vals) - 2; j >= 0; j-- {
		e = tir.SelectE(tir.Cmp(tir.EQ, r, tir.Const(int64(j))), lit(vals[j]), e)
	}
	return e
}

// permuteResize: a Resize kept as arithmetic works along the axes its
// scales, sizes and roi name (all of them, or the axes attribute from
// opset 18); on a permuted input they are permuted alike.
func permuteResize(g *graph.Graph, n *graph.Node, perm []int) bool {
	if n.HasAttr("axes") {
		v, err := n.Ints("axes")
		if err != nil {
			return false
		}
		p, ok := permutedAxes(perm, v)
		if !ok {
			return false
		}
		n.SetAttr("axes", graph.Attr{Kind: graph.AttrInts, Ints: p})
		return true
	}
	r := len(perm)
	for _, in := range []struct {
		i    int
		what string
		per  int // values per axis: roi holds the starts, then the ends
	}{{1, "roi", 2}, {2, "scales", 1}, {3, "sizes", 1}} {
		name := n.Input(in.i)
		if name == "" {
			continue
		}
		t := g.ConstOf(name)
		if t == nil {
			return false
		}
		if t.Len() == 0 {
			continue
		}
		if t.Len() != in.per*r {
			return false
		}
		out := t.Clone()
		for h := range in.per {
			for a, p := range perm {
				if t.DType.IsInt() {
					out.I64[h*r+a] = t.I64[h*r+p]
				} else {
					out.F32[h*r+a] = t.F32[h*r+p]
				}
			}
		}
		fresh := g.FreshName(n.Name + "/" + in.what)
		g.AddConst(fresh, out)
		n.Inputs[in.i] = fresh
	}
	return true
}
