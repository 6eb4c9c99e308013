package search

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/te"
)

// The task scheduler decides which task the next round of measurements
// goes to. The objective is the estimated model latency, Σ weight × best
// latency over the tasks; after one warm-up round per task, Ansor's
// gradient strategy gives the round to the task whose latency is expected
// to fall the most per round:
//
//	∂f/∂t_i ≈ w_i · ( α · backward_i + (1−α) · forward_i )
//	backward_i = (g_i(t) − g_i(t−Δ)) / Δ                 the recent slope
//	forward_i  = min(−g_i(t)/t, β · C_i / V_i − g_i(t))   optimism, bounded by
//	                                                      the best throughput of
//	                                                      the tasks like it
//
// g_i is task i's best latency after each of its rounds, C_i its FLOPs,
// V_i the best FLOP/s reached by a task of its group (TaskProgress.Group:
// Ansor's similar tasks N(i)); a task alone in its group has only the
// first term. The most negative gradient wins. With V over every task, a
// matrix-vector product bound by memory (MnasNet's classifier, 21 GFLOP/s
// against the convolutions' 260) looked ten times from its bound after
// every round and took 360 of 2,000 trials, exhausting its space, while
// 19 of the 35 tasks kept their 4 warm-up trials.
//
// Within a group, too, tasks of the same ops differ in what bounds them:
// an LSTM's step (h·R, a matrix-vector product of 4 MB of weights, 24
// GFLOP/s) and its head (32 rows by the same ops, 177 GFLOP/s) are both
// MatMul+Add, and against the head's throughput the step looked seven
// times from its bound after every round: it took 960 of 1,000 trials,
// its best unchanged after the fifth round, while the head (17% of the
// latency) kept its 4 warm-up trials. So V_i is a roofline: the group's
// best FLOP/s, or its best bytes/s times task i's arithmetic intensity
// (FLOPs per byte of its inputs and outputs, TaskProgress.Bytes) where
// that is lower. A compute-bound task's bound is unchanged.

// SchedulerOptions configure the task scheduler.
type SchedulerOptions struct {
	Strategy string  // "gradient" (default) or "round-robin"
	Alpha    float64 // weight of the backward slope, 0.2
	Beta     float64 // bound on the forward estimate, 2
	Window   int     // rounds of the backward slope, 3
	// EarlyStopping sets a task aside after this many of its rounds without
	// improvement (0: never).
	EarlyStopping int
}

// DefaultSchedulerOptions returns Ansor's.
func DefaultSchedulerOptions() SchedulerOptions {
	return SchedulerOptions{Strategy: "gradient", Alpha: 0.2, Beta: 2, Window: 3}
}

// TaskProgress is what the scheduler knows of one task.
type TaskProgress struct {
	Weight  float64
	FLOPs   float64
	Bytes   float64   // the bytes its kernel must read and write at least (its inputs' and outputs'); 0: unknown
	History []float64 // best latency (seconds) after each of its rounds; +Inf while none is valid
	Dead    bool      // no valid schedule, or stopped early: never picked
	// Rivals are the indices of the tasks that compute the same groups by
	// another algorithm (Task.Rivals): the model runs whichever is
	// fastest, so only the fastest counts in the objective.
	Rivals []int
	// Group names the tasks that compute alike (the same fused ops), whose
	// throughputs bound each other's forward estimate.
	Group string
}

// Rounds returns the number of rounds the task had.
func (t *TaskProgress) Rounds() int { return len(t.History) }

// Best returns the task's best latency so far (+Inf if none).
func (t *TaskProgress) Best() float64 {
	if len(t.History) == 0 {
		return math.Inf(1)
	}
	return t.History[len(t.History)-1]
}

// Objective returns Σ weight × best latency over the tasks that have a
// valid schedule, a task with rivals counting only when it is the fastest
// of them (the first such on a tie), and whether every live task has one.
func Objective(tasks []*TaskProgress) (float64, bool) {
	sum, complete := 0.0, true
	for i, t := range tasks {
		b := t.Best()
		if math.IsInf(b, 1) {
			if !t.Dead {
				complete = false
			}
			continue
		}
		if beaten(tasks, i) {
			continue
		}
		sum += t.Weight * b
	}
	return sum, complete
}

// beaten reports whether a rival of task i is faster (or as fast and
// listed first).
func beaten(tasks []*TaskProgress, i int) bool {
	b := tasks[i].Best()
	for _, r := range tasks[i].Rivals {
		if rb := tasks[r].Best(); rb < b || rb == b && r < i {
			return true
		}
	}
	return false
}

// NextTask returns the index of the task the next round goes to, or -1
// when every task is dead. rr is a round-robin cursor the caller keeps.
func NextTask(tasks []*TaskProgress, opts SchedulerOptions, rr *int) int {
	// Warm-up: every live task gets one round first.
	for i, t := range tasks {
		if !t.Dead && t.Rounds() == 0 {
			return i
		}
	}
	if opts.Strategy == "round-robin" {
		for k := 0; k < len(tasks); k++ {
			i := (*rr + k) % len(tasks)
			if !tasks[i].Dead {
				*rr = i + 1
				return i
			}
		}
		return -1
	}
	vmax := map[string]float64{} // group → its best FLOP/s
	bmax := map[string]float64{} // group → its best bytes/s
	members := map[string]int{}
	for _, t := range tasks {
		members[t.Group]++
		if b := t.Best(); !math.IsInf(b, 1) && b > 0 {
			vmax[t.Group] = math.Max(vmax[t.Group], t.FLOPs/b)
			bmax[t.Group] = math.Max(bmax[t.Group], t.Bytes/b)
		}
	}
	best, bestGrad := -1, math.Inf(1)
	for i, t := range tasks {
		if t.Dead {
			continue
		}
		v := 0.0 // no bound for a task alone in its group
		if members[t.Group] > 1 {
			v = vmax[t.Group]
			if bw := bmax[t.Group]; bw > 0 && t.Bytes > 0 {
				v = math.Min(v, bw*t.FLOPs/t.Bytes) // the roofline's memory side
			}
		}
		g := gradient(tasks, t, opts, v)
		if g < bestGrad || best < 0 {
			best, bestGrad = i, g
		}
	}
	return best
}

// gradient estimates ∂objective/∂rounds for a task (negative: it helps);
// vmax is the best FLOP/s of its group (0: no bound). A task with no valid
// schedule yet gets -Inf: finding one matters most.
func gradient(tasks []*TaskProgress, t *TaskProgress, opts SchedulerOptions, vmax float64) float64 {
	g := t.Best()
	if math.IsInf(g, 1) {
		return math.Inf(-1)
	}
	n := t.Rounds()
	w := opts.Window
	if w < 1 {
		w = 1
	}
	backward := 0.0
	if n > w && !math.IsInf(t.History[n-1-w], 1) {
		backward = (g - t.History[n-1-w]) / float64(w)
	}
	forward := -g / float64(n)
	if vmax > 0 && t.FLOPs > 0 {
		forward = math.Min(forward, opts.Beta*t.FLOPs/vmax-g)
	}
	// A task a rival beats lowers the objective only by what it gains
	// beyond the rival's latency.
	if rb := rivalBest(tasks, t); rb < g {
		backward = 0
		forward = math.Min(0, g+forward-rb)
	}
	return t.Weight * (opts.Alpha*backward + (1-opts.Alpha)*forward)
}

// rivalBest returns the best latency among t's rivals (+Inf: none).
func rivalBest(tasks []*TaskProgress, t *TaskProgress) float64 {
	best := math.Inf(1)
	for _, r := range t.Rivals {
		best = math.Min(best, tasks[r].Best())
	}
	return best
}

// ApplyEarlyStopping marks tasks dead that had opts.EarlyStopping rounds
// without improvement.
func ApplyEarlyStopping(tasks []*TaskProgress, opts SchedulerOptions) {
	if opts.EarlyStopping <= 0 {
		return
	}
	for _, t := range tasks {
		n := t.Rounds()
		if t.Dead || n <= opts.EarlyStopping {
			continue
		}
		if t.History[n-1] >= t.History[n-1-opts.EarlyStopping] {
			t.Dead = true
		}
	}
}

// DecideRivals sets aside every live task that a rival beats by the
// factor lead once the task has had a round after its warm-up (a few
// measurements say little of what tuning will make of it): the model will
// run the rival, and trials on the loser are wasted. It returns the tasks
// it set aside. lead ≤ 1 decides nothing.
func DecideRivals(tasks []*TaskProgress, lead float64) []int {
	if lead <= 1 {
		return nil
	}
	var out []int
	for i, t := range tasks {
		if t.Dead || t.Rounds() < 2 || math.IsInf(t.Best(), 1) {
			continue
		}
		if rb := rivalBest(tasks, t); t.Best() > lead*rb {
			t.Dead = true
			out = append(out, i)
		}
	}
	return out
}

// CheckStrategy validates a strategy name.
func CheckStrategy(s string) error {
	switch s {
	case "", "gradient", "round-robin":
		return nil
	}
	return fmt.Errorf("unknown task scheduler strategy %q (want gradient or round-robin)", s)
}

// ioBytes returns the bytes of d's inputs (placeholders: activations and
// weights) and outputs: what a kernel of d reads and writes at least.
func ioBytes(d *te.DAG) float64 {
	n := 0.0
	for _, t := range d.Tensors {
		if t.IsPlaceholder() || d.IsOutput(t) {
			b := float64(t.DType().Bytes())
			for _, e := range t.Shape {
				b *= float64(e)
			}
			n += b
		}
	}
	return n
}
