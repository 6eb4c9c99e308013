package frontend

import (
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// fuseLayerNorm finds layer normalization written out in elementwise ops
// and reductions, as PyTorch exports nn.LayerNorm below opset 17:
//
//	m = ReduceMean(x, axes)          d = Sub(x, m)
//	v = ReduceMean(Pow(d, 2), axes)  n = Div(d, Sqrt(Add(v, eps)))
//	y = Add(Mul(n, gamma), beta)     (the Mul and the Add optional)
//
// over the last axes of x (axes = [k, ..., rank-1], keepdims), and writes
// it as one LayerNormalization(x, gamma, beta) with axis k: one task whose
// two reductions share a loop nest, instead of five kernels. The
// intermediate values must have no reader outside the pattern; dce drops
// the nodes left dead.
func fuseLayerNorm(g *graph.Graph) (bool, error) {
	producers, consumers := g.Producers(), g.Consumers()
	changed := false
	for _, div := range g.Nodes {
		ln := matchLayerNorm(g, div, producers, consumers)
		if ln == nil {
			continue
		}
		last := ln.last
		inputs := []string{ln.x, ln.gamma, ln.beta}
		if ln.gamma == "" {
			inputs[1] = newConst(g, div.Name+"_gamma", graph.Float32Tensor(slices.Clone(g.Values[ln.x].Shape[ln.axis:]), ones(graph.NumElems(g.Values[ln.x].Shape[ln.axis:]))))
		}
		if ln.beta == "" {
			inputs = inputs[:2]
		}
		last.OpType, last.Domain = "LayerNormalization", ""
		last.Inputs = inputs
		last.Attrs = map[string]graph.Attr{
			"axis":    {Kind: graph.AttrInt, I: int64(ln.axis)},
			"epsilon": {Kind: graph.AttrFloat, F: ln.eps},
		}
		changed = true
		producers, consumers = g.Producers(), g.Consumers()
	}
	return changed, nil
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// layerNorm is a matched pattern: the node that writes y, and what
// LayerNormalization takes.
type layerNorm struct {
	last        *graph.Node
	x           string
	gamma, beta string // "" when absent
	axis        int
	eps         float32
}

// matchLayerNorm matches the pattern of fuseLayerNorm at its Div.
func matchLayerNorm(g *graph.Graph, div *graph.Node, producers map[string]*graph.Node, consumers map[string][]*graph.Node) *layerNorm {
	if !isOp(div, "Div", 2) {
		return nil
	}
	sub, sqrt := producers[div.Inputs[0]], producers[div.Inputs[1]]
	if !isOp(sub, "Sub", 2) || !isOp(sqrt, "Sqrt", 1) {
		return nil
	}
	x, mean := sub.Inputs[0], producers[sub.Inputs[1]]
	xv := g.Values[x]
	if xv == nil || xv.DType != graph.Float32 || xv.Shape == nil || !isOp(mean, "ReduceMean", -1) || mean.Inputs[0] != x {
		return nil
	}
	axis, ok := trailingAxes(g, mean, len(xv.Shape))
	if !ok {
		return nil
	}
	add := producers[sqrt.Inputs[0]]
	if !isOp(add, "Add", 2) {
		return nil
	}
	varIn, eps, ok := scalarOperand(g, add)
	if !ok {
		return nil
	}
	variance := producers[varIn]
	if !isOp(variance, "ReduceMean", -1) {
		return nil
	}
	if a, ok := trailingAxes(g, variance, len(xv.Shape)); !ok || a != axis {
		return nil
	}
	sq := producers[variance.Inputs[0]]
	switch {
	case isOp(sq, "Pow", 2) && sq.Inputs[0] == sub.Outputs[0]:
		if e := g.ConstOf(sq.Inputs[1]); e == nil || graph.NumElems(e.Shape) != 1 || e.Float64s()[0] != 2 {
			return nil
		}
	case isOp(sq, "Mul", 2) && sq.Inputs[0] == sub.Outputs[0] && sq.Inputs[1] == sub.Outputs[0]:
	default:
		return nil
	}
	// Only the pattern reads the intermediate values.
	inner := map[*graph.Node]bool{mean: true, sub: true, sq: true, variance: true, add: true, sqrt: true, div: true}
	for n := range inner {
		if n != div && !readOnlyBy(g, n.Outputs[0], consumers, inner) {
			return nil
		}
	}
	ln := &layerNorm{last: div, x: x, axis: axis, eps: eps}
	// The affine part: y = n*gamma + beta, gamma and beta constants that
	// leave the shape of x.
	if mul := onlyReader(g, div.Outputs[0], consumers); isOp(mul, "Mul", 2) {
		if gamma := otherOperand(mul, div.Outputs[0]); affineConst(g, gamma, xv.Shape, mul) {
			ln.last, ln.gamma = mul, gamma
		}
	}
	if ln.gamma != "" {
		if addB := onlyReader(g, ln.last.Outputs[0], consumers); isOp(addB, "Add", 2) {
			if beta := otherOperand(addB, ln.last.Outputs[0]); affineConst(g, beta, xv.Shape, addB) {
				ln.last, ln.beta = addB, beta
			}
		}
	}
	return ln
}

// isOp reports whether n is a default-domain op of type op with one output
// and nIn inputs (nIn < 0: any number).
func isOp(n *graph.Node, op string, nIn int) bool {
	return n != nil && n.OpType == op && n.Domain == "" && len(n.Outputs) == 1 && (nIn < 0 || len(n.Inputs) == nIn) && len(n.Inputs) > 0
}

// trailingAxes returns the first axis of a keepdims ReduceMean over the
// last axes [k, rank) of a rank-rank value (axes from the attribute, or
// the constant input from opset 18).
func trailingAxes(g *graph.Graph, n *graph.Node, rank int) (int, bool) {
	if kd, err := n.Int("keepdims", 1); err != nil || kd != 1 {
		return 0, false
	}
	var axes []int64
	if n.HasAttr("axes") {
		a, err := n.Ints("axes")
		if err != nil {
			return 0, false
		}
		axes = a
	} else if t := g.ConstOf(n.Input(1)); t != nil {
		axes = t.Int64s()
	}
	if len(axes) == 0 {
		return 0, false
	}
	norm := make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += int64(rank)
		}
		norm[i] = int(a)
	}
	slices.Sort(norm)
	for i, a := range norm {
		if a != rank-len(norm)+i {
			return 0, false
		}
	}
	return norm[0], true
}

// scalarOperand returns the other operand of a binary node and the value
// of its constant scalar operand.
func scalarOperand(g *graph.Graph, n *graph.Node) (string, float32, bool) {
	for i := range 2 {
		if c := g.ConstOf(n.Inputs[i]); c != nil && c.DType == graph.Float32 && graph.NumElems(c.Shape) == 1 {
			return n.Inputs[1-i], c.F32[0], true
		}
	}
	return "", 0, false
}

// readOnlyBy reports whether value v is read only by nodes of set and is
// not a graph output.
func readOnlyBy(g *graph.Graph, v string, consumers map[string][]*graph.Node, set map[*graph.Node]bool) bool {
	if g.IsOutput(v) {
		return false
	}
	for _, c := range consumers[v] {
		if !set[c] {
			return false
		}
	}
	return true
}

// onlyReader returns the one node that reads v, or nil when v has several
// readers or is a graph output.
func onlyReader(g *graph.Graph, v string, consumers map[string][]*graph.Node) *graph.Node {
	if g.IsOutput(v) || len(consumers[v]) != 1 {
		return nil
	}
	return consumers[v][0]
}

// otherOperand returns the operand of binary node n that is not v ("" when
// both are).
func otherOperand(n *graph.Node, v string) string {
	switch {
	case n.Inputs[0] == v && n.Inputs[1] != v:
		return n.Inputs[1]
	case n.Inputs[1] == v && n.Inputs[0] != v:
		return n.Inputs[0]
	}
	return ""
}

// affineConst reports whether c is a float32 constant that broadcasts to
// shape without changing it (n's output has the shape).
func affineConst(g *graph.Graph, c string, shape []int, n *graph.Node) bool {
	t := g.ConstOf(c)
	out := g.Values[n.Outputs[0]]
	return t != nil && t.DType == graph.Float32 && out != nil && slices.Equal(out.Shape, shape) && len(t.Shape) <= len(shape)
}
