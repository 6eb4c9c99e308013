package ops

import (
	"fmt"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"math"
	"slices"
)

// Injective ops that move data: reshapes, transposes, concatenation,
// slicing, padding, tiling, splitting. Most also appear in shape
// arithmetic on int64 values, so they keep shape rules and evaluators of
// their own (int64 tensors, empty tensors) beside their lowerings.

func init() {
	define(
		&Op{Name: "Reshape", Copy: CopyReshape, MinIn: 1, MaxIn: 2, Pattern: Injective, Infer: inferReshape, Eval: evalReshape, Lower: lowerReshape},
		&Op{Name: "Flatten", Copy: CopyReshape, MinIn: 1, MaxIn: 1, Pattern: Injective, Infer: inferFlatten, Eval: evalReshape, Lower: lowerFlatten},
		&Op{Name: "Squeeze", Copy: CopyReshape, MinIn: 1, MaxIn: 2, Pattern: Injective, Infer: inferSqueeze, Eval: evalReshape, Lower: lowerWithInts("axes", "axes", te.Squeeze)},
		&Op{Name: "Unsqueeze", Copy: CopyReshape, MinIn: 1, MaxIn: 2, Pattern: Injective, Infer: inferUnsqueeze, Eval: evalReshape, Lower: lowerWithInts("axes", "axes", te.Unsqueeze)},
		&Op{Name: "Transpose", MinIn: 1, MaxIn: 1, Pattern: Injective, Layout: LayoutTranspose, Infer: inferTranspose, Eval: evalTranspose, Lower: lowerTranspose, CopyIf: identityPerm},
		&Op{Name: "Concat", MinIn: 1, MaxIn: -1, Pattern: Injective, Layout: LayoutAxes, PermuteAxes: permuteAxisAttr, Infer: inferConcat, Eval: evalConcat, Lower: lowerConcat},
		&Op{Name: "Slice", MinIn: 1, MaxIn: 5, Pattern: Injective, Layout: LayoutAxes, PermuteAxes: permuteSlice, Infer: inferSlice, Eval: evalSlice, Lower: lowerSlice},
		&Op{Name: "Pad", MinIn: 1, MaxIn: 4, Pattern: Injective, Layout: LayoutAxes, PermuteAxes: permutePad, Lower: lowerPad, CopyIf: padsNothing},
		&Op{Name: "Expand", Copy: CopyWhenUnchanged, MinIn: 2, MaxIn: 2, Pattern: Broadcast, Infer: inferExpand, Eval: evalExpand, Lower: lowerWithInts("", "shape", te.Expand)},
		&Op{Name: "Tile", MinIn: 2, MaxIn: 2, Pattern: Injective, Infer: inferTile, Eval: evalTile, Lower: lowerTile},
		&Op{Name: "Split", MinIn: 1, MaxIn: 2, Pattern: Injective, Layout: LayoutAxes, PermuteAxes: permuteAxisAttr, Infer: inferSplit, Lower: lowerSplit},
		&Op{Name: "DepthToSpace", MinIn: 1, MaxIn: 1, Pattern: Injective, Infer: inferDepthToSpace, Lower: lowerDepthToSpace},
		&Op{Name: "SpaceToDepth", MinIn: 1, MaxIn: 1, Pattern: Injective, Infer: inferSpaceToDepth, Lower: lowerSpaceToDepth},
	)
}

// ReshapeShape resolves ONNX Reshape's target shape for input shape in:
// 0 copies the input dimension (unless allowZero), one -1 is inferred.
func ReshapeShape(in []int, shape []int64, allowZero bool) ([]int, bool) {
	out := make([]int, len(shape))
	infer := -1
	known := 1
	n := graph.NumElems(in)
	for i, d := range shape {
		switch {
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, false
			}
			out[i] = in[i]
		case d == -1:
			if infer >= 0 {
				return nil, false
			}
			infer = i
			continue
		case d < 0 || d > graph.MaxElems:
			return nil, false
		default:
			out[i] = int(d)
		}
		if out[i] > 0 && known > graph.MaxElems/out[i] {
			return nil, false
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, false
		}
		out[infer] = n / known
	} else if known != n {
		return nil, false
	}
	return out, true
}

func inferReshape(c *InferCtx) error {
	shape, ok, err := c.IntsParam(1, "shape", "shape")
	if err != nil {
		return err
	}
	if !ok {
		return c.Errorf("no shape")
	}
	az, err := c.N.Int("allowzero", 0)
	if err != nil {
		return err
	}
	out, ok := ReshapeShape(c.Shape(0), shape, az != 0)
	if !ok {
		return c.Errorf("cannot reshape %v to %v", c.Shape(0), shape)
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func evalReshape(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{reshaped(in[0], c.Out[0].Shape)}, nil
}

// lowerReshape: the shape is an attribute before opset 5, an input after;
// it is resolved (0 and -1) by shape inference.
func lowerReshape(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	if _, _, err := c.intsParam(1, "shape", "shape"); err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), x, c.outShape(0), false))
}

func inferFlatten(c *InferCtx) error {
	x := c.Shape(0)
	axis, err := c.N.Int("axis", 1)
	if err != nil {
		return err
	}
	if axis < -int64(len(x)) || axis > int64(len(x)) {
		return c.Errorf("axis %d out of range for rank %d", axis, len(x))
	}
	if axis < 0 {
		axis += int64(len(x))
	}
	c.Set(0, c.DType(0), []int{graph.NumElems(x[:axis]), graph.NumElems(x[axis:])})
	return nil
}

func lowerFlatten(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	axis, err := c.n.Int("axis", 1)
	if err != nil {
		return nil, err
	}
	return one(te.Flatten(c.name(0), x, int(axis)))
}

func inferSqueeze(c *InferCtx) error {
	x := c.Shape(0)
	v, _, err := c.IntsParam(1, "axes", "axes")
	if err != nil {
		return err
	}
	axes, err := c.NormAxes(v, len(x))
	if err != nil {
		return err
	}
	out := []int{}
	for i, d := range x {
		switch {
		case len(axes) == 0 && d == 1:
		case slices.Contains(axes, i):
			if d != 1 {
				return c.Errorf("axis %d of %v is not 1", i, x)
			}
		default:
			out = append(out, d)
		}
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func inferUnsqueeze(c *InferCtx) error {
	x := c.Shape(0)
	v, ok, err := c.IntsParam(1, "axes", "axes")
	if err != nil {
		return err
	}
	if !ok || len(v) == 0 {
		return c.Errorf("no axes")
	}
	rank := len(x) + len(v)
	axes, err := c.NormAxes(v, rank)
	if err != nil {
		return err
	}
	out := make([]int, rank)
	k := 0
	for i := range out {
		if slices.Contains(axes, i) {
			out[i] = 1
		} else {
			out[i] = x[k]
			k++
		}
	}
	c.Set(0, c.DType(0), out)
	return nil
}

// perm returns Transpose's permutation (default: reversed axes).
func (c *InferCtx) perm() ([]int, error) {
	rank := len(c.Shape(0))
	p, err := c.N.Ints("perm")
	if err != nil {
		return nil, err
	}
	if p == nil {
		out := make([]int, rank)
		for i := range out {
			out[i] = rank - 1 - i
		}
		return out, nil
	}
	if len(p) != rank {
		return nil, c.Errorf("perm %v for rank %d", p, rank)
	}
	return c.NormAxes(p, rank)
}

func inferTranspose(c *InferCtx) error {
	p, err := c.perm()
	if err != nil {
		return err
	}
	x := c.Shape(0)
	out := make([]int, len(p))
	for i, a := range p {
		out[i] = x[a]
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func evalTranspose(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	p, _ := c.perm()
	st := graph.Strides(in[0].Shape)
	return []*graph.Tensor{remap(in[0], c.Out[0].Shape, func(idx []int) int {
		s := 0
		for i, a := range p {
			s += idx[i] * st[a]
		}
		return s
	})}, nil
}

func lowerTranspose(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	perm, err := c.ints("perm")
	if err != nil {
		return nil, err
	}
	return one(te.Transpose(c.name(0), x, perm))
}

// identityPerm reports whether Transpose node n keeps every axis in place.
func identityPerm(g *graph.Graph, n *graph.Node) bool {
	p, err := n.Ints("perm")
	if err != nil {
		return false
	}
	if p == nil { // the default perm reverses the axes
		x := g.Values[n.Input(0)]
		return x != nil && x.Shape != nil && len(x.Shape) <= 1
	}
	for i, a := range p {
		if a != int64(i) {
			return false
		}
	}
	return true
}

// padsNothing reports whether Pad node n's pads are known and all zero.
func padsNothing(g *graph.Graph, n *graph.Node) bool {
	x := g.Values[n.Input(0)]
	if x == nil || x.Shape == nil {
		return false
	}
	p, err := ResolvePads(g, n, len(x.Shape))
	if err != nil {
		return false
	}
	nonzero := func(v int) bool { return v != 0 }
	return !slices.ContainsFunc(p.Begin, nonzero) && !slices.ContainsFunc(p.End, nonzero)
}

func (c *InferCtx) concatAxis() (int, error) {
	if !c.N.HasAttr("axis") {
		return 0, c.Errorf("no axis")
	}
	a, err := c.N.Int("axis", 0)
	if err != nil {
		return 0, err
	}
	return c.NormAxis(a, len(c.Shape(0)))
}

func inferConcat(c *InferCtx) error {
	axis, err := c.concatAxis()
	if err != nil {
		return err
	}
	out := slices.Clone(c.Shape(0))
	out[axis] = 0
	for i, v := range c.In {
		if v == nil || len(v.Shape) != len(out) || v.DType != c.DType(0) {
			return c.Errorf("input %d does not match input 0", i)
		}
		for k, d := range v.Shape {
			if k != axis && d != out[k] {
				return c.Errorf("input %d has shape %v, input 0 %v", i, v.Shape, c.Shape(0))
			}
		}
		out[axis] += v.Shape[axis]
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func evalConcat(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	axis, _ := c.concatAxis()
	out := &graph.Tensor{DType: in[0].DType, Shape: slices.Clone(c.Out[0].Shape)}
	outer := graph.NumElems(out.Shape[:axis])
	for o := range outer {
		for _, t := range in {
			inner := graph.NumElems(t.Shape[axis:])
			if t.DType.IsInt() {
				out.I64 = append(out.I64, t.I64[o*inner:(o+1)*inner]...)
			} else {
				out.F32 = append(out.F32, t.F32[o*inner:(o+1)*inner]...)
			}
		}
	}
	if out.DType.IsInt() && out.I64 == nil {
		out.I64 = []int64{}
	}
	if out.DType == graph.Float32 && out.F32 == nil {
		out.F32 = []float32{}
	}
	return []*graph.Tensor{out}, nil
}

func lowerConcat(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	axis, err := c.n.Int("axis", 1) // required from opset 4; 1 before
	if err != nil {
		return nil, err
	}
	if len(xs) == 1 {
		return lowerCopy(c)
	}
	return one(te.Concat(c.name(0), int(axis), xs...))
}

// SliceSpec is a resolved Slice: per input axis, the first index, the step
// and the output extent.
type SliceSpec struct{ Start, Step, Count []int }

// ResolveSlice resolves ONNX Slice's starts, ends, axes and steps (given as
// inputs from opset 10, as attributes before) for an input of shape x,
// clamping as ONNX defines.
func ResolveSlice(g *graph.Graph, n *graph.Node, x []int) (*SliceSpec, error) {
	starts, ok1, err := graph.IntsParam(g, n, 1, "starts", "starts")
	if err != nil {
		return nil, err
	}
	ends, ok2, err := graph.IntsParam(g, n, 2, "ends", "ends")
	if err != nil {
		return nil, err
	}
	if !ok1 || !ok2 || len(starts) != len(ends) {
		return nil, n.Errorf("starts %v and ends %v", starts, ends)
	}
	axes, ok, err := graph.IntsParam(g, n, 3, "axes", "axes")
	if err != nil {
		return nil, err
	}
	if !ok {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	steps, ok, err := graph.IntsParam(g, n, 4, "", "steps")
	if err != nil {
		return nil, err
	}
	if !ok {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, n.Errorf("%d starts, %d axes, %d steps", len(starts), len(axes), len(steps))
	}
	rank := len(x)
	sp := &SliceSpec{Start: make([]int, rank), Step: make([]int, rank), Count: slices.Clone(x)}
	for i := range sp.Step {
		sp.Step[i] = 1
	}
	seen := map[int64]bool{}
	for k, a := range axes {
		if a < -int64(rank) || a >= int64(rank) {
			return nil, n.Errorf("axis %d out of range for rank %d", a, rank)
		}
		if a < 0 {
			a += int64(rank)
		}
		if seen[a] {
			return nil, n.Errorf("axis %d repeated", a)
		}
		seen[a] = true
		dim := int64(x[a])
		s, e, st := starts[k], ends[k], steps[k]
		if st == 0 {
			return nil, n.Errorf("step 0 on axis %d", a)
		}
		if s < 0 {
			s += dim
		}
		if e < 0 {
			e += dim
		}
		// A step longer than the axis takes one element, like a step
		// of the axis' extent (and keeps the arithmetic from overflowing).
		st = min(max(st, -max(dim, 1)), max(dim, 1))
		var cnt int64
		if st > 0 {
			s = min(max(s, 0), dim)
			e = min(max(e, 0), dim)
			if e > s {
				cnt = (e-s-1)/st + 1
			}
		} else {
			s = min(max(s, 0), dim-1)
			e = min(max(e, -1), dim-1)
			if s > e {
				cnt = (s-e-1)/-st + 1
			}
		}
		sp.Start[a], sp.Step[a], sp.Count[a] = int(s), int(st), int(cnt)
	}
	return sp, nil
}

func inferSlice(c *InferCtx) error {
	sp, err := ResolveSlice(c.G, c.N, c.Shape(0))
	if err != nil {
		return err
	}
	c.Set(0, c.DType(0), sp.Count)
	return nil
}

func evalSlice(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	sp, err := ResolveSlice(c.G, c.N, in[0].Shape)
	if err != nil {
		return nil, err
	}
	st := graph.Strides(in[0].Shape)
	return []*graph.Tensor{remap(in[0], sp.Count, func(idx []int) int {
		s := 0
		for i, x := range idx {
			s += (sp.Start[i] + x*sp.Step[i]) * st[i]
		}
		return s
	})}, nil
}

// lowerSlice: starts, ends and axes are attributes before opset 10; from
// 10 they and steps are inputs.
func lowerSlice(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	sp, err := ResolveSlice(c.g, c.n, x.Shape)
	if err != nil {
		return nil, err
	}
	var a te.SliceAttrs
	for ax := range x.Shape {
		a.Axes = append(a.Axes, ax)
		a.Starts = append(a.Starts, sp.Start[ax])
		a.Steps = append(a.Steps, sp.Step[ax])
		a.Ends = append(a.Ends, sp.Start[ax]+sp.Step[ax]*sp.Count[ax])
		if sp.Step[ax] < 0 && a.Ends[ax] < 0 {
			a.Ends[ax] = math.MinInt // one past the first element, going down
		}
	}
	return one(te.Slice(c.name(0), x, a))
}

// PadSpec is a resolved Pad: pads before and after per input axis.
type PadSpec struct{ Begin, End []int }

// ResolvePads resolves ONNX Pad's pads ("paddings" attribute in opset 1,
// "pads" attribute until 10, input from 11) and axes (input from 18) for an
// input of rank rank.
func ResolvePads(g *graph.Graph, n *graph.Node, rank int) (*PadSpec, error) {
	attr := "pads"
	if n.HasAttr("paddings") {
		attr = "paddings"
	}
	pads, ok, err := graph.IntsParam(g, n, 1, attr, "pads")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, n.Errorf("no pads")
	}
	axes, ok, err := graph.IntsParam(g, n, 3, "", "axes")
	if err != nil {
		return nil, err
	}
	if !ok {
		axes = make([]int64, rank)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if len(pads) != 2*len(axes) {
		return nil, n.Errorf("%d pads for %d axes", len(pads), len(axes))
	}
	p := &PadSpec{Begin: make([]int, rank), End: make([]int, rank)}
	for k, a := range axes {
		if a < -int64(rank) || a >= int64(rank) {
			return nil, n.Errorf("axis %d out of range for rank %d", a, rank)
		}
		if a < 0 {
			a += int64(rank)
		}
		b, e := pads[k], pads[k+len(axes)]
		if b < -graph.MaxElems || b > graph.MaxElems || e < -graph.MaxElems || e > graph.MaxElems {
			return nil, n.Errorf("pads %v out of range", pads)
		}
		p.Begin[a], p.End[a] = int(b), int(e)
	}
	return p, nil
}

// lowerPad: pads (and the constant value) are attributes before opset 11
// ("paddings" in opset 1), inputs after; axes an input from 18.
func lowerPad(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	p, err := ResolvePads(c.g, c.n, len(x.Shape))
	if err != nil {
		return nil, err
	}
	mode, err := c.n.Str("mode", "constant")
	if err != nil {
		return nil, err
	}
	v, _, err := graph.FloatParam(c.g, c.n, 2, "value", "constant_value")
	if err != nil {
		return nil, err
	}
	return one(te.Pad(c.name(0), x, te.PadAttrs{Mode: mode, Pads: append(slices.Clone(p.Begin), p.End...), Value: v}))
}

func inferExpand(c *InferCtx) error {
	shape, _, err := c.IntsParam(1, "", "shape")
	if err != nil {
		return err
	}
	for _, d := range shape {
		if d < 0 || d > graph.MaxElems {
			return c.Errorf("shape %v", shape)
		}
	}
	out, err := te.BroadcastShapes(c.Shape(0), toInts(shape))
	if err != nil {
		return c.Errorf("%v does not broadcast with %v", c.Shape(0), shape)
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func evalExpand(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{remap(in[0], c.Out[0].Shape, func(idx []int) int { return graph.BroadcastSrc(in[0].Shape, idx) })}, nil
}

func inferTile(c *InferCtx) error {
	reps, _, err := c.IntsParam(1, "", "repeats")
	if err != nil {
		return err
	}
	x := c.Shape(0)
	if len(reps) != len(x) {
		return c.Errorf("%d repeats for rank %d", len(reps), len(x))
	}
	out := make([]int, len(x))
	for i, r := range reps {
		if r < 0 || r > graph.MaxElems {
			return c.Errorf("repeats %v", reps)
		}
		out[i] = x[i] * int(r)
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func evalTile(c *InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0].Shape
	st := graph.Strides(x)
	return []*graph.Tensor{remap(in[0], c.Out[0].Shape, func(idx []int) int {
		s := 0
		for i, v := range idx {
			s += (v % x[i]) * st[i]
		}
		return s
	})}, nil
}

// lowerTile concatenates copies along each repeated axis.
func lowerTile(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	reps, _, err := c.intsParam(1, "", "repeats")
	if err != nil {
		return nil, err
	}
	cur := x
	last := -1
	for ax, r := range reps {
		if r > 1 {
			last = ax
		}
	}
	if last < 0 {
		return lowerCopy(c)
	}
	for ax, r := range reps {
		if r <= 1 {
			continue
		}
		copies := make([]*te.Tensor, r)
		for i := range copies {
			copies[i] = cur
		}
		name := c.sub(fmt.Sprintf("tile%d", ax))
		if ax == last {
			name = c.name(0)
		}
		if cur, err = te.Concat(name, ax, copies...); err != nil {
			return nil, err
		}
	}
	return []*te.Tensor{cur}, nil
}

// SplitSizes resolves Split's output extents along axis: the "split" input
// (opset 13) or attribute, else equal parts (the last one smaller, as
// opset 18 allows).
func SplitSizes(g *graph.Graph, n *graph.Node, x []int) (axis int, sizes []int, err error) {
	a, err := n.Int("axis", 0)
	if err != nil {
		return 0, nil, err
	}
	if a < -int64(len(x)) || a >= int64(len(x)) {
		return 0, nil, n.Errorf("axis %d out of range for rank %d", a, len(x))
	}
	if a < 0 {
		a += int64(len(x))
	}
	axis = int(a)
	split, ok, err := graph.IntsParam(g, n, 1, "split", "split")
	if err != nil {
		return 0, nil, err
	}
	nout := len(n.Outputs)
	if ok {
		if len(split) != nout {
			return 0, nil, n.Errorf("split %v for %d outputs", split, nout)
		}
		total := 0
		for _, s := range split {
			if s < 0 || s > graph.MaxElems {
				return 0, nil, n.Errorf("split %v", split)
			}
			total += int(s)
		}
		if total != x[axis] {
			return 0, nil, n.Errorf("split %v does not add up to %d", split, x[axis])
		}
		return axis, toInts(split), nil
	}
	part := (x[axis] + nout - 1) / nout
	rest := x[axis]
	for range nout {
		s := min(part, rest)
		sizes = append(sizes, s)
		rest -= s
	}
	return axis, sizes, nil
}

// lowerSplit slices each output; the sizes are an attribute before opset
// 13, an input after, else equal parts.
func lowerSplit(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	axis, sizes, err := SplitSizes(c.g, c.n, x.Shape)
	if err != nil {
		return nil, err
	}
	outs := make([]*te.Tensor, len(sizes))
	start := 0
	for i, s := range sizes {
		if c.n.Outputs[i] != "" {
			t, err := te.Slice(c.n.Outputs[i], x, te.SliceAttrs{Starts: []int{start}, Ends: []int{start + s}, Axes: []int{axis}})
			if err != nil {
				return nil, err
			}
			outs[i] = t
		}
		start += s
	}
	return outs, nil
}

func inferDepthToSpace(c *InferCtx) error {
	x := c.Shape(0)
	b, err := c.N.Int("blocksize", 0)
	if err != nil {
		return err
	}
	if len(x) != 4 || b <= 0 || b > 1<<16 || int64(x[1])%(b*b) != 0 {
		return c.Errorf("blocksize %d for input %v", b, x)
	}
	bs := int(b)
	c.Set(0, c.DType(0), []int{x[0], x[1] / (bs * bs), x[2] * bs, x[3] * bs})
	return nil
}

func inferSpaceToDepth(c *InferCtx) error {
	x := c.Shape(0)
	b, err := c.N.Int("blocksize", 0)
	if err != nil {
		return err
	}
	if len(x) != 4 || b <= 0 || b > 1<<16 || int64(x[2])%b != 0 || int64(x[3])%b != 0 {
		return c.Errorf("blocksize %d for input %v", b, x)
	}
	bs := int(b)
	c.Set(0, c.DType(0), []int{x[0], x[1] * bs * bs, x[2] / bs, x[3] / bs})
	return nil
}

// reshapeTransposeReshape is DepthToSpace and SpaceToDepth: view x as mid,
// permute, view as the output shape.
func (c *lowerCtx) reshapeTransposeReshape(x *te.Tensor, mid, perm []int) ([]*te.Tensor, error) {
	r, err := te.Reshape(c.sub("split"), x, mid, false)
	if err != nil {
		return nil, err
	}
	t, err := te.Transpose(c.sub("perm"), r, perm)
	if err != nil {
		return nil, err
	}
	return one(te.Reshape(c.name(0), t, c.outShape(0), false))
}

func lowerDepthToSpace(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	b64, err := c.n.Int("blocksize", 0)
	if err != nil {
		return nil, err
	}
	mode, err := c.n.Str("mode", "DCR")
	if err != nil {
		return nil, err
	}
	b := int(b64)
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	switch mode {
	case "DCR":
		return c.reshapeTransposeReshape(x, []int{n, b, b, ch / (b * b), h, w}, []int{0, 3, 4, 1, 5, 2})
	case "CRD":
		return c.reshapeTransposeReshape(x, []int{n, ch / (b * b), b, b, h, w}, []int{0, 1, 4, 2, 5, 3})
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

func lowerSpaceToDepth(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	b64, err := c.n.Int("blocksize", 0)
	if err != nil {
		return nil, err
	}
	b := int(b64)
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	return c.reshapeTransposeReshape(x, []int{n, ch, h / b, b, w / b, b}, []int{0, 3, 5, 1, 2, 4})
}

func inferSplit(c *InferCtx) error {
	axis, sizes, err := SplitSizes(c.G, c.N, c.Shape(0))
	if err != nil {
		return err
	}
	for i, s := range sizes {
		out := slices.Clone(c.Shape(0))
		out[axis] = s
		c.Set(i, c.DType(0), out)
	}
	return nil
}
