package codegen

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// The code generator's passes: a lowered kernel body on its way to the
// printer, as a table.
//
//	tir.PrimFunc.Body ──Passes, in order (the CPU's or the GPU's)──▶ the body the printer emits
//
// Every pass is a rewrite tir → tir that keeps what the kernel computes
// (forward-updates may reorder a long sum's additions; see forward.go):
// the strict mode of the tests (Trace) interprets the body after each one
// and compares it with the reference evaluator. A pass has a name (for
// `tune inspect --dump NAME` and the strict mode's messages), the
// pipelines that run it, and a function. passOrder says which pass must
// run before which, and why; init checks it against the table, so a new
// pass is one row, its constraints and a test.

// Pass is one rewrite of a kernel body.
type Pass struct {
	Name string
	// CPU and GPU say which pipelines run the pass.
	CPU, GPU bool
	Run      func(s tir.Stmt, c *PassContext) tir.Stmt
}

// PassContext is what the passes know of the kernel they rewrite.
type PassContext struct {
	// Lanes is the native vector width in float32 lanes (on a GPU,
	// GPUVectorLanes: a float4).
	Lanes int
	// Dynamic holds the loops whose extent is given at run time
	// (tir.PrimFunc.Dynamic); split-vectors adds the chunk loops of a
	// dynamic vector loop to it, so the passes after it see them.
	Dynamic map[*tir.Var]bool
}

// Passes is the table, in the order the pipelines run them.
var Passes = []Pass{
	{Name: "partition-loops", CPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return partitionLoops(s) }},
	{Name: "version-guards", CPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return versionGuards(s) }},
	{Name: "unroll-vthreads", GPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return unrollVthreads(s) }},
	{Name: "split-vectors", CPU: true, GPU: true, Run: func(s tir.Stmt, c *PassContext) tir.Stmt { return splitVectors(s, c.Lanes, c.Dynamic) }},
	{Name: "strip-copies", CPU: true, GPU: true, Run: func(s tir.Stmt, c *PassContext) tir.Stmt { return stripCopies(s, c.Lanes, c.Dynamic) }},
	{Name: "unroll-local", CPU: true, GPU: true, Run: func(s tir.Stmt, c *PassContext) tir.Stmt { return unrollLocalLoops(s, c.Dynamic) }},
	{Name: "unroll", CPU: true, GPU: true, Run: func(s tir.Stmt, c *PassContext) tir.Stmt { return unroll(s, 0, c.Lanes, c.Dynamic) }},
	{Name: "split-borders", CPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return splitBorders(s) }},
	{Name: "fold-floats", CPU: true, GPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return foldFloats(s) }},
	{Name: "drop-noop-updates", CPU: true, GPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return dropNoopUpdates(s) }},
	{Name: "forward-updates", CPU: true, GPU: true, Run: func(s tir.Stmt, _ *PassContext) tir.Stmt { return forwardUpdates(s) }},
}

// passOrder lists the constraints on the order of Passes: Before runs
// before After, for the reason Why.
var passOrder = []struct{ Before, After, Why string }{
	{"partition-loops", "version-guards", "versioning takes the tile guards partitioning cannot (one failing in the last tile of every head of a fused loop); partitioning first leaves it fewer loops to copy"},
	{"partition-loops", "unroll", "partitioning cuts the serial loops the schedule made, so that an unrolled tail's guards fold to constants"},
	{"version-guards", "unroll", "versioning hoists the guards of innermost serial loops, which unrolling would copy"},
	{"unroll-vthreads", "unroll", "a virtual thread loop unrolls like an unrolled loop: unroll must see it marked so"},
	{"split-vectors", "strip-copies", "strip-copies groups one vectorized copy of native width, which split-vectors makes"},
	{"split-vectors", "unroll", "the chunk loops of a split vector loop are unrolled when short"},
	{"strip-copies", "unroll", "a strip-mined copy's block is an unrolled loop that the printer groups into one transpose"},
	{"unroll-local", "unroll", "unroll-local marks the loops over a local buffer unrolled; unroll expands them"},
	{"unroll", "fold-floats", "unrolling substitutes the constants that folding folds"},
	{"unroll", "split-borders", "a padding guard is a bound on the output loops alone once its tap is an unrolled constant"},
	{"split-borders", "drop-noop-updates", "the products split-borders drops leave the stores X = X + 0"},
	{"fold-floats", "drop-noop-updates", "the stores X = X + 0 appear once the zero terms are folded"},
	{"drop-noop-updates", "forward-updates", "a no-op store would otherwise join, and lengthen, a run of updates"},
	{"unroll", "forward-updates", "the runs of updates of one element are the unrolled terms of a reduction"},
}

func init() {
	if err := checkPassOrder(Passes); err != nil {
		panic("codegen: " + err.Error())
	}
}

// checkPassOrder checks the table against passOrder: names unique and
// known, every constraint kept.
func checkPassOrder(ps []Pass) error {
	at := map[string]int{}
	for i, p := range ps {
		if _, dup := at[p.Name]; dup {
			return fmt.Errorf("pass %s is in the table twice", p.Name)
		}
		if !p.CPU && !p.GPU {
			return fmt.Errorf("pass %s runs in no pipeline", p.Name)
		}
		at[p.Name] = i
	}
	for _, c := range passOrder {
		b, okb := at[c.Before]
		a, oka := at[c.After]
		switch {
		case !okb || !oka:
			return fmt.Errorf("the order constraint %s < %s names a pass the table lacks", c.Before, c.After)
		case b >= a:
			return fmt.Errorf("pass %s must run before %s: %s", c.Before, c.After, c.Why)
		}
	}
	return nil
}

// PassNames returns the names of the passes of the CPU (gpu false) or GPU
// pipeline, in order.
func PassNames(gpu bool) []string {
	var names []string
	for _, p := range Passes {
		if p.runs(gpu) {
			names = append(names, p.Name)
		}
	}
	return names
}

func (p Pass) runs(gpu bool) bool { return gpu && p.GPU || !gpu && p.CPU }

// runPasses runs the CPU's or the GPU's pipeline on s. after, when not
// nil, is called with each pass's name and result, and its error stops
// the pipeline.
func runPasses(s tir.Stmt, gpu bool, lanes int, dyn map[*tir.Var]bool, after func(pass string, s tir.Stmt) error) (tir.Stmt, error) {
	c := &PassContext{Lanes: lanes, Dynamic: maps.Clone(dyn)}
	if c.Dynamic == nil {
		c.Dynamic = map[*tir.Var]bool{}
	}
	for _, p := range Passes {
		if !p.runs(gpu) {
			continue
		}
		s = p.Run(s, c)
		if after != nil {
			if err := after(p.Name, s); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// Trace runs the pipeline of the CPU (lanes: its native float32 lanes) or
// of a GPU on f's body, as the printer does, and calls after with f's body
// replaced by each pass's result: `tune inspect --dump` prints it, the
// strict mode of the tests interprets it. An error from after stops it.
// A GPU function is traced kernel by kernel (tir.PrimFunc.Kernels), each
// body after the pass in place of its own.
func Trace(f *tir.PrimFunc, gpu bool, lanes int, after func(pass string, g *tir.PrimFunc) error) error {
	if !gpu {
		_, err := runPasses(f.Body, false, lanes, f.Dynamic, func(pass string, s tir.Stmt) error {
			g := *f
			g.Body = s
			return after(pass, &g)
		})
		return err
	}
	return traceGPU(f, after)
}

// validPass reports whether name is a pass of the table.
func validPass(name string) bool {
	return slices.ContainsFunc(Passes, func(p Pass) bool { return p.Name == name })
}
