package partition

import (
	"slices"
	"testing"
)

func TestTunePoints(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int
		want   []int
	}{
		{16, 256, []int{32, 64, 160}},
		{1, 64, []int{2, 8, 32}},
		{128, 512, []int{160, 256, 400}},
		{8, 10, []int{8, 9, 10}},
		{5, 5, []int{5}},
	} {
		s := Symbol{Name: "S", Lo: tc.lo, Hi: tc.hi}
		got := s.TunePoints()
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", s, got, tc.want)
		}
		for _, p := range got {
			if p < tc.lo || p > tc.hi {
				t.Errorf("%s: point %d outside the range", s, p)
			}
		}
	}
}
