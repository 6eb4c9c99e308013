package search

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

// randomModel scores at random and remembers how many updates it saw.
type randomModel struct {
	rng     *rand.Rand
	updates int
	seen    int
}

func (m *randomModel) Predict(ps [][][]float32) []float64 {
	out := make([]float64, len(ps))
	for i := range out {
		out[i] = m.rng.Float64()
	}
	return out
}

func (m *randomModel) Update(task string, ps [][][]float32, costs []float64) error {
	m.updates++
	m.seen += len(ps)
	return nil
}

func TestPolicyRounds(t *testing.T) {
	d := tetest.DAGs()["matmul_bias_relu"]
	b := &measure.Builder{CacheDir: t.TempDir()}
	m := backend.CPU(backend.CPUConfig{Threads: 1, Builder: b, Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1}}).Measurer(true)
	defer m.Runner.Close()
	opts := DefaultOptions(testTarget())
	opts.Population, opts.Generations = 64, 2
	model := &randomModel{rng: rand.New(rand.NewPCG(1, 1))}
	p, err := NewPolicy(d.WorkloadKey(), schedule.NewState(d), opts, model, m)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for round := 0; round < 3; round++ {
		got, err := p.Round(context.Background(), 6)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 {
			t.Fatalf("round %d measured %d states, want 6", round, len(got))
		}
		for _, g := range got {
			if g.Result.Kind != measure.None {
				t.Errorf("round %d: %v: %s\n%v", round, g.Result.Kind, g.Result.Msg, g.State)
			}
			data, _ := schedule.MarshalSteps(g.State.Steps)
			if keys[string(data)] {
				t.Errorf("round %d measured a state twice:\n%v", round, g.State)
			}
			keys[string(data)] = true
		}
	}
	if model.updates != 3 || model.seen != 18 {
		t.Errorf("model saw %d updates of %d programs, want 3 of 18", model.updates, model.seen)
	}
	if best, cost := p.Best(); best == nil || cost <= 0 {
		t.Errorf("no best state after 3 rounds")
	}
}

// TestProposeIsDeterministic: children are made in parallel, but the same
// seed proposes the same states in the same order, whatever the scheduling.
func TestProposeIsDeterministic(t *testing.T) {
	d := tetest.DAGs()["matmul_bias_relu"]
	propose := func() []string {
		opts := DefaultOptions(testTarget())
		opts.Population, opts.Generations, opts.Seed = 128, 3, 7
		// A model that scores by a hash of the features, the same every run.
		p, err := NewPolicy(d.WorkloadKey(), schedule.NewState(d), opts, featureModel{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cands, err := p.Propose(16)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]string, len(cands))
		for i, c := range cands {
			keys[i] = c.Key
		}
		return keys
	}
	first := propose()
	if len(first) != 16 {
		t.Fatalf("proposed %d states, want 16", len(first))
	}
	for run := 0; run < 3; run++ {
		if got := propose(); !slices.Equal(got, first) {
			t.Fatalf("run %d proposed other states:\n%v\nthan the first:\n%v", run, got, first)
		}
	}
}

// featureModel scores a program by a fixed function of its features.
type featureModel struct{}

func (featureModel) Predict(ps [][][]float32) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		h := 0.0
		for _, row := range p {
			for k, v := range row {
				h += float64(v) * float64(k%7+1)
			}
		}
		out[i] = math.Mod(h, 1000)
	}
	return out
}

func (featureModel) Update(string, [][][]float32, []float64) error { return nil }

// matmulPolicy is a policy of the matmul_bias_relu example (population 64,
// one generation), with its DAG, default schedule and options.
func matmulPolicy(t *testing.T) (*te.DAG, *schedule.State, Options, *Policy) {
	t.Helper()
	d := tetest.DAGs()["matmul_bias_relu"]
	def, _, err := sketch.Default(schedule.NewState(d), testTarget().Sketch)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions(testTarget())
	opts.Population, opts.Generations = 64, 1
	p, err := NewPolicy(d.WorkloadKey(), schedule.NewState(d), opts, featureModel{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d, def, opts, p
}

// TestFirstRoundMeasuresDefault: the first batch of a task holds its
// default schedule, once; a policy that knows it measured says nothing of
// it again.
func TestFirstRoundMeasuresDefault(t *testing.T) {
	d, def, opts, p := matmulPolicy(t)
	cands, err := p.Propose(8)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) == 0 || cands[0].Key != sketch.Key(def) {
		t.Fatalf("the first batch does not start with the default schedule")
	}
	p.AddMeasured([]Measured{{State: def}})
	if cands, err = p.Propose(8); err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Key == sketch.Key(def) {
			t.Fatalf("the default schedule is proposed again after it was measured")
		}
	}
	opts.MeasureDefault = false
	q, _ := NewPolicy(d.WorkloadKey(), schedule.NewState(d), opts, featureModel{}, nil)
	if cands, _ = q.Propose(8); len(cands) > 0 && cands[0].Key == sketch.Key(def) {
		t.Errorf("MeasureDefault off, and the default schedule is still the first pick")
	}
}

// TestOnDefault: a policy is on its default schedule while that is its
// fastest measurement, and off it once another is faster; with nothing
// valid measured, it is on none.
func TestOnDefault(t *testing.T) {
	_, def, _, p := matmulPolicy(t)
	if p.OnDefault() {
		t.Error("on the default schedule before any measurement")
	}
	cands, err := p.Propose(4)
	if err != nil || len(cands) < 2 {
		t.Fatalf("%d candidates, %v", len(cands), err)
	}
	p.AddMeasured([]Measured{{State: def, Result: measure.Result{Costs: []float64{1e-3}}}})
	if !p.OnDefault() {
		t.Error("the default schedule is the only measurement, and the policy is not on it")
	}
	p.AddMeasured([]Measured{{State: cands[1].State, Result: measure.Result{Costs: []float64{2e-3}}}})
	if !p.OnDefault() {
		t.Error("a slower schedule took the policy off its default")
	}
	p.AddMeasured([]Measured{{State: cands[1].State, Result: measure.Result{Costs: []float64{0.5e-3}}}})
	if p.OnDefault() {
		t.Error("a faster schedule left the policy on its default")
	}
}

// cutoffMeasurer gives every candidate the same cost and remembers the
// cutoffs it was asked to use.
type cutoffMeasurer struct {
	cost    float64
	cutoffs []time.Duration
}

func (m *cutoffMeasurer) Measure(_ context.Context, in []measure.Input) ([]measure.Result, error) {
	out := make([]measure.Result, len(in))
	for i, x := range in {
		m.cutoffs = append(m.cutoffs, x.Cutoff)
		out[i] = measure.Result{Costs: []float64{m.cost}}
	}
	return out, nil
}

func TestSlowCutoff(t *testing.T) {
	d := tetest.DAGs()["matmul_bias_relu"]
	for _, tt := range []struct {
		name   string
		cost   float64 // of every candidate, seconds
		factor float64
		want   time.Duration // cutoff of the second round
	}{
		{"5× best", 0.004, 5, 20 * time.Millisecond},
		{"floor", 1e-6, 5, minCutoff},
		{"off", 0.004, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions(testTarget())
			opts.Population, opts.Generations = 64, 1
			opts.SlowCutoff = tt.factor
			m := &cutoffMeasurer{cost: tt.cost}
			p, err := NewPolicy(d.WorkloadKey(), schedule.NewState(d), opts, featureModel{}, m)
			if err != nil {
				t.Fatal(err)
			}
			for round := 0; round < 2; round++ {
				if _, err := p.Round(context.Background(), 4); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range m.cutoffs {
				want := tt.want
				if i < 4 { // nothing measured yet: no best to compare with
					want = 0
				}
				if c != want {
					t.Errorf("candidate %d: cutoff %v, want %v", i, c, want)
				}
			}
		})
	}
}

// testTarget is the cpu target of the tests: one thread.
func testTarget() *backend.Target { return backend.CPU(backend.CPUConfig{Threads: 1}) }
