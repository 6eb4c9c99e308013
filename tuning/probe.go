package tuning

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/search"
)

// Probing a tuning over a dimension given at run time.
//
// The search tunes every task at a few tuning points of the range; the
// build replays, at each value of the range, a schedule measured near it.
// The nearest point's own best is not always the best there: a tile that
// divides 160 leaves a tail at 162, where a point's rival may have none,
// and where the point's second or third best may too. So, after the
// search, the best schedules of the tuning points are measured at every
// probe point (partition.Symbol.ProbePoints: the tuning points, the
// values next to them, the range's ends and the midpoints between them):
// the probeRanks best of the nearest tuning point and the best of each
// other one, each replayed on the task as it is there, and recorded as a
// measurement of that workload. The build then takes, at each value, the
// fastest record of the nearest probe point (DietCode measures its
// micro-kernels at sampled shapes for the same reason).

// probeRanks is how many of the nearest tuning point's best schedules a
// probe measures. The BERT encoder tuned over S=16..256: at S=160 its
// attention's three best schedules measured 0.228, 0.230 and 0.231 ms,
// and at 162 0.385, 0.276 and 0.264.
const probeRanks = 3

// ProbeBudget returns the most measurements Probe makes for dp without a
// limit: at each probe point, every task's probeRanks best schedules of
// the nearest tuning point and the best of each other one, less those of
// a tuning point at itself, where they were measured.
func ProbeBudget(dp *partition.DimPlan) int {
	points := dp.Symbol.TunePoints()
	n := 0
	for _, q := range dp.Symbol.ProbePoints() {
		n += len(points) - 1
		if !slices.Contains(points, q) {
			n += probeRanks
		}
	}
	return len(dp.Hi().Plan.Tasks) * n
}

// RangeMeasured returns the measurements store holds, on target, of every
// task of dp at its tuning points and probe points: what a tuning over
// the range has spent of its trials, the probes' included (a session's
// Done counts the tuning points' workloads only).
func RangeMeasured(store *records.Store, dp *partition.DimPlan, target string) (int, error) {
	seen := map[string]bool{}
	n := 0
	for _, q := range dp.Symbol.ProbePoints() {
		for k := range dp.Hi().Plan.Tasks {
			key := dp.TaskAt(k, q).Key
			if seen[key] {
				continue
			}
			seen[key] = true
			recs, err := store.Records(key, target)
			if err != nil {
				return 0, err
			}
			n += len(recs)
		}
	}
	return n, nil
}

// ProbeSummary is what Probe measured.
type ProbeSummary struct {
	Measured int // schedules measured
	Failed   int // of them, measurements that failed (a schedule that does not run there)
	Values   []int
}

// Probe measures the best schedules of every task at the tuning points of
// dp at each probe point (see above) on m, at most limit schedules (0: no
// limit; the values farthest from a tuning point first, every task at
// each), and commits the measurements to store as records of the target's
// workloads there; a schedule already measured there, or one that does
// not replay there, is skipped. It reads the points' best records from
// store, so it runs after the search.
func Probe(ctx context.Context, store *records.Store, dp *partition.DimPlan, target string, m search.Measurer, version string, limit int) (ProbeSummary, error) {
	sym := dp.Symbol
	sum := ProbeSummary{Values: sym.ProbePoints()}
	log := &StoreLog{Store: store, Target: target, Version: version}
	tasks := dp.Hi().Plan.Tasks
	points := sym.TunePoints()
	// best[k][j]: task k's probeRanks best schedules at tuning point j.
	best := make([][][]records.Record, len(tasks))
	for k, t := range tasks {
		best[k] = make([][]records.Record, len(points))
		for j, p := range points {
			ranked, err := store.Ranked(dp.TaskAt(k, p).Key, target)
			if err != nil {
				return sum, fmt.Errorf("probe: task %d (%s) at %s=%d: %w", k, t.Ops(), sym.Name, p, err)
			}
			seen := map[string]bool{}
			for _, rec := range ranked {
				if len(best[k][j]) == probeRanks || math.IsInf(rec.Cost(), 1) {
					break
				}
				if !seen[string(rec.Steps)] {
					seen[string(rec.Steps)] = true
					best[k][j] = append(best[k][j], rec)
				}
			}
		}
	}
	// candidates returns task k's schedules to measure at q: the nearest
	// point's best ones first, then the best of each other point.
	candidates := func(k, q int) []records.Record {
		near := slices.Index(points, sym.Nearest(q))
		out := slices.Clone(best[k][near])
		for j, recs := range best[k] {
			if j != near && len(recs) > 0 {
				out = append(out, recs[0])
			}
		}
		return out
	}
	far := func(v int) float64 { return partition.LogDistance(sym.Nearest(v), v) }
	order := slices.Clone(sum.Values)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(far(b), far(a)) })
	for _, q := range order {
		for k, t := range tasks {
			if limit > 0 && sum.Measured >= limit {
				return sum, nil
			}
			task := dp.TaskAt(k, q)
			if err := store.PutTask(TaskInfo(task)); err != nil {
				return sum, err
			}
			done, err := measuredSteps(store, task.Key, target)
			if err != nil {
				return sum, err
			}
			s0 := schedule.NewState(task.DAG)
			var inputs []measure.Input
			for _, rec := range candidates(k, q) {
				if limit > 0 && sum.Measured+len(inputs) >= limit {
					break
				}
				st, err := rec.State(s0)
				if err != nil {
					continue // a schedule of another length that does not replay here
				}
				key := string(rec.Steps)
				if data, err := schedule.MarshalSteps(st.Steps); err == nil {
					key = string(data)
				}
				if done[key] {
					continue
				}
				done[key] = true
				inputs = append(inputs, measure.Input{State: st})
			}
			if len(inputs) == 0 {
				continue
			}
			results, err := m.Measure(ctx, inputs)
			if ctx.Err() != nil {
				return sum, ctx.Err()
			}
			if err != nil {
				return sum, fmt.Errorf("probe: task %d (%s) at %s=%d: %w: %w", k, t.Ops(), sym.Name, q, search.ErrMeasure, err)
			}
			if len(results) != len(inputs) {
				return sum, fmt.Errorf("probe: task %d at %s=%d: %d results for %d schedules", k, sym.Name, q, len(results), len(inputs))
			}
			batch := make([]search.Measured, len(inputs))
			for i, in := range inputs {
				batch[i] = search.Measured{State: in.State, Result: results[i]}
				sum.Measured++
				if results[i].Kind != measure.None {
					sum.Failed++
				}
			}
			if err := log.add(task.Key, batch); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

// measuredSteps returns the steps (schedule.MarshalSteps) of the records
// the store holds of a workload on a target.
func measuredSteps(store *records.Store, workload, target string) (map[string]bool, error) {
	recs, err := store.Records(workload, target)
	if err != nil {
		return nil, err
	}
	done := make(map[string]bool, len(recs))
	for _, r := range recs {
		done[string(r.Steps)] = true
	}
	return done, nil
}
