package search

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te/tetest"
)

type memLog struct {
	batches map[string][]Measured
	n       int
}

func (l *memLog) Commit(t *Task, b []Measured) error {
	if l.batches == nil {
		l.batches = map[string][]Measured{}
	}
	l.batches[t.Key] = append(l.batches[t.Key], b...)
	l.n += len(b)
	return nil
}

func TestTuneAndResume(t *testing.T) {
	var tasks []*Task
	for _, name := range []string{"matmul_bias_relu", "softmax"} {
		d := tetest.DAGs()[name]
		tasks = append(tasks, &Task{Key: d.WorkloadKey(), DAG: d, Weight: 2})
	}
	b := &measure.Builder{CacheDir: t.TempDir()}
	m := backend.CPU(backend.CPUConfig{Threads: 1, Builder: b, Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1}}).Measurer(true)
	defer m.Runner.Close()
	// Unrolling at most 16 steps: gcc takes seconds on a tile unrolled 512
	// steps, and what this test checks (budget, rounds, resuming) does not
	// depend on it.
	tg := testTarget()
	tg.Sketch.UnrollSteps = []int{0, 16}
	opts := TuneOptions{Trials: 20, PerRound: 5, Search: DefaultOptions(tg), Scheduler: DefaultSchedulerOptions()}
	opts.Search.Population, opts.Search.Generations = 48, 1
	rounds := 0
	opts.Progress = append(opts.Progress, func(p Progress) { rounds++ })
	log := &memLog{}
	model := &randomModel{rng: rand.New(rand.NewPCG(2, 2))}
	sum, err := Tune(context.Background(), tasks, nil, model, m, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 20 || log.n != 20 || rounds != 4 {
		t.Fatalf("trials %d, logged %d, rounds %d; want 20, 20, 4", sum.Trials, log.n, rounds)
	}
	for i, ts := range sum.Tasks {
		if ts.Trials == 0 || ts.BestState == nil {
			t.Errorf("task %d: %d trials, best %v (warm-up must give every task a round)", i, ts.Trials, ts.Best)
		}
	}
	// Resume: what was measured is never measured again.
	sum2, err := Tune(context.Background(), tasks, log.batches, model, m, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Prior != 20 || sum2.Trials != 20 {
		t.Fatalf("resume: prior %d trials %d", sum2.Prior, sum2.Trials)
	}
	for key, ms := range log.batches {
		seen := map[string]bool{}
		for _, m := range ms {
			data, _ := schedule.MarshalSteps(m.State.Steps)
			if seen[string(data)] {
				t.Fatalf("task %s: a state was measured twice across runs", key)
			}
			seen[string(data)] = true
		}
	}
	// Cancellation stops the loop; what was committed stays.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := log.n
	if _, err := Tune(ctx, tasks, log.batches, model, m, log, opts); err == nil {
		t.Error("canceled run returned no error")
	}
	if log.n != before {
		t.Errorf("canceled run committed %d records", log.n-before)
	}
}

// failingMeasurer measures its first batch and then fails as a machine
// does (no worker, no compiler).
type failingMeasurer struct{ batches int }

func (m *failingMeasurer) Measure(_ context.Context, in []measure.Input) ([]measure.Result, error) {
	m.batches++
	if m.batches > 1 {
		return nil, errors.New("no worker answers")
	}
	out := make([]measure.Result, len(in))
	for i := range out {
		out[i] = measure.Result{Costs: []float64{1e-3}}
	}
	return out, nil
}

// An infrastructure error stops the run with the error: the batch is not
// committed as failures, and the task is not set aside.
func TestTuneStopsOnInfrastructureError(t *testing.T) {
	d := tetest.DAGs()["matmul_bias_relu"]
	tasks := []*Task{{Key: d.WorkloadKey(), DAG: d, Weight: 1}}
	opts := TuneOptions{Trials: 20, PerRound: 5, Search: DefaultOptions(testTarget()), Scheduler: DefaultSchedulerOptions()}
	opts.Search.Population, opts.Search.Generations = 48, 1
	log := &memLog{}
	sum, err := Tune(context.Background(), tasks, nil, &randomModel{rng: rand.New(rand.NewPCG(2, 2))}, &failingMeasurer{}, log, opts)
	if !errors.Is(err, ErrMeasure) || !strings.Contains(err.Error(), "no worker answers") {
		t.Fatalf("error %v, want ErrMeasure with the cause", err)
	}
	if log.n != 5 || sum.Trials != 5 {
		t.Errorf("committed %d, trials %d; want the first batch only (5)", log.n, sum.Trials)
	}
	for _, m := range log.batches[d.WorkloadKey()] {
		if m.Result.Kind != measure.None {
			t.Errorf("a failure was recorded: %v %s", m.Result.Kind, m.Result.Msg)
		}
	}
	if sum.Tasks[0].Dead {
		t.Error("the task was set aside for the machine's failure")
	}
}

// fakeMeasurer "measures" every state at a made-up cost, instantly.
type fakeMeasurer struct{ n int }

func (f *fakeMeasurer) Measure(ctx context.Context, in []measure.Input) ([]measure.Result, error) {
	out := make([]measure.Result, len(in))
	for i := range out {
		f.n++
		out[i] = measure.Result{Costs: []float64{1e-3 / float64(f.n)}}
	}
	return out, nil
}

// TestTuneSmallBudgetMeasuresEveryTask: with fewer trials than tasks ×
// per-round, the warm-up rounds shrink so that every task is measured
// (the last tasks got nothing: ResNet-50's classifier had no schedule after
// a 2,000-trial run whose budget earlier runs had mostly used).
func TestTuneSmallBudgetMeasuresEveryTask(t *testing.T) {
	var tasks []*Task
	for _, name := range []string{"matmul_bias_relu", "relu", "softmax", "conv_bias_relu", "layernorm"} {
		d := tetest.DAGs()[name]
		tasks = append(tasks, &Task{Key: d.WorkloadKey(), DAG: d, Weight: 1})
	}
	opts := TuneOptions{Trials: 12, PerRound: 8, Search: DefaultOptions(testTarget()), Scheduler: DefaultSchedulerOptions()}
	opts.Search.Population, opts.Search.Generations = 32, 1
	log := &memLog{}
	sum, err := Tune(context.Background(), tasks, nil, &randomModel{rng: rand.New(rand.NewPCG(5, 5))}, &fakeMeasurer{}, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 12 || !sum.Complete {
		t.Errorf("%d trials, complete %v; want 12, every task with a schedule", sum.Trials, sum.Complete)
	}
	for i, ts := range sum.Tasks {
		if ts.Trials == 0 {
			t.Errorf("task %d (%s) was never measured", i, tasks[i].Key)
		}
	}
}

// TestTuneExhaustedTask: a task whose sketches give fewer distinct states
// than the budget is set aside once they are all measured (it looped
// forever), and the run ends, saying so; the other tasks get the rest of
// the budget.
func TestTuneExhaustedTask(t *testing.T) {
	relu := tetest.DAGs()["relu"]
	mm := tetest.DAGs()["matmul_bias_relu"]
	opts := TuneOptions{Trials: 40, PerRound: 8, Search: DefaultOptions(testTarget()), Scheduler: DefaultSchedulerOptions()}
	opts.Search.Population, opts.Search.Generations = 64, 2
	for _, c := range []struct {
		name   string
		tasks  []*Task
		trials func(int) bool
	}{
		{"alone", []*Task{{Key: relu.WorkloadKey(), DAG: relu, Weight: 1}}, func(n int) bool { return n > 0 && n < 40 }},
		{"beside another", []*Task{{Key: relu.WorkloadKey(), DAG: relu, Weight: 1}, {Key: mm.WorkloadKey(), DAG: mm, Weight: 1}}, func(n int) bool { return n == 40 }},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		log := &memLog{}
		sum, err := Tune(ctx, c.tasks, nil, &randomModel{rng: rand.New(rand.NewPCG(3, 3))}, &fakeMeasurer{}, log, opts)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v (a deadline here is the endless loop)", c.name, err)
		}
		if sum.Exhausted != 1 || !sum.Tasks[0].Exhausted || !c.trials(sum.Trials) || log.n != sum.Trials {
			t.Errorf("%s: %d trials (%d logged), %d exhausted, task 0 exhausted %v", c.name, sum.Trials, log.n, sum.Exhausted, sum.Tasks[0].Exhausted)
		}
		seen := map[string]bool{}
		for _, m := range log.batches[relu.WorkloadKey()] {
			k := sketch.Key(m.State)
			if seen[k] {
				t.Errorf("%s: a state of the exhausted task was measured twice", c.name)
			}
			seen[k] = true
		}
		// Resuming an exhausted task ends at once, measuring nothing.
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		sum2, err := Tune(ctx, c.tasks[:1], log.batches, &randomModel{rng: rand.New(rand.NewPCG(4, 4))}, &fakeMeasurer{}, log, opts)
		cancel()
		if err != nil || sum2.Trials != 0 || sum2.Exhausted != 1 {
			t.Errorf("%s: resume measured %d, exhausted %d, err %v", c.name, sum2.Trials, sum2.Exhausted, err)
		}
	}
}

// TestTuneWarmUpAndSeeds: with a warm-up of 3, every task's first batch
// is 3 measurements, the default schedule among them, and a seed given
// for a task is what the first batch measures when the model ranks it
// first.
func TestTuneWarmUpAndSeeds(t *testing.T) {
	var tasks []*Task
	for _, name := range []string{"matmul_bias_relu", "softmax", "conv_bias_relu"} {
		d := tetest.DAGs()[name]
		tasks = append(tasks, &Task{Key: d.WorkloadKey(), DAG: d, Weight: 1})
	}
	tg := testTarget()
	sk, err := sketch.Generate(schedule.NewState(tasks[0].DAG), tg.Sketch)
	if err != nil {
		t.Fatal(err)
	}
	// The seed is a sample whose features no other of 300 samples has: the
	// model can rank it alone first.
	rng := rand.New(rand.NewPCG(9, 9))
	var samples []*schedule.State
	var feats [][][]float32
	for range 300 {
		s, err := sketch.Sample(rng, sk[rng.IntN(len(sk))], tg.Sketch)
		if f, ferr := tg.Features(s); err == nil && ferr == nil {
			samples, feats = append(samples, s), append(feats, f)
		}
	}
	var seed *schedule.State
	var seedFeats [][]float32
	for i := range samples {
		n := 0
		for j := range samples {
			if slices.EqualFunc(feats[i], feats[j], slices.Equal[[]float32]) {
				n++
			}
		}
		if n == 1 {
			seed, seedFeats = samples[i], feats[i]
			break
		}
	}
	if seed == nil {
		t.Fatal("no sample has features of its own")
	}
	opts := TuneOptions{Trials: 9 + 8, PerRound: 8, WarmUp: 3, Search: DefaultOptions(tg), Scheduler: DefaultSchedulerOptions()}
	opts.Search.Population, opts.Search.Generations = 32, 1
	opts.Seeds = map[string][]*schedule.State{tasks[0].Key: {seed}}
	var firsts []int
	log := &memLog{}
	opts.Progress = []func(Progress){func(p Progress) {
		if len(firsts) < 3 {
			firsts = append(firsts, log.n)
		}
	}}
	model := &keyModel{favour: seedFeats}
	sum, err := Tune(context.Background(), tasks, nil, model, &fakeMeasurer{}, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 17 || len(firsts) != 3 || firsts[0] != 3 || firsts[1] != 6 || firsts[2] != 9 {
		t.Errorf("%d trials, measured after each warm-up round %v; want 17, [3 6 9]", sum.Trials, firsts)
	}
	var found bool
	for _, m := range log.batches[tasks[0].Key][:3] {
		found = found || sketch.Key(m.State) == sketch.Key(seed)
	}
	if !found {
		t.Error("the seed the model ranks first was not in the task's warm-up batch")
	}
}

// keyModel scores the programs whose features are favour's above all
// others.
type keyModel struct {
	favour [][]float32
}

func (m *keyModel) Predict(programs [][][]float32) []float64 {
	out := make([]float64, len(programs))
	for i, p := range programs {
		out[i] = 0.5
		if slices.EqualFunc(p, m.favour, slices.Equal[[]float32]) {
			out[i] = 1
		}
	}
	return out
}

func (m *keyModel) Update(string, [][][]float32, []float64) error { return nil }

// TestTuneEmphasis: a task's emphasis (tune --weights) scales its weight
// in the objective, so the scheduler gives it the trials after the
// warm-up; swapped, the other task gets them.
func TestTuneEmphasis(t *testing.T) {
	var tasks []*Task
	for _, name := range []string{"matmul_bias_relu", "softmax"} {
		d := tetest.DAGs()[name]
		tasks = append(tasks, &Task{Key: d.WorkloadKey(), DAG: d, Weight: 1})
	}
	for favored := range tasks {
		opts := TuneOptions{Trials: 48, PerRound: 8, Search: DefaultOptions(testTarget()), Scheduler: DefaultSchedulerOptions(),
			Emphasis: map[string]float64{tasks[favored].Key: 20}}
		opts.Search.Population, opts.Search.Generations = 32, 1
		var weights []float64
		opts.Progress = []func(Progress){func(p Progress) {
			weights = weights[:0]
			for _, tp := range p.Tasks {
				weights = append(weights, tp.Weight)
			}
		}}
		sum, err := Tune(context.Background(), tasks, nil, &randomModel{rng: rand.New(rand.NewPCG(7, 7))}, &fakeMeasurer{}, &memLog{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if weights[favored] != 20 || weights[1-favored] != 1 {
			t.Errorf("favoring task %d: weights %v, want 20 and 1", favored, weights)
		}
		if a, b := sum.Tasks[favored].Trials, sum.Tasks[1-favored].Trials; a < 3*b {
			t.Errorf("favoring task %d: %d trials against %d for the other; want at least 3x", favored, a, b)
		}
	}
}
