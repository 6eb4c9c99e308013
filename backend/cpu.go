package backend

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tir"
)

// CPUConfig configures the cpu target. The zero value is this machine with
// every core, the compiler $CC (else cc) and the search's timing protocol.
type CPUConfig struct {
	// Threads is OMP_NUM_THREADS of every measured kernel and of built
	// models; part of the target key. 0 means runtime.NumCPU().
	Threads int
	// Builder is the C compiler (command, flags, cache); nil means a zero
	// measure.Builder. Its CompilerID is part of the target key.
	Builder *measure.Builder
	// Run is the timing protocol; its Threads is set to Threads. The zero
	// value means measure.SearchRunOptions.
	Run measure.RunOptions
	// Codegen are the C printer's options; a zero VectorBits takes the
	// machine's.
	Codegen codegen.COptions
	// Machine is the processor the code is compiled for (the machine
	// model: -march, vector width, registers); part of the target key.
	// The zero value means DefaultMachine.
	Machine machine.Machine
	// Exec runs the harness under an emulator, for a Machine of another
	// architecture (measure.Runner.Exec).
	Exec []string
	// Key, when set, replaces the derived target key (tests and imported
	// records of a known machine).
	Key string
}

// CPU returns the cpu target: Ansor's CPU rules, annotation and mutations,
// kernels printed as C with OpenMP and vector types, compiled by the
// builder and timed in child processes on this machine.
func CPU(cfg CPUConfig) *Target {
	threads := cfg.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	b := cfg.Builder
	if b == nil {
		b = &measure.Builder{}
	}
	run := cfg.Run
	if run == (measure.RunOptions{}) {
		run = measure.SearchRunOptions(threads)
	}
	run.Threads = threads
	m := cfg.Machine
	if m.Arch == "" {
		m = MustDefaultMachine()
	}
	if b.March == "" && b.Flags == nil {
		b.March, b.Tune = m.March, m.Tune
	}
	opts := cfg.Codegen
	if opts.VectorBits == 0 {
		opts.VectorBits = m.VectorBits()
	}
	key := func() string { return b.TargetKey("cpu", threads) + " | " + m.Key() }
	if cfg.Key != "" {
		key = func() string { return cfg.Key }
	}
	return &Target{
		Name:      "cpu",
		Machine:   m,
		Sketch:    sketch.CPUOptions(m),
		Mutations: sketch.CPUMutations,
		Builder:   b,
		Runner:    &measure.Runner{Builder: b, Opts: run, Exec: cfg.Exec},
		Host:      b,
		lower:     schedule.Lower,
		module: func(f *tir.PrimFunc) (measure.Program, error) {
			src, err := codegen.C(f, opts)
			if err != nil {
				return measure.Program{}, err
			}
			return measure.Program{Code: src.Code, Workspace: src.Workspace[0]}, nil
		},
		dimModule: func(f *tir.PrimFunc) (measure.Program, error) {
			dim := opts
			dim.Dim = true
			src, err := codegen.C(f, dim)
			if err != nil {
				return measure.Program{}, err
			}
			return measure.Program{Code: src.Code, Workspace: src.Workspace[0]}, nil
		},
		key: key,
	}
}

// NativeMachine returns this host's machine model, read once per process;
// where it cannot be read (no /proc/cpuinfo), the base level of this
// architecture, whose code runs on any of its processors.
func NativeMachine() machine.Machine { return native() }

var native = sync.OnceValue(func() machine.Machine {
	m, err := machine.Native()
	if err == nil {
		return m
	}
	for _, name := range machine.Levels() {
		if l, lerr := machine.Level(name); lerr == nil && l.Arch == runtime.GOARCH {
			return l
		}
	}
	panic(fmt.Sprintf("target: no machine model for %s: %v", runtime.GOARCH, err))
})

// RunsHere returns an error naming what this host lacks to run code
// compiled for m, nil when it has everything.
func RunsHere(m machine.Machine) error {
	host := NativeMachine()
	if miss := m.Missing(host); len(miss) > 0 {
		return fmt.Errorf("this machine (%s) lacks %s", host.Level, strings.Join(miss, " "))
	}
	return nil
}

// DefaultMachine is the machine a cpu target compiles for when none is
// named: the one $TESSERA_CPU names (a --cpu value) where it is set, else
// this host. The variable lets a whole run, a test suite included, compile
// for a lower level than the host's: on an AVX-512 machine,
// TESSERA_CPU=x86-64-v3 go test ./... runs what an AVX2 machine would.
func DefaultMachine() (machine.Machine, error) {
	name := DefaultCPU()
	if name == "native" {
		return NativeMachine(), nil
	}
	m, err := machine.Resolve(name, (&measure.Builder{}).Command())
	if err != nil {
		return machine.Machine{}, fmt.Errorf("TESSERA_CPU: %w", err)
	}
	if err := RunsHere(m); err != nil {
		return machine.Machine{}, fmt.Errorf("TESSERA_CPU=%s: %w", name, err)
	}
	return m, nil
}

// MustDefaultMachine is DefaultMachine for tests and benchmarks: a bad
// $TESSERA_CPU panics with its error.
func MustDefaultMachine() machine.Machine {
	m, err := DefaultMachine()
	if err != nil {
		panic(fmt.Sprintf("target: %v", err))
	}
	return m
}
