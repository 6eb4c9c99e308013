package search

import (
	"math"
	"testing"
)

func TestNextTaskWarmUpThenGradient(t *testing.T) {
	inf := math.Inf(1)
	tasks := []*TaskProgress{
		{Weight: 1, FLOPs: 1e9, History: []float64{0.010, 0.009, 0.009, 0.009, 0.009}}, // flat
		{Weight: 1, FLOPs: 1e9, History: []float64{0.020, 0.015, 0.012, 0.010}},        // improving fast
		{Weight: 1, FLOPs: 1e6}, // never tuned
	}
	opts := DefaultSchedulerOptions()
	rr := 0
	if got := NextTask(tasks, opts, &rr); got != 2 {
		t.Fatalf("warm-up: picked %d, want the untuned task 2", got)
	}
	tasks[2].History = []float64{inf}
	if got := NextTask(tasks, opts, &rr); got != 2 {
		t.Fatalf("a task without a valid schedule should come first, got %d", got)
	}
	tasks[2].History = []float64{1e-6} // tiny task, already at the best throughput
	if got := NextTask(tasks, opts, &rr); got != 1 {
		t.Fatalf("gradient: picked %d, want the improving task 1", got)
	}
	tasks[1].Weight = 0.01 // it hardly matters to the model latency
	if got := NextTask(tasks, opts, &rr); got != 0 {
		t.Fatalf("weighted gradient: picked %d, want task 0", got)
	}
	opts.Strategy = "round-robin"
	seen := map[int]bool{}
	for k := 0; k < 3; k++ {
		seen[NextTask(tasks, opts, &rr)] = true
	}
	if len(seen) != 3 {
		t.Errorf("round-robin visited %v", seen)
	}
	for _, tk := range tasks {
		tk.Dead = true
	}
	if got := NextTask(tasks, opts, &rr); got != -1 {
		t.Errorf("all dead: picked %d", got)
	}
}

func TestEarlyStoppingAndObjective(t *testing.T) {
	tasks := []*TaskProgress{
		{Weight: 2, History: []float64{3, 2, 2, 2}},
		{Weight: 1, History: []float64{5, 4, 3, 2}},
		{Weight: 1, History: []float64{math.Inf(1)}, Dead: true},
	}
	ApplyEarlyStopping(tasks, SchedulerOptions{EarlyStopping: 2})
	if !tasks[0].Dead || tasks[1].Dead {
		t.Errorf("early stopping: dead = %v %v", tasks[0].Dead, tasks[1].Dead)
	}
	if f, complete := Objective(tasks); f != 6 || !complete {
		t.Errorf("objective = %v %v, want 6 true", f, complete)
	}
	if CheckStrategy("gradient") != nil || CheckStrategy("fifo") == nil {
		t.Error("strategy names")
	}
}

// TestRivals: of two tasks that compute the same groups by two algorithms,
// only the faster counts in the objective, and the scheduler leaves a
// beaten task alone while its likely gain does not reach its rival.
func TestRivals(t *testing.T) {
	tasks := []*TaskProgress{
		{Weight: 2, FLOPs: 1e9, History: []float64{0.004, 0.003, 0.003, 0.003}, Rivals: []int{1}}, // direct
		{Weight: 2, FLOPs: 1e9, History: []float64{0.020, 0.019, 0.018, 0.017}, Rivals: []int{0}}, // a slow alternative
		{Weight: 1, FLOPs: 1e9, History: []float64{0.010, 0.009, 0.009, 0.009}},
	}
	if f, _ := Objective(tasks); math.Abs(f-(2*0.003+0.009)) > 1e-12 {
		t.Errorf("objective %v, want %v (the slow alternative does not count)", f, 2*0.003+0.009)
	}
	opts := DefaultSchedulerOptions()
	rr := 0
	if got := NextTask(tasks, opts, &rr); got == 1 {
		t.Errorf("picked the alternative that cannot catch up with its rival")
	}
	tasks[1].History = append(tasks[1].History, 0.002) // it overtook
	if f, _ := Objective(tasks); math.Abs(f-(2*0.002+0.009)) > 1e-12 {
		t.Errorf("objective %v after the alternative overtook", f)
	}
	tasks[0].History = append(tasks[0].History, 0.002) // a tie: the first listed counts once
	if f, _ := Objective(tasks); math.Abs(f-(2*0.002+0.009)) > 1e-12 {
		t.Errorf("objective %v on a tie", f)
	}
}

// TestDecideRivals: a task whose rival is faster by the lead is set aside
// after its first round beyond the warm-up; a close race, a task alone, a
// task with its warm-up only and a rival without a valid schedule decide
// nothing.
func TestDecideRivals(t *testing.T) {
	inf := math.Inf(1)
	tasks := []*TaskProgress{
		{History: []float64{0.004}, Rivals: []int{1}},
		{History: []float64{0.008, 0.007}, Rivals: []int{0}}, // 1.75× slower: set aside
		{History: []float64{0.010}, Rivals: []int{3}},
		{History: []float64{0.013, 0.012}, Rivals: []int{2}}, // 1.2×: still racing
		{History: []float64{0.010}, Rivals: []int{5}},
		{History: []float64{inf, inf}, Rivals: []int{4}}, // no valid schedule yet
		{History: []float64{0.5, 0.5}},
		{History: []float64{0.009}, Rivals: []int{8}}, // the warm-up only
		{History: []float64{0.001}, Rivals: []int{7}},
	}
	if got := DecideRivals(tasks, 0); got != nil {
		t.Errorf("lead 0 decided %v", got)
	}
	got := DecideRivals(tasks, 1.5)
	if len(got) != 1 || got[0] != 1 || !tasks[1].Dead {
		t.Errorf("set aside %v, want [1]", got)
	}
	for i, tk := range tasks {
		if i != 1 && tk.Dead {
			t.Errorf("task %d set aside", i)
		}
	}
}

// TestForwardBoundWithinGroup: the forward estimate's throughput bound
// comes from the tasks of a task's group only. A memory-bound
// matrix-vector product alone in its group (21 GFLOP/s, flat for ten
// rounds) no longer looks five times from the convolutions' 250 GFLOP/s;
// the round goes to the convolution instead. In one group, as every task
// was before, the product takes it.
func TestForwardBoundWithinGroup(t *testing.T) {
	build := func(gemmGroup string) []*TaskProgress {
		return []*TaskProgress{
			{Weight: 1, FLOPs: 1e8, History: flatHistory(0.4e-3, 40), Group: "Conv+Relu"}, // 250 GFLOP/s
			{Weight: 1, FLOPs: 2e7, History: flatHistory(0.1e-3, 5), Group: "Conv+Relu"},  // 200 GFLOP/s
			{Weight: 1, FLOPs: 2.5e6, History: flatHistory(0.12e-3, 10), Group: gemmGroup},
		}
	}
	rr := 0
	if got := NextTask(build("Reshape+Gemm"), DefaultSchedulerOptions(), &rr); got != 1 {
		t.Errorf("the product in a group of its own: picked task %d, want the convolution 1", got)
	}
	if got := NextTask(build("Conv+Relu"), DefaultSchedulerOptions(), &rr); got != 2 {
		t.Errorf("the product among the convolutions: picked task %d, want 2", got)
	}
}

// TestForwardBoundRoofline: in one group of the same ops, a memory-bound
// matrix-vector product (an LSTM step: 4 MB of weights, 24 GFLOP/s, its
// best flat for ten rounds, weight 62) is bounded by the group's best
// bytes/s times its arithmetic intensity, not by the GEMM's 177 GFLOP/s
// (an LSTM's head, 32 rows, one warm-up round): the round goes to the
// head. Without Bytes (the bound by FLOP/s alone) the step took it, as it
// took 960 of lstm_lm's 1,000 trials.
func TestForwardBoundRoofline(t *testing.T) {
	build := func(bytes bool) []*TaskProgress {
		ts := []*TaskProgress{
			{Weight: 62, FLOPs: 2.1e6, History: flatHistory(0.0889e-3, 16), Group: "MatMul+Add"}, // 24 GFLOP/s, 47 GB/s
			{Weight: 1, FLOPs: 131e6, History: flatHistory(0.74e-3, 1), Group: "MatMul+Add"},     // 177 GFLOP/s
			{Weight: 1, FLOPs: 131e6, History: flatHistory(1.273e-3, 1), Group: "MatMul+Add"},    // 103 GFLOP/s
		}
		if bytes {
			ts[0].Bytes, ts[1].Bytes, ts[2].Bytes = 4.2e6, 8.3e6, 8.3e6
		}
		return ts
	}
	rr := 0
	if got := NextTask(build(true), DefaultSchedulerOptions(), &rr); got != 2 {
		t.Errorf("with bytes: picked task %d, want the slow GEMM 2", got)
	}
	if got := NextTask(build(false), DefaultSchedulerOptions(), &rr); got != 0 {
		t.Errorf("without bytes: picked task %d, want the matrix-vector product 0 (the bound by FLOP/s alone)", got)
	}
}

// flatHistory is a task's history of n rounds at best latency v.
func flatHistory(v float64, n int) []float64 {
	h := make([]float64, n)
	for i := range h {
		h[i] = v
	}
	return h
}
