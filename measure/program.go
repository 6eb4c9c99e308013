package measure

import (
	"context"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
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
	// Workspace is the bytes of scratch memory a CPU kernel takes after
	// its parameters (codegen.CSource.Workspace); 0: none.
	Workspace int
	// Params are the lowered kernel's parameters (the DAG's inputs, then
	// its outputs); a repacked constant has its packed shape and
	// tir.Buffer.Packed. nil: the DAG's own shapes.
	Params []*tir.Buffer
}

// Args returns the arguments of the program's kernel for DAG d: sized by
// its parameters, or by d when the generator gave none.
func (p Program) Args(d *te.DAG) []Arg {
	if p.Params == nil {
		return Args(d)
	}
	args := make([]Arg, len(p.Params))
	for i, b := range p.Params {
		args[i] = Arg{Name: b.Name, Size: b.Size(), DType: b.DType, Output: i >= len(p.Params)-len(d.Outputs)}
		if i < len(d.Inputs) {
			args[i].Weight = evicted(d.Inputs[i])
		}
	}
	return args
}

// Compiler builds sources, several at a time; one Built per source, in
// order, never failing as a whole. *Builder (a C compiler) is one.
type Compiler interface {
	Build(ctx context.Context, srcs []Source) []Built
}
