package tuning

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/search"
	"github.com/tessera-ml/tessera/sketch"
)

// Transfer between workloads: a task the store has no record of starts
// from the best schedules of measured workloads of the same kind — the
// same computation, shapes aside — and the most similar shapes. Their steps
// apply to the new task's DAG as they are (the stages and loops are the
// same), with every split's lengths fitted to the new loop's extent. The
// states join the task's first populations: the cost model scores them
// with the rest, and the evolution mutates them to the task's shapes.

// MaxSources is how many similar workloads seed one task.
const MaxSources = 3

// Transfer returns, per task without records in prior, up to k of the
// best states of each of the MaxSources most similar workloads of the same
// kind measured on target (on any target when none was on this one),
// replayed on the task. The task's own workload measured on another
// target (another thread count or CPU) is the most similar of all.
func Transfer(store *records.Store, tasks []*partition.Task, prior map[string][]search.Measured, target string, k int) (map[string][]*schedule.State, error) {
	infos, err := store.Tasks()
	if err != nil {
		return nil, err
	}
	stats, err := store.Stats()
	if err != nil {
		return nil, err
	}
	measured := map[string][]string{} // workload → targets with a valid record
	for _, st := range stats {
		if !math.IsInf(st.Best, 1) {
			measured[st.WorkloadKey] = append(measured[st.WorkloadKey], st.Target)
		}
	}
	out := map[string][]*schedule.State{}
	for _, t := range tasks {
		if len(prior[t.Key]) > 0 {
			continue
		}
		var states []*schedule.State
		seen := map[string]bool{}
		for _, src := range similar(t, infos, measured) {
			on := target
			if !slices.Contains(measured[src.Key], target) {
				on = measured[src.Key][0]
			}
			recs, err := store.Records(src.Key, on)
			if err != nil {
				return nil, err
			}
			for _, s := range replayBest(recs, t, k) {
				if key := sketch.Key(s); !seen[key] {
					seen[key] = true
					states = append(states, s)
				}
			}
		}
		if len(states) > 0 {
			out[t.Key] = states
		}
	}
	return out, nil
}

// similar returns the measured workloads of t's kind, other than t, the
// MaxSources nearest by shape first.
func similar(t *partition.Task, infos []records.TaskInfo, measured map[string][]string) []records.TaskInfo {
	kind, nums := workloadKind(t.DAG.CanonicalString())
	type cand struct {
		info records.TaskInfo
		dist float64
	}
	var cands []cand
	for _, info := range infos {
		if len(measured[info.Key]) == 0 {
			continue
		}
		k, n := workloadKind(info.DAG)
		if k != kind {
			continue
		}
		cands = append(cands, cand{info, shapeDistance(nums, n)})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].dist < cands[j].dist })
	var out []records.TaskInfo
	for _, c := range cands[:min(len(cands), MaxSources)] {
		out = append(out, c.info)
	}
	return out
}

// replayBest replays the k fastest valid records on t's DAG, splits
// fitted; records whose steps do not apply are passed over.
func replayBest(recs []records.Record, t *partition.Task, k int) []*schedule.State {
	var ok []records.Record
	for _, r := range recs {
		if r.Error == records.ErrorNone {
			ok = append(ok, r)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].Cost() < ok[j].Cost() })
	s0 := schedule.NewState(t.DAG)
	var out []*schedule.State
	for _, r := range ok {
		if len(out) >= k {
			break
		}
		steps, err := r.DecodeSteps()
		if err != nil {
			continue
		}
		if s, err := schedule.ReplayEdit(s0, steps, fitSplits); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// workloadKind returns the DAG's canonical print with its numbers
// replaced (the kind) and the numbers (its shapes, strides, pads).
func workloadKind(canonical string) (string, []float64) {
	var nums []float64
	kind := number.ReplaceAllStringFunc(canonical, func(s string) string {
		v, _ := strconv.ParseFloat(s, 64)
		nums = append(nums, v)
		return "#"
	})
	return kind, nums
}

var number = regexp.MustCompile(`[0-9]+`)

// shapeDistance is the distance of two workloads of one kind: the sum of
// the log ratios of their numbers.
func shapeDistance(a, b []float64) float64 {
	d := 0.0
	for i := range min(len(a), len(b)) {
		d += math.Abs(math.Log1p(a[i]) - math.Log1p(b[i]))
	}
	return d
}

// fitSplits is a replay edit (schedule.ReplayEdit) that fits each split's
// lengths to the extent of the loop it splits.
func fitSplits(cur *schedule.State, _ int, step schedule.Step) schedule.Step {
	sp, ok := step.(*schedule.Split)
	if !ok || sp.Stage < 0 || sp.Stage >= len(cur.Stages) {
		return step
	}
	iters := cur.Stages[sp.Stage].Iters
	if sp.Iter < 0 || sp.Iter >= len(iters) || iters[sp.Iter].Extent <= 0 {
		return step
	}
	return &schedule.Split{Stage: sp.Stage, Iter: sp.Iter, Lengths: fitLengths(sp.Lengths, iters[sp.Iter].Extent)}
}

// fitLengths fits a split's inner lengths to extent, innermost first (the
// vector and register tiles matter most): each becomes the divisor of
// what is left of the extent nearest to it, by ratio (the smaller on a
// tie). An unfilled length (0) stays unfilled.
func fitLengths(lengths []int, extent int) []int {
	out := slices.Clone(lengths)
	rem := extent
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] <= 0 {
			continue
		}
		out[i] = nearestDivisor(rem, out[i])
		rem /= out[i]
	}
	return out
}

// nearestDivisor returns the divisor of n nearest to want by ratio.
func nearestDivisor(n, want int) int {
	best, bestD := 1, math.Inf(1)
	for d := 1; d <= n; d++ {
		if n%d != 0 {
			continue
		}
		if dist := math.Abs(math.Log(float64(d) / float64(want))); dist < bestD-1e-12 {
			best, bestD = d, dist
		}
	}
	return best
}
