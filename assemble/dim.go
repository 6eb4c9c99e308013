package assemble

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/ops"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tsrt"
)

// dispatchC returns the C function the executor calls for task i of a
// model built over a dimension given at run time: it calls the kernel of
// the class of the run's value (codegen.Family), from a table by value,
// with the arguments of the variant the class takes (av[variant]: the
// constants packed its way).
func dispatchC(i int, k kernel, dim *tsrt.BatchInfo) (string, error) {
	fam := k.family
	var b strings.Builder
	name := strings.TrimPrefix(kernelName(i), "tessera_")
	classes := make([]string, 0, dim.Hi-dim.Lo+1)
	for v := dim.Lo; v <= dim.Hi; v++ {
		c, ok := fam.Class(v)
		if !ok {
			return "", fmt.Errorf("build: task %d has no kernel at %s=%d", i, dim.Name, v)
		}
		classes = append(classes, fmt.Sprint(c))
	}
	fmt.Fprintf(&b, "static int tsm_%s(float *const *const *av, int64_t d) {\n", name)
	fmt.Fprintf(&b, "  static const uint16_t class[%d] = {%s};\n", len(classes), strings.Join(classes, ", "))
	fmt.Fprintf(&b, "  switch (class[d - %d]) {\n", dim.Lo)
	for c := range fam.Classes {
		fmt.Fprintf(&b, "  case %d:\n    return %s_c%d(av[%d], d);\n", c, kernelName(i), c, k.classVariant[c])
	}
	b.WriteString("  }\n  return -1;\n}\n\n")
	return b.String(), nil
}

// scheduleFamilies picks every task's schedule at every value of the
// dimension of dp and prints the task's kernels there as a family
// (Target.Family). A value takes the fastest usable record of the task at
// the probe point nearest it (on a log scale; partition.Symbol.ProbePoints:
// the tuning points, where tune tunes, and the values where it measures
// their best schedules, tuning.Probe), else at the next nearest, replayed
// at the value; without one, the default schedule at the nearest tuning
// point, and where that does not replay either, the default schedule at
// the value itself.
func scheduleFamilies(dp *partition.DimPlan, recs RecordSource, tg *backend.Target, warn func(format string, args ...any)) ([]kernel, error) {
	sym := dp.Symbol
	hi := dp.Hi().Plan
	points := sym.TunePoints()
	out := make([]kernel, len(hi.Tasks))
	for i, t := range hi.Tasks {
		k := kernel{task: t, report: tsrt.TaskReport{
			Index: i, Key: t.Key, Ops: t.Ops(), Layout: t.Layout(), Weight: t.Weight, FLOPs: t.FLOPs, Kernel: kernelName(i),
		}}
		type source struct {
			point int
			rec   *records.Record
			steps []schedule.Step // a default schedule's
		}
		var tuned, defaults []source
		for _, p := range sym.ProbePoints() {
			if recs == nil {
				break
			}
			tp := dp.TaskAt(i, p)
			if err := checkGroups(tp); err != nil {
				return nil, err
			}
			rec, _, _, ok, err := usable(recs, tg, tp, "k")
			if err != nil {
				return nil, err
			}
			if ok {
				tuned = append(tuned, source{point: p, rec: &rec})
			}
		}
		for _, p := range points {
			tp := dp.TaskAt(i, p)
			if err := checkGroups(tp); err != nil {
				return nil, err
			}
			st, _, err := sketch.Default(schedule.NewState(tp.DAG), tg.Sketch)
			if err != nil {
				return nil, fmt.Errorf("build: task %d (%s) at %s=%d: %w", i, t.Ops(), sym.Name, p, err)
			}
			defaults = append(defaults, source{point: p, steps: st.Steps})
		}
		byDistance := func(v int, ss []source) []source {
			ss = slices.Clone(ss)
			slices.SortStableFunc(ss, func(a, b source) int {
				return cmp.Compare(partition.LogDistance(a.point, v), partition.LogDistance(b.point, v))
			})
			return ss
		}
		states := map[int]*schedule.State{}
		fromRecord, fromPoint := 0, map[int]int{}
		for v := sym.Lo; v <= sym.Hi; v++ {
			task := dp.TaskAt(i, v)
			if err := checkGroups(task); err != nil {
				return nil, err
			}
			s0 := schedule.NewState(task.DAG)
			for _, s := range append(byDistance(v, tuned), byDistance(v, defaults)...) {
				var st *schedule.State
				var err error
				if s.rec != nil {
					st, err = s.rec.State(s0)
				} else {
					st, err = schedule.Replay(s0, s.steps)
				}
				if err == nil {
					states[v] = st
					if s.rec != nil {
						fromRecord++
						fromPoint[s.point]++
					}
					break
				}
			}
			if states[v] == nil {
				st, _, err := sketch.Default(s0, tg.Sketch)
				if err != nil {
					return nil, fmt.Errorf("build: task %d (%s) at %s=%d: %w", i, t.Ops(), sym.Name, v, err)
				}
				states[v] = st
			}
		}
		fam, fs, err := tg.Family(states, measure.KernelName)
		if err != nil {
			return nil, fmt.Errorf("build: task %d (%s) over %s: %w", i, t.Ops(), sym, err)
		}
		// The schedules of different values may pack a constant in
		// different layouts: each layout is a variant of the task's
		// parameters, the weights hold the constant once per layout, and
		// the executor passes each class the variant it takes.
		top := fs[sym.Hi]
		k.f, k.family, k.variants = top, fam, []*tir.PrimFunc{top}
		for _, c := range fam.Classes {
			f := fs[c.Values[0]]
			at := slices.IndexFunc(k.variants, func(g *tir.PrimFunc) bool { return g.Packing() == f.Packing() })
			if at < 0 {
				at = len(k.variants)
				k.variants = append(k.variants, f)
			}
			k.classVariant = append(k.classVariant, at)
		}
		for _, c := range fam.Classes {
			k.workspace = max(k.workspace, c.Workspace)
		}
		values := sym.Hi - sym.Lo + 1
		k.report.Family = &tsrt.FamilyReport{Classes: len(fam.Classes), Values: values, Layouts: len(k.variants), FromRecords: fromRecord, Points: fromPoint}
		if fromRecord == values {
			k.report.Schedule = tsrt.FromRecord
		} else {
			k.report.Schedule = tsrt.FromDefault
			warn("task %d (%s): %d of the %d values of %s have no usable record at the tuning points %v and probes %v; using default schedules there", i, t.Ops(), values-fromRecord, values, sym.Name, points, sym.ProbePoints())
		}
		for a, p := range k.f.Params {
			if p.Packed != nil {
				k.report.Packed = append(k.report.Packed, fmt.Sprintf("input %d: %v", a, p.Packed))
			}
		}
		out[i] = k
	}
	return out, nil
}

// dimAxesOf returns the dimensions of a model input or output that are
// the dimension given at run time: those that differ between its ends,
// each of which must be the dimension's value itself.
func dimAxesOf(dp *partition.DimPlan, name string) ([]int, error) {
	sym := dp.Symbol
	lo, hi := dp.At[0].Graph.Values[name], dp.Hi().Graph.Values[name]
	if lo == nil || hi == nil || len(lo.Shape) != len(hi.Shape) {
		return nil, fmt.Errorf("build: %s has no shape of one rank over %s", name, sym)
	}
	var axes []int
	for a := range hi.Shape {
		switch {
		case lo.Shape[a] == hi.Shape[a]:
		case lo.Shape[a] == sym.Lo && hi.Shape[a] == sym.Hi:
			axes = append(axes, a)
		default:
			return nil, fmt.Errorf("build: %s, a model input or output, has dimension %d of %d at %s=%d and %d at %d: only the dimension %s itself may vary there", name, a, lo.Shape[a], sym.Name, sym.Lo, hi.Shape[a], sym.Hi, sym.Name)
		}
	}
	return axes, nil
}

// sampleExpr returns the C expression of one sample's elements of a model
// input or output in a run whose dimension given at run time is the
// variable dim; "" for a tensor without that dimension.
func sampleExpr(t tsrt.ManifestTensor) string {
	if len(t.DimAxes) == 0 {
		return ""
	}
	factors := []string{}
	rest := 1
	for a, d := range t.Shape {
		switch {
		case t.Batched && a == 0:
		case slices.Contains(t.DimAxes, a):
			factors = append(factors, "dim")
		default:
			rest *= d
		}
	}
	if rest != 1 {
		factors = append(factors, fmt.Sprint(rest))
	}
	return "(" + strings.Join(factors, " * ") + ")"
}

// checkDimConstants checks that the weights placed from the model at the
// range's largest value serve every value: each constant a group reads at
// a value is the one it reads there, or its first elements (a slice of a
// table by the dimension, a position embedding's first S rows).
func checkDimConstants(dp *partition.DimPlan) error {
	hi := dp.Hi()
	for i, at := range dp.At {
		v := dp.Symbol.Lo + i
		for _, grp := range at.Plan.Groups {
			for _, name := range grp.Inputs {
				c, ch := at.Graph.Values[name], hi.Graph.Values[name]
				if c == nil || c.Const == nil || ch != nil && ch.Const == c.Const {
					continue
				}
				if ch == nil || ch.Const == nil {
					return fmt.Errorf("build: %s is a constant at %s=%d but not at %d", name, dp.Symbol.Name, v, dp.Symbol.Hi)
				}
				a, _, err := ops.ConstSlots(at.Graph, name)
				if err != nil {
					return fmt.Errorf("build: constant %s: %w", name, err)
				}
				b, _, err := ops.ConstSlots(hi.Graph, name)
				if err != nil {
					return fmt.Errorf("build: constant %s: %w", name, err)
				}
				if len(a) > len(b) || !slices.Equal(a, b[:len(a)]) {
					return fmt.Errorf("build: the constant %s at %s=%d is not the first elements of the one at %d: it depends on %s otherwise, and one weights payload cannot serve every value", name, dp.Symbol.Name, v, dp.Symbol.Hi, dp.Symbol.Name)
				}
			}
		}
	}
	return nil
}
