package ops

import (
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/graph"
)

// Indices read at run time. A kernel that reads data at run-time indices
// (te/ops_index.go) clamps every index into its axis so that no load
// leaves memory; an index outside its axis would so become a wrong
// answer instead of an error. Op.Indices says which inputs of a node hold
// such indices and what bounds they must lie in:
//
//	Op.Indices ─▶ []IndexOperand ─┬─ shape inference: constant indices checked (checkConstIndices)
//	                              ├─ fusion: the producer of an index input is never fused into
//	                              │  the node's group (partition.EdgePattern), so the indices are
//	                              │  a buffer the executor can read
//	                              └─ the build's executor: every run checks them before the
//	                                 kernel runs (tsr_check_indices)
//
// ONNX's bounds: Gather, GatherElements, GatherND, ScatterElements (and
// Scatter) and ScatterND take an index along an axis of extent d in [-d,
// d-1], negative counting from the end; ReverseSequence's sequence_lens in
// [0, T]. OneHot is not checked: ONNX defines an index outside [-depth,
// depth-1] as a row of off_value, which is what te.OneHot computes.

// IndexRange is the interval an index along an axis of extent d must lie
// in.
type IndexRange uint8

const (
	// Signed indices lie in [-d, d-1]: a negative one counts from the end.
	Signed IndexRange = iota
	// Length is a count of elements along the axis, in [0, d].
	Length
)

// Bounds returns the inclusive bounds of an index along an axis of extent
// d.
func (r IndexRange) Bounds(d int64) (lo, hi int64) {
	if r == Length {
		return 0, d
	}
	return -d, d - 1
}

// IndexOperand is an input of a node that holds indices read at run time
// (Op.Indices).
type IndexOperand struct {
	// Input is the node's input that holds the indices; What names it in
	// messages ("indices", "sequence_lens").
	Input int
	What  string
	// Data is the node's input whose extents bound the indices.
	Data int
	// Axes are the data's axes the indices index: one axis for every
	// element (Gather's axis), or one per position along the indices'
	// last axis (GatherND's and ScatterND's index tuples, past GatherND's
	// batch_dims): element j is an index along Axes[j % len(Axes)].
	Axes []int
	// Range is the interval an index must lie in along an axis.
	Range IndexRange
}

// Bounds returns the inclusive bounds of the operand's indices (one pair
// per axis of Axes) when the data has the given shape.
func (o IndexOperand) Bounds(data []int) (lo, hi []int64) {
	for _, a := range o.Axes {
		l, h := o.Range.Bounds(int64(data[a]))
		lo, hi = append(lo, l), append(hi, h)
	}
	return lo, hi
}

// Describe names the operand of node n in graph g for a message:
// `Gather "/emb/Gather" (indices "input_ids", axis 0 of "emb.weight")`.
func (o IndexOperand) Describe(n *graph.Node) string {
	axes := make([]string, len(o.Axes))
	for i, a := range o.Axes {
		axes[i] = fmt.Sprint(a)
	}
	word := "axis"
	if len(o.Axes) != 1 {
		word = "axes"
	}
	return fmt.Sprintf("%s %q (%s %q, %s %s of %q)", n.OpType, n.Name, o.What, n.Input(o.Input), word, strings.Join(axes, ", "), n.Input(o.Data))
}

// IndexOperands returns the index operands of node n in graph g (its
// inputs' shapes inferred): nil for an op without any, or of another
// domain.
func IndexOperands(g *graph.Graph, n *graph.Node) ([]IndexOperand, error) {
	op := table[n.OpType]
	if op == nil || op.Indices == nil || !defaultDomain(n) {
		return nil, nil
	}
	return op.Indices(g, n)
}

// ReadsIndices reports whether node n reads value v as indices (an
// IndexOperand's input). Where n's operands cannot be told (its shapes do
// not fit its op, which shape inference reports), every input of an op
// with index operands counts: the answer errs on the side of a buffer.
func ReadsIndices(g *graph.Graph, n *graph.Node, v string) bool {
	ios, err := IndexOperands(g, n)
	if err != nil {
		return true
	}
	for _, o := range ios {
		if n.Input(o.Input) == v {
			return true
		}
	}
	return false
}

// checkConstIndices checks node n's constant index operands: an index
// known before run time must lie in its bounds, as the executor checks
// the others when the model runs.
func checkConstIndices(g *graph.Graph, n *graph.Node, ios []IndexOperand) error {
	for _, o := range ios {
		t := g.ConstOf(n.Input(o.Input))
		v := g.Values[n.Input(o.Data)]
		if t == nil || v == nil || v.Shape == nil || len(o.Axes) == 0 {
			continue
		}
		known := true
		for _, a := range o.Axes {
			known = known && v.Shape[a] > 0 // 0 or less: not known yet
		}
		if !known {
			continue
		}
		lo, hi := o.Bounds(v.Shape)
		for j, x := range t.Int64s() {
			b := j % len(o.Axes)
			if x < lo[b] || x > hi[b] {
				return n.Errorf("%s %s element %d is %d, outside [%d, %d] (axis %d of %s, of extent %d)",
					o.What, n.Input(o.Input), j, x, lo[b], hi[b], o.Axes[b], n.Input(o.Data), v.Shape[o.Axes[b]])
			}
		}
	}
	return nil
}

// shapeOf returns the shape of node n's input i, or an error.
func shapeOf(g *graph.Graph, n *graph.Node, i int) ([]int, error) {
	v := g.Values[n.Input(i)]
	if v == nil || v.Shape == nil {
		return nil, n.Errorf("input %d (%s) has no shape", i, n.Input(i))
	}
	return v.Shape, nil
}

// axisIndices are the index operands of Gather, GatherElements and
// ScatterElements: input 1 indexes input 0 along the axis attribute.
func axisIndices(g *graph.Graph, n *graph.Node) ([]IndexOperand, error) {
	x, err := shapeOf(g, n, 0)
	if err != nil {
		return nil, err
	}
	a, err := n.Int("axis", 0)
	if err != nil {
		return nil, err
	}
	r := int64(len(x))
	if a < -r || a >= r {
		return nil, n.Errorf("axis %d out of range for rank %d", a, r)
	}
	if a < 0 {
		a += r
	}
	return []IndexOperand{{Input: 1, What: "indices", Data: 0, Axes: []int{int(a)}}}, nil
}

// tupleIndices are the index operands of GatherND (batch_dims b) and
// ScatterND (b = 0): input 1's last axis holds tuples of K indices into
// input 0's axes b..b+K-1.
func tupleIndices(g *graph.Graph, n *graph.Node, b int) ([]IndexOperand, error) {
	x, err := shapeOf(g, n, 0)
	if err != nil {
		return nil, err
	}
	idx, err := shapeOf(g, n, 1)
	if err != nil {
		return nil, err
	}
	if len(idx) == 0 {
		return nil, n.Errorf("indices are a scalar")
	}
	k := idx[len(idx)-1]
	if k < 0 {
		return nil, nil // a tuple's length not known yet: nothing to check
	}
	if b < 0 || b+k > len(x) {
		return nil, n.Errorf("index tuples of %d past %d batch dimensions for data of rank %d", k, b, len(x))
	}
	axes := make([]int, k)
	for j := range axes {
		axes[j] = b + j
	}
	return []IndexOperand{{Input: 1, What: "indices", Data: 0, Axes: axes}}, nil
}

func gatherNDIndices(g *graph.Graph, n *graph.Node) ([]IndexOperand, error) {
	b, err := n.Int("batch_dims", 0)
	if err != nil {
		return nil, err
	}
	return tupleIndices(g, n, int(b))
}

func scatterNDIndices(g *graph.Graph, n *graph.Node) ([]IndexOperand, error) {
	return tupleIndices(g, n, 0)
}

// reverseSequenceIndices: sequence_lens (input 1) counts elements along
// the time axis of input 0.
func reverseSequenceIndices(g *graph.Graph, n *graph.Node) ([]IndexOperand, error) {
	if _, err := shapeOf(g, n, 0); err != nil {
		return nil, err
	}
	ta, err := n.Int("time_axis", 0)
	if err != nil {
		return nil, err
	}
	if ta != 0 && ta != 1 {
		return nil, n.Errorf("time_axis %d", ta)
	}
	return []IndexOperand{{Input: 1, What: "sequence_lens", Data: 0, Axes: []int{int(ta)}, Range: Length}}, nil
}
