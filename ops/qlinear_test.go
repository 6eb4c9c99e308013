package ops

import (
	"testing"

	"github.com/tessera-ml/tessera/graph"
)

// TestPairsFitInt16: a pair of input channels fits when 255 times the
// larger of its positive and its negative weights' sums stays within
// int16 (a uint8 input at 255 on every weight of one sign); weights of
// opposite signs partly cancel.
func TestPairsFitInt16(t *testing.T) {
	// weights [M=1, C=2, 1, 2]: channel c's taps at c*2 .. c*2+1; a pair
	// is (channel 0, channel 1) at one tap.
	for _, c := range []struct {
		name string
		w    []int64
		want bool
	}{
		{"7-bit", []int64{64, -64, 64, -64}, true},
		{"sum 128", []int64{100, 0, 28, 0}, true},
		{"sum 129", []int64{100, 0, 29, 0}, false},
		{"negative sum 129", []int64{0, -100, 0, -29}, false},
		{"opposite signs", []int64{127, -128, -128, 127}, true},
		{"second tap", []int64{0, 90, 0, 40}, false},
	} {
		w := &graph.Tensor{DType: graph.Int8, Shape: []int{1, 2, 1, 2}, I64: c.w}
		if got := pairsFitInt16(w, 1); got != c.want {
			t.Errorf("%s %v: %v, want %v", c.name, c.w, got, c.want)
		}
	}
	if pairsFitInt16(&graph.Tensor{DType: graph.Int8, Shape: []int{1, 3, 1, 1}, I64: []int64{1, 1, 1}}, 1) {
		t.Error("an odd channel count: true")
	}
	// A matmul's [K=4, N=2]: pairs are rows (0, 1) and (2, 3) of a column.
	mm := &graph.Tensor{DType: graph.Int8, Shape: []int{4, 2}, I64: []int64{100, 0, 28, 0, 0, 100, 0, 29}}
	if pairsFitInt16(mm, 0) {
		t.Error("matmul rows 2 and 3 of column 1 (100 + 29): fit")
	}
	mm.I64[7] = 28
	if !pairsFitInt16(mm, 0) {
		t.Error("matmul pairs of at most 128: do not fit")
	}
}
