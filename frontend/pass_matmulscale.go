package frontend

import (
	"github.com/tessera-ml/tessera/graph"
)

// moveMatMulScale rewrites a matmul of a scaled operand as the scaled
// matmul:
//
//	MatMul(Mul(x, c), y) → Mul(MatMul(x, y), c)
//	MatMul(Div(x, c), y) → Div(MatMul(x, y), c)
//
// and likewise for a scaled second operand, where c is a one-element
// float constant and the scaled value has no other reader. The scale
// becomes an elementwise epilogue that fusion puts into the matmul's
// kernel, applied once per output element, where before it was a kernel
// of its own or, inlined into the matmul's loads, computed again for every
// reuse of the operand. PyTorch writes attention so, q / √d before q·kᵀ:
// afterwards the scores, their scale and the softmax are one fusable
// chain. onnxruntime's MatMulScaleFusion makes the same move. The product
// is rounded differently (a scale after the sums instead of before each
// product), within float32's rounding of the sums.
func moveMatMulScale(g *graph.Graph) (bool, error) {
	producers, consumers := g.Producers(), g.Consumers()
	after := map[*graph.Node]*graph.Node{} // MatMul → the scale node to write after it
	moved := map[*graph.Node]bool{}
	for _, m := range g.Nodes {
		if !isOp(m, "MatMul", 2) {
			continue
		}
		if m.Inputs[0] == m.Inputs[1] {
			continue
		}
		for k, in := range m.Inputs {
			sn := producers[in]
			if sn == nil || moved[sn] || onlyReader(g, in, consumers) != m {
				continue
			}
			x, c, ok := scaleByConst(g, sn)
			if !ok {
				continue
			}
			product := g.FreshName(m.Outputs[0] + "/unscaled")
			g.Value(product).DType = graph.Float32
			m.Inputs[k] = x
			sn.Inputs = []string{product, c}
			sn.Outputs[0], m.Outputs[0] = m.Outputs[0], product
			after[m], moved[sn] = sn, true
			break
		}
	}
	if len(after) == 0 {
		return false, nil
	}
	var nodes []*graph.Node
	for _, n := range g.Nodes {
		if moved[n] {
			continue
		}
		nodes = append(nodes, n)
		if sn := after[n]; sn != nil {
			nodes = append(nodes, sn)
		}
	}
	g.Nodes = nodes
	return true, nil
}

// scaleByConst returns x and c where n is Mul(x, c), Mul(c, x) or
// Div(x, c), x a float value and c a one-element float constant whose
// rank is below x's (the product keeps x's shape; a scale moved after the
// matmul keeps the matmul's).
func scaleByConst(g *graph.Graph, n *graph.Node) (x, c string, ok bool) {
	if !isOp(n, "Mul", 2) && !isOp(n, "Div", 2) {
		return "", "", false
	}
	for i := range 2 {
		if n.OpType == "Div" && i == 0 {
			continue
		}
		x, c = n.Inputs[1-i], n.Inputs[i]
		ct, xv := g.ConstOf(c), g.Values[x]
		if ct != nil && ct.DType == graph.Float32 && graph.NumElems(ct.Shape) == 1 && g.ConstOf(x) == nil &&
			xv != nil && xv.DType == graph.Float32 && len(xv.Shape) >= 2 && len(ct.Shape) < len(xv.Shape) {
			return x, c, true
		}
	}
	return "", "", false
}
