package ops

import (
	"github.com/tessera-ml/tessera/graph"
)

// inferCtx is graph.InferCtx with the ops' own helper methods.
type inferCtx struct{ *graph.InferCtx }

func toInts(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
