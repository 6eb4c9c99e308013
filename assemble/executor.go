package assemble

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tsrt"
)

// The executor: groups in plan order → calls with their buffers.
//
//	plan.Groups ──placement of every value──▶ []call + []copyOut + weights + arena plan
//
// Every value a kernel reads or writes lives in one of four places: the
// caller's input buffers (graph inputs), the caller's output buffers
// (graph outputs, written there directly by the group that computes them),
// the weights blob (constants) or the arena (every other value: the
// intermediate tensors, placed by the memory planner). A graph output that
// no group computes (an input or a constant passed through, or a value
// listed twice among the outputs) is copied into its buffer after the last
// call.
//
// A model built over a dynamic batch (Options.Batch) is planned at batch
// 1: a call that reads or writes a batched value runs once per sample of
// the run's batch, each batched value's address advanced by its elements
// per sample, and the arena holds its batched tensors at the range's
// largest batch.

// placeKind says which memory holds a value.
type placeKind uint8

const (
	inInput placeKind = iota
	inOutput
	inWeights
	inArena
)

// place is where the executor finds a value.
type place struct {
	kind   placeKind
	index  int   // the input or output number (inInput, inOutput)
	offset int64 // bytes into the weights payload or the arena
	elems  int
	dt     tir.DType // the element type in memory (ops.Storage)
	buf    int       // inArena: the buffer in program.bufs whose offset it is
	// batched: the value's leading dimension is the batch; elems are one
	// sample's, and sample n starts n·elems floats in.
	batched bool
	// sample, where set, is the C expression of one sample's elements in
	// a run (a model input or output over the dimension given at run
	// time: they are as many as the run's value makes them); elems are
	// then those at the range's largest value.
	sample string
}

// cExpr returns the value's address in the executor's C, where in and out
// are the caller's buffer arrays and w and a the weights and the arena.
func (p place) cExpr() string {
	switch p.kind {
	case inInput:
		return fmt.Sprintf("(float *)in[%d]", p.index)
	case inOutput:
		return fmt.Sprintf("out[%d]", p.index)
	case inWeights:
		return fmt.Sprintf("w + %d", p.offset/4)
	}
	return fmt.Sprintf("a + %d", p.offset/4)
}

// bytes is the size of the value in memory.
func (p place) bytes() int64 { return int64(p.elems) * int64(p.dt.Bytes()) }

// cExprAt returns the address of sample n's part of a batched value (the
// value's address for any other), where n is a C variable.
func (p place) cExprAt(n string) string {
	if !p.batched {
		return p.cExpr()
	}
	stride := fmt.Sprint(p.elems)
	if p.sample != "" {
		stride = p.sample
	}
	if size := p.dt.Bytes(); size != 4 {
		return fmt.Sprintf("(float *)((char *)(%s) + (%s) * %s * %d)", p.cExpr(), n, stride, size)
	}
	return fmt.Sprintf("%s + %s * %s", p.cExpr(), n, stride)
}

// batched reports whether the call reads or writes a batched value: it
// runs once per sample.
func (c call) batched() bool {
	for _, a := range c.args {
		if a.batched {
			return true
		}
	}
	return false
}

// call is one kernel call of the executor.
type call struct {
	group *partition.Group
	task  int
	args  []place // the group's inputs, then its outputs: the kernel's parameter order
	// variants, in a model built over a dimension given at run time, are
	// the arguments of each variant of the task's kernels (kernel.variants;
	// args the first): the constants packed each variant's way.
	variants [][]place
	// checks are the run-time indices the group's nodes read, checked
	// before the kernel runs (indices.go).
	checks []indexCheck
}

// copyOut fills output buffer dst from src after the last call.
type copyOut struct {
	dst int
	src place
}

// program is everything the executor's C is generated from.
type program struct {
	inputs, outputs []tsrt.ManifestTensor
	calls           []call
	copies          []copyOut
	weights         weightsBlob
	bufs            []Buffer // the arena's tensors and the kernels' workspaces
	workspace       int64    // the largest kernel workspace
	mem             *MemoryPlan
	batch           *tsrt.BatchInfo // nil for a model of static shapes
	dim             *tsrt.BatchInfo // the dimension given at run time; nil if none
}

// planProgram places every value of the plan's groups and plans the arena.
// kernels are the tasks' kernels: a constant that a kernel takes repacked
// (tir.Buffer.Packed) is stored in the weights in that layout, once per
// layout it is read in. A kernel's workspace (kernel.workspace) is a
// buffer of the arena that lives during its call only, passed after its
// parameters: a run's memory is its context's arena, whatever runs
// beside it. batch is nil, or the plan over a dynamic batch whose model at
// batch 1 g and plan are. dim is nil, or the plans over a dimension given
// at run time, g and plan those at its largest value: every buffer is
// placed at its size there, which holds it at any value.
func planProgram(g *graph.Graph, plan *partition.Plan, kernels []kernel, batch *partition.BatchPlan, dim *partition.DimPlan) (*program, error) {
	p := &program{}
	dimAxes := func(string) ([]int, error) { return nil, nil }
	if dim != nil {
		p.dim = &tsrt.BatchInfo{Name: dim.Symbol.Name, Lo: dim.Symbol.Lo, Hi: dim.Symbol.Hi}
		dimAxes = func(name string) ([]int, error) { return dimAxesOf(dim, name) }
	}
	batched := func(string) bool { return false }
	samples := int64(1) // the most samples a batched buffer holds
	if batch != nil {
		p.batch = &tsrt.BatchInfo{Name: batch.Symbol.Name, Lo: batch.Symbol.Lo, Hi: batch.Symbol.Hi}
		batched = func(name string) bool { return batch.Batched[name] }
		samples = int64(batch.Symbol.Hi)
	}
	taskOf := map[*partition.Task]int{}
	for i, t := range plan.Tasks {
		taskOf[t] = i
	}
	computed := map[string]bool{}
	for _, grp := range plan.Groups {
		for _, o := range grp.Outputs {
			computed[o] = true
		}
	}
	places := map[string]place{}
	for i, name := range g.Inputs {
		ti, err := tensorInfo(g, name, "input")
		if err != nil {
			return nil, err
		}
		ti.Batched = batched(name)
		if ti.DimAxes, err = dimAxes(name); err != nil {
			return nil, err
		}
		p.inputs = append(p.inputs, ti)
		places[name] = place{kind: inInput, index: i, elems: ti.Elems(), batched: ti.Batched, sample: sampleExpr(ti)}
	}
	var passThrough []int // outputs no group writes directly
	for j, name := range g.Outputs {
		ti, err := tensorInfo(g, name, "output")
		if err != nil {
			return nil, err
		}
		ti.Batched = batched(name)
		if ti.DimAxes, err = dimAxes(name); err != nil {
			return nil, err
		}
		p.outputs = append(p.outputs, ti)
		if _, placed := places[name]; placed || !computed[name] {
			passThrough = append(passThrough, j)
			continue
		}
		places[name] = place{kind: inOutput, index: j, elems: ti.Elems(), batched: ti.Batched, sample: sampleExpr(ti)}
	}

	// A constant goes to the weights the first time it is read in a
	// layout: as it is, or packed for the kernel that reads it.
	constant := func(name string, packing *tir.Packing) (place, bool, error) {
		v := g.Values[name]
		if v == nil || v.Const == nil {
			return place{}, false, nil
		}
		data, dt, err := ops.ConstSlots(g, name)
		if err != nil {
			return place{}, false, fmt.Errorf("build: constant %s: %w", name, err)
		}
		key := name
		if packing != nil {
			data = packing.Pack(data)
			key = name + " packed " + packing.String()
		}
		return place{kind: inWeights, offset: p.weights.add(key, tir.PackMemory(dt, data)), elems: len(data), dt: dt}, true, nil
	}
	arena := map[string]int{} // value → index in p.bufs
	for s, grp := range plan.Groups {
		c := call{group: grp, task: taskOf[grp.Task]}
		params := kernels[c.task].f.Params
		for a, name := range grp.Inputs {
			pl, ok := places[name]
			if !ok {
				var err error
				if pl, ok, err = constant(name, params[a].Packed); err != nil {
					return nil, err
				} else if !ok {
					return nil, fmt.Errorf("build: group %d (%s) reads %s, which nothing computes before it", grp.ID, grp.Ops(), name)
				}
			}
			if b, ok := arena[name]; ok {
				p.bufs[b].Last = s
			}
			c.args = append(c.args, pl)
		}
		for _, name := range grp.Outputs {
			pl, ok := places[name]
			if !ok {
				n := graph.NumElems(g.Values[name].Shape)
				arena[name] = len(p.bufs)
				pl = place{kind: inArena, elems: n, buf: len(p.bufs), batched: batched(name), dt: ops.Storage(g, name)}
				bytes := pl.bytes()
				if pl.batched {
					bytes *= samples
				}
				p.bufs = append(p.bufs, Buffer{Name: name, Bytes: bytes, First: s, Last: s})
				places[name] = pl
			}
			c.args = append(c.args, pl)
		}
		checks, err := indexChecks(g, grp, places, batch, dim)
		if err != nil {
			return nil, err
		}
		for _, ck := range checks {
			if ck.pl.kind == inArena {
				p.bufs[ck.pl.buf].Last = max(p.bufs[ck.pl.buf].Last, s)
			}
		}
		c.checks = checks
		if ws := int64(kernels[c.task].workspace); ws > 0 {
			c.args = append(c.args, place{kind: inArena, elems: int((ws + 3) / 4), buf: len(p.bufs)})
			p.bufs = append(p.bufs, Buffer{Name: fmt.Sprintf("workspace of step %d", s), Bytes: ws, First: s, Last: s})
			p.workspace = max(p.workspace, ws)
		}
		if vs := kernels[c.task].variants; len(vs) > 1 {
			c.variants = [][]place{c.args}
			for _, f := range vs[1:] {
				args := slices.Clone(c.args)
				for a, name := range grp.Inputs {
					if args[a].kind != inWeights {
						continue
					}
					pl, _, err := constant(name, f.Params[a].Packed)
					if err != nil {
						return nil, err
					}
					args[a] = pl
				}
				c.variants = append(c.variants, args)
			}
		}
		p.calls = append(p.calls, c)
	}
	for _, j := range passThrough {
		name := g.Outputs[j]
		src, ok := places[name]
		if !ok {
			var err error
			if src, ok, err = constant(name, nil); err != nil {
				return nil, err
			} else if !ok {
				return nil, fmt.Errorf("build: output %s is not computed", name)
			}
		}
		p.copies = append(p.copies, copyOut{dst: j, src: src})
	}

	mem, err := PlanMemory(p.bufs)
	if err != nil {
		return nil, err
	}
	p.mem = mem
	// Arena places were made before the plan: fill in their offsets.
	for k := range p.calls {
		for _, args := range append([][]place{p.calls[k].args}, p.calls[k].variants...) {
			for a, pl := range args {
				if pl.kind == inArena {
					pl.offset = mem.Offsets[pl.buf]
					args[a] = pl
				}
			}
		}
		for i, ck := range p.calls[k].checks {
			if ck.pl.kind == inArena {
				p.calls[k].checks[i].pl.offset = mem.Offsets[ck.pl.buf]
			}
		}
	}
	return p, nil
}

// tensorInfo describes a graph input or output of static shape. Values of
// integer or bool type cross the model's API as float32 values, exact
// within ±2^24 (graph.MaxExactInt), float16 values as float32 values
// (exact both ways: a float16 output is a Cast's, rounded); the manifest
// names their dtype.
func tensorInfo(g *graph.Graph, name, what string) (tsrt.ManifestTensor, error) {
	v := g.Values[name]
	if v == nil || v.Shape == nil {
		return tsrt.ManifestTensor{}, fmt.Errorf("build: %s %s has no shape", what, name)
	}
	for _, d := range v.Shape {
		if d <= 0 {
			return tsrt.ManifestTensor{}, graph.Unsupportedf("build: %s %s has shape %v (bind it with --input %s=d0,d1,...)", what, name, v.Shape, name)
		}
	}
	return tsrt.ManifestTensor{Name: name, Shape: append([]int{}, v.Shape...), DType: v.DType.String()}, nil
}
