package target

import (
	"runtime"

	"tessera/codegen"
	"tessera/measure"
	"tessera/schedule"
	"tessera/sketch"
	"tessera/tir"
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
	// Codegen are the C printer's options.
	Codegen codegen.COptions
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
	opts := cfg.Codegen
	key := func() string { return b.TargetKey("cpu", threads) }
	if cfg.Key != "" {
		key = func() string { return cfg.Key }
	}
	return &Target{
		Name:      "cpu",
		Sketch:    sketch.CPUOptions(),
		Mutations: sketch.CPUMutations,
		Builder:   b,
		Runner:    &measure.Runner{Builder: b, Opts: run},
		Host:      b,
		lower:     schedule.Lower,
		module: func(fs []*tir.PrimFunc) (measure.Program, error) {
			code, err := codegen.CModule(fs, opts)
			return measure.Program{Code: code}, err
		},
		key: key,
	}
}
