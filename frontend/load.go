package frontend

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// LoadOptions say how Load prepares a model: the flags --input, --freeze
// and --no-pass of tune, whose names Load's errors use.
type LoadOptions struct {
	Inputs map[string][]int // graph input → the static shape bound to it (-1: a dimension DimNames names)
	// DimNames names, per graph input, the dimensions that Inputs leaves
	// dynamic (-1) and that a range of values will bind
	// (tuning.LoadRange); Load itself refuses them.
	DimNames map[string][]string
	Freeze   map[string][]string // graph input → the values it is frozen to, as written
	NoPass   map[string]bool     // graph passes not to run (PassNames)
	// Integer runs quantized convolutions and matmuls (QLinearConv,
	// QLinearMatMul, and those of a QDQ model: fuse-qlinear) on integer
	// kernels where they can (graph.Graph.Integer); else in float.
	Integer bool
	// ExactDots, with Integer, says that the target sums four u8×s8
	// products exactly in one instruction (VNNI's vpdpbusd, aarch64's
	// sdot): the integer kernels prefer the exact dot form to saturated
	// pairs, and integers to float sums (graph.Graph.ExactDots).
	ExactDots bool
	// ScalarTables, with Integer, says that the target looks bytes up in
	// a table by gathers or one by one, not in vector registers
	// (graph.Graph.ScalarTables): lookup-tables leaves piecewise-linear
	// activations in float arithmetic.
	ScalarTables bool
	// BF16 is the opt-in bf16 precision (graph.Graph.BF16): float
	// convolutions and matrix products multiply bfloat16 operands and sum
	// in float32. BF16Refused, when set, says why the target cannot take
	// it (no bf16 dot-product instructions): Load refuses the model so.
	BF16        bool
	BF16Refused string
}

// Loaded is a model read, frozen, bound and simplified.
type Loaded struct {
	Graph         *graph.Graph
	Options       LoadOptions // how it was loaded
	Before, After graph.Stats // the graph's size as decoded and after the passes
	Notes         []string    // what a user should know of how the model was read
}

// Load decodes the model file at path (package graph/onnx), freezes and
// binds its inputs, infers shapes and runs the graph passes not disabled:
// a graph ready for partition.Extract.
func Load(path string, opts LoadOptions) (*Loaded, error) {
	g, err := onnx.DecodeFile(path)
	if err != nil {
		return nil, err
	}
	return Prepare(g, path, opts)
}

// Prepare is Load of a decoded graph g; path names its file in notes and
// errors.
func Prepare(g *graph.Graph, path string, opts LoadOptions) (*Loaded, error) {
	if opts.BF16 && opts.BF16Refused != "" {
		return nil, fmt.Errorf("--precision bf16: %s", opts.BF16Refused)
	}
	l := &Loaded{Graph: g, Options: opts, Before: graph.StatsOf(g)}
	g.Integer = opts.Integer
	g.ExactDots = opts.Integer && opts.ExactDots
	g.ScalarTables = opts.Integer && opts.ScalarTables
	g.BF16 = opts.BF16
	for _, name := range g.Shadowed {
		l.Notes = append(l.Notes, fmt.Sprintf("input %s has an initializer in %s (a default value): it is taken as a constant, not an input", name, path))
	}
	inputs := maps.Clone(opts.Inputs)
	for _, name := range slices.Sorted(maps.Keys(opts.Freeze)) {
		v := g.Values[name]
		if v == nil || !g.IsInput(name) {
			return nil, fmt.Errorf("--freeze %s: not a graph input (inputs: %s)", name, strings.Join(g.Inputs, ", "))
		}
		t, err := frozenTensor(v, inputs[name], opts.Freeze[name])
		if err != nil {
			return nil, fmt.Errorf("--freeze %s: %w", name, err)
		}
		if err := g.Freeze(name, t); err != nil {
			return nil, err
		}
		delete(inputs, name)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.DimNames)) {
		for i, d := range opts.DimNames[name] {
			if d != "" {
				return nil, fmt.Errorf("--input %s: dimension %d is named %s: tuning and building take fixed shapes (a number); tune inspect --range %s=lo..hi lists the tasks over a range", name, i, d, d)
			}
		}
	}
	if err := g.Bind(inputs); err != nil {
		return nil, err
	}
	for _, dt := range []graph.DType{graph.Float16, graph.BFloat16} {
		half, err := computeHalfInFloat32(g, dt)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch {
		case half && dt == graph.BFloat16:
			bfloat16AtBoundary(g)
			l.Notes = append(l.Notes, fmt.Sprintf("%s has bfloat16 values: they are computed in float32 (bfloat16 inputs and outputs are float32 at the API, inputs rounded to bfloat16 on entry; outputs and Casts rounded to bfloat16)", path))
		case half:
			l.Notes = append(l.Notes, fmt.Sprintf("%s has %s values: they are computed in float32 (%s inputs converted on entry, %s outputs and Casts rounded to %s)", path, dt, dt, dt, dt))
		}
	}
	if err := RunPasses(g, opts.NoPass); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l.Notes = append(l.Notes, g.Notes...)
	l.After = graph.StatsOf(g)
	return l, nil
}

// frozenTensor parses the values given for graph input v as a tensor of
// v's dtype. Its shape is bound (from --input), else the input's own when
// static, else [len(vals)] for an input of rank 1; the values must fill it.
func frozenTensor(v *graph.Value, bound []int, vals []string) (*graph.Tensor, error) {
	shape := bound
	switch {
	case shape != nil:
	case v.Shape != nil && !slices.Contains(v.Shape, -1):
		shape = v.Shape
	case len(v.Shape) == 1:
		shape = []int{len(vals)}
	default:
		return nil, fmt.Errorf("its shape %v has dynamic dimensions: bind them with --input %s=d0,d1,...", v.Shape, v.Name)
	}
	if n := graph.NumElems(shape); n != len(vals) {
		return nil, fmt.Errorf("%d values for shape %v (%d elements)", len(vals), shape, n)
	}
	if !v.DType.IsFloat() && !v.DType.IsInt() {
		return nil, fmt.Errorf("input of dtype %s", v.DType)
	}
	t := &graph.Tensor{DType: v.DType, Shape: slices.Clone(shape)}
	for i, s := range vals {
		if err := appendValue(t, s); err != nil {
			return nil, fmt.Errorf("value %d (%q) %w", i, s, err)
		}
	}
	return t, nil
}

// appendValue parses s as an element of t's dtype (float32, an integer
// type or bool) and appends it; its error completes "value i (s) ...".
func appendValue(t *graph.Tensor, s string) error {
	switch {
	case t.DType.IsFloat():
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return fmt.Errorf("is not a %s", t.DType)
		}
		if t.DType == graph.Float16 {
			f = float64(float16.Fromfloat32(float32(f)).Float32())
		}
		t.F32 = append(t.F32, float32(f))
	case t.DType == graph.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("is not a bool (true, false, 1, 0)")
		}
		t.I64 = append(t.I64, map[bool]int64{false: 0, true: 1}[b])
	default:
		k, err := strconv.ParseInt(s, 10, 64)
		if err != nil || t.DType.Wrap(k) != k {
			return fmt.Errorf("is not a valid %s", t.DType)
		}
		t.I64 = append(t.I64, k)
	}
	return nil
}

// WriteSummary writes what Load made of the model at path: its inputs
// and outputs with their shapes, the inputs frozen, and the graph's size
// before and after the passes, with the passes that ran (tune inspect).
func (l *Loaded) WriteSummary(w io.Writer, path string) { l.Summary(path).Write(w) }

// Summary is what tune inspect shows of a loaded model: its inputs and
// outputs, frozen inputs, its size as decoded and after the passes, and
// the passes that ran (tune inspect --json).
type Summary struct {
	Path    string       `json:"path"`
	Graph   string       `json:"graph"`
	Opset   int          `json:"opset"`
	Inputs  []ValueShape `json:"inputs"`
	Outputs []ValueShape `json:"outputs"`
	// Frozen are the inputs frozen to values (--freeze), by name.
	Frozen      map[string][]string `json:"frozen,omitempty"`
	Decoded     graph.Stats         `json:"decoded"`
	AfterPasses graph.Stats         `json:"after_passes"`
	Passes      []string            `json:"passes"`
}

// ValueShape is a graph value's name and shape.
type ValueShape struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// Summary returns the summary of the model loaded from path.
func (l *Loaded) Summary(path string) Summary {
	g := l.Graph
	values := func(names []string) []ValueShape {
		out := make([]ValueShape, len(names))
		for i, n := range names {
			out[i] = ValueShape{Name: n, Shape: g.Values[n].Shape}
		}
		return out
	}
	s := Summary{Path: path, Graph: g.Name, Opset: g.Opset, Inputs: values(g.Inputs), Outputs: values(g.Outputs),
		Decoded: l.Before, AfterPasses: l.After, Passes: []string{}}
	if len(l.Options.Freeze) > 0 {
		s.Frozen = l.Options.Freeze
	}
	for _, name := range PassNames() {
		if !l.Options.NoPass[name] {
			s.Passes = append(s.Passes, name)
		}
	}
	return s
}

// Write writes the summary as tune inspect prints it.
func (s Summary) Write(w io.Writer) {
	values := func(vs []ValueShape) string {
		parts := make([]string, len(vs))
		for i, v := range vs {
			dims := make([]string, len(v.Shape))
			for k, d := range v.Shape {
				dims[k] = fmt.Sprint(d)
			}
			parts[i] = v.Name + "[" + strings.Join(dims, ",") + "]"
		}
		return strings.Join(parts, " ")
	}
	fmt.Fprintf(w, "model %s: graph %q, opset %d\n", s.Path, s.Graph, s.Opset)
	fmt.Fprintf(w, "  inputs:  %s\n  outputs: %s\n", values(s.Inputs), values(s.Outputs))
	if len(s.Frozen) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(s.Frozen)) {
			parts = append(parts, n+"="+strings.Join(s.Frozen[n], ","))
		}
		fmt.Fprintf(w, "  frozen:  %s\n", strings.Join(parts, " "))
	}
	fmt.Fprintf(w, "\ngraph                 nodes  constants  constant MB\n")
	for _, r := range []struct {
		name string
		s    graph.Stats
	}{{"decoded", s.Decoded}, {"after passes", s.AfterPasses}} {
		fmt.Fprintf(w, "  %-18s %6d %10d %12.1f   %s\n", r.name, r.s.Nodes, r.s.Consts, float64(r.s.ConstBytes)/1e6, r.s.OpsString())
	}
	fmt.Fprintf(w, "  passes: %s\n", strings.Join(s.Passes, ", "))
}
