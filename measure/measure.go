package measure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Input is one candidate: a complete schedule of a task's DAG.
type Input struct {
	State *schedule.State
	// Cutoff, when positive, times a candidate whose first call lasts
	// longer with one more call only (see Job.Cutoff).
	Cutoff time.Duration
}

// Measurer measures candidates end to end: the target's lowering and code
// generator (Generate) → build → run → (optionally) check against the
// reference evaluator. A target (package backend) assembles one.
type Measurer struct {
	// Generate lowers and prints one candidate for the target.
	Generate func(s *schedule.State) (Program, error)
	Builder  Compiler
	Runner   *Runner
	// Run, when set, is the timing protocol of this Measurer's candidates
	// instead of Runner.Opts (Measurers that share a Runner).
	Run *RunOptions
	// Verify compares every candidate's outputs with the reference
	// evaluator on the same inputs; a mismatch is WrongResult.
	Verify bool
	// MaxMemory is the most bytes measuring one task may take (see
	// Footprint); 0 means DefaultMaxMemory. A batch of a larger task is
	// not measured: Measure returns an error wrapping ErrTooLarge.
	MaxMemory int64

	mu    sync.Mutex
	ref   map[*te.DAG]reference
	times Times
}

// Times is where a Measurer's wall time went, summed over every Measure
// call: lowering and code generation, the compiler (wall time of each
// batch's parallel build), and the timing runs.
type Times struct {
	Lower, Build, Run time.Duration
	Candidates        int
	Compiled          int // candidates the compiler ran for (not cached)
}

// Times returns the time spent so far.
func (m *Measurer) Times() Times {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.times
}

type reference struct {
	inputs  [][]float32
	outputs [][]float32
	err     error
}

// inputSeed fixes the random inputs of every task.
const inputSeed = 20201104

// Args returns the kernel arguments of a DAG: its inputs, then its outputs,
// the order schedule.Lower gives the parameters.
func Args(d *te.DAG) []Arg {
	var args []Arg
	for _, t := range d.Inputs {
		args = append(args, Arg{Name: t.Name, Size: t.Size(), DType: t.DType(), Weight: evicted(t)})
	}
	for _, t := range d.Outputs {
		args = append(args, Arg{Name: t.Name, Size: t.Size(), DType: t.DType(), Output: true})
	}
	return args
}

// evicted reports whether an input of a DAG is a weight the timing evicts
// from the caches before every call (Arg.Weight): a constant, unless the
// task's occurrences read it one after another (te.Tensor.Reused).
func evicted(t *te.Tensor) bool { return t.Const && !t.Reused }

// FuncArgs returns the kernel arguments of a lowered function: its
// parameters in order, the last outputs of them written by the kernel.
// A parameter that holds a repacked constant (tir.Buffer.Packed) has its
// packed size.
func FuncArgs(f *tir.PrimFunc, outputs int) []Arg {
	args := make([]Arg, len(f.Params))
	for i, p := range f.Params {
		args[i] = Arg{Name: p.Name, Size: p.Size(), DType: p.DType, Output: i >= len(f.Params)-outputs}
	}
	return args
}

// Tolerance returns the tolerance for comparing a DAG's outputs with the
// reference evaluator's (see te.DAG.Tolerance).
func Tolerance(d *te.DAG) float64 { return d.Tolerance() }

func (m *Measurer) reference(d *te.DAG) reference {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.ref[d]; ok {
		return r
	}
	if m.ref == nil {
		m.ref = map[*te.DAG]reference{}
	}
	var r reference
	args := Args(d)
	all := RandomInputs(args, inputSeed)
	r.inputs = all[:len(d.Inputs)]
	r.outputs, r.err = d.Eval(r.inputs)
	m.ref[d] = r
	return r
}

// Measure lowers, builds and runs every input; one Result per input, in
// order. Every failure of a candidate is its Result: lowering and code
// generation failures are CompileError results.
//
// The error is for a batch that could not be measured for a reason that is
// none of its candidates': ctx ended, the runner's harness or the build
// cache could not be set up, the compiler could not be started. Then no
// results come back; callers must never record such an error as a
// candidate's (it would mark a good schedule as failed forever).
func (m *Measurer) Measure(ctx context.Context, inputs []Input) ([]Result, error) {
	if m.Generate == nil {
		return nil, errors.New("measure: Measurer.Generate is nil (a target makes the Measurer)")
	}
	for _, in := range inputs {
		if err := CheckFootprint(in.State.DAG, m.MaxMemory); err != nil {
			return nil, fmt.Errorf("measure: %w", err)
		}
	}
	if err := m.Runner.Ready(ctx); err != nil {
		return nil, fmt.Errorf("measure: the runner is not ready: %w", err)
	}
	t0 := time.Now()
	results := make([]Result, len(inputs))
	srcs := make([]Source, 0, len(inputs))
	progs := make([]Program, 0, len(inputs))
	idx := make([]int, 0, len(inputs))
	for i, in := range inputs {
		p, err := m.Generate(in.State)
		if err != nil {
			results[i] = Result{Kind: CompileError, Msg: err.Error()}
			continue
		}
		srcs = append(srcs, Source{Code: p.Code})
		progs = append(progs, p)
		idx = append(idx, i)
	}
	t1 := time.Now()
	built := m.Builder.Build(ctx, srcs)
	t2 := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	compiled := 0
	for _, b := range built {
		if b.Infra {
			return nil, fmt.Errorf("measure: build: %s", b.Msg)
		}
		if !b.Cached {
			compiled++
		}
	}
	var jobs []Job
	var jobIdx, jobBuilt []int // the input and the build of each job
	for k, b := range built {
		i := idx[k]
		if b.Kind != None {
			results[i] = Result{Kind: b.Kind, Msg: b.Msg, BuildTime: b.Time, Cached: b.Cached}
			continue
		}
		d, p := inputs[i].State.DAG, progs[k]
		job := Job{Lib: b.Path, Entry: p.Entry, Launches: p.Launches, Temps: p.Temps, Args: p.Args(d), Workspace: p.Workspace, Cutoff: inputs[i].Cutoff}
		if m.Verify {
			job.Inputs = tir.PackArgs(p.Params, m.reference(d).inputs)
		} else {
			job.Seed = inputSeed
		}
		jobs = append(jobs, job)
		jobIdx = append(jobIdx, i)
		jobBuilt = append(jobBuilt, k)
	}
	opts := m.Runner.Opts
	if m.Run != nil {
		opts = *m.Run
	}
	opts.Check = m.Verify
	ran := m.Runner.RunWith(ctx, opts, jobs)
	t3 := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.times.Lower += t1.Sub(t0)
	m.times.Build += t2.Sub(t1)
	m.times.Run += t3.Sub(t2)
	m.times.Candidates += len(inputs)
	m.times.Compiled += compiled
	m.mu.Unlock()
	for k, r := range ran {
		i := jobIdx[k]
		if r.Kind == None && m.Verify {
			r = m.check(inputs[i].State.DAG, r)
		}
		r.BuildTime, r.Cached = built[jobBuilt[k]].Time, built[jobBuilt[k]].Cached
		results[i] = r
	}
	return results, nil
}

// KernelName is the name a Measurer's Generate gives a candidate's kernel.
const KernelName = "tessera_kernel"

// check compares a run's outputs with the reference.
func (m *Measurer) check(d *te.DAG, r Result) Result {
	ref := m.reference(d)
	if ref.err != nil {
		r.Kind, r.Msg = WrongResult, "reference evaluator: "+ref.err.Error()
		return r
	}
	tol := Tolerance(d)
	for k, want := range ref.outputs {
		if k >= len(r.Outputs) {
			r.Kind, r.Msg = WrongResult, "missing output"
			return r
		}
		if ok, msg := CompareOutput(d, d.Outputs[k], r.Outputs[k], want, tol, tol); !ok {
			r.Kind, r.Msg = WrongResult, fmt.Sprintf("output %s: %s", d.Outputs[k].Name, msg)
			return r
		}
	}
	r.Outputs = nil
	return r
}
