package frontend

import (
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// tabulateQuantized replaces each elementwise function of one 8-bit
// tensor that a QuantizeLinear quantizes again by a lookup in a table of
// its 256 values (ops.TableLookup):
//
//	Q(f(DQ(x)))  →  TableLookup(x, T),   T[v] = Q(f(DQ(v))) for each value v of x's type
//
// f is any chain of elementwise ops (Sigmoid, HardSwish, Mul, Add, Clip,
// Relu, Cast, inner QuantizeLinear/DequantizeLinear pairs, earlier tables)
// whose operands other than x are constants of one element and whose
// values nothing outside the chain reads; x is uint8 or int8, of the
// output's shape, and the last QuantizeLinear's scale and zero point are
// scalars. A QDQ model's SiLU, Q(DQ(x)·DQ(Q(Sigmoid(DQ(x))))), and
// hard-swish, Q(HardSwish(DQ(x))), are such chains: per element an
// exponential or a division and up to three requantizations, where a
// table costs one load (onnxruntime's QLinearSigmoid and QLinearLeakyRelu
// are tables too). A chain whose table is the identity (a Q(DQ(x)) of one
// scale and zero point) becomes an Identity, which remove-noops removes.
//
// T is computed by the reference evaluator from the chain's own
// lowerings (ops.EvalGraph), so the lookup returns for every x what the
// chain's kernel computes, up to the kernel's own rounding of its float
// math (one quantization step at a value within float32 rounding of a
// tie). It runs whether or not the graph has integer kernels; on integer
// kernels for a target that gathers the bytes of a lookup
// (graph.Graph.ScalarTables) it leaves piecewise-linear activations in
// float (piecewiseLinear).
func tabulateQuantized(g *graph.Graph) (bool, error) {
	producers, consumers := g.Producers(), g.Consumers()
	pos := make(map[*graph.Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = i
	}
	replace := map[*graph.Node]*graph.Node{} // a chain's QuantizeLinear → its table's node
	taken := map[*graph.Node]bool{}          // the nodes of the chains replaced
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		q := g.Nodes[i]
		if taken[q] {
			continue
		}
		chain, x := quantizedChain(g, q, pos, producers, consumers)
		if chain == nil || g.Integer && g.ScalarTables && piecewiseLinear(chain) {
			continue
		}
		n, err := tableNode(g, q, chain, x)
		if err != nil {
			return false, fmt.Errorf("node %s: %w", q.Name, err)
		}
		replace[q] = n
		for _, c := range chain {
			taken[c] = true
		}
	}
	if len(replace) == 0 {
		return false, nil
	}
	for i, n := range g.Nodes {
		if r, ok := replace[n]; ok {
			g.Nodes[i] = r
		}
	}
	return true, nil
}

// piecewiseLinear reports whether chain computes a piecewise-linear
// activation (HardSwish, HardSigmoid, Relu, LeakyRelu, Clip) with
// arithmetic and requantizations only: a few vector float operations per
// element in the epilogue it fuses into, less than a lookup costs where
// the target gathers the bytes (graph.Graph.ScalarTables; MobileNetV3-
// Large int8 at x86-64-v3, its hard-swishes tabulated: 2% slower). A
// chain with an exponential or a division (a SiLU, a GELU) is tabulated
// everywhere, and so is a bare requantization.
func piecewiseLinear(chain []*graph.Node) bool {
	act := false
	for _, n := range chain {
		switch n.OpType {
		case "HardSwish", "HardSigmoid", "Relu", "LeakyRelu", "Clip":
			act = true
		case "QuantizeLinear", "DequantizeLinear", "Add", "Sub", "Mul", "Min", "Max", "Neg", "Identity":
		default:
			return false
		}
	}
	return act
}

// maxChain bounds the chains tabulateQuantized collects.
const maxChain = 64

// quantizedChain returns the nodes (q first) of the elementwise chain that
// QuantizeLinear node q ends, and the 8-bit value x it is a function of;
// nil when q ends no such chain. It walks up from q through elementwise
// producers, stopping at 8-bit values; while it has stopped at more than
// one, it walks on from the one computed last (a SiLU's quantized sigmoid
// is a function of the value whose DequantizeLinear the Mul also reads).
func quantizedChain(g *graph.Graph, q *graph.Node, pos map[*graph.Node]int, producers map[string]*graph.Node, consumers map[string][]*graph.Node) ([]*graph.Node, string) {
	if !isOp(q, "QuantizeLinear", -1) || len(q.Inputs) < 2 || q.HasAttr("block_size") {
		return nil, ""
	}
	out := g.Values[q.Outputs[0]]
	if out == nil || !is8Bit(out) {
		return nil, ""
	}
	in := map[*graph.Node]bool{}
	var chain []*graph.Node
	leaves := map[string]bool{}
	// add puts n in the chain and walks up its inputs.
	var add func(n *graph.Node) bool
	add = func(n *graph.Node) bool {
		if in[n] {
			return true
		}
		if len(chain) == maxChain {
			return false
		}
		in[n] = true
		chain = append(chain, n)
		for j, v := range n.Inputs {
			val := g.Values[v]
			switch {
			case v == "":
			case val == nil || val.Shape == nil:
				return false
			case val.Const != nil:
				// One element, or the table of an earlier lookup.
				if graph.NumElems(val.Shape) != 1 && !(n.OpType == ops.TableLookup && j == 1) {
					return false
				}
			case in[producers[v]] && producers[v] != nil:
			case is8Bit(val):
				leaves[v] = true
			case producers[v] != nil && elementwiseNode(producers[v]):
				if !add(producers[v]) {
					return false
				}
			default:
				return false // a float value computed otherwise
			}
		}
		return true
	}
	if !add(q) {
		return nil, ""
	}
	for len(leaves) > 1 {
		last := ""
		for v := range leaves {
			p := producers[v]
			if p == nil || !elementwiseNode(p) {
				continue
			}
			if last == "" || pos[p] > pos[producers[last]] {
				last = v
			}
		}
		if last == "" {
			return nil, "" // a function of two values
		}
		delete(leaves, last)
		if !add(producers[last]) {
			return nil, ""
		}
		for v := range leaves {
			if in[producers[v]] {
				delete(leaves, v) // computed inside after all
			}
		}
	}
	if len(chain) < 2 || len(leaves) != 1 {
		return nil, ""
	}
	var x string
	for v := range leaves {
		x = v
	}
	if !slices.Equal(g.Values[x].Shape, out.Shape) {
		return nil, ""
	}
	// What the chain computes between x and q's output is its own.
	for _, n := range chain[1:] {
		for _, o := range n.Outputs {
			if g.IsOutput(o) {
				return nil, ""
			}
			for _, r := range consumers[o] {
				if !in[r] {
					return nil, ""
				}
			}
		}
	}
	return chain, x
}

// is8Bit reports whether v is uint8 or int8.
func is8Bit(v *graph.Value) bool { return v.DType == graph.Uint8 || v.DType == graph.Int8 }

// elementwiseNode reports whether n is an op of one output that computes
// each element from the same element of its inputs (or from a broadcast
// one), and reads no indices.
func elementwiseNode(n *graph.Node) bool {
	op := ops.LookupNode(n)
	if op == nil || op.Lower == nil || op.Indices != nil || len(n.Outputs) != 1 || n.HasAttr(ops.DataLayout) {
		return false
	}
	return op.Pattern == ops.ElemWise || op.Pattern == ops.Broadcast
}

// tableNode evaluates chain (ending at q, a function of x) on every value
// of x's type and returns the node that replaces q: a TableLookup of x in
// the table, or an Identity where the table maps each value to itself.
func tableNode(g *graph.Graph, q *graph.Node, chain []*graph.Node, x string) (*graph.Node, error) {
	xt := g.Values[x].DType
	lo := int64(0)
	if xt == graph.Int8 {
		lo = -128
	}
	sub := graph.New(g.Name+"/table", g.Opset)
	for d, v := range g.Opsets {
		sub.Opsets[d] = v
	}
	sub.AddInput(x, xt, []int{ops.TableSize})
	in := map[*graph.Node]bool{}
	for _, n := range chain {
		in[n] = true
	}
	var nodes []*graph.Node // chain, in the graph's order
	for _, n := range g.Nodes {
		if in[n] {
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		for _, v := range n.Inputs {
			if c := g.Values[v]; v != "" && c != nil && c.Const != nil && sub.Values[v] == nil {
				sub.AddConst(v, c.Const)
			}
		}
		c := *n
		sub.Nodes = append(sub.Nodes, &c)
	}
	sub.Outputs = []string{q.Outputs[0]}
	if err := InferShapes(sub); err != nil {
		return nil, fmt.Errorf("tabulating: %w", err)
	}
	values := make([]float32, ops.TableSize)
	for i := range values {
		values[i] = float32(lo + int64(i))
	}
	res, err := ops.EvalGraph(sub, map[string][]float32{x: values})
	if err != nil {
		return nil, fmt.Errorf("tabulating: %w", err)
	}
	ot := g.Values[q.Outputs[0]].DType
	table := make([]int64, ops.TableSize)
	identity := ot == xt
	for i, f := range res[0] {
		if math.IsNaN(float64(f)) || f != float32(math.Round(float64(f))) {
			return nil, fmt.Errorf("tabulating: entry %d is %v, not a value of %s", i, f, ot)
		}
		table[i] = int64(f)
		identity = identity && table[i] == lo+int64(i)
	}
	if identity {
		return &graph.Node{Name: q.Name + "/identity", OpType: "Identity", Inputs: []string{x}, Outputs: []string{q.Outputs[0]}, Attrs: map[string]graph.Attr{}}, nil
	}
	name := g.FreshName(q.Name + "/table")
	g.AddConst(name, &graph.Tensor{DType: ot, Shape: []int{ops.TableSize}, I64: table})
	return &graph.Node{Name: q.Name + "/table", OpType: ops.TableLookup, Inputs: []string{x, name}, Outputs: []string{q.Outputs[0]}, Attrs: map[string]graph.Attr{}}, nil
}
