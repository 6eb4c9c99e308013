package tuning

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/partition"
)

// InspectOptions say how Inspect loads a model and what it reports.
type InspectOptions struct {
	Load      frontend.LoadOptions // how to read the model (frontend.Load)
	Partition partition.Options    // how to extract its tasks
	// Ranges are the values of the inputs' dynamic dimensions, by name
	// (tune inspect --range): the model is reported over them (LoadRange).
	// None reports the model as Load binds it (LoadModel).
	Ranges map[string][2]int
	Groups bool // list the fused groups (of a model of static shapes)
	DAG    int  // the task whose DAG is reported (-1: none)
}

// Inspection is a model as tune inspect reports it (Inspect): as a
// document (Report), as text (WriteText), or, of a model of static
// shapes, the kernel of a task after a pass (Dump).
type Inspection struct {
	// Notes say what a user should know of how a model of static shapes
	// was read.
	Notes []string

	path  string
	o     InspectOptions
	model *frontend.Loaded // of static shapes, its plan in plan
	plan  *partition.Plan
	// Over ranges: the model over them, whether tune and tune build take
	// them, and task DAG's form over them (nil for none).
	rng     *Range
	support RangeSupport
	dag     *partition.SymbolicDAGRow
}

// InspectReport is the document of tune inspect --json: of a model of
// static shapes, its summary and plan; over ranges, the plan over them,
// whether tune and tune build take them, and the DAG of the task asked
// for.
type InspectReport struct {
	Model       *frontend.Summary         `json:"model,omitempty"`
	Plan        *partition.PlanReport     `json:"plan,omitempty"`
	RangePlan   *partition.SymbolicReport `json:"range_plan,omitempty"`
	RangeTuning *RangeSupport             `json:"range_tuning,omitempty"`
	RangeDAG    *partition.SymbolicDAGRow `json:"range_dag,omitempty"`
}

// Inspect loads the model at path as o says: over o.Ranges, its plan over
// them (LoadRange), whether tune and tune build take them (Range.Support)
// and the form of task o.DAG (Range.DAGRow, an error for a task the plan
// does not have); else the model and its plan (LoadModel).
func Inspect(path string, o InspectOptions) (*Inspection, error) {
	in := &Inspection{path: path, o: o}
	var err error
	if len(o.Ranges) == 0 {
		if in.model, in.plan, err = LoadModel(path, o.Load, o.Partition); err != nil {
			return nil, err
		}
		in.Notes = in.model.Notes
		return in, nil
	}
	if in.rng, err = LoadRange(path, o.Load, o.Ranges, o.Partition); err != nil {
		return nil, err
	}
	if in.dag, err = in.rng.DAGRow(o.DAG); err != nil {
		return nil, err
	}
	in.support = in.rng.Support(formatRanges(o.Ranges))
	return in, nil
}

// formatRanges writes ranges as --range flags give them, by name:
// "N=1..8 S=16..128".
func formatRanges(ranges map[string][2]int) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(ranges)) {
		parts = append(parts, partition.Symbol{Name: n, Lo: ranges[n][0], Hi: ranges[n][1]}.String())
	}
	return strings.Join(parts, " ")
}

// Report returns the inspection as tune inspect --json prints it (of a
// model of static shapes, partition.Report of its plan).
func (in *Inspection) Report() (*InspectReport, error) {
	if in.rng != nil {
		support := in.support
		return &InspectReport{RangePlan: in.rng.Plan.Report(), RangeTuning: &support, RangeDAG: in.dag}, nil
	}
	plan, err := partition.Report(in.model.Graph, in.plan, in.o.Groups, in.o.DAG)
	if err != nil {
		return nil, err
	}
	sum := in.model.Summary(in.path)
	return &InspectReport{Model: &sum, Plan: plan}, nil
}

// WriteText writes the inspection as tune inspect prints it: the model's
// summary and plan (partition.WritePlan) or, over ranges, the plan over
// them (partition.WriteSymbolic), whether tune and tune build take them,
// and the DAG of the task asked for.
func (in *Inspection) WriteText(w io.Writer) error {
	if in.rng == nil {
		in.model.WriteSummary(w, in.path)
		return partition.WritePlan(w, in.model.Graph, in.plan, in.o.Groups, in.o.DAG)
	}
	if err := partition.WriteSymbolic(w, in.rng.Plan); err != nil {
		return err
	}
	if s := in.support; s.Yes {
		fmt.Fprintf(w, "tune and tune build over %s: yes: %s\n", s.Ranges, strings.Join(s.How, "; "))
	} else {
		fmt.Fprintf(w, "tune and tune build over %s: no: %s\n", s.Ranges, s.Why)
	}
	if d := in.dag; d != nil {
		fmt.Fprintf(w, "\ntask %d (%s, key %s), its DAG over the ranges:\n%s", d.Task, d.Ops, d.Key, d.Form)
	}
	return nil
}

// Dump returns the kernel of the task asked for after pass on a target
// of cfg, or the passes (DumpPass; tune inspect --dump). It takes a model
// of static shapes.
func (in *Inspection) Dump(pass string, cfg backend.Config) (string, error) {
	if in.plan == nil {
		return "", fmt.Errorf("--dump takes a model of static shapes (not --range)")
	}
	return DumpPass(in.plan, in.o.DAG, pass, cfg)
}
