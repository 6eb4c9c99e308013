package costmodel

import (
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
	// Label ranks.
	ls := make([]float64, n)
	for k, i := range idx {
		ls[k] = labels[i]
	}
	slices.Sort(ls)
	ls = slices.Compact(ls)
	rank := func(i int) int { r, _ := slices.BinarySearch(ls, labels[i]); return r }
	// Pairs with different labels.
	counts := make([]int, len(ls))
	for _, i := range idx {
		counts[rank(i)]++
	}
	total = float64(n) * float64(n-1) / 2
	for _, c := range counts {
		total -= float64(c) * float64(c-1) / 2
	}
	order := slices.Clone(idx)
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })
	fen := make([]int, len(ls)+1)
	add := func(r int) {
		for r++; r < len(fen); r += r & -r {
			fen[r]++
		}
	}
	below := func(r int) int { // items seen with rank < r
		s := 0
		for ; r > 0; r -= r & -r {
			s += fen[r]
		}
		return s
	}
	for a := 0; a < n; {
		b := a
		for b < n && scores[order[b]] == scores[order[a]] {
			b++
		}
		// Block [a, b) has equal scores: pairs with earlier items are
		// ordered by score; pairs inside the block are ties.
		for _, i := range order[a:b] {
			right += float64(below(rank(i)))
		}
		blockCounts := map[int]int{}
		for _, i := range order[a:b] {
			blockCounts[rank(i)]++
		}
		m := b - a
		tiePairs := float64(m) * float64(m-1) / 2
		for _, c := range blockCounts {
			tiePairs -= float64(c) * float64(c-1) / 2
		}
		right += tiePairs / 2
		for _, i := range order[a:b] {
			add(rank(i))
		}
		a = b
	}
	return right, total
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

// TopKScore is TenSet's top-k score: for each group, the best label among
// the k highest-scored items divided by the best label of the group (1 when
// the true best is among them), averaged over the groups whose best label is
// positive. With labels y = best cost / cost it is the best cost of the group
// over the best cost among the top-k predicted. NaN when no group counts.
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
	y := d.Labels()
	g := d.TaskIDs()
	var s, l []float64
	var gs []int
	for i := range y {
		if y[i] > 0 {
			s = append(s, scores[i])
			l = append(l, y[i])
			gs = append(gs, g[i])
		}
	}
	return Metrics{
		Pairwise:   PairwiseAccuracy(s, l, gs),
		TopKScore:  TopKScore(s, l, gs, k),
		TopKRecall: TopKRecall(s, l, gs, k),
		K:          k,
		Programs:   len(s),
	}
}

// Metrics are the quality figures of a model on a dataset.
type Metrics struct {
	Pairwise   float64 // PairwiseAccuracy
	TopKScore  float64 // TopKScore at K
	TopKRecall float64 // TopKRecall at K
	K          int
	Programs   int // programs evaluated (failed measurements excluded)
}
