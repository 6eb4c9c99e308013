package costmodel

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Ranking metrics. Scores and labels are both "higher is better": scores
// are model predictions, labels are y = best cost in the task / cost (or
// any value ordered the same way, such as 1/cost). Groups are task ids:
// programs are only ever compared within their task.

// PairwiseAccuracy returns the fraction of pairs (i, j) in the same group
// with different labels that the scores order the same way as the labels;
// a pair whose scores are equal counts one half. It returns NaN when there
// is no such pair. It runs in O(n log n) per group, so it is exact on large
// held-out sets.
func PairwiseAccuracy(scores, labels []float64, groups []int) float64 {
	right, total := 0.0, 0.0
	for _, idx := range byGroup(groups) {
		r, t := pairwise(scores, labels, idx)
		right += r
		total += t
	}
	if total == 0 {
		return math.NaN()
	}
	return right / total
}

// pairwise counts, within one group, the correctly ordered pairs (ties in
// score count one half) and the pairs with different labels. Items are
// visited in increasing score; a Fenwick tree over label ranks counts, for
// each item, the earlier (lower-scored) items with a smaller label.
func pairwise(scores, labels []float64, idx []int) (right, total float64) {
	n := len(idx)
	if n < 2 {
		return 0, 0
	}
	// Label ranks, dense from 0.
	byLabel := slices.Clone(idx)
	slices.SortFunc(byLabel, func(a, b int) int { return cmpFloat(labels[a], labels[b]) })
	rank := make(map[int]int, n)
	counts := make([]int, 0, n)
	for k, i := range byLabel {
		if k == 0 || labels[i] != labels[byLabel[k-1]] {
			counts = append(counts, 0)
		}
		rank[i] = len(counts) - 1
		counts[len(counts)-1]++
	}
	total = float64(n) * float64(n-1) / 2
	for _, c := range counts {
		total -= float64(c) * float64(c-1) / 2
	}
	order := slices.Clone(idx)
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(scores[a], scores[b]) })
	rk := make([]int, n) // label rank of order[k]
	for k, i := range order {
		rk[k] = rank[i]
	}
	fen := make([]int, len(counts)+1)
	inBlock := make([]int, len(counts))
	for a := 0; a < n; {
		b := a
		for b < n && scores[order[b]] == scores[order[a]] {
			b++
		}
		// Block [a, b) has equal scores: pairs with earlier items are
		// ordered by score; pairs inside the block are ties.
		m := b - a
		tiePairs := float64(m) * float64(m-1) / 2
		for _, r := range rk[a:b] {
			for q := r; q > 0; q -= q & -q { // earlier items with a smaller label
				right += float64(fen[q])
			}
			tiePairs -= float64(inBlock[r])
			inBlock[r]++
		}
		right += tiePairs / 2
		for _, r := range rk[a:b] {
			inBlock[r] = 0
			for q := r + 1; q < len(fen); q += q & -q {
				fen[q]++
			}
		}
		a = b
	}
	return right, total
}

// cmpFloat orders floats, NaN first.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case a != a && b != b:
		return 0
	case a != a:
		return -1
	}
	return 1
}

// byGroup returns the indices of each group, groups in order of first
// appearance.
func byGroup(groups []int) [][]int {
	pos := map[int]int{}
	var out [][]int
	for i, g := range groups {
		k, ok := pos[g]
		if !ok {
			k = len(out)
			pos[g] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}

// TopKScore is the best-of-top-k score: for each group, the best label
// among the k highest-scored items divided by the best label of the group
// (1 when the true best is among them), averaged over the groups whose best
// label is positive. With labels y = best cost / cost it is the best cost of
// the group over the best cost among the top-k predicted. NaN when no group
// counts. It is the last point of the curve that TenSet's peak score
// averages (PeakScore); at k = 1 the two agree per group.
func TopKScore(scores, labels []float64, groups []int, k int) float64 {
	sum, n := 0.0, 0
	for _, idx := range byGroup(groups) {
		best := math.Inf(-1)
		for _, i := range idx {
			best = max(best, labels[i])
		}
		if !(best > 0) {
			continue
		}
		top := topK(scores, idx, k)
		got := math.Inf(-1)
		for _, i := range top {
			got = max(got, labels[i])
		}
		sum += max(got, 0) / best
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// TopKRecall returns, averaged over groups, the fraction of the k
// best-labeled items of a group that are among its k highest-scored items
// (k is capped by the group size; ties in labels or scores are broken by
// index). NaN when there is no group.
func TopKRecall(scores, labels []float64, groups []int, k int) float64 {
	sum, n := 0.0, 0
	for _, idx := range byGroup(groups) {
		trueTop := topK(labels, idx, k)
		predTop := topK(scores, idx, k)
		hit := 0
		for _, i := range trueTop {
			if slices.Contains(predTop, i) {
				hit++
			}
		}
		sum += float64(hit) / float64(len(trueTop))
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// topK returns the (at most) k items of idx with the highest values, ties
// broken by lower index.
func topK(values []float64, idx []int, k int) []int {
	s := slices.Clone(idx)
	sort.SliceStable(s, func(a, b int) bool { return values[s[a]] > values[s[b]] })
	return s[:min(k, len(s))]
}

// Evaluate computes the metrics of scores on a dataset's programs. Failed
// measurements (label 0) are left out: features cannot predict a compile
// error, and a search never ranks by them.
func Evaluate(d *Dataset, scores []float64, k int) Metrics {
	s, l, gs := validOnly(d, scores)
	return Metrics{
		Pairwise:   PairwiseAccuracy(s, l, gs),
		TopKScore:  TopKScore(s, l, gs, k),
		TopKRecall: TopKRecall(s, l, gs, k),
		K:          k,
		Programs:   len(s),
	}
}

// validOnly returns the scores, labels and task ids of the programs whose
// measurement succeeded (label > 0).
func validOnly(d *Dataset, scores []float64) (s, l []float64, g []int) {
	y := d.Labels()
	ids := d.TaskIDs()
	for i := range y {
		if y[i] > 0 {
			s = append(s, scores[i])
			l = append(l, y[i])
			g = append(g, ids[i])
		}
	}
	return s, l, g
}

// Metrics are the quality figures of a model on a dataset.
type Metrics struct {
	Pairwise   float64 // PairwiseAccuracy
	TopKScore  float64 // TopKScore at K
	TopKRecall float64 // TopKRecall at K
	K          int
	Programs   int // programs evaluated (failed measurements excluded)
}

// TenSet's figures. TenSet (Zheng et al., NeurIPS 2021; tlc-pack/tenset,
// scripts/train_model.py evaluate_model and auto_scheduler/cost_model/
// metric.py) computes each metric per task — a (workload, target) — and
// averages the tasks weighted by their number of test programs.

// PeakScore is TenSet's "average peak score@k" (metric_peak_score): take a
// group's k highest-scored items in order (all of them when the group is
// smaller); after the j-th, the best label so far over the group's best
// label; the group's score is the mean of these k ratios. Groups are
// averaged weighted by their size; groups whose best label is not positive
// are left out. NaN when no group counts.
func PeakScore(scores, labels []float64, groups []int, k int) float64 {
	sum, weight := 0.0, 0.0
	for _, idx := range byGroup(groups) {
		if s, ok := peakScore(scores, labels, idx, k); ok {
			sum += float64(len(idx)) * s
			weight += float64(len(idx))
		}
	}
	if weight == 0 {
		return math.NaN()
	}
	return sum / weight
}

// peakScore is PeakScore of one group; ok is false when its best label is
// not positive.
func peakScore(scores, labels []float64, idx []int, k int) (score float64, ok bool) {
	best := math.Inf(-1)
	for _, i := range idx {
		best = max(best, labels[i])
	}
	if !(best > 0) {
		return 0, false
	}
	top := topK(scores, idx, k)
	run, sum := math.Inf(-1), 0.0
	for _, i := range top {
		run = max(run, labels[i])
		sum += max(run, 0) / best
	}
	return sum / float64(len(top)), true
}

// TaskPairwiseAccuracy is TenSet's pairwise comparison accuracy: the
// pairwise accuracy of each group (as PairwiseAccuracy counts it; 0.5 for a
// group without a pair of different labels, as TenSet scores a one-program
// task), averaged weighted by group size. NaN when there is no group.
//
// TenSet compares every pair of a task, so a pair of equal labels counts
// as right when the scores happen to order it one way (by index) and wrong
// otherwise; here such pairs are left out and equal scores count one half,
// which only differs on ties.
func TaskPairwiseAccuracy(scores, labels []float64, groups []int) float64 {
	sum, weight := 0.0, 0.0
	for _, idx := range byGroup(groups) {
		acc := 0.5
		if right, total := pairwise(scores, labels, idx); total > 0 {
			acc = right / total
		}
		sum += float64(len(idx)) * acc
		weight += float64(len(idx))
	}
	if weight == 0 {
		return math.NaN()
	}
	return sum / weight
}

// TenSetMetrics are the ranking figures TenSet reports for a cost model.
type TenSetMetrics struct {
	Pairwise   float64 // TaskPairwiseAccuracy
	Top1, Top5 float64 // PeakScore at k = 1 and k = 5
	Tasks      int     // groups with at least one program evaluated
	Programs   int     // programs evaluated (failed measurements excluded)
}

func (m TenSetMetrics) String() string {
	return fmt.Sprintf("pairwise %.4f, top-1 %.4f, top-5 %.4f", m.Pairwise, m.Top1, m.Top5)
}

// EvaluateTenSet computes TenSet's figures of scores on a dataset's
// programs, grouped by the dataset's tasks. As Evaluate, it leaves failed
// measurements (label 0) out; TenSet keeps them with a throughput of about
// 0, which adds pairs that are easy to get right.
func EvaluateTenSet(d *Dataset, scores []float64) TenSetMetrics {
	s, l, g := validOnly(d, scores)
	tasks := map[int]bool{}
	for _, t := range g {
		tasks[t] = true
	}
	return TenSetMetrics{
		Pairwise: TaskPairwiseAccuracy(s, l, g),
		Top1:     PeakScore(s, l, g, 1),
		Top5:     PeakScore(s, l, g, 5),
		Tasks:    len(tasks),
		Programs: len(s),
	}
}
