package search

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
)

// Task is a workload the tuning loop tunes: what the search and the task
// scheduler read of it. Package partition extracts a model's tasks;
// package tuning hands them to Tune as Tasks.
type Task struct {
	Key    string  // workload key: prior measurements, seeds and emphasis are by it
	DAG    *te.DAG // what is scheduled; its FLOPs bound the task scheduler's estimates
	Weight int     // how often one inference runs it
	// Group names the tasks that compute alike (the same fused ops),
	// whose throughputs bound each other's forward estimate
	// (TaskProgress.Group).
	Group string
	// Rivals are the tasks that compute the same groups by another
	// algorithm: the model runs whichever is fastest. A rival left out of
	// the run is no rival.
	Rivals []*Task
}

// Log keeps every measured batch; the tuning loop commits each batch
// before it starts the next round, so an interrupted run loses at most the
// batch in flight. cmd/tune backs it with the records store.
type Log interface {
	Commit(task *Task, batch []Measured) error
}

// TuneOptions configure a tuning run.
type TuneOptions struct {
	Trials    int // measurements across all tasks
	PerRound  int // measurements per round (0: Search.MeasurePerRound)
	Search    Options
	Scheduler SchedulerOptions
	// MaxConsecutiveErrors stops a task after that many failed
	// measurements in a row (Ansor: 150).
	MaxConsecutiveErrors int
	// WarmUp, when positive, is the size of every task's first batch:
	// its default schedule and the model's best predictions, a few
	// measurements before the task scheduler takes over (0: PerRound).
	WarmUp int
	// RivalLead sets a task aside once a rival (the same groups by
	// another algorithm) is faster by this factor, both measured (0:
	// never; the build keeps the faster anyway).
	RivalLead float64
	// Seeds are states of other workloads replayed on each task (by task
	// key): they join the task's first populations, never measured as
	// they are unless the model picks them.
	Seeds map[string][]*schedule.State
	// Emphasis scales a task's weight in the objective the task scheduler
	// lowers (by task key; 1 where absent): how much the shapes it serves
	// matter (tune --weights).
	Emphasis map[string]float64
	// Progress callbacks are called after every round.
	Progress []func(Progress)
}

// Progress is the state of a tuning run after a round.
type Progress struct {
	Trials, Total int     // measured in this run, requested
	Task          int     // index of the task of the last round
	Objective     float64 // Σ weight × best latency (seconds)
	Complete      bool    // every live task has a valid schedule
	Tasks         []*TaskProgress
}

// TaskSummary is the outcome of one task.
type TaskSummary struct {
	Task      *Task
	Trials    int // measured in this run
	Prior     int // measured in earlier runs
	Best      float64
	BestState *schedule.State
	Dead      bool
	// Beaten is true when a rival task was faster by TuneOptions.RivalLead
	// and the task was set aside.
	Beaten bool
	// Exhausted is true when the search found no schedule of the task left
	// to measure: every distinct one it can reach was measured.
	Exhausted bool
	// OnDefault is true when the best measured schedule is the task's
	// default (Policy.OnDefault): tuning has not improved on what a build
	// without records runs.
	OnDefault  bool
	LastErrors string
}

// Summary is the outcome of a tuning run.
type Summary struct {
	Tasks     []TaskSummary
	Trials    int // measured in this run
	Prior     int // loaded from earlier runs
	Objective float64
	Complete  bool
	Times     Times // summed over the tasks' policies
	// Exhausted counts the tasks set aside because every schedule the
	// search can reach was measured; when every task is exhausted or dead
	// the run ends before its budget.
	Exhausted int
}

// Tune runs the tuning loop: the task scheduler picks a task, its policy
// proposes and measures a batch, the batch is committed to the log, the
// shared cost model learns — until opts.Trials measurements or ctx ends.
// prior holds, per task key, what earlier runs measured: never measured
// again, it seeds each policy and counts as the task's warm-up.
func Tune(ctx context.Context, tasks []*Task, prior map[string][]Measured, model CostModel, m Measurer, log Log, opts TuneOptions) (Summary, error) {
	if err := CheckStrategy(opts.Scheduler.Strategy); err != nil {
		return Summary{}, err
	}
	per := opts.PerRound
	if per <= 0 {
		per = opts.Search.MeasurePerRound
	}
	maxErr := opts.MaxConsecutiveErrors
	if maxErr <= 0 {
		maxErr = 150
	}
	policies := make([]*Policy, len(tasks))
	progress := make([]*TaskProgress, len(tasks))
	sums := make([]TaskSummary, len(tasks))
	streak := make([]int, len(tasks))
	var sum Summary
	index := map[*Task]int{}
	for i, t := range tasks {
		index[t] = i
	}
	for i, t := range tasks {
		o := opts.Search
		o.Seed = opts.Search.Seed + uint64(i)*7919
		p, err := NewPolicy(t.Key, schedule.NewState(t.DAG), o, model, m)
		if err != nil {
			return Summary{}, fmt.Errorf("task %s: %w", t.Key, err)
		}
		policies[i] = p
		p.Seed(opts.Seeds[t.Key])
		w := float64(t.Weight)
		if e, ok := opts.Emphasis[t.Key]; ok {
			w *= e
		}
		progress[i] = &TaskProgress{Weight: w, FLOPs: t.DAG.FLOPs(), Bytes: ioBytes(t.DAG), Rivals: rivalIndices(t, index), Group: t.Group}
		sums[i] = TaskSummary{Task: t, Best: math.Inf(1)}
		if pr := prior[t.Key]; len(pr) > 0 {
			p.AddMeasured(pr)
			_, best := p.Best()
			progress[i].History = append(progress[i].History, best)
			sums[i].Prior = len(pr)
			sum.Prior += len(pr)
		}
	}

	rr := 0
	for sum.Trials < opts.Trials && ctx.Err() == nil {
		i := NextTask(progress, opts.Scheduler, &rr)
		if i < 0 {
			break
		}
		n := min(per, opts.Trials-sum.Trials)
		if progress[i].Rounds() == 0 {
			// Warm-up: leave each task not yet measured its share of what
			// is left, so that a budget below tasks × per still measures
			// every task (its default schedule first) instead of spending
			// it all on the first ones.
			n = min(n, max(1, (opts.Trials-sum.Trials)/unmeasured(progress)))
			if opts.WarmUp > 0 {
				n = min(n, opts.WarmUp)
			}
		}
		ms, err := policies[i].Round(ctx, n)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			break // the batch in flight is dropped; everything before is committed
		}
		if errors.Is(err, ErrMeasure) {
			// The machine failed, not the task's candidates: stop, with
			// everything before committed, rather than mark the task dead.
			return finish(sum, sums, policies, progress), fmt.Errorf("task %s: %w", tasks[i].Key, err)
		}
		if errors.Is(err, ErrExhausted) {
			// Nothing new to measure: set the task aside for good, so that
			// the scheduler never picks it again and the run can end.
			progress[i].Dead = true
			sums[i].Exhausted = true
			sum.Exhausted++
			progress[i].History = append(progress[i].History, progress[i].Best())
			continue
		}
		if err != nil && len(ms) == 0 {
			// No valid state could even be proposed: set the task aside.
			progress[i].Dead = true
			sums[i].LastErrors = err.Error()
			progress[i].History = append(progress[i].History, progress[i].Best())
			continue
		}
		if cerr := log.Commit(tasks[i], ms); cerr != nil {
			return sum, fmt.Errorf("commit measurements of task %s: %w", tasks[i].Key, cerr)
		}
		if err != nil { // the model failed to update; the batch is safe
			return sum, err
		}
		sum.Trials += len(ms)
		sums[i].Trials += len(ms)
		for _, r := range ms {
			if r.Result.Kind == measure.None {
				streak[i] = 0
			} else {
				streak[i]++
				sums[i].LastErrors = fmt.Sprintf("%v: %s", r.Result.Kind, r.Result.Msg)
			}
		}
		_, best := policies[i].Best()
		progress[i].History = append(progress[i].History, best)
		if streak[i] >= maxErr || (math.IsInf(best, 1) && progress[i].Rounds() >= 3) {
			progress[i].Dead = true
		}
		ApplyEarlyStopping(progress, opts.Scheduler)
		for _, b := range DecideRivals(progress, opts.RivalLead) {
			sums[b].Beaten = true
		}
		if len(opts.Progress) > 0 {
			obj, complete := Objective(progress)
			p := Progress{Trials: sum.Trials, Total: opts.Trials, Task: i, Objective: obj, Complete: complete, Tasks: progress}
			for _, f := range opts.Progress {
				f(p)
			}
		}
	}
	return finish(sum, sums, policies, progress), ctx.Err()
}

// rivalIndices returns the positions of t's rivals among the tasks tuned
// (a rival left out of the run is no rival).
func rivalIndices(t *Task, index map[*Task]int) []int {
	var out []int
	for _, r := range t.Rivals {
		if j, ok := index[r]; ok {
			out = append(out, j)
		}
	}
	return out
}

// unmeasured counts the live tasks that have had no round yet.
func unmeasured(tasks []*TaskProgress) int {
	n := 0
	for _, t := range tasks {
		if !t.Dead && t.Rounds() == 0 {
			n++
		}
	}
	return n
}

// finish completes the summary of a run from its policies.
func finish(sum Summary, sums []TaskSummary, policies []*Policy, progress []*TaskProgress) Summary {
	for i, p := range policies {
		sum.Times = sum.Times.Add(p.Times())
		sums[i].BestState, sums[i].Best = p.Best()
		sums[i].Dead = progress[i].Dead
		sums[i].OnDefault = p.OnDefault()
	}
	sum.Tasks = sums
	sum.Objective, sum.Complete = Objective(progress)
	return sum
}
