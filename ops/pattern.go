package ops

// Pattern classifies an op by how its output indexes its inputs: what
// fusion (package partition) may do with it. The patterns are ordered: a
// smaller pattern is easier to fuse. They are TVM's op patterns.
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
