package ops

import (
	"tessera/graph"
)

// inferCtx is graph.InferCtx with the ops' own helper methods.
type inferCtx struct{ *graph.InferCtx }

// broadcast returns the multidirectional broadcast of shapes.
func broadcast(shapes ...[]int) ([]int, bool) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case d == o || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}

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
