package costmodel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// brutePairwise is the O(n²) definition of PairwiseAccuracy.
func brutePairwise(s, l []float64, g []int) float64 {
	right, total := 0.0, 0.0
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if g[i] != g[j] || l[i] == l[j] {
				continue
			}
			total++
			switch {
			case s[i] == s[j]:
				right += 0.5
			case (s[i] > s[j]) == (l[i] > l[j]):
				right++
			}
		}
	}
	return right / total
}

func TestPairwiseAccuracy(t *testing.T) {
	for _, c := range []struct {
		name   string
		s, l   []float64
		g      []int
		want   float64
		wantNA bool
	}{
		{"perfect", []float64{1, 2, 3}, []float64{10, 20, 30}, []int{0, 0, 0}, 1, false},
		{"reversed", []float64{3, 2, 1}, []float64{10, 20, 30}, []int{0, 0, 0}, 0, false},
		{"one swap of three pairs", []float64{1, 3, 2}, []float64{1, 2, 3}, []int{0, 0, 0}, 2.0 / 3, false},
		{"tied scores count half", []float64{5, 5}, []float64{1, 2}, []int{0, 0}, 0.5, false},
		{"tied labels do not count", []float64{1, 2, 3}, []float64{7, 7, 8}, []int{0, 0, 0}, 1, false},
		{"groups are separate", []float64{1, 2, 9, 0}, []float64{1, 2, 1, 2}, []int{0, 0, 1, 1}, 0.5, false},
		{"no pair", []float64{1, 2}, []float64{1, 1}, []int{0, 0}, 0, true},
		{"singleton groups", []float64{1, 2}, []float64{1, 2}, []int{0, 1}, 0, true},
	} {
		got := PairwiseAccuracy(c.s, c.l, c.g)
		if c.wantNA {
			if !math.IsNaN(got) {
				t.Errorf("%s: %v, want NaN", c.name, got)
			}
			continue
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Random data with many ties against the O(n²) definition.
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		n := 2 + rng.IntN(200)
		s, l, g := make([]float64, n), make([]float64, n), make([]int, n)
		for i := range n {
			s[i] = float64(rng.IntN(10))
			l[i] = float64(rng.IntN(8))
			g[i] = rng.IntN(3)
		}
		want, got := brutePairwise(s, l, g), PairwiseAccuracy(s, l, g)
		if !(math.Abs(want-got) < 1e-12) && !(math.IsNaN(want) && math.IsNaN(got)) {
			t.Fatalf("trial %d: %v, brute force %v", trial, got, want)
		}
	}
}

func TestTopK(t *testing.T) {
	// Group 0: labels 1 (best) … 0.25; the model ranks the best third.
	// Group 1: the model ranks the best first.
	s := []float64{0.1, 0.9, 0.5, 0.3, 5, 4, 3}
	l := []float64{1, 0.5, 0.25, 0.8, 1, 0.5, 0.2}
	g := []int{0, 0, 0, 0, 1, 1, 1}
	if got, want := TopKScore(s, l, g, 1), (0.5/1+1)/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("top-1 score %v, want %v", got, want)
	}
	if got, want := TopKScore(s, l, g, 3), (0.8+1)/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("top-3 score %v, want %v", got, want)
	}
	if got := TopKScore(s, l, g, 4); got != 1 {
		t.Errorf("top-4 score %v, want 1", got)
	}
	// Recall at 2: group 0 true top {0, 3}, predicted {1, 2}: 0; group 1:
	// {4, 5} both: 1.
	if got := TopKRecall(s, l, g, 2); got != 0.5 {
		t.Errorf("top-2 recall %v, want 0.5", got)
	}
	if got := TopKRecall(s, l, g, 100); got != 1 {
		t.Errorf("recall with k past the group size %v, want 1", got)
	}
	// Groups whose every label is 0 (all failed) do not count.
	if got := TopKScore([]float64{1, 2}, []float64{0, 0}, []int{0, 0}, 1); !math.IsNaN(got) {
		t.Errorf("all-failed group: %v, want NaN", got)
	}
}

func TestEvaluateSkipsFailures(t *testing.T) {
	d := &Dataset{}
	d.Add("t", [][]float32{{1}}, 1)
	d.Add("t", [][]float32{{2}}, 2)
	d.Add("t", [][]float32{{3}}, math.Inf(1))
	d.Add("u", [][]float32{{4}}, 5)
	// Scores rank the two valid programs of t right; the failed one
	// would be a wrong pair if it counted.
	m := Evaluate(d, []float64{2, 1, 3, 0}, 1)
	if m.Pairwise != 1 || m.Programs != 3 || m.TopKScore != 1 || m.TopKRecall != 1 {
		t.Errorf("%+v", m)
	}
}
