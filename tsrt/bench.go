package tsrt

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Timing a built model as tune bench does: end to end on random inputs
// (Bench), with every step of the executor timed too (Profile), and the
// report of both against the records the steps were compiled from
// (BenchReport, benchreport.go).

// Bench runs the model on random inputs (uniform in [-1, 1), fixed seed):
// once, then warmup times untimed, then repeat times timed; it returns the
// seconds of each timed run.
func (m *Model) Bench(ctx context.Context, warmup, repeat int, opts RunOptions) ([]float64, error) {
	times, _, err := m.bench(ctx, warmup, repeat, false, opts)
	return times, err
}

// Profile is Bench that also times every step of the executor (one kernel
// call, Manifest.Steps[i]): steps[i] is its mean seconds per timed run.
// The timed runs carry the cost of reading the clock around each call
// (two reads a step, well under a microsecond). Builds for a GPU cannot
// be profiled.
func (m *Model) Profile(ctx context.Context, warmup, repeat int, opts RunOptions) (times, steps []float64, err error) {
	times, steps, err = m.bench(ctx, warmup, repeat, true, opts)
	if err == nil && len(steps) != len(m.manifest.Steps) {
		return nil, nil, fmt.Errorf("%s: the library times %d steps, the manifest lists %d", m.dir, len(steps), len(m.manifest.Steps))
	}
	return times, steps, err
}

func (m *Model) bench(ctx context.Context, warmup, repeat int, profile bool, opts RunOptions) (times, steps []float64, err error) {
	man, err := m.needManifest()
	if err != nil {
		return nil, nil, err
	}
	if warmup < 0 || repeat < 1 {
		return nil, nil, fmt.Errorf("tsrt: bench: %d warm-up runs and %d repetitions (want ≥ 0 and ≥ 1)", warmup, repeat)
	}
	at, err := m.benchAt(opts)
	if err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ins := at.tensors(man.Inputs)
	inputs := make([][]float32, len(ins))
	for i, t := range ins {
		inputs[i] = make([]float32, t.Elems())
		for k := range inputs[i] {
			inputs[i][k] = float32(rng.Float64()*2 - 1)
		}
	}
	in, err := m.typed(ins, inputs)
	if err != nil {
		return nil, nil, err
	}
	if err := m.checkMemory(opts); err != nil {
		return nil, nil, err
	}
	if m.child != nil {
		_, res, err := m.child.run(ctx, m, in, at, false, warmup, repeat, profile, opts.threads())
		if err != nil {
			return nil, nil, fmt.Errorf("running %s: %w", m.dir, err)
		}
		return res.times, res.steps, nil
	}
	if err := m.SetThreads(opts.threads()); err != nil {
		return nil, nil, err
	}
	outs := make([]Tensor, len(m.outputs))
	for i, o := range m.outputs {
		o = o.At(int64(at.batch)).WithDim(int64(at.dim))
		outs[i] = Tensor{DType: o.DType, Shape: o.Shape, Data: make([]byte, o.Elems()*o.DType.Size())}
	}
	run := func() error {
		if err := m.RunInto(ctx, in, outs); err != nil {
			return fmt.Errorf("running %s: %w", m.dir, err)
		}
		return nil
	}
	for range 1 + warmup {
		if err := run(); err != nil {
			return nil, nil, err
		}
	}
	if profile {
		steps = make([]float64, len(m.steps))
		if err := m.SetProfile(steps); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.dir, err)
		}
		defer m.SetProfile(nil)
	}
	for range repeat {
		t0 := time.Now()
		if err := run(); err != nil {
			return nil, nil, err
		}
		times = append(times, time.Since(t0).Seconds())
	}
	if profile {
		if err := m.SetProfile(nil); err != nil {
			return nil, nil, err
		}
		for i := range steps {
			steps[i] /= float64(repeat)
		}
	}
	return times, steps, nil
}

// benchAt returns the batch and value Bench runs at: opts.Batch and
// opts.Dim, or the ranges' largest.
func (m *Model) benchAt(opts RunOptions) (runAt, error) {
	batch, err := m.benchValue(m.manifest.Batch, opts.Batch, 1, "batch")
	if err != nil {
		return runAt{}, err
	}
	dim, err := m.benchValue(m.manifest.Dim, opts.Dim, 0, "value of a dimension given at run time")
	return runAt{batch: batch, dim: dim}, err
}

// benchValue returns the value Bench runs a dynamic dimension of range r
// at: want, or the range's largest where want is 0. A model without the
// dimension (r nil) runs at none, and want must be 0 or none.
func (m *Model) benchValue(r *BatchInfo, want, none int, what string) (int, error) {
	if r == nil {
		if want != 0 && want != none {
			return 0, fmt.Errorf("%s: a %s of %d: the model was built without one (tune build --range builds it over one)", m.dir, what, want)
		}
		return none, nil
	}
	v := r.Hi
	if want != 0 {
		v = want
	}
	if v < r.Lo || v > r.Hi {
		return 0, fmt.Errorf("%s: %s %s=%d is outside the range %d..%d the model was built for", m.dir, what, r.Name, v, r.Lo, r.Hi)
	}
	return v, nil
}
