package main

import (
	"context"
	"fmt"
	"strings"

	"tessera/measure"
	"tessera/target"
)

// newTarget makes the target --target names. threads is the cpu target's
// thread count, run the timing protocol (zero: the search's), host the C
// compiler of candidates (cpu), of GPU runners, and of built model
// libraries. A GPU target asks its device for its limits first: without
// one the error says what is missing (no device, driver or runtime
// compiler).
func newTarget(name string, threads int, run measure.RunOptions, host *measure.Builder) (*target.Target, error) {
	switch name {
	case "cpu":
		return target.CPU(target.CPUConfig{Threads: threads, Builder: host, Run: run}), nil
	case "opencl":
		return target.OpenCL(context.Background(), target.GPUConfig{Host: host, Run: run})
	case "cuda":
		return target.CUDA(context.Background(), target.GPUConfig{Host: host, Run: run})
	}
	return nil, fmt.Errorf("--target %q: %w (known: %s)", name, target.ErrUnknown, strings.Join(target.Names, ", "))
}
