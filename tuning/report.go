package tuning

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/search"
)

// LogProgress returns a progress callback that writes one line per round
// to w: trials committed, the task of the round, the estimated model
// latency and the time since start (TVM's PrintTableInfo, in a log).
func LogProgress(w io.Writer, start time.Time) func(search.Progress) {
	return func(p search.Progress) {
		fmt.Fprintf(w, "committed %d/%d trials (task %d/%d), est. model latency %s, %s elapsed\n",
			p.Trials, p.Total, p.Task+1, len(p.Tasks), Estimate(p.Objective, p.Complete), time.Since(start).Round(time.Second))
	}
}

// Bar is a progress bar (cli.Bar): its length, where it stands with what
// it says, and its end.
type Bar interface {
	SetMax(n int)
	Set(desc string, n int)
	Finish()
}

// BarProgress returns a progress callback that moves bar to the trials
// committed, saying the task of the round and the estimated model
// latency.
func BarProgress(bar Bar) func(search.Progress) {
	return func(p search.Progress) {
		bar.SetMax(p.Total)
		bar.Set(fmt.Sprintf("task %d/%d, est. model latency %s", p.Task+1, len(p.Tasks), Estimate(p.Objective, p.Complete)), p.Trials)
	}
}

// Estimate prints an estimated model latency, "?" while some task has no
// valid schedule.
func Estimate(objective float64, complete bool) string {
	if !complete {
		return "?"
	}
	return fmt.Sprintf("%.3f ms", objective*1e3)
}

// WriteSummary writes the table of a run's tasks (trials, best latency,
// throughput, share of the estimated model latency) and what became of
// the tasks set aside.
func WriteSummary(w io.Writer, sum search.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "task\tkey\tweight\ttrials\tbest ms\tGFLOP/s\tshare\t")
	bests := map[*search.Task]float64{}
	for _, t := range sum.Tasks {
		bests[t.Task] = t.Best
	}
	for i, t := range sum.Tasks {
		best, gflops, share := "-", "-", "-"
		if !math.IsInf(t.Best, 1) {
			best = fmt.Sprintf("%.4f", t.Best*1e3)
			gflops = fmt.Sprintf("%.1f", t.Task.DAG.FLOPs()/t.Best/1e9)
			if sum.Objective > 0 && !beaten(t, bests) {
				share = fmt.Sprintf("%.1f%%", 100*float64(t.Task.Weight)*t.Best/sum.Objective)
			}
		}
		key := t.Task.Key
		if len(key) > 11 {
			key = key[:11]
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t\n", i, key, t.Task.Weight, t.Trials+t.Prior, best, gflops, share)
	}
	tw.Flush()
	est := "unknown (a task has no valid schedule yet)"
	if sum.Complete {
		est = fmt.Sprintf("%.3f ms", sum.Objective*1e3)
	}
	fmt.Fprintf(w, "%d trials this run, %d from earlier runs; estimated model latency %s\n", sum.Trials, sum.Prior, est)
	if line := budgetLine(sum, bests); line != "" {
		fmt.Fprintln(w, line)
	}
	for i, t := range sum.Tasks {
		switch {
		case t.Exhausted:
			fmt.Fprintf(w, "task %d is exhausted: all %d distinct schedules the search reaches were measured\n", i, t.Trials+t.Prior)
		case t.Beaten:
			fmt.Fprintf(w, "task %d was set aside: a rival algorithm of its groups is clearly faster\n", i)
		}
		if math.IsInf(t.Best, 1) && t.LastErrors != "" {
			fmt.Fprintf(w, "task %d has no valid schedule; last error: %s\n", i, t.LastErrors)
		}
	}
}

// budgetLine says how the trials fell on the tasks (per task, this run's
// and earlier runs': the least, the median, the most) and how much of the
// estimated latency is still on default schedules: the tasks whose best
// measured schedule is the one a build without records runs, and their
// share of the estimate. A budget spread over many small tasks shows
// there.
func budgetLine(sum search.Summary, bests map[*search.Task]float64) string {
	if len(sum.Tasks) == 0 {
		return ""
	}
	trials := make([]int, len(sum.Tasks))
	onDefault, share := 0, 0.0
	for i, t := range sum.Tasks {
		trials[i] = t.Trials + t.Prior
		if t.OnDefault {
			onDefault++
			if sum.Objective > 0 && !math.IsInf(t.Best, 1) && !beaten(t, bests) {
				share += float64(t.Task.Weight) * t.Best / sum.Objective
			}
		}
	}
	slices.Sort(trials)
	line := fmt.Sprintf("trials per task: least %d, median %d, most %d; on their default schedule: %d of %d tasks",
		trials[0], trials[len(trials)/2], trials[len(trials)-1], onDefault, len(sum.Tasks))
	if sum.Complete && sum.Objective > 0 {
		line += fmt.Sprintf(", %.1f%% of the estimated latency", 100*share)
	}
	return line
}

// beaten says whether a rival of the task (another algorithm of its
// groups) is faster: the model runs the rival, and the task has no share
// of the estimate.
func beaten(t search.TaskSummary, bests map[*search.Task]float64) bool {
	for _, r := range t.Task.Rivals {
		if b, ok := bests[r]; ok && b < t.Best {
			return true
		}
	}
	return false
}

// WriteStart writes what the session is about to do: the model, its
// tasks, the budget and what earlier runs spent of it, the tasks seeded
// by transfer, and the cpu target's machine.
func (s *Session) WriteStart(w io.Writer, model, db string, tg *backend.Target) {
	retried := ""
	if s.Retry > 0 {
		retried = fmt.Sprintf(", %d of them build timeouts that may be measured again", s.Retry)
	}
	fmt.Fprintf(w, "tuning %s: %d tasks, %d trials (%d from earlier runs%s, %d to go), target %s, records in %s\n",
		model, len(s.Tasks), s.opts.Trials, s.Done, retried, s.ToGo(), tg.Name, db)
	if n := len(s.Seeds); n > 0 {
		fmt.Fprintf(w, "%d tasks without records start from the schedules of similar workloads\n", n)
	}
	if tg.Name == "cpu" {
		fmt.Fprintln(w, tg.Machine)
	}
}

// WriteEnd writes the end of a run: its summary (WriteSummary), why it
// stopped short of the budget where it did and was not cancelled, where
// its wall time went (WriteTimes, with the measurer's Times where it keeps
// them) and the measurer's own Summary line where it has one (a remote
// measurer's fault handling).
func (s *Session) WriteEnd(w io.Writer, sum search.Summary, cancelled bool, wall time.Duration) {
	WriteSummary(w, sum)
	if !cancelled && sum.Trials < s.ToGo() {
		fmt.Fprintf(w, "stopped at %d of %d trials: no task has a schedule left to measure\n", sum.Trials, s.ToGo())
	}
	var mt measure.Times
	if m, ok := s.measurer.(interface{ Times() measure.Times }); ok {
		mt = m.Times()
	}
	WriteTimes(w, sum, mt, wall)
	if m, ok := s.measurer.(interface{ Summary() string }); ok {
		fmt.Fprintln(w, m.Summary())
	}
}

// WriteTimes writes where a run's wall time went: the search, and the
// measurer's lowering, compiling and running.
func WriteTimes(w io.Writer, sum search.Summary, mt measure.Times, wall time.Duration) {
	fmt.Fprintf(w, "wall time %v: search %v, measure %v (lower %v, compile %v for %d of %d candidates, run %v), learn %v\n",
		wall.Round(time.Second), sum.Times.Search.Round(time.Second), sum.Times.Measure.Round(time.Second),
		mt.Lower.Round(time.Second), mt.Build.Round(time.Second), mt.Compiled, mt.Candidates, mt.Run.Round(time.Second),
		sum.Times.Learn.Round(time.Second))
}

// Curve returns the tuning curve of the plan's tasks in store on target
// (records.Store.CurveOf) and a name for each task, "index ops"; for a nil
// plan, of every task stored with records on the target, named by its
// short key.
func Curve(store *records.Store, plan *partition.Plan, target string) (*records.Curve, []string, error) {
	if plan == nil {
		c, err := store.CurveOf(nil, target)
		if err != nil {
			return nil, nil, err
		}
		var names []string
		for _, t := range c.Tasks {
			names = append(names, records.ShortKey(t.Key))
		}
		return c, names, nil
	}
	tasks, names := make([]records.TaskInfo, len(plan.Tasks)), make([]string, len(plan.Tasks))
	for i, t := range plan.Tasks {
		tasks[i] = records.TaskInfo{Key: t.Key, FLOPs: t.FLOPs, Weight: t.Weight}
		names[i] = fmt.Sprintf("%d %s", i, t.Ops())
	}
	c, err := store.CurveOf(tasks, target)
	return c, names, err
}

// LoadCurve returns the tuning curve on target (Curve) of the records
// database db, opened read-only: of the tasks of the model at path
// (LoadPlan with lo, ranges and po), or, for path "", of every task
// stored with records on the target.
func LoadCurve(db, path string, lo frontend.LoadOptions, ranges map[string][2]int, po partition.Options, target string) (*records.Curve, []string, error) {
	store, err := records.OpenReadOnly(db)
	if err != nil {
		return nil, nil, err
	}
	defer store.Close()
	var plan *partition.Plan
	if path != "" {
		if _, plan, err = LoadPlan(path, lo, ranges, po); err != nil {
			return nil, nil, err
		}
	}
	return Curve(store, plan, target)
}
