package partition

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestTunePoints(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int
		want   []int
		probes []int
	}{
		{16, 256, []int{32, 64, 160}, []int{16, 17, 23, 31, 32, 33, 45, 63, 64, 65, 101, 159, 160, 161, 202, 255, 256}},
		{1, 64, []int{2, 8, 32}, []int{1, 2, 3, 4, 7, 8, 9, 16, 31, 32, 33, 45, 63, 64}},
		{128, 512, []int{160, 256, 400}, []int{128, 129, 143, 159, 160, 161, 202, 255, 256, 257, 320, 399, 400, 401, 453, 511, 512}},
		{8, 10, []int{8, 9, 10}, []int{8, 9, 10}},
		{5, 5, []int{5}, []int{5}},
	} {
		s := Symbol{Name: "S", Lo: tc.lo, Hi: tc.hi}
		got := s.TunePoints()
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", s, got, tc.want)
		}
		if probes := s.ProbePoints(); !slices.Equal(probes, tc.probes) {
			t.Errorf("%s: probes %v, want %v", s, probes, tc.probes)
		}
		for _, p := range got {
			if p < tc.lo || p > tc.hi {
				t.Errorf("%s: point %d outside the range", s, p)
			}
		}
	}
}

// TestPointWeights: weights on values go to the tuning point nearest each
// (on a log scale) and average 1 over the points; bad weights are errors
// that name them.
func TestPointWeights(t *testing.T) {
	s := Symbol{Name: "S", Lo: 16, Hi: 256} // points 32, 64, 160
	for _, tc := range []struct {
		w    map[int]float64
		want map[int]float64
		err  string
	}{
		{map[int]float64{16: 0.5, 128: 0.3, 256: 0.2}, map[int]float64{32: 1.5, 64: 0, 160: 1.5}, ""},
		{map[int]float64{45: 1, 46: 1, 101: 1, 102: 1}, map[int]float64{32: 0.75, 64: 1.5, 160: 0.75}, ""},
		{map[int]float64{64: 7}, map[int]float64{32: 0, 64: 3, 160: 0}, ""},
		{map[int]float64{300: 1}, nil, "S=300, outside the range S=16..256"},
		{map[int]float64{20: 0}, nil, "weights must be positive"},
		{map[int]float64{}, nil, "no weights on S=16..256"},
	} {
		got, err := s.PointWeights(tc.w)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one saying %q", tc.w, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.w, err)
			continue
		}
		for p, w := range tc.want {
			if math.Abs(got[p]-w) > 1e-12 {
				t.Errorf("%v: point %d weighs %v, want %v (all: %v)", tc.w, p, got[p], w, got)
			}
		}
	}
	// The midpoints on a log scale: √(32·64) ≈ 45.25, √(64·160) ≈ 101.2.
	if s.Nearest(45) != 32 || s.Nearest(46) != 64 || s.Nearest(101) != 64 || s.Nearest(102) != 160 {
		t.Errorf("Nearest: 45→%d 46→%d 101→%d 102→%d, want 32 64 64 160", s.Nearest(45), s.Nearest(46), s.Nearest(101), s.Nearest(102))
	}
}
