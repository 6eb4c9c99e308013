package graph

// Index helpers shared by the graph passes (package frontend) and the
// constant evaluators of package ops.

// Strides returns the row-major strides of shape.
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// BroadcastSrc returns the flat index into a tensor of shape from for the
// output multi-index idx (right-aligned numpy broadcasting).
func BroadcastSrc(from []int, idx []int) int {
	off := len(idx) - len(from)
	s := 0
	st := Strides(from)
	for i, d := range from {
		if d != 1 {
			s += idx[off+i] * st[i]
		}
	}
	return s
}
