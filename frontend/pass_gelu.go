package frontend

import (
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// fuseGelu finds GELU written out with Erf, as PyTorch exports nn.GELU
// below opset 20:
//
//	y = Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5)
//
// (or x·0.5 first, Mul(x, 1/√2) for the Div, the operands of each binary
// op either way round), and writes it as one Gelu(x). Written out, the
// value x is read by both the Erf branch and the final product: a matmul
// that computes x has two consumers, so the search's fusion of an
// elementwise consumer into the matmul's tiles does not apply, and the
// tuned schedules of ViT and Swin wrote the matmul's output, then the
// scaled copy, then the product, in three passes. Gelu is one consumer,
// and multiplies by 1/√2 where the export divides (within an ulp of the
// quotient). The intermediate values must have no reader outside the
// pattern; dce drops the nodes left dead.
func fuseGelu(g *graph.Graph) (bool, error) {
	producers, consumers := g.Producers(), g.Consumers()
	changed := false
	for _, erf := range g.Nodes {
		last, x := matchGelu(g, erf, producers, consumers)
		if last == nil {
			continue
		}
		last.OpType, last.Domain = "Gelu", ""
		last.Inputs = []string{x}
		last.Attrs = nil
		changed = true
		producers, consumers = g.Producers(), g.Consumers()
	}
	return changed, nil
}

// matchGelu matches the pattern of fuseGelu at its Erf: the node that
// writes y, and x.
func matchGelu(g *graph.Graph, erf *graph.Node, producers map[string]*graph.Node, consumers map[string][]*graph.Node) (*graph.Node, string) {
	if !isOp(erf, "Erf", 1) {
		return nil, ""
	}
	scale := producers[erf.Inputs[0]]
	if (!isOp(scale, "Div", 2) && !isOp(scale, "Mul", 2)) || onlyReader(g, scale.Outputs[0], consumers) != erf {
		return nil, ""
	}
	x, c, ok := scalarOperand(g, scale)
	if !ok {
		return nil, ""
	}
	switch {
	case scale.OpType == "Div" && scale.Inputs[0] == x && near(c, math.Sqrt2):
	case scale.OpType == "Mul" && near(c, 1/math.Sqrt2):
	default:
		return nil, ""
	}
	xv := g.Values[x]
	if xv == nil || xv.DType != graph.Float32 || xv.Shape == nil {
		return nil, ""
	}
	add := onlyReader(g, erf.Outputs[0], consumers)
	if !isOp(add, "Add", 2) {
		return nil, ""
	}
	if o, one, ok := scalarOperand(g, add); !ok || o != erf.Outputs[0] || one != 1 {
		return nil, ""
	}
	prod := onlyReader(g, add.Outputs[0], consumers)
	if !isOp(prod, "Mul", 2) {
		return nil, ""
	}
	var last *graph.Node
	switch other := otherOperand(prod, add.Outputs[0]); {
	case other == x: // x·(1 + erf), then ·0.5
		last = onlyReader(g, prod.Outputs[0], consumers)
		if !isOp(last, "Mul", 2) {
			return nil, ""
		}
		if o, half, ok := scalarOperand(g, last); !ok || o != prod.Outputs[0] || half != 0.5 {
			return nil, ""
		}
	case isOp(producers[other], "Mul", 2) && onlyReader(g, other, consumers) == prod: // (x·0.5)·(1 + erf)
		if o, half, ok := scalarOperand(g, producers[other]); !ok || o != x || half != 0.5 {
			return nil, ""
		}
		last = prod
	default:
		return nil, ""
	}
	if y := g.Values[last.Outputs[0]]; y == nil || !slices.Equal(y.Shape, xv.Shape) || y.DType != graph.Float32 {
		return nil, "" // a constant broadcast the result
	}
	return last, x
}

// near reports whether float32 constant c is v to float32 precision
// (relative difference below 1e-6: a few ulps).
func near(c float32, v float64) bool {
	return math.Abs(float64(c)-v) <= 1e-6*math.Abs(v)
}
