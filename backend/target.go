// Package target says what differs between the machines Tessera tunes and
// builds for. A *Target bundles all of it: the sketch rules, the annotation
// order and the device's limits (Sketch), the mutations and their weights,
// the lowering, the code printer, the builder and runner that measure a
// candidate, the host compiler of built models, and the key under which
// records are stored. search, build and cmd/tune are given a *Target and
// never pick a target by themselves; CPU makes the one for this machine's
// processor, OpenCL and CUDA (gpu.go) the ones for its GPU, found and
// asked for its limits through a runner child process.
//
// The package sits between measure and search: it assembles sketch,
// schedule, codegen and measure into one value, and everything above takes
// that value.
package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tir"
)

// Target is one target: what sketch, lowering, code generation, measurement
// and records need to know of it. Construct it with CPU, OpenCL or CUDA; the fields must
// not change once it is in use. Close releases the runner's files.
type Target struct {
	// Name is the target's name on the command line: "cpu", "opencl", "cuda".
	Name string
	// Machine is the cpu target's machine model (zero on a GPU).
	Machine machine.Machine
	// Sketch are the sketch rules, the annotators and the limits.
	Sketch sketch.Options
	// Mutations are the search's mutations with their weights.
	Mutations []sketch.Mutation
	// Builder compiles candidates.
	Builder measure.Compiler
	// Runner times candidates.
	Runner *measure.Runner
	// Host is the C compiler of host programs and built model libraries
	// (for the cpu target, the candidates' compiler too).
	Host *measure.Builder

	lower  func(s *schedule.State, name string) (*tir.PrimFunc, error)
	module func(f *tir.PrimFunc) (measure.Program, error)
	// dimModule prints a kernel that takes a dimension's value at run time
	// (codegen.COptions.Dim; nil: the target has none).
	dimModule func(f *tir.PrimFunc) (measure.Program, error)
	gpu       *gpuInfo // nil on the CPU
	key       func() string
}

// Key is the target key of the records measured on this target: records
// are stored under it and looked up by it, so a record measured on another
// machine, device, driver, compiler or thread count is never taken as
// measured here.
func (t *Target) Key() string { return t.key() }

// Lower turns a complete state into the kernel function name: the target's
// lowering, with its checks (a state the target cannot run is an error).
func (t *Target) Lower(s *schedule.State, name string) (*tir.PrimFunc, error) {
	return t.lower(s, name)
}

// Features lowers a state for the target and returns its program features
// (costmodel.StateFeatures) as compiled for the target's machine: the cost
// model's input for a candidate.
func (t *Target) Features(s *schedule.State) ([][]float32, error) {
	return costmodel.StateFeatures(t.lower, hardware(t.Machine), s)
}

// hardware is what the cost model's features know of a machine: its
// vector registers (none for the zero Machine of a GPU target) and its
// cache line.
func hardware(m machine.Machine) costmodel.Hardware {
	return costmodel.Hardware{VectorBytes: m.VectorBytes, VectorRegs: m.VectorRegs, CacheLine: m.CacheLine()}
}

// Module prints a lowered kernel as a translation unit, with what is
// needed to call it (on the CPU its workspace, on a GPU its launches).
func (t *Target) Module(f *tir.PrimFunc) (measure.Program, error) {
	return t.module(f)
}

// Generate lowers and prints one candidate as measure.KernelName; it is the
// Measurer's Generate.
func (t *Target) Generate(s *schedule.State) (measure.Program, error) {
	f, err := t.lower(s, measure.KernelName)
	if err != nil {
		return measure.Program{}, err
	}
	p, err := t.module(f)
	if err != nil {
		return measure.Program{}, fmt.Errorf("codegen: %w", err)
	}
	if p.Entry == "" && len(p.Launches) == 0 {
		p.Entry = measure.KernelName
	}
	p.Params = f.Params
	return p, nil
}

// Measurer returns a Measurer of this target's builder and runner; with
// verify, every candidate's outputs are checked against the reference
// evaluator.
func (t *Target) Measurer(verify bool) *measure.Measurer {
	return &measure.Measurer{Generate: t.Generate, Builder: t.Builder, Runner: t.Runner, Verify: verify}
}

// Close removes the runner's data files.
func (t *Target) Close() error {
	if t.Runner == nil {
		return nil
	}
	return t.Runner.Close()
}

// ErrUnknown is returned by New for a target name it does not know.
var ErrUnknown = errors.New("unknown target")

// Names are the targets' names on the command line.
var Names = []string{"cpu", "opencl", "cuda"}

// NameOf returns the target name a target key starts with ("cpu" of
// "cpu threads=2 | cc ...").
func NameOf(key string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(key), " ")
	return name
}

// FeaturesOf returns the program features of states as the target a
// records key names lowers and compiles them (Target.Features), for reading
// records back without the device they were measured on: the lowering of
// the target's name, and on the CPU the machine the key holds.
func FeaturesOf(key string) (func(s *schedule.State) ([][]float32, error), error) {
	lower, err := LowerOf(key)
	if err != nil {
		return nil, err
	}
	var m machine.Machine // none: a GPU, or a key without a machine
	if NameOf(key) == "cpu" {
		if pm, ok := machine.ParseKey(key); ok {
			m = pm
		}
	}
	hw := hardware(m)
	return func(s *schedule.State) ([][]float32, error) { return costmodel.StateFeatures(lower, hw, s) }, nil
}

// LowerOf returns the lowering of the target a records key names, for
// reading records back (features of measured states) without the device
// they were measured on.
func LowerOf(key string) (func(s *schedule.State, name string) (*tir.PrimFunc, error), error) {
	switch NameOf(key) {
	case "cpu":
		return schedule.Lower, nil
	case "opencl", "cuda":
		return schedule.LowerGPU, nil
	}
	return nil, fmt.Errorf("target key %q: %w", key, ErrUnknown)
}

// Generator returns the Generate of this target with the C printer's
// options cg (a job's codegen options, measure/remote): Generate itself
// for the zero cg; only the cpu target prints C with other options.
func (t *Target) Generator(cg codegen.COptions) (func(*schedule.State) (measure.Program, error), error) {
	if cg == (codegen.COptions{}) {
		return t.Generate, nil
	}
	if t.Name != "cpu" {
		return nil, fmt.Errorf("codegen options %+v for target %s", cg, t.Name)
	}
	return CPU(CPUConfig{Threads: t.Runner.Opts.Threads, Builder: t.Host, Codegen: cg, Machine: t.Machine}).Generate, nil
}
