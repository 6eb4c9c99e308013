package assemble

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
	"github.com/tessera-ml/tessera/partition"
)

// Run-time index checks: a kernel clamps every index it reads into its
// axis (te/ops_index.go), so an index out of range would be a wrong
// answer. Before a call whose group has a node reading indices at run
// time (ops.IndexOperands: Gather's indices, ScatterND's tuples,
// ReverseSequence's lengths), the executor checks them in their buffer
// (tsr_check_indices) and returns TSR_VALUE_OUT_OF_RANGE with a message
// naming the node and the element; the kernel never runs on them.
//
//	group's nodes ──ops.IndexOperands──▶ []indexCheck (place, count, bounds, message) ──▶ executor C
//
// Constant indices were checked when the shapes were inferred. Fusion
// never computes indices inside the group that reads them
// (partition.EdgePattern), so they are one of the group's inputs: a model
// input, an arena value or another group's output. In a model over a
// dimension given at run time, a count or a bound that depends on it is a
// C expression of dim (linear in it at every value of the range, or the
// build fails); one over a dynamic batch checks a batched index value
// over the run's batch.

// indexCheck is one check of a call's run-time indices.
type indexCheck struct {
	pl place
	// count is the C expression of the elements checked: those of the
	// whole value (of every sample of a batched one, × batch), or one
	// sample's when perSample.
	count string
	// perSample: checked in the call's per-sample loop at each sample's
	// address (a batched arena value of a model over a dimension given at
	// run time, whose samples lie an arena slot apart, not side by side).
	perSample bool
	lo, hi    []string // C expressions of the bounds, one pair per position along the indices' last axis (or one)
	what      string   // the message: the op, the node, the indices and the data
}

// indexChecks returns the checks of group grp's run-time indices, where
// places holds the places of the values computed before it (and the
// model's inputs and outputs). g is the model the program is planned
// from: at batch 1 over a dynamic batch (batch), at the largest value of
// a dimension given at run time (dim).
func indexChecks(g *graph.Graph, grp *partition.Group, places map[string]place, batch *partition.BatchPlan, dim *partition.DimPlan) ([]indexCheck, error) {
	inside := map[string]bool{} // values the group computes
	for _, n := range grp.Nodes {
		for _, o := range n.Outputs {
			inside[o] = true
		}
	}
	var checks []indexCheck
	for _, n := range grp.Nodes {
		ios, err := ops.IndexOperands(g, n)
		if err != nil {
			return nil, fmt.Errorf("build: group %d (%s): %w", grp.ID, grp.Ops(), err)
		}
		for _, o := range ios {
			name, data := n.Input(o.Input), n.Input(o.Data)
			what := o.Describe(n)
			if v := g.Values[name]; v != nil && v.Const != nil || len(o.Axes) == 0 {
				continue // checked when the shapes were inferred; or no index at all
			}
			if inside[name] {
				return nil, fmt.Errorf("build: internal error: group %d (%s) computes %s, which %s reads: indices must be in memory before the kernel runs (partition.EdgePattern), or nothing checks them", grp.ID, grp.Ops(), name, what)
			}
			pl, ok := places[name]
			if !ok {
				return nil, fmt.Errorf("build: internal error: group %d (%s) reads %s, the indices of %s, which has no place", grp.ID, grp.Ops(), name, what)
			}
			if pl.dt.IntElem() {
				// ONNX's indices are int32 or int64, which run as float32.
				return nil, graph.Unsupportedf("build: %s are %s, stored as %v: run-time indices are checked as float32 values only", what, name, pl.dt)
			}
			ck := indexCheck{pl: pl, what: what, perSample: pl.batched && dim != nil && pl.kind == inArena}
			for _, a := range o.Axes {
				if batch != nil && batch.Batched[data] && a == 0 {
					return nil, fmt.Errorf("build: %s indexes the axis of %s that holds the batch %s: a kernel run once per sample cannot check it", what, data, batch.Symbol.Name)
				}
				lo, err := runInt(g, dim, what, func(g *graph.Graph) (int64, bool) {
					d, ok := extent(g, data, a)
					l, _ := o.Range.Bounds(d)
					return l, ok
				})
				if err != nil {
					return nil, err
				}
				hi, err := runInt(g, dim, what, func(g *graph.Graph) (int64, bool) {
					d, ok := extent(g, data, a)
					_, h := o.Range.Bounds(d)
					return h, ok
				})
				if err != nil {
					return nil, err
				}
				ck.lo, ck.hi = append(ck.lo, lo), append(ck.hi, hi)
			}
			if ck.count, err = runInt(g, dim, what, func(g *graph.Graph) (int64, bool) {
				v := g.Values[name]
				if v == nil || v.Shape == nil {
					return 0, false
				}
				return int64(graph.NumElems(v.Shape)), true
			}); err != nil {
				return nil, err
			}
			if pl.batched && !ck.perSample {
				ck.count += " * batch"
			}
			if ck.perSample {
				ck.what += ", in one sample"
			}
			checks = append(checks, ck)
		}
	}
	return checks, nil
}

// extent returns the extent of value name's axis a in g.
func extent(g *graph.Graph, name string, a int) (int64, bool) {
	v := g.Values[name]
	if v == nil || a >= len(v.Shape) {
		return 0, false
	}
	return int64(v.Shape[a]), true
}

// runInt returns the C expression of an integer of the model, f at graph
// g; over a dimension given at run time (dim), f at every value's graph,
// which must be linear in the value: a·dim + b.
func runInt(g *graph.Graph, dim *partition.DimPlan, what string, f func(*graph.Graph) (int64, bool)) (string, error) {
	if dim == nil {
		x, ok := f(g)
		if !ok {
			return "", fmt.Errorf("build: internal error: %s: a shape is missing", what)
		}
		return strconv.FormatInt(x, 10), nil
	}
	sym := dim.Symbol
	vals := make([]int64, len(dim.At))
	for i, at := range dim.At {
		x, ok := f(at.Graph)
		if !ok {
			return "", fmt.Errorf("build: %s: a shape it needs is missing at %s=%d", what, sym.Name, sym.Lo+i)
		}
		vals[i] = x
	}
	var a, b int64 = 0, vals[0]
	if len(vals) > 1 {
		a = vals[1] - vals[0]
		b = vals[0] - a*int64(sym.Lo)
	}
	for i, x := range vals {
		if x != a*int64(sym.Lo+i)+b {
			return "", fmt.Errorf("build: %s: its count or bound is %d at %s=%d and %d at %d, not linear in %s: the executor cannot check it", what, vals[0], sym.Name, sym.Lo, x, sym.Lo+i, sym.Name)
		}
	}
	return linearC(a, b, "dim"), nil
}

// linearC returns a·v + b in C.
func linearC(a, b int64, v string) string {
	switch {
	case a == 0:
		return strconv.FormatInt(b, 10)
	case a == -1:
		v = "-" + v
	case a != 1:
		v = fmt.Sprintf("%d * %s", a, v)
	}
	switch {
	case b > 0:
		return fmt.Sprintf("(%s + %d)", v, b)
	case b < 0:
		return fmt.Sprintf("(%s - %d)", v, -b)
	}
	return "(" + v + ")"
}

// checkC returns the C that checks ck's indices at address ptr (count
// elements), returning the error code from tsm_execute, indented by
// indent.
func checkC(ck indexCheck, ptr, indent string) string {
	static := "static "
	for _, e := range append(append([]string{}, ck.lo...), ck.hi...) {
		if _, err := strconv.ParseInt(e, 10, 64); err != nil {
			static = "" // depends on the run
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s{\n%s  %sconst int64_t lo[] = {%s}, hi[] = {%s};\n", indent, indent, static, strings.Join(ck.lo, ", "), strings.Join(ck.hi, ", "))
	fmt.Fprintf(&b, "%s  if ((rc = tsr_check_indices(%s, %s, %d, lo, hi, %s)) != 0)\n%s    return rc;\n%s}\n",
		indent, ptr, ck.count, len(ck.lo), cString(ck.what), indent, indent)
	return b.String()
}
