package partition

import (
	"slices"

	"tessera/graph"
)

// Op patterns: what fusion may do with an op.
//
//	graph.Node ──PatternOf──▶ Pattern (of the op)
//	edge producer→consumer ──EdgePattern──▶ Pattern (of the read)
//
// The patterns are ordered: a smaller pattern is easier to fuse, and the
// pattern of a chain of ops is the largest of theirs (Combine). They are
// TVM's op patterns, assigned per ONNX op (opTable below) instead of per
// compute definition.

// Pattern classifies an op by how its output indexes its inputs.
type Pattern uint8

const (
	// ElemWise: every output element reads the input elements at the same
	// index, all shapes equal (Relu, Exp, Clip).
	ElemWise Pattern = iota
	// Broadcast: as ElemWise, but an input may be broadcast along some axes
	// (Add of a bias, Mul by a per-channel scale).
	Broadcast
	// Injective: each output element reads a computable set of input
	// elements without combining many of them (Reshape, Transpose, Concat,
	// Slice, Pad).
	Injective
	// CommReduce: a commutative reduction over some axes, possibly followed
	// by elementwise work on its result (ReduceMean, Softmax,
	// LayerNormalization).
	CommReduce
	// OutEWiseFusable: a complex op with data reuse (Conv, MatMul, Gemm,
	// pooling) whose output can be fused with elementwise consumers.
	OutEWiseFusable
	// Opaque: an op that fuses with nothing.
	Opaque
)

var patternNames = [...]string{"elemwise", "broadcast", "injective", "reduce", "out-elemwise-fusable", "opaque"}

func (p Pattern) String() string {
	if int(p) < len(patternNames) {
		return patternNames[p]
	}
	return "?"
}

// Combine returns the pattern of a chain of ops of patterns p and q: the
// larger of the two.
func Combine(p, q Pattern) Pattern { return max(p, q) }

// opPatterns gives the pattern of each ONNX op of the default domain; an
// op missing here is Opaque. Shape, Constant and the other ops of shape
// arithmetic are Opaque on purpose: the graph passes fold them before
// fusion, and one left over must not be hidden inside a kernel.
var opPatterns = map[string]Pattern{}

func init() {
	for p, ops := range map[Pattern][]string{
		ElemWise: {
			"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal",
			"Elu", "Selu", "Celu", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "LeakyRelu",
			"Gelu", "Floor", "Ceil", "Clip", "Identity", "Dropout", "Cast",
		},
		Broadcast: {
			"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu", "Expand",
			// Inference-mode BatchNormalization that could not be folded
			// into a Conv or Gemm is a per-channel affine map.
			"BatchNormalization",
		},
		Injective: {
			"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice", "Pad",
			"Tile", "Split", "DepthToSpace", "SpaceToDepth",
		},
		CommReduce: {
			"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
			"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
			"Softmax", "LogSoftmax", "LayerNormalization", "InstanceNormalization",
		},
		OutEWiseFusable: {
			"Conv", "MatMul", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
		},
	} {
		for _, op := range ops {
			opPatterns[op] = p
		}
	}
}

// PatternOf returns the pattern of node n's op.
func PatternOf(n *graph.Node) Pattern {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return Opaque
	}
	if p, ok := opPatterns[n.OpType]; ok {
		return p
	}
	return Opaque
}

// EdgePattern returns the pattern of consumer c's read of value v: c's own
// pattern, except that a Broadcast op reading an input of its output's
// shape reads it elementwise (the bias of a Conv+Add is broadcast, the
// Conv's output is not).
func EdgePattern(g *graph.Graph, c *graph.Node, v string) Pattern {
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
