package partition

import (
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

// Op patterns: what fusion may do with an op.
//
//	graph.Node ──PatternOf──▶ Pattern (of the op)
//	edge producer→consumer ──EdgePattern──▶ Pattern (of the read)
//
// The patterns are ordered: a smaller pattern is easier to fuse, and the
// pattern of a chain of ops is the largest of theirs (Combine). They are
// TVM's op patterns, assigned per ONNX op (in package ops) instead of per
// compute definition.

// Pattern classifies an op by how its output indexes its inputs (see
// ops.Pattern; each op's pattern is part of its definition in package ops).
type Pattern = ops.Pattern

// The patterns, in order.
const (
	ElemWise        = ops.ElemWise
	Broadcast       = ops.Broadcast
	Injective       = ops.Injective
	CommReduce      = ops.CommReduce
	OutEWiseFusable = ops.OutEWiseFusable
	Opaque          = ops.Opaque
)

// Combine returns the pattern of a chain of ops of patterns p and q: the
// larger of the two.
func Combine(p, q Pattern) Pattern { return max(p, q) }

// PatternOf returns the pattern of node n's op.
func PatternOf(n *graph.Node) Pattern { return ops.PatternOf(n) }

// EdgePattern returns the pattern of consumer c's read of value v: c's own
// pattern, except that a Broadcast op reading an input of its output's
// shape reads it elementwise (the bias of a Conv+Add is broadcast, the
// Conv's output is not), and that a read of indices the build checks at
// run time (ops.Op.Indices: Gather's indices) is Opaque: the indices must
// be in memory when c's kernel starts, so their producer never fuses into
// c's group.
func EdgePattern(g *graph.Graph, c *graph.Node, v string) Pattern {
	if ops.ReadsIndices(g, c, v) {
		return Opaque
	}
	p := PatternOf(c)
	if p != Broadcast {
		return p
	}
	in, out := g.Values[v], g.Values[c.Outputs[0]]
	if in != nil && out != nil && in.Shape != nil && slices.Equal(in.Shape, out.Shape) {
		return ElemWise
	}
	return p
}
