package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"tessera/measure"
	"tessera/target"
	"tessera/target/machine"
)

// newTarget makes the target --target names. cpu is the cpu target's
// machine (--cpu: native, a level or a -march name), threads its thread
// count, run the timing protocol (zero: the search's), host the C
// compiler of candidates (cpu), of GPU runners, and of built model
// libraries. A GPU target asks its device for its limits first: without
// one the error says what is missing (no device, driver or runtime
// compiler). With measures, the cpu machine must run on this host.
func newTarget(name, cpu string, threads int, run measure.RunOptions, host *measure.Builder, measures bool) (*target.Target, error) {
	// A GPU target refuses a --cpu given on its command line; the default
	// ($TESSERA_CPU) is the cpu target's only.
	if name != "cpu" && cpu != "" && cpu != "native" && cpu != cpuDefault() {
		return nil, fmt.Errorf("--cpu %s: only the cpu target takes --cpu, not %s", cpu, name)
	}
	switch name {
	case "cpu":
		m, err := cpuMachine(cpu, host, measures)
		if err != nil {
			return nil, err
		}
		return target.CPU(target.CPUConfig{Threads: threads, Builder: host, Run: run, Machine: m}), nil
	case "opencl":
		return target.OpenCL(context.Background(), target.GPUConfig{Host: host, Run: run})
	case "cuda":
		return target.CUDA(context.Background(), target.GPUConfig{Host: host, Run: run})
	}
	return nil, fmt.Errorf("--target %q: %w (known: %s)", name, target.ErrUnknown, strings.Join(target.Names, ", "))
}

// cpuDefault is --cpu's default: $TESSERA_CPU where set, else native.
func cpuDefault() string {
	if c := os.Getenv("TESSERA_CPU"); c != "" {
		return c
	}
	return "native"
}

// cpuFlagHelp is the help of --cpu.
var cpuFlagHelp = "the processor to compile for: native (this machine), a portable level (" +
	strings.Join(machine.Levels(), ", ") + ") or a compiler -march `NAME` (znver3, skylake-avx512, ...); part of the target key; the default is $TESSERA_CPU where set"

// cpuMachine resolves --cpu. A machine this host cannot run is refused
// where candidates are measured (measures), naming what the host lacks.
func cpuMachine(cpu string, host *measure.Builder, measures bool) (machine.Machine, error) {
	m, err := machine.Resolve(cpu, host.Command())
	if err != nil {
		return machine.Machine{}, fmt.Errorf("--cpu: %w", err)
	}
	if !measures {
		return m, nil
	}
	if err := target.RunsHere(m); err != nil {
		return machine.Machine{}, fmt.Errorf("--cpu %s: %w: it can build for %s (tune build --cpu %s) but not measure its code", cpu, err, cpu, cpu)
	}
	return m, nil
}
