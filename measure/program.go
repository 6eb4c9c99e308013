package measure

import (
	"context"

	"tessera/codegen"
)

// Program is one candidate as a target's code generator printed it: the
// source the builder compiles and what the runner needs to call it.
type Program struct {
	Code string
	// Entry is the exported C function of a CPU kernel.
	Entry string
	// Launches are the GPU kernels of the candidate, launched in order;
	// nil on the CPU.
	Launches []codegen.Launch
	// Temps are the sizes in elements of the device buffers the launches
	// use between them (stages computed at the root in global memory).
	Temps []int
}

// Compiler builds sources, several at a time; one Built per source, in
// order, never failing as a whole. *Builder (a C compiler) is one.
type Compiler interface {
	Build(ctx context.Context, srcs []Source) []Built
}
