package main

import (
	"fmt"
	"strings"

	"tessera/measure"
	"tessera/target"
)

// newTarget makes the target --target names. threads is the cpu target's
// thread count, run its timing protocol (zero: the search's), host the C
// compiler of candidates (cpu) and of built model libraries.
func newTarget(name string, threads int, run measure.RunOptions, host *measure.Builder) (*target.Target, error) {
	switch name {
	case "cpu":
		return target.CPU(target.CPUConfig{Threads: threads, Builder: host, Run: run}), nil
	}
	return nil, fmt.Errorf("--target %q: %w (known: %s)", name, target.ErrUnknown, strings.Join(target.Names, ", "))
}
