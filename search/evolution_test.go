package search

import (
	"context"
	"math/rand/v2"
	"testing"

	"tessera/measure"
	"tessera/schedule"
	"tessera/te"
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
	d := te.ExampleDAGs()["matmul_bias_relu"]
	b := &measure.Builder{CacheDir: t.TempDir()}
	m := &measure.Measurer{Builder: b, Runner: &measure.Runner{Builder: b, Opts: measure.RunOptions{Threads: 1, Repeat: 1, MinRepeatMs: 1}}, Verify: true}
	defer m.Runner.Close()
	opts := DefaultOptions()
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
