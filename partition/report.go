package partition

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
)

// The plans as tune inspect --json prints them: what WritePlan and
// WriteSymbolic write as tables, as values (JSON names are stable).

// PlanReport is a plan: its fused groups, its tasks and their totals, and
// the compute DAG of one task if asked.
type PlanReport struct {
	// Groups are the fused groups in execution order (nil when not
	// asked for).
	Groups []GroupRow `json:"groups,omitempty"`
	Tasks  []TaskRow  `json:"tasks"`
	// Alternatives counts the groups that have an alternative algorithm
	// (its own task; the build runs the faster measured).
	Alternatives int     `json:"alternatives"`
	FLOPs        float64 `json:"flops"` // of one inference
	NumGroups    int     `json:"num_groups"`
	DAG          *DAGRow `json:"dag,omitempty"`
}

// GroupRow is one fused group.
type GroupRow struct {
	ID      int      `json:"id"`
	Key     string   `json:"key"`
	Ops     string   `json:"ops"`
	Shapes  [][]int  `json:"shapes"`  // of its outputs
	Outputs []string `json:"outputs"` // the graph values it writes
}

// TaskRow is one task.
type TaskRow struct {
	Index  int     `json:"index"`
	Key    string  `json:"key"`
	Ops    string  `json:"ops"`
	Shapes [][]int `json:"shapes"` // of its first group's outputs
	FLOPs  float64 `json:"flops"`  // of one occurrence
	Weight int     `json:"weight"`
	Share  float64 `json:"share"` // percent of the FLOPs of one inference
}

// DAGRow is the compute DAG of a task.
type DAGRow struct {
	Task  int    `json:"task"`
	Ops   string `json:"ops"`
	Key   string `json:"key"`
	Group int    `json:"group"` // the group whose DAG it is
	DAG   string `json:"dag"`
}

// Report returns what WritePlan writes of p, a plan of g: the groups
// with groups, the tasks, and with dag ≥ 0 the DAG of task dag.
func Report(g *graph.Graph, p *Plan, groups bool, dag int) (*PlanReport, error) {
	if dag >= len(p.Tasks) {
		return nil, fmt.Errorf("--dag %d: the model has %d tasks", dag, len(p.Tasks))
	}
	shapes := func(grp *Group) [][]int {
		out := make([][]int, len(grp.Outputs))
		for i, o := range grp.Outputs {
			out[i] = g.Values[o].Shape
		}
		return out
	}
	r := &PlanReport{Tasks: []TaskRow{}, FLOPs: p.TotalFLOPs(), NumGroups: len(p.Groups)}
	for _, grp := range p.Groups {
		r.Alternatives += len(grp.Alternatives)
		if groups {
			r.Groups = append(r.Groups, GroupRow{ID: grp.ID, Key: grp.Key, Ops: grp.Ops(), Shapes: shapes(grp), Outputs: grp.Outputs})
		}
	}
	for i, t := range p.Tasks {
		row := TaskRow{Index: i, Key: t.Key, Ops: t.Ops(), Shapes: shapes(t.Groups[0]), FLOPs: t.FLOPs, Weight: t.Weight}
		if r.FLOPs > 0 {
			row.Share = 100 * float64(t.Weight) * t.FLOPs / r.FLOPs
		}
		r.Tasks = append(r.Tasks, row)
	}
	if dag >= 0 {
		t := p.Tasks[dag]
		r.DAG = &DAGRow{Task: dag, Ops: t.Ops(), Key: t.Key, Group: t.Groups[0].ID, DAG: t.DAG.String()}
	}
	return r, nil
}

// SymbolicReport is a plan over ranges (WriteSymbolic).
type SymbolicReport struct {
	Symbols []SymbolRow       `json:"symbols"`
	Tasks   []SymbolicTaskRow `json:"tasks"`
	Groups  int               `json:"groups"`
	// Dynamic counts the tasks whose work depends on the symbols.
	Dynamic int `json:"dynamic"`
}

// SymbolRow is a dynamic dimension and its range.
type SymbolRow struct {
	Name string `json:"name"`
	Lo   int    `json:"lo"`
	Hi   int    `json:"hi"`
}

// SymbolicTaskRow is one task over the ranges.
type SymbolicTaskRow struct {
	Index   int    `json:"index"`
	Key     string `json:"key"`
	Ops     string `json:"ops"`
	Output  string `json:"output"` // its first output's shape: [N,112,112,64]
	Weight  int    `json:"weight"`
	Dynamic bool   `json:"dynamic"`
}

// Report returns what WriteSymbolic writes of sp.
func (sp *SymbolicPlan) Report() *SymbolicReport {
	r := &SymbolicReport{Symbols: []SymbolRow{}, Tasks: []SymbolicTaskRow{}, Groups: len(sp.Groups)}
	for _, s := range sp.Symbols {
		r.Symbols = append(r.Symbols, SymbolRow{Name: s.Name, Lo: s.Lo, Hi: s.Hi})
	}
	for i, t := range sp.Tasks {
		r.Tasks = append(r.Tasks, SymbolicTaskRow{Index: i, Key: t.Key, Ops: t.Ops, Output: t.outputString(), Weight: t.Weight, Dynamic: t.Dynamic()})
		if t.Dynamic() {
			r.Dynamic++
		}
	}
	return r
}

// SymbolicDAGRow is the form of a task over the ranges: its canonical
// DAG, numbers that vary written as polynomials of the symbols.
type SymbolicDAGRow struct {
	Task int    `json:"task"`
	Ops  string `json:"ops"`
	Key  string `json:"key"`
	Form string `json:"form"`
}
