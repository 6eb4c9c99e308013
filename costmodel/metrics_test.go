package costmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
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

// tensetPeak is TenSet's metric_peak_score for one task, transcribed:
// trials = argsort(preds)[::-1][:k]; mean(max_curve(labels[trials]) / max(labels)).
func tensetPeak(preds, labels []float64, k int) float64 {
	order := make([]int, len(preds))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return preds[order[a]] > preds[order[b]] })
	order = order[:min(k, len(order))]
	best := slices.Max(labels)
	keep, sum := -1e9, 0.0
	for _, i := range order {
		keep = max(keep, labels[i])
		sum += keep / best
	}
	return sum / float64(len(order))
}

func TestTenSetMetrics(t *testing.T) {
	// The groups of TestTopK plus a one-program group (weight 1).
	s := []float64{0.1, 0.9, 0.5, 0.3, 5, 4, 3, 7}
	l := []float64{1, 0.5, 0.25, 0.8, 1, 0.5, 0.2, 1}
	g := []int{0, 0, 0, 0, 1, 1, 1, 2}
	// Group 0 in predicted order has labels 0.5, 0.25, 0.8, 1: running
	// best 0.5, 0.5, 0.8, 1. Group 1 predicts its best first.
	for _, c := range []struct {
		k    int
		want float64
	}{
		{1, (4*0.5 + 3*1 + 1) / 8},
		{2, (4*0.5 + 3*1 + 1) / 8},
		{5, (4*(0.5+0.5+0.8+1)/4 + 3*1 + 1) / 8},
	} {
		if got := PeakScore(s, l, g, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("peak score@%d = %v, want %v", c.k, got, c.want)
		}
	}
	// Group 0 orders one pair of six right, group 1 all three, and the
	// one-program group scores 0.5 as in TenSet.
	if got, want := TaskPairwiseAccuracy(s, l, g), (4*(1.0/6)+3*1+1*0.5)/8; math.Abs(got-want) > 1e-12 {
		t.Errorf("task pairwise accuracy %v, want %v", got, want)
	}
	// Against the transcription of TenSet's code on random groups (scores
	// and labels without ties, where both definitions agree).
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 1 + rng.IntN(12)
		s, l := make([]float64, n), make([]float64, n)
		for i := range s {
			s[i], l[i] = rng.Float64(), 0.01+rng.Float64()
		}
		g := make([]int, n)
		for _, k := range []int{1, 5} {
			if got, want := PeakScore(s, l, g, k), tensetPeak(s, l, k); math.Abs(got-want) > 1e-12 {
				t.Fatalf("trial %d, k %d: %v, TenSet %v", trial, k, got, want)
			}
		}
	}
	if got := PeakScore([]float64{1}, []float64{0}, []int{0}, 1); !math.IsNaN(got) {
		t.Errorf("all-failed: %v, want NaN", got)
	}

	d := &Dataset{}
	d.Add("t", [][]float32{{1}}, 1)
	d.Add("t", [][]float32{{2}}, 2)
	d.Add("t", [][]float32{{3}}, math.Inf(1))
	d.Add("u", [][]float32{{4}}, 5)
	m := EvaluateTenSet(d, []float64{1, 2, 3, 0})
	// t: the slower program ranked first: pairwise 0, top-1 0.5, top-5
	// (0.5 + 1)/2; u: one program (0.5, 1, 1). Weights 2 and 1.
	want := TenSetMetrics{Pairwise: (0 + 0.5) / 3, Top1: (2*0.5 + 1) / 3, Top5: (2*0.75 + 1) / 3, Tasks: 2, Programs: 3}
	if math.Abs(m.Pairwise-want.Pairwise) > 1e-12 || math.Abs(m.Top1-want.Top1) > 1e-12 || math.Abs(m.Top5-want.Top5) > 1e-12 || m.Tasks != 2 || m.Programs != 3 {
		t.Errorf("%+v, want %+v", m, want)
	}
}
