package measure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"tessera/codegen"
	"tessera/schedule"
	"tessera/te"
	"tessera/tir"
)

// Input is one candidate: a complete schedule of a task's DAG.
type Input struct {
	State *schedule.State
	// Cutoff, when positive, times a candidate whose first call lasts
	// longer with one more call only (see Job.Cutoff).
	Cutoff time.Duration
}

// Measurer measures candidates end to end: lower → C → build → run →
// (optionally) check against the reference evaluator.
type Measurer struct {
	Builder *Builder
	Runner  *Runner
	// Verify compares every candidate's outputs with the reference
	// evaluator on the same inputs; a mismatch is WrongResult.
	Verify bool
	// Codegen options for the C target.
	Codegen codegen.COptions

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
		args = append(args, Arg{Name: t.Name, Size: t.Size()})
	}
	for _, t := range d.Outputs {
		args = append(args, Arg{Name: t.Name, Size: t.Size(), Output: true})
	}
	return args
}

// FuncArgs returns the kernel arguments of a lowered function: its
// parameters in order, the last outputs of them written by the kernel.
// A parameter that holds a repacked constant (tir.Buffer.Packed) has its
// packed size.
func FuncArgs(f *tir.PrimFunc, outputs int) []Arg {
	args := make([]Arg, len(f.Params))
	for i, p := range f.Params {
		args[i] = Arg{Name: p.Name, Size: p.Size(), Output: i >= len(f.Params)-outputs}
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
// order. Lowering and code generation failures are CompileError results.
func (m *Measurer) Measure(ctx context.Context, inputs []Input) []Result {
	t0 := time.Now()
	results := make([]Result, len(inputs))
	srcs := make([]Source, 0, len(inputs))
	idx := make([]int, 0, len(inputs))
	funcs := make([]*tir.PrimFunc, len(inputs))
	for i, in := range inputs {
		code, f, err := m.source(in.State)
		if err != nil {
			results[i] = Result{Kind: CompileError, Msg: err.Error()}
			continue
		}
		funcs[i] = f
		srcs = append(srcs, Source{Code: code})
		idx = append(idx, i)
	}
	t1 := time.Now()
	built := m.Builder.Build(ctx, srcs)
	t2 := time.Now()
	compiled := 0
	for _, b := range built {
		if !b.Cached {
			compiled++
		}
	}
	var jobs []Job
	var jobIdx []int
	for k, b := range built {
		i := idx[k]
		if b.Kind != None {
			results[i] = Result{Kind: b.Kind, Msg: b.Msg}
			continue
		}
		d, f := inputs[i].State.DAG, funcs[i]
		job := Job{Lib: b.Path, Entry: kernelName, Args: FuncArgs(f, len(d.Outputs)), Cutoff: inputs[i].Cutoff}
		if m.Verify {
			job.Inputs = tir.PackArgs(f.Params, m.reference(d).inputs)
		} else {
			job.Seed = inputSeed
		}
		jobs = append(jobs, job)
		jobIdx = append(jobIdx, i)
	}
	m.Runner.Opts.Check = m.Verify // the Measurer owns its Runner
	ran := m.Runner.Run(ctx, jobs)
	t3 := time.Now()
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
		results[i] = r
	}
	return results
}

const kernelName = "tessera_kernel"

func (m *Measurer) source(s *schedule.State) (string, *tir.PrimFunc, error) {
	f, err := schedule.Lower(s, kernelName)
	if err != nil {
		return "", nil, err
	}
	code, err := codegen.C(f, m.Codegen)
	if err != nil {
		return "", nil, fmt.Errorf("codegen: %w", err)
	}
	return code, f, nil
}

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
		if ok, msg := Compare(r.Outputs[k], want, tol, tol); !ok {
			r.Kind, r.Msg = WrongResult, fmt.Sprintf("output %s: %s", d.Outputs[k].Name, msg)
			return r
		}
	}
	r.Outputs = nil
	return r
}
