package records

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
)

// Curve is a tuning curve: the records of one target on a set of tasks, in
// measurement order (one trial each), and how each task's best cost and the
// estimated model latency fell as trials went by.
type Curve struct {
	Target string
	Tasks  []TaskInfo
	Trials int // records counted, failed ones included
	Valid  int // records that succeeded
	// Best[t] lists the trials after which task t's best cost improved,
	// in order; empty while the task has no valid record.
	Best [][]CurvePoint
}

// CurvePoint is a value after trial number Trial (1-based).
type CurvePoint struct {
	Trial int
	Value float64
}

// Curve returns the tuning curve of target over tasks. Every record of
// the target whose workload is one of the tasks is a trial; trials are in
// measurement order (by the records' time, then the order they were added,
// so records imported from another run fall where they were measured).
func (s *Store) Curve(target string, tasks []TaskInfo) (*Curve, error) {
	index := map[string]int{}
	for i, t := range tasks {
		index[t.Key] = i
	}
	var recs []Record
	err := s.ForEach(func(r Record) error {
		if _, ok := index[r.WorkloadKey]; ok && r.Target == target {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].At.Before(recs[j].At) })
	c := &Curve{Target: target, Tasks: slices.Clone(tasks), Trials: len(recs), Best: make([][]CurvePoint, len(tasks))}
	for n, r := range recs {
		if r.Error != ErrorNone {
			continue
		}
		c.Valid++
		t := index[r.WorkloadKey]
		if b := c.Best[t]; len(b) == 0 || r.Cost() < b[len(b)-1].Value {
			c.Best[t] = append(b, CurvePoint{n + 1, r.Cost()})
		}
	}
	return c, nil
}

// Latency returns the estimated model latency Σ weight × best cost (in
// seconds) after every trial at which it changed, starting at the first
// trial after which every task has a valid record; nil when some task never
// has one.
func (c *Curve) Latency() []CurvePoint {
	start := 0
	for _, b := range c.Best {
		if len(b) == 0 {
			return nil
		}
		start = max(start, b[0].Trial)
	}
	if len(c.Best) == 0 {
		return nil
	}
	// The improvements of all tasks in trial order; a trial is one record,
	// so no two improvements share a trial.
	type event struct{ trial, task int }
	var events []event
	for t, b := range c.Best {
		for _, p := range b {
			events = append(events, event{p.Trial, t})
		}
	}
	sort.Slice(events, func(i, j int) bool { return events[i].trial < events[j].trial })
	best := make([]float64, len(c.Best))
	next := make([]int, len(c.Best)) // each task's next improvement
	for i := range best {
		best[i] = math.Inf(1)
	}
	var out []CurvePoint
	for _, e := range events {
		best[e.task] = c.Best[e.task][next[e.task]].Value
		next[e.task]++
		if e.trial < start {
			continue
		}
		sum := 0.0
		for i, b := range best {
			sum += float64(c.Tasks[i].Weight) * b
		}
		out = append(out, CurvePoint{e.trial, sum})
	}
	return out
}

// CurveOf returns the tuning curve to plot of the tasks on the target
// want names (PickTarget, which names the database by its path): with
// tasks nil, of every stored task that has records on that target. A
// curve without records, or without a successful one, is an error:
// nothing to plot.
func (s *Store) CurveOf(tasks []TaskInfo, want string) (*Curve, error) {
	all := tasks == nil
	if all {
		var err error
		if tasks, err = s.Tasks(); err != nil {
			return nil, err
		}
	}
	keys := make([]string, len(tasks))
	for i, t := range tasks {
		keys[i] = t.Key
	}
	targets, err := s.Targets(keys)
	if err != nil {
		return nil, err
	}
	key, err := PickTarget(slices.Collect(maps.Keys(targets)), want, s.path)
	if err != nil {
		return nil, err
	}
	if all {
		tasks = slices.DeleteFunc(tasks, func(t TaskInfo) bool { return targets[key][t.Key].Records == 0 })
	}
	c, err := s.Curve(key, tasks)
	switch {
	case err != nil:
		return nil, err
	case c.Trials == 0:
		return nil, fmt.Errorf("%s has no records of these tasks on %s: nothing to plot", s.path, key)
	case c.Valid == 0:
		return nil, fmt.Errorf("%s has %d records of these tasks on %s, none successful: nothing to plot", s.path, c.Trials, key)
	}
	return c, nil
}

// Summary says in two lines what the curve holds and how the estimated
// model latency fell: from the first trial after which every task has a
// successful record to the last.
func (c *Curve) Summary() string {
	s := fmt.Sprintf("%d trials (%d successful) of %d tasks on %s\n", c.Trials, c.Valid, len(c.Tasks), c.Target)
	lat := c.Latency()
	if len(lat) == 0 {
		return s + "estimated model latency: not defined yet (a task has no successful record)"
	}
	return s + fmt.Sprintf("estimated model latency: %.4f ms after trial %d, %.4f ms after trial %d",
		lat[0].Value*1e3, lat[0].Trial, lat[len(lat)-1].Value*1e3, lat[len(lat)-1].Trial)
}
