package ops

import "github.com/tessera-ml/tessera/graph"

// Copy says when an op's first output is its first input's data, for the
// graph passes that remove copies (remove-noops) and merge reshapes
// (package frontend).
type Copy uint8

const (
	// CopyNever: the op computes (the default).
	CopyNever Copy = iota
	// CopyReshape: the output holds the input's elements in the same
	// order, only the shape may differ (Identity, Reshape, Flatten,
	// Squeeze, Unsqueeze): a copy where the shapes are equal, and a
	// reshape of such a value is one Reshape of the first.
	CopyReshape
	// CopyWhenUnchanged: a copy where the output has the input's shape and
	// dtype (Expand, Cast, Dropout in inference mode).
	CopyWhenUnchanged
)

// CopyOf returns the copy rule of node n's op (CopyNever for an op of
// another domain or one that is not defined).
func CopyOf(n *graph.Node) Copy {
	if op := LookupNode(n); op != nil {
		return op.Copy
	}
	return CopyNever
}
