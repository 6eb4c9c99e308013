package partition

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Tasks: groups → compute DAGs → distinct workloads.
//
//	[]*Group ──LowerGroup──▶ *te.DAG per group ──WorkloadKey──▶ dedupe ──▶ []*Task
//
// A group's DAG reads its external values through placeholders (graph
// inputs, activations of earlier groups and weights alike) and writes its
// outputs; constants of one element become literals (but for the indices
// of groups that differ only in them: shareIndexedGroups). The DAG's workload
// key is a hash of its canonical print, which knows no names and orders
// the placeholders by their first use in the DAG's topological order, so
// the same computation in two groups, or in two models, has one key. A
// task is one key: its DAG (that of its first group) and its weight, the
// number of groups that run it.

// Task is a distinct workload of a graph.
type Task struct {
	Key    string
	DAG    *te.DAG  // the DAG of Groups[0]; every group's DAG prints alike
	Weight int      // len(Groups): how often one inference runs it
	Groups []*Group // the occurrences, in execution order
	FLOPs  float64  // of one occurrence
	// Rivals are the tasks that compute the same groups by another
	// algorithm (direct and Winograd): a model runs whichever is fastest.
	Rivals []*Task
}

// Ops returns the op list of the task's first group (see Group.Ops), ""
// for a task made without groups. A task of an alternative algorithm
// names it: "Conv+Relu [winograd F(4×4,3×3)]".
func (t *Task) Ops() string {
	if len(t.Groups) == 0 {
		return ""
	}
	if a := t.Groups[0].Algorithm; a != "" {
		return t.Groups[0].Ops() + " [" + a + "]"
	}
	return t.Groups[0].Ops()
}

// Layout returns the activation layout the convert-layout pass gave the
// task's ops ("NHWC"), or "" where they run as the model gives them.
func (t *Task) Layout() string {
	for _, n := range t.Groups[0].Nodes {
		if channelsLast(n) {
			return "NHWC"
		}
	}
	return ""
}

// Plan is a graph cut into fused groups, and the tasks they run.
type Plan struct {
	Groups []*Group // in execution order
	Tasks  []*Task  // in order of first occurrence
}

// TotalFLOPs returns the FLOPs of one inference by the direct
// definitions: the sum over groups of their task's FLOPs.
func (p *Plan) TotalFLOPs() float64 {
	total := 0.0
	for _, grp := range p.Groups {
		total += grp.Task.FLOPs
	}
	return total
}

// Extract fuses g (shapes inferred, passes run; see frontend.RunPasses),
// lowers every group to a DAG and merges the groups of equal workload key
// into tasks. It fails on a node that cannot be lowered, naming the group.
func Extract(g *graph.Graph, opts Options) (*Plan, error) {
	groups, err := Fuse(g, opts)
	if err != nil {
		return nil, err
	}
	p := &Plan{Groups: groups}
	for _, grp := range groups {
		if _, err := LowerGroup(g, grp); err != nil {
			var uo *graph.UnsupportedOpError
			if errors.As(err, &uo) && (uo.Domain == "" || uo.Domain == "ai.onnx") && ops.FoldOnly(uo.Op) {
				err = fmt.Errorf("%w (shape arithmetic must be folded away: is the fold-constants pass disabled, or an input dimension unbound?)", err)
			}
			return nil, fmt.Errorf("partition: group %d (%s): %w", grp.ID, grp.Ops(), err)
		}
	}
	if err := shareIndexedGroups(g, groups); err != nil {
		return nil, err
	}
	byKey := map[string]*Task{}
	for _, grp := range groups {
		p.addToTask(byKey, grp, grp.DAG)
		if !opts.Alternatives {
			continue
		}
		alts, err := alternatives(g, grp)
		if err != nil {
			return nil, fmt.Errorf("partition: group %d (%s): %w", grp.ID, grp.Ops(), err)
		}
		for _, alt := range alts {
			grp.Alternatives = append(grp.Alternatives, alt)
			p.addToTask(byKey, alt, alt.DAG)
		}
	}
	for i, rs := range p.Rivals() {
		for _, j := range rs {
			p.Tasks[i].Rivals = append(p.Tasks[i].Rivals, p.Tasks[j])
		}
	}
	for _, t := range p.Tasks {
		markReused(t)
	}
	return p, nil
}

// markReused marks the constant placeholders of t's DAG that most of its
// occurrences read from the same graph value as the occurrence before
// them (te.Tensor.Reused). A recurrent layer unrolled over its steps reads
// its recurrence weights in every step: 62 steps of lstm_lm read one 4 MB
// matrix per layer, which stays in the caches from one step to the next
// (only the gates' kernel runs between them). Timed with it evicted before
// every call, as a kernel whose weights are its own, the step's
// matrix-vector product is bound by memory instead of the cache it reads
// in the model, and the search ranks its schedules for the wrong regime:
// its best record ran 48 us a step in the model at two threads on a Zen 4,
// its default schedule 34. One task may hold the steps of several layers
// or directions (equal shapes), each its own weights: the steps after a
// layer's first still find them warm. Equal blocks of a CNN each read
// weights of their own: not reused.
func markReused(t *Task) {
	for i, in := range t.DAG.Inputs {
		in.Reused = false
		if !in.Const {
			continue
		}
		same := 0
		for k := 1; k < len(t.Groups); k++ {
			prev, grp := t.Groups[k-1], t.Groups[k]
			if i < len(prev.Inputs) && i < len(grp.Inputs) && prev.Inputs[i] == grp.Inputs[i] {
				same++
			}
		}
		in.Reused = len(t.Groups) > 1 && 2*same >= len(t.Groups)
	}
}

// addToTask makes grp an occurrence of the task of its key, new or not.
func (p *Plan) addToTask(byKey map[string]*Task, grp *Group, dag *te.DAG) {
	t := byKey[grp.Key]
	if t == nil {
		t = &Task{Key: grp.Key, DAG: dag, FLOPs: dag.FLOPs()}
		byKey[grp.Key] = t
		p.Tasks = append(p.Tasks, t)
	}
	t.Groups = append(t.Groups, grp)
	t.Weight++
	grp.Task = t
}

// LowerGroup builds the compute DAG of grp's nodes and sets grp.DAG,
// grp.Inputs (the graph values behind the DAG's placeholders) and grp.Key.
// The DAG's outputs are grp.Outputs, in order.
func LowerGroup(g *graph.Graph, grp *Group) (*te.DAG, error) {
	return lowerGroup(g, grp, nil)
}

// Groups that differ only in a constant index. A recurrent layer unrolled
// over its sequence (ops/recurrent.go) reads the input projection of step
// t with a Gather at the constant t, and each step's gates would be a task
// of its own, their index a literal: a GRU over 100 steps made 100 tasks
// of one computation, 400 of a 1,000-trial budget spent warming them up
// and 100 kernels compiled for every build. Where two groups or more
// lower to one DAG once the one-element constants they gather at are read
// from memory (placeholders, in the weights) instead of being literals,
// but to different DAGs with the literals, they take that DAG and share
// one task: the kernel loads its index, where a literal would have folded
// into its addresses.

// shareIndexedGroups relowers the groups that differ only in the
// one-element constants their Gathers take as indices with those constants
// as placeholders, so that they share a task.
func shareIndexedGroups(g *graph.Graph, groups []*Group) error {
	type cand struct {
		grp  *Group
		keep map[string]bool
	}
	byKey := map[string][]cand{} // the key with the indices read from memory → the groups
	literal := map[string]map[string]bool{}
	var order []string
	for _, grp := range groups {
		keep := constIndices(g, grp)
		if len(keep) == 0 {
			continue
		}
		probe := &Group{ID: grp.ID, Nodes: grp.Nodes, Outputs: grp.Outputs}
		if _, err := lowerGroupKeeping(g, probe, nil, keep); err != nil {
			return fmt.Errorf("partition: group %d (%s), its indices as inputs: %w", grp.ID, grp.Ops(), err)
		}
		if byKey[probe.Key] == nil {
			order = append(order, probe.Key)
			literal[probe.Key] = map[string]bool{}
		}
		byKey[probe.Key] = append(byKey[probe.Key], cand{grp, keep})
		literal[probe.Key][grp.Key] = true
	}
	for _, key := range order {
		if len(literal[key]) < 2 {
			continue // one DAG with the literals already
		}
		for _, c := range byKey[key] {
			if _, err := lowerGroupKeeping(g, c.grp, nil, c.keep); err != nil {
				return fmt.Errorf("partition: group %d (%s), its indices as inputs: %w", c.grp.ID, c.grp.Ops(), err)
			}
		}
	}
	return nil
}

// constIndices returns the one-element constants that grp's Gathers take
// as their indices.
func constIndices(g *graph.Graph, grp *Group) map[string]bool {
	var keep map[string]bool
	for _, n := range grp.Nodes {
		if n.OpType != "Gather" || n.Domain != "" && n.Domain != "ai.onnx" {
			continue
		}
		if c := g.ConstOf(n.Input(1)); c != nil && c.Len() == 1 {
			if keep == nil {
				keep = map[string]bool{}
			}
			keep[n.Input(1)] = true
		}
	}
	return keep
}

// nodeLowering lowers one node of a group by another compute definition
// than the library's; handled is false for the nodes it leaves alone.
type nodeLowering func(n *graph.Node, src TensorSource) (outs []*te.Tensor, handled bool, err error)

// lowerGroup is LowerGroup with the nodes that override handles lowered by
// it (nil: none).
func lowerGroup(g *graph.Graph, grp *Group, override nodeLowering) (*te.DAG, error) {
	return lowerGroupKeeping(g, grp, override, nil)
}

// lowerGroupKeeping is lowerGroup with the one-element constants in keep
// read through placeholders instead of becoming literals.
func lowerGroupKeeping(g *graph.Graph, grp *Group, override nodeLowering, keep map[string]bool) (*te.DAG, error) {
	vals := map[string]*te.Tensor{}
	source := map[*te.Tensor]string{}
	src := func(name string) (*te.Tensor, error) {
		if t, ok := vals[name]; ok {
			return t, nil
		}
		v := g.Values[name]
		if v == nil || v.Shape == nil {
			return nil, fmt.Errorf("value %s has no shape", name)
		}
		for _, d := range v.Shape {
			if d <= 0 {
				return nil, graph.Unsupportedf("value %s is empty (shape %v)", name, v.Shape)
			}
		}
		var t *te.Tensor
		if c := v.Const; c != nil && c.Len() == 1 && !keep[name] {
			lit := tir.Expr(tir.F32(c.Float64s()[0]))
			if dt := ops.Storage(g, name); dt.IntElem() {
				lit = tir.IntOf(dt, c.I64[0])
			}
			t = te.Compute(name, v.Shape, func([]tir.Expr) tir.Expr { return lit })
		} else {
			t = ops.Placeholder(g, name)
			source[t] = name
		}
		vals[name] = t
		return t, nil
	}
	for _, n := range grp.Nodes {
		var outs []*te.Tensor
		handled := false
		var err error
		if override != nil {
			outs, handled, err = override(n, src)
		}
		if !handled && err == nil {
			outs, err = LowerNode(g, n, src)
		}
		if err != nil {
			return nil, err
		}
		for i, o := range n.Outputs {
			if o != "" && i < len(outs) && outs[i] != nil {
				vals[o] = outs[i]
			}
		}
	}
	outs := make([]*te.Tensor, len(grp.Outputs))
	for i, o := range grp.Outputs {
		t := vals[o]
		if t == nil {
			return nil, fmt.Errorf("output %s was not lowered", o)
		}
		if t.IsPlaceholder() {
			var err error
			if t, err = te.Reshape(o+"_copy", t, t.Shape, false); err != nil {
				return nil, err
			}
		}
		outs[i] = t
	}
	dag, err := te.NewDAG(outs...)
	if err != nil {
		return nil, err
	}
	grp.Inputs = make([]string, len(dag.Inputs))
	for i, t := range dag.Inputs {
		name, ok := source[t]
		if !ok {
			return nil, fmt.Errorf("placeholder %s does not come from the graph", t.Name)
		}
		grp.Inputs[i] = name
	}
	grp.DAG, grp.Key = dag, dag.WorkloadKey()
	return dag, nil
}

// shortKey is the part of a workload key a table shows.
func shortKey(key string) string {
	if i := strings.IndexByte(key, '-'); i >= 0 && len(key) > i+9 {
		return key[:i+9]
	}
	return key
}

// WritePlan prints what tune inspect shows of a plan: the fused groups
// (with groups), the task table (WriteTasks) and, for dag ≥ 0, the compute
// DAG of task dag.
func WritePlan(w io.Writer, g *graph.Graph, p *Plan, groups bool, dag int) error {
	if dag >= len(p.Tasks) {
		return fmt.Errorf("--dag %d: the model has %d tasks", dag, len(p.Tasks))
	}
	if groups {
		fmt.Fprintf(w, "\nfused groups (%d):\n", len(p.Groups))
		if err := WriteGroups(w, g, p.Groups); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\ntasks:\n")
	if err := WriteTasks(w, g, p); err != nil {
		return err
	}
	if dag >= 0 {
		t := p.Tasks[dag]
		_, err := fmt.Fprintf(w, "\ntask %d (%s, key %s), DAG of group %d:\n%s", dag, t.Ops(), t.Key, t.Groups[0].ID, t.DAG)
		return err
	}
	return nil
}

// WriteTasks prints the task table: key prefix, ops, output shape, GFLOP
// of one occurrence (MFLOP for models under 0.1 GFLOP), weight and share
// of the total FLOPs, then the totals.
func WriteTasks(w io.Writer, g *graph.Graph, p *Plan) error {
	total := p.TotalFLOPs()
	unit, scale := "GFLOP", 1e9
	if total < 1e8 {
		unit, scale = "MFLOP", 1e6
	}
	t := table{header: []string{"task", "key", "ops", "output", unit, "weight", "share"}, right: "1000111"}
	for i, task := range p.Tasks {
		share := 0.0
		if total > 0 {
			share = 100 * float64(task.Weight) * task.FLOPs / total
		}
		t.add(fmt.Sprint(i), shortKey(task.Key), task.Ops(), outputShapes(g, task.Groups[0]),
			fmt.Sprintf("%.4f", task.FLOPs/scale), fmt.Sprint(task.Weight), fmt.Sprintf("%.1f%%", share))
	}
	if err := t.write(w); err != nil {
		return err
	}
	alts := 0
	for _, grp := range p.Groups {
		alts += len(grp.Alternatives)
	}
	if alts > 0 {
		if _, err := fmt.Fprintf(w, "%d groups have an alternative algorithm (its own task; the build runs the faster measured)\n", alts); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d tasks, %d groups, %.3f %s per inference\n", len(p.Tasks), len(p.Groups), total/scale, unit)
	return err
}

func outputShapes(g *graph.Graph, grp *Group) string {
	shapes := make([]string, len(grp.Outputs))
	for i, o := range grp.Outputs {
		shapes[i] = shapeString(g.Values[o].Shape)
	}
	return strings.Join(shapes, " ")
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// table formats rows in columns as wide as their widest cell.
type table struct {
	header []string
	right  string // per column, '1' to align right
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	width := make([]int, len(t.header))
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case i < len(t.right) && t.right[i] == '1':
				b.WriteString(pad + c)
			case i == len(r)-1:
				b.WriteString(c)
			default:
				b.WriteString(c + pad)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
