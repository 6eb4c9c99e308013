package ops

import (
	"math"
	"slices"
	"tessera/graph"
)

// opTable lists every op the graph understands: its shape inference and,
// for the ops that appear in constant and shape subgraphs, its evaluator.
// An op missing here is unsupported (the lowering in package partition
// covers a subset of these: Shape and friends must be folded away first).
var opTable = map[string]opInfo{}

// inferCtx is graph.InferCtx with the ops' own helper methods.
type inferCtx struct{ *graph.InferCtx }

// opInfo is an op's shape inference and optional constant evaluator.
type opInfo struct {
	infer func(c *inferCtx) error
	eval  func(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error)
	// minIn and maxIn bound the number of inputs (maxIn < 0: unbounded).
	minIn, maxIn int
}

func init() {
	defer registerAll()
	unary := opInfo{infer: inferUnary, minIn: 1, maxIn: 1}
	for _, op := range []string{"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal",
		"Elu", "Selu", "Celu", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "LeakyRelu", "Gelu", "Floor", "Ceil"} {
		u := unary
		if _, ok := floatUnary[op]; ok {
			u.eval = evalUnary
		}
		opTable[op] = u
	}
	opTable["Identity"] = opInfo{infer: inferUnary, eval: evalIdentity, minIn: 1, maxIn: 1}
	opTable["Dropout"] = opInfo{infer: inferDropout, eval: evalIdentity, minIn: 1, maxIn: 3}
	opTable["Clip"] = opInfo{infer: inferUnary, minIn: 1, maxIn: 3}
	opTable["Softmax"] = opInfo{infer: inferUnary, minIn: 1, maxIn: 1}
	opTable["LogSoftmax"] = opInfo{infer: inferUnary, minIn: 1, maxIn: 1}
	opTable["InstanceNormalization"] = opInfo{infer: inferUnary, minIn: 3, maxIn: 3}
	opTable["PRelu"] = opInfo{infer: inferPRelu, minIn: 2, maxIn: 2}
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Pow"} {
		opTable[op] = opInfo{infer: inferBroadcast, eval: evalBinary, minIn: 2, maxIn: 2}
	}
	for _, op := range []string{"Max", "Min", "Sum", "Mean"} {
		opTable[op] = opInfo{infer: inferBroadcast, minIn: 1, maxIn: -1}
	}
	opTable["Max"] = opInfo{infer: inferBroadcast, eval: evalBinary, minIn: 1, maxIn: -1}
	opTable["Min"] = opInfo{infer: inferBroadcast, eval: evalBinary, minIn: 1, maxIn: -1}
	opTable["MatMul"] = opInfo{infer: inferMatMul, minIn: 2, maxIn: 2}
	opTable["Gemm"] = opInfo{infer: inferGemm, minIn: 2, maxIn: 3}
	opTable["Conv"] = opInfo{infer: inferConv, minIn: 2, maxIn: 3}
	opTable["MaxPool"] = opInfo{infer: inferPool, minIn: 1, maxIn: 1}
	opTable["AveragePool"] = opInfo{infer: inferPool, minIn: 1, maxIn: 1}
	opTable["GlobalAveragePool"] = opInfo{infer: inferGlobalPool, minIn: 1, maxIn: 1}
	opTable["GlobalMaxPool"] = opInfo{infer: inferGlobalPool, minIn: 1, maxIn: 1}
	opTable["BatchNormalization"] = opInfo{infer: inferBatchNorm, minIn: 5, maxIn: 5}
	opTable["LayerNormalization"] = opInfo{infer: inferLayerNorm, minIn: 2, maxIn: 3}
	for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
		"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"} {
		opTable[op] = opInfo{infer: inferReduce, minIn: 1, maxIn: 2}
	}
	opTable["Reshape"] = opInfo{infer: inferReshape, eval: evalReshape, minIn: 1, maxIn: 2}
	opTable["Flatten"] = opInfo{infer: inferFlatten, eval: evalReshape, minIn: 1, maxIn: 1}
	opTable["Squeeze"] = opInfo{infer: inferSqueeze, eval: evalReshape, minIn: 1, maxIn: 2}
	opTable["Unsqueeze"] = opInfo{infer: inferUnsqueeze, eval: evalReshape, minIn: 1, maxIn: 2}
	opTable["Transpose"] = opInfo{infer: inferTranspose, eval: evalTranspose, minIn: 1, maxIn: 1}
	opTable["Concat"] = opInfo{infer: inferConcat, eval: evalConcat, minIn: 1, maxIn: -1}
	opTable["Slice"] = opInfo{infer: inferSlice, eval: evalSlice, minIn: 1, maxIn: 5}
	opTable["Pad"] = opInfo{infer: inferPad, minIn: 1, maxIn: 4}
	opTable["Expand"] = opInfo{infer: inferExpand, eval: evalExpand, minIn: 2, maxIn: 2}
	opTable["Tile"] = opInfo{infer: inferTile, eval: evalTile, minIn: 2, maxIn: 2}
	opTable["Split"] = opInfo{infer: inferSplit, minIn: 1, maxIn: 2}
	opTable["DepthToSpace"] = opInfo{infer: inferDepthToSpace, minIn: 1, maxIn: 1}
	opTable["SpaceToDepth"] = opInfo{infer: inferSpaceToDepth, minIn: 1, maxIn: 1}
	opTable["Gather"] = opInfo{infer: inferGather, eval: evalGather, minIn: 2, maxIn: 2}
	opTable["Shape"] = opInfo{infer: inferShape, eval: evalShape, minIn: 1, maxIn: 1}
	opTable["Size"] = opInfo{infer: inferSize, eval: evalSize, minIn: 1, maxIn: 1}
	opTable["ConstantOfShape"] = opInfo{infer: inferConstantOfShape, eval: evalConstantOfShape, minIn: 1, maxIn: 1}
	opTable["Constant"] = opInfo{infer: inferConstant, eval: evalConstant, minIn: 0, maxIn: 0}
	opTable["Cast"] = opInfo{infer: inferCast, eval: evalCast, minIn: 1, maxIn: 1}
	opTable["Range"] = opInfo{infer: inferRange, eval: evalRange, minIn: 3, maxIn: 3}
}

func inferUnary(c *inferCtx) error {
	if err := c.OnlyOutputs(1, "extra output"); err != nil {
		return err
	}
	c.Set(0, c.DType(0), c.Shape(0))
	return nil
}

func evalUnary(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	t := in[0]
	if t.DType == graph.Int64 {
		f, ok := intUnary[c.N.OpType]
		if !ok {
			return nil, nil
		}
		return []*graph.Tensor{mapN(t.Shape, in, func(v []int64) int64 { return f(v[0]) }, nil)}, nil
	}
	return []*graph.Tensor{mapN(t.Shape, in, nil, unaryF(floatUnary[c.N.OpType]))}, nil
}

func evalIdentity(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{in[0]}, nil
}

func inferDropout(c *inferCtx) error {
	if err := c.OnlyOutputs(1, "the mask"); err != nil {
		return err
	}
	if c.Has(2) {
		t, err := c.Constant(2, "training_mode")
		if err != nil {
			return err
		}
		if t.Len() == 1 && t.Int64s()[0] != 0 {
			return graph.Unsupportedf("Dropout at node %s: training mode", c.N.Name)
		}
	}
	c.Set(0, c.DType(0), c.Shape(0))
	return nil
}

// PReLUSlopeShape returns the shape slope must be viewed with to
// broadcast against x: before opset 7 a 1-D slope of x's channel count
// applies along axis 1; from 7 on, broadcasting is numpy's.
func PReLUSlopeShape(opset int, x, slope []int) []int {
	if opset < 7 && len(slope) == 1 && len(x) >= 2 && slope[0] == x[1] && slope[0] != 1 {
		s := make([]int, len(x)-1)
		for i := range s {
			s[i] = 1
		}
		s[0] = slope[0]
		return s
	}
	return slope
}

func inferPRelu(c *inferCtx) error {
	out, ok := broadcast(c.Shape(0), PReLUSlopeShape(c.Opset, c.Shape(0), c.Shape(1)))
	if !ok || !slices.Equal(out, c.Shape(0)) {
		return c.Errorf("slope %v does not broadcast to %v", c.Shape(1), c.Shape(0))
	}
	c.Set(0, c.DType(0), c.Shape(0))
	return nil
}

func inferBroadcast(c *inferCtx) error {
	shapes := [][]int{}
	dt := graph.Undefined
	for i, v := range c.In {
		if v == nil {
			return c.Errorf("input %d is omitted", i)
		}
		if dt == graph.Undefined {
			dt = v.DType
		} else if v.DType != dt && c.N.OpType != "Pow" {
			return c.Errorf("inputs have dtypes %s and %s", dt, v.DType)
		}
		shapes = append(shapes, v.Shape)
	}
	out, ok := broadcast(shapes...)
	if !ok {
		return c.Errorf("shapes %v do not broadcast", shapes)
	}
	c.Set(0, dt, out)
	return nil
}

func evalBinary(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	op := binaryOps[c.N.OpType]
	fi, ff := foldN(op.i, op.f)
	return []*graph.Tensor{mapN(c.Out[0].Shape, in, fi, ff)}, nil
}

func inferMatMul(c *inferCtx) error {
	a, b := c.Shape(0), c.Shape(1)
	if len(a) == 0 || len(b) == 0 {
		return c.Errorf("scalar operand (%v, %v)", a, b)
	}
	var ab, bb []int
	var ka, kb int
	var mn []int
	if len(a) == 1 {
		ka = a[0]
	} else {
		ab, ka = a[:len(a)-2], a[len(a)-1]
		mn = append(mn, a[len(a)-2])
	}
	if len(b) == 1 {
		kb = b[0]
	} else {
		bb, kb = b[:len(b)-2], b[len(b)-2]
		mn = append(mn, b[len(b)-1])
	}
	if ka != kb {
		return c.Errorf("inner dimensions differ: %v · %v", a, b)
	}
	batch, ok := broadcast(ab, bb)
	if !ok {
		return c.Errorf("batch dimensions of %v and %v do not broadcast", a, b)
	}
	c.Set(0, graph.Float32, append(batch, mn...))
	return c.NeedFloat(0)
}

func inferGemm(c *inferCtx) error {
	a, b := c.Shape(0), c.Shape(1)
	if len(a) != 2 || len(b) != 2 {
		return c.Errorf("A %v and B %v must be 2-D", a, b)
	}
	ta, err := c.N.Int("transA", 0)
	if err != nil {
		return err
	}
	tb, err := c.N.Int("transB", 0)
	if err != nil {
		return err
	}
	m, k := a[0], a[1]
	if ta != 0 {
		m, k = k, m
	}
	kb, n := b[0], b[1]
	if tb != 0 {
		kb, n = n, kb
	}
	if k != kb {
		return c.Errorf("inner dimensions differ: A %v, B %v", a, b)
	}
	if c.Has(2) {
		if out, ok := broadcast(c.Shape(2), []int{m, n}); !ok || !slices.Equal(out, []int{m, n}) {
			return c.Errorf("C %v does not broadcast to [%d %d]", c.Shape(2), m, n)
		}
	}
	c.Set(0, graph.Float32, []int{m, n})
	return nil
}

// window is the geometry of one spatial axis of a sliding-window op.
type window struct{ in, k, s, d, pb, pe, out int }

// windows resolves the output extents of Conv and the pools.
func (c *inferCtx) windows(in, kernel []int, ceil bool) ([]window, error) {
	n := len(in)
	get := func(name string, def int64) ([]int64, error) {
		v, err := c.N.Ints(name)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = make([]int64, n)
			for i := range v {
				v[i] = def
			}
		}
		if len(v) != n {
			return nil, c.Errorf("%s %v for %d spatial axes", name, v, n)
		}
		return v, nil
	}
	strides, err := get("strides", 1)
	if err != nil {
		return nil, err
	}
	dil, err := get("dilations", 1)
	if err != nil {
		return nil, err
	}
	pads, err := c.N.Ints("pads")
	if err != nil {
		return nil, err
	}
	if pads == nil {
		pads = make([]int64, 2*n)
	}
	if len(pads) != 2*n {
		return nil, c.Errorf("pads %v for %d spatial axes", pads, n)
	}
	autoPad, err := c.N.Str("auto_pad", "NOTSET")
	if err != nil {
		return nil, err
	}
	ws := make([]window, n)
	for i := range ws {
		w := window{in: in[i], k: kernel[i], s: int(strides[i]), d: int(dil[i]), pb: int(pads[i]), pe: int(pads[i+n])}
		if w.k <= 0 || w.s <= 0 || w.d <= 0 || w.k > 1<<20 || w.s > 1<<20 || w.d > 1<<20 {
			return nil, c.Errorf("axis %d: kernel %d, stride %d, dilation %d must be positive", i, w.k, w.s, w.d)
		}
		span := (w.k-1)*w.d + 1
		switch autoPad {
		case "NOTSET", "":
			if w.pb < 0 || w.pe < 0 || w.pb > 1<<20 || w.pe > 1<<20 {
				return nil, c.Errorf("pads %v out of range", pads)
			}
		case "VALID":
			w.pb, w.pe = 0, 0
		case "SAME_UPPER", "SAME_LOWER":
			w.out = (w.in + w.s - 1) / w.s
			total := max(0, (w.out-1)*w.s+span-w.in)
			w.pb = total / 2
			if autoPad == "SAME_LOWER" {
				w.pb = total - total/2
			}
			w.pe = total - w.pb
			ws[i] = w
			continue
		default:
			return nil, c.Errorf("unknown auto_pad %q", autoPad)
		}
		room := w.in + w.pb + w.pe - span
		if room < 0 {
			return nil, c.Errorf("axis %d: window %d larger than the padded input %d", i, span, w.in+w.pb+w.pe)
		}
		if ceil {
			w.out = (room+w.s-1)/w.s + 1
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

func inferConv(c *inferCtx) error {
	x, w := c.Shape(0), c.Shape(1)
	if len(x) < 3 || len(w) != len(x) {
		return c.Errorf("input %v and weights %v must have the same rank >= 3", x, w)
	}
	g, err := c.N.Int("group", 1)
	if err != nil {
		return err
	}
	if g <= 0 || int64(x[1])%g != 0 || int64(w[0])%g != 0 || int64(w[1]) != int64(x[1])/g {
		return c.Errorf("group %d does not fit input %v and weights %v", g, x, w)
	}
	if c.Has(2) && !slices.Equal(c.Shape(2), []int{w[0]}) {
		return c.Errorf("bias %v, want [%d]", c.Shape(2), w[0])
	}
	ks, err := c.N.Ints("kernel_shape")
	if err != nil {
		return err
	}
	if ks != nil && !slices.Equal(toInts(ks), w[2:]) {
		return c.Errorf("kernel_shape %v but weights %v", ks, w)
	}
	ws, err := c.windows(x[2:], w[2:], false)
	if err != nil {
		return err
	}
	out := []int{x[0], w[0]}
	for _, w := range ws {
		out = append(out, w.out)
	}
	c.Set(0, graph.Float32, out)
	return c.NeedFloat(0)
}

func inferPool(c *inferCtx) error {
	if err := c.OnlyOutputs(1, "Indices"); err != nil {
		return err
	}
	x := c.Shape(0)
	if len(x) < 3 {
		return c.Errorf("input %v must be [N, C, D...]", x)
	}
	ks, err := c.N.Ints("kernel_shape")
	if err != nil {
		return err
	}
	if len(ks) != len(x)-2 {
		return c.Errorf("kernel_shape %v for input %v", ks, x)
	}
	ceil, err := c.N.Int("ceil_mode", 0)
	if err != nil {
		return err
	}
	if so, _ := c.N.Int("storage_order", 0); so != 0 {
		return graph.Unsupportedf("MaxPool at node %s: storage_order 1", c.N.Name)
	}
	ws, err := c.windows(x[2:], toInts(ks), ceil != 0)
	if err != nil {
		return err
	}
	out := []int{x[0], x[1]}
	for _, w := range ws {
		out = append(out, w.out)
	}
	c.Set(0, graph.Float32, out)
	return c.NeedFloat(0)
}

func inferGlobalPool(c *inferCtx) error {
	x := c.Shape(0)
	if len(x) < 3 {
		return c.Errorf("input %v must be [N, C, D...]", x)
	}
	out := []int{x[0], x[1]}
	for range x[2:] {
		out = append(out, 1)
	}
	c.Set(0, graph.Float32, out)
	return c.NeedFloat(0)
}

func inferBatchNorm(c *inferCtx) error {
	if err := c.OnlyOutputs(1, "training-mode statistics"); err != nil {
		return err
	}
	if tm, _ := c.N.Int("training_mode", 0); tm != 0 {
		return graph.Unsupportedf("BatchNormalization at node %s: training mode", c.N.Name)
	}
	x := c.Shape(0)
	if len(x) < 2 {
		return c.Errorf("input %v must be [N, C, ...]", x)
	}
	for i := 1; i < 5; i++ {
		if !slices.Equal(c.Shape(i), []int{x[1]}) {
			return c.Errorf("input %d has shape %v, want [%d]", i, c.Shape(i), x[1])
		}
	}
	c.Set(0, graph.Float32, x)
	return c.NeedFloat(0)
}

func inferLayerNorm(c *inferCtx) error {
	x := c.Shape(0)
	axis, err := c.N.Int("axis", -1)
	if err != nil {
		return err
	}
	ax, err := c.NormAxis(axis, len(x))
	if err != nil {
		return err
	}
	c.Set(0, graph.Float32, x)
	stat := slices.Clone(x)
	for i := ax; i < len(stat); i++ {
		stat[i] = 1
	}
	c.Set(1, graph.Float32, stat)
	c.Set(2, graph.Float32, stat)
	return c.NeedFloat(0)
}

// reduceAxes resolves the axes of a Reduce* op: the "axes" input (ReduceSum
// from opset 13, the others from 18) or attribute. nil with noop true means
// the op is the identity.
func (c *inferCtx) reduceAxes() (axes []int, keep, noop bool, err error) {
	rank := len(c.Shape(0))
	v, ok, err := c.IntsParam(1, "axes", "axes")
	if err != nil {
		return nil, false, false, err
	}
	k, err := c.N.Int("keepdims", 1)
	if err != nil {
		return nil, false, false, err
	}
	ne, err := c.N.Int("noop_with_empty_axes", 0)
	if err != nil {
		return nil, false, false, err
	}
	if !ok || len(v) == 0 {
		if ne != 0 {
			return nil, k != 0, true, nil
		}
		v = make([]int64, rank)
		for i := range v {
			v[i] = int64(i)
		}
	}
	axes, err = c.NormAxes(v, rank)
	return axes, k != 0, false, err
}

func inferReduce(c *inferCtx) error {
	axes, keep, noop, err := c.reduceAxes()
	if err != nil {
		return err
	}
	x := c.Shape(0)
	if noop {
		c.Set(0, c.DType(0), x)
		return nil
	}
	out := []int{}
	for i, d := range x {
		switch {
		case !slices.Contains(axes, i):
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	c.Set(0, c.DType(0), out)
	return c.NeedFloat(0)
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

func inferReshape(c *inferCtx) error {
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

func evalReshape(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{reshaped(in[0], c.Out[0].Shape)}, nil
}

func inferFlatten(c *inferCtx) error {
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

func inferSqueeze(c *inferCtx) error {
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

func inferUnsqueeze(c *inferCtx) error {
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
func (c *inferCtx) perm() ([]int, error) {
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

func inferTranspose(c *inferCtx) error {
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

func evalTranspose(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
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

func (c *inferCtx) concatAxis() (int, error) {
	if !c.N.HasAttr("axis") {
		return 0, c.Errorf("no axis")
	}
	a, err := c.N.Int("axis", 0)
	if err != nil {
		return 0, err
	}
	return c.NormAxis(a, len(c.Shape(0)))
}

func inferConcat(c *inferCtx) error {
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

func evalConcat(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	axis, _ := c.concatAxis()
	out := &graph.Tensor{DType: in[0].DType, Shape: slices.Clone(c.Out[0].Shape)}
	outer := graph.NumElems(out.Shape[:axis])
	for o := range outer {
		for _, t := range in {
			inner := graph.NumElems(t.Shape[axis:])
			if t.DType == graph.Int64 {
				out.I64 = append(out.I64, t.I64[o*inner:(o+1)*inner]...)
			} else {
				out.F32 = append(out.F32, t.F32[o*inner:(o+1)*inner]...)
			}
		}
	}
	if out.DType == graph.Int64 && out.I64 == nil {
		out.I64 = []int64{}
	}
	if out.DType == graph.Float32 && out.F32 == nil {
		out.F32 = []float32{}
	}
	return []*graph.Tensor{out}, nil
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

func inferSlice(c *inferCtx) error {
	sp, err := ResolveSlice(c.G, c.N, c.Shape(0))
	if err != nil {
		return err
	}
	c.Set(0, c.DType(0), sp.Count)
	return nil
}

func evalSlice(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
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

func inferPad(c *inferCtx) error {
	x := c.Shape(0)
	p, err := ResolvePads(c.G, c.N, len(x))
	if err != nil {
		return err
	}
	out := make([]int, len(x))
	for i, d := range x {
		out[i] = d + p.Begin[i] + p.End[i]
		if out[i] < 0 {
			return c.Errorf("pads %v %v leave axis %d of %v negative", p.Begin, p.End, i, x)
		}
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func inferExpand(c *inferCtx) error {
	shape, _, err := c.IntsParam(1, "", "shape")
	if err != nil {
		return err
	}
	for _, d := range shape {
		if d < 0 || d > graph.MaxElems {
			return c.Errorf("shape %v", shape)
		}
	}
	out, ok := broadcast(c.Shape(0), toInts(shape))
	if !ok {
		return c.Errorf("%v does not broadcast with %v", c.Shape(0), shape)
	}
	c.Set(0, c.DType(0), out)
	return nil
}

func evalExpand(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{remap(in[0], c.Out[0].Shape, func(idx []int) int { return graph.BroadcastSrc(in[0].Shape, idx) })}, nil
}

func inferTile(c *inferCtx) error {
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

func evalTile(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
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

func inferSplit(c *inferCtx) error {
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

func inferDepthToSpace(c *inferCtx) error {
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

func inferSpaceToDepth(c *inferCtx) error {
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

func inferGather(c *inferCtx) error {
	x := c.Shape(0)
	a, err := c.N.Int("axis", 0)
	if err != nil {
		return err
	}
	axis, err := c.NormAxis(a, len(x))
	if err != nil {
		return err
	}
	if c.DType(1) != graph.Int64 {
		return c.Errorf("indices are %s", c.DType(1))
	}
	out := append(append(slices.Clone(x[:axis]), c.Shape(1)...), x[axis+1:]...)
	c.Set(0, c.DType(0), out)
	return nil
}

func evalGather(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0].Shape
	a, _ := c.N.Int("axis", 0)
	axis, _ := c.NormAxis(a, len(x))
	ir := len(in[1].Shape)
	st := graph.Strides(x)
	ist := graph.Strides(in[1].Shape)
	var bad error
	t := remap(in[0], c.Out[0].Shape, func(idx []int) int {
		s := 0
		for i := range axis {
			s += idx[i] * st[i]
		}
		k := 0
		for i := range ir {
			k += idx[axis+i] * ist[i]
		}
		j := in[1].I64[k]
		if j < 0 {
			j += int64(x[axis])
		}
		if j < 0 || j >= int64(x[axis]) {
			bad = c.Errorf("index %d out of range [0, %d)", in[1].I64[k], x[axis])
			j = 0
		}
		s += int(j) * st[axis]
		for i := axis + 1; i < len(x); i++ {
			s += idx[ir+i-1] * st[i]
		}
		return s
	})
	return []*graph.Tensor{t}, bad
}

// shapeRange returns Shape's [start, end) (attributes from opset 15).
func (c *inferCtx) shapeRange() (int, int, error) {
	rank := int64(len(c.Shape(0)))
	s, err := c.N.Int("start", 0)
	if err != nil {
		return 0, 0, err
	}
	e, err := c.N.Int("end", rank)
	if err != nil {
		return 0, 0, err
	}
	clamp := func(v int64) int64 {
		if v < 0 {
			v += rank
		}
		return min(max(v, 0), rank)
	}
	s, e = clamp(s), clamp(e)
	return int(s), int(max(s, e)), nil
}

func inferShape(c *inferCtx) error {
	s, e, err := c.shapeRange()
	if err != nil {
		return err
	}
	c.Set(0, graph.Int64, []int{e - s})
	return nil
}

func evalShape(c *inferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	s, e, _ := c.shapeRange()
	v := make([]int64, 0, e-s)
	for _, d := range c.Shape(0)[s:e] {
		v = append(v, int64(d))
	}
	return []*graph.Tensor{graph.Int64Tensor([]int{e - s}, v)}, nil
}

func inferSize(c *inferCtx) error {
	c.Set(0, graph.Int64, []int{})
	return nil
}

func evalSize(c *inferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	return []*graph.Tensor{graph.Int64Tensor([]int{}, []int64{int64(graph.NumElems(c.Shape(0)))})}, nil
}

// constantOfShapeValue returns ConstantOfShape's fill value (default
// float32 0).
func (c *inferCtx) constantOfShapeValue() (*graph.Tensor, error) {
	a, ok := c.N.Attrs["value"]
	if !ok {
		return graph.Float32Tensor([]int{1}, []float32{0}), nil
	}
	if a.Kind != graph.AttrTensor || a.T == nil || a.T.Len() != 1 {
		return nil, c.Errorf("value must be a one-element tensor")
	}
	return a.T, nil
}

func inferConstantOfShape(c *inferCtx) error {
	t, err := c.Constant(0, "shape")
	if err != nil {
		return err
	}
	if t.DType != graph.Int64 || len(t.Shape) != 1 {
		return c.Errorf("shape must be a 1-D int64 tensor")
	}
	for _, d := range t.I64 {
		if d < 0 || d > graph.MaxElems {
			return c.Errorf("shape %v", t.I64)
		}
	}
	v, err := c.constantOfShapeValue()
	if err != nil {
		return err
	}
	c.Set(0, v.DType, toInts(t.I64))
	return nil
}

func evalConstantOfShape(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	v, _ := c.constantOfShapeValue()
	return []*graph.Tensor{remap(v, c.Out[0].Shape, func([]int) int { return 0 })}, nil
}

// constantValue returns a Constant node's value.
func (c *inferCtx) constantValue() (*graph.Tensor, error) {
	for name, a := range c.N.Attrs {
		switch name {
		case "value":
			if a.Kind != graph.AttrTensor || a.T == nil {
				return nil, c.Errorf("value is not a tensor")
			}
			return a.T, nil
		case "value_float":
			return graph.Float32Tensor([]int{}, []float32{a.F}), nil
		case "value_floats":
			return graph.Float32Tensor([]int{len(a.Floats)}, a.Floats), nil
		case "value_int":
			return graph.Int64Tensor([]int{}, []int64{a.I}), nil
		case "value_ints":
			return graph.Int64Tensor([]int{len(a.Ints)}, a.Ints), nil
		case "value_string", "value_strings", "sparse_value":
			return nil, graph.Unsupportedf("Constant at node %s: %s", c.N.Name, name)
		}
	}
	return nil, c.Errorf("no value")
}

func inferConstant(c *inferCtx) error {
	t, err := c.constantValue()
	if err != nil {
		return err
	}
	if err := t.Check(); err != nil {
		return c.Errorf("%v", err)
	}
	c.Set(0, t.DType, t.Shape)
	return nil
}

func evalConstant(c *inferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	t, err := c.constantValue()
	return []*graph.Tensor{t}, err
}

// ONNX data type numbers of the two dtypes the graph holds.
const (
	onnxFloat = 1
	onnxInt64 = 7
)

func inferCast(c *inferCtx) error {
	to, err := c.N.Int("to", 0)
	if err != nil {
		return err
	}
	switch to {
	case onnxFloat:
		c.Set(0, graph.Float32, c.Shape(0))
	case onnxInt64:
		c.Set(0, graph.Int64, c.Shape(0))
	default:
		return graph.Unsupportedf("Cast at node %s: to data type %d", c.N.Name, to)
	}
	return nil
}

func evalCast(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	t := in[0]
	out := &graph.Tensor{DType: c.Out[0].DType, Shape: slices.Clone(t.Shape)}
	if out.DType == t.DType {
		return []*graph.Tensor{t}, nil
	}
	if out.DType == graph.Int64 {
		out.I64 = make([]int64, len(t.F32))
		for i, v := range t.F32 {
			out.I64[i] = int64(v)
		}
	} else {
		out.F32 = make([]float32, len(t.I64))
		for i, v := range t.I64 {
			out.F32[i] = float32(v)
		}
	}
	return []*graph.Tensor{out}, nil
}

// rangeParams returns Range's start, limit and delta and the element count.
func (c *inferCtx) rangeParams() (s, l, d float64, n int, err error) {
	var v [3]float64
	for i, what := range []string{"start", "limit", "delta"} {
		t, err := c.Constant(i, what)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if t.Len() != 1 {
			return 0, 0, 0, 0, c.Errorf("%s must be a scalar", what)
		}
		v[i] = t.Float64s()[0]
	}
	s, l, d = v[0], v[1], v[2]
	cnt := math.Ceil((l - s) / d)
	if math.IsNaN(cnt) || cnt > graph.MaxElems {
		return 0, 0, 0, 0, c.Errorf("range(%v, %v, %v) is too long", s, l, d)
	}
	return s, l, d, int(max(cnt, 0)), nil
}

func inferRange(c *inferCtx) error {
	_, _, _, n, err := c.rangeParams()
	if err != nil {
		return err
	}
	c.Set(0, c.DType(0), []int{n})
	return nil
}

func evalRange(c *inferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
	s, _, d, n, _ := c.rangeParams()
	out := &graph.Tensor{DType: in[0].DType, Shape: []int{n}}
	for i := range n {
		v := s + float64(i)*d
		if out.DType == graph.Int64 {
			out.I64 = append(out.I64, int64(v))
		} else {
			out.F32 = append(out.F32, float32(v))
		}
	}
	if out.DType == graph.Int64 && out.I64 == nil {
		out.I64 = []int64{}
	}
	if out.DType == graph.Float32 && out.F32 == nil {
		out.F32 = []float32{}
	}
	return []*graph.Tensor{out}, nil
}

// registerAll gives every op's rule to package graph.
func registerAll() {
	for name, info := range opTable {
		r := graph.OpRule{MinIn: info.minIn, MaxIn: info.maxIn}
		r.Infer = func(c *graph.InferCtx) error { return info.infer(&inferCtx{c}) }
		if info.eval != nil {
			r.Eval = func(c *graph.InferCtx, in []*graph.Tensor) ([]*graph.Tensor, error) {
				return info.eval(&inferCtx{c}, in)
			}
		}
		graph.RegisterOp(name, r)
	}
}

// broadcast returns the multidirectional broadcast of shapes.
func broadcast(shapes ...[]int) ([]int, bool) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case d == o || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
