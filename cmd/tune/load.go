package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"tessera/graph"
	"tessera/graph/onnx"
	"tessera/partition"
)

// modelFlags are the flags of every command that reads a model.
type modelFlags struct {
	inputs   shapesFlag
	freeze   valuesFlag
	noPass   namesFlag
	winograd bool
}

// partitionOptions are the options of partition.Extract the flags give.
func (m *modelFlags) partitionOptions() partition.Options {
	return partition.Options{Winograd: m.winograd}
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	m.inputs, m.freeze, m.noPass = shapesFlag{}, valuesFlag{}, namesFlag{}
	fs.Var(m.inputs, "input", "bind graph input `name=d0,d1,...` to a static shape (repeatable)")
	fs.Var(m.freeze, "freeze", "freeze graph input `name=v0,v1,...` to these values, a constant of the compiled model (a sample rate an If branches on; repeatable)")
	fs.Var(m.noPass, "no-pass", "disable graph pass `NAME` (repeatable; passes: "+strings.Join(graph.PassNames(), ", ")+")")
	fs.BoolVar(&m.winograd, "winograd", true, "give 3×3 stride-1 convolutions a Winograd alternative task (tuned like any task; the build keeps the faster; --winograd=false: direct only)")
}

// graphStats describes a graph's size.
type graphStats struct {
	nodes, consts int
	constBytes    int64
	ops           map[string]int
}

func statsOf(g *graph.Graph) graphStats {
	s := graphStats{nodes: len(g.Nodes), ops: map[string]int{}}
	used := map[string]bool{}
	for _, n := range g.Nodes {
		s.ops[n.OpType]++
		for _, in := range n.Inputs {
			used[in] = true
		}
	}
	for _, o := range g.Outputs {
		used[o] = true
	}
	for _, name := range g.ConstNames() {
		if !used[name] {
			continue
		}
		c := g.Values[name].Const
		s.consts++
		if c.DType.IsInt() {
			s.constBytes += int64(8 * c.Len())
		} else {
			s.constBytes += int64(4 * c.Len())
		}
	}
	return s
}

// opsString lists op counts, most frequent first: "Conv×53 Relu×49 ...".
func (s graphStats) opsString() string {
	ops := slices.Collect(maps.Keys(s.ops))
	slices.SortFunc(ops, func(a, b string) int {
		if s.ops[a] != s.ops[b] {
			return s.ops[b] - s.ops[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s×%d", op, s.ops[op])
	}
	return strings.Join(parts, " ")
}

// loaded is a model read, bound and simplified.
type loaded struct {
	g             *graph.Graph
	before, after graphStats
	notes         []string // what the user should know of how the model was read
}

// printNotes writes the notes to w, one line each.
func (l *loaded) printNotes(w io.Writer, prefix string) {
	for _, n := range l.notes {
		fmt.Fprintf(w, "%s: note: %s\n", prefix, printable(n))
	}
}

// loadModel decodes the model at path, freezes and binds its inputs, infers
// shapes and runs the graph passes not disabled.
func loadModel(path string, mf modelFlags) (*loaded, error) {
	g, err := onnx.DecodeFile(path)
	if err != nil {
		return nil, err
	}
	l := &loaded{g: g, before: statsOf(g)}
	for _, name := range g.Shadowed {
		l.notes = append(l.notes, fmt.Sprintf("input %s has an initializer in %s (a default value): it is taken as a constant, not an input", name, path))
	}
	inputs := maps.Clone(mf.inputs)
	for _, name := range slices.Sorted(maps.Keys(mf.freeze)) {
		v := g.Values[name]
		if v == nil || !g.IsInput(name) {
			return nil, fmt.Errorf("--freeze %s: not a graph input (inputs: %s)", name, strings.Join(g.Inputs, ", "))
		}
		t, err := frozenTensor(v, inputs[name], mf.freeze[name])
		if err != nil {
			return nil, fmt.Errorf("--freeze %s: %w", name, err)
		}
		if err := g.Freeze(name, t); err != nil {
			return nil, err
		}
		delete(inputs, name)
	}
	if err := g.Bind(inputs); err != nil {
		return nil, err
	}
	if err := graph.RunPasses(g, mf.noPass); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l.after = statsOf(g)
	return l, nil
}
