package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tuning"
)

// inspectUsage is the help of the command, before its flags.
const inspectUsage = "usage: tune inspect model.onnx [--input name=d0,d1,... ...] [--range NAME=lo..hi ...] [--no-pass NAME ...]\n" +
	"       tune inspect model.onnx --dag N --dump PASS [--target T] [--cpu NAME]   (PASS: list, lower/NAME, codegen/NAME)\n\nflags:\n"

// runInspect is `tune inspect model.onnx [--input name=dims ...] [--no-pass NAME ...]`:
// the graph's size before and after the passes, the fused groups and the
// task table.
func runInspect(args []string, stdout, stderr io.Writer) error {
	var mf cli.Model
	fs := cli.NewFlagSet("tune inspect", stderr, &mf)
	groups := fs.Bool("groups", true, "list the fused groups")
	maxDepth := fs.Int("max-fuse-depth", partition.DefaultMaxFuseDepth, "largest group fusion may build, in ops")
	dag := fs.Int("dag", -1, "print the compute DAG of task `N` (with --range: its form over the ranges)")
	asJSON := fs.Bool("json", false, "print it all as one JSON document (notes go to stderr)")
	dump := fs.String("dump", "", "with --dag N: print the kernel of task N's default schedule as it is after `PASS` (lower/NAME or codegen/NAME; list: the passes)")
	var tc backend.Config
	cli.RegisterTarget(fs, &tc, "with --dump: the target whose passes run", "with --dump: "+cli.CPUHelp, "")
	cli.SetUsage(fs, inspectUsage)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return cli.ErrUsage
	}
	po := mf.Partition()
	po.MaxFuseDepth = *maxDepth
	if len(mf.Ranges) > 0 {
		r, err := tuning.LoadRange(pos[0], mf.LoadOptions(), mf.Ranges, po)
		if err != nil {
			return err
		}
		sp := r.Plan
		dagRow, err := r.DAGRow(*dag)
		if err != nil {
			return err
		}
		over := r.Support(mf.Ranges.String())
		if *asJSON {
			return cli.WriteJSON(stdout, inspectResult{RangePlan: sp.Report(), RangeTuning: &over, RangeDAG: dagRow})
		}
		var b strings.Builder
		if err := partition.WriteSymbolic(&b, sp); err != nil {
			return err
		}
		if over.Yes {
			fmt.Fprintf(&b, "tune and tune build over %s: yes: %s\n", mf.Ranges, strings.Join(over.How, "; "))
		} else {
			fmt.Fprintf(&b, "tune and tune build over %s: no: %s\n", mf.Ranges, over.Why)
		}
		if dagRow != nil {
			fmt.Fprintf(&b, "\ntask %d (%s, key %s), its DAG over the ranges:\n%s", dagRow.Task, dagRow.Ops, dagRow.Key, dagRow.Form)
		}
		_, err = io.WriteString(stdout, cli.PrintableLines(b.String()))
		return err
	}
	if *dump != "" && len(mf.Ranges) > 0 {
		return fmt.Errorf("--dump takes a model of static shapes (not --range)")
	}
	m, p, err := tuning.LoadModel(pos[0], mf.LoadOptions(), po)
	if err != nil {
		return err
	}
	cli.Notes(stderr, "tune inspect", m.Notes)
	if *dump != "" {
		out, err := tuning.DumpPass(p, *dag, *dump, tc)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, out)
		return err
	}
	if *asJSON {
		plan, err := partition.Report(m.Graph, p, *groups, *dag)
		if err != nil {
			return err
		}
		sum := m.Summary(pos[0])
		return cli.WriteJSON(stdout, inspectResult{Model: &sum, Plan: plan})
	}
	var b strings.Builder
	m.WriteSummary(&b, pos[0])
	if err := partition.WritePlan(&b, m.Graph, p, *groups, *dag); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, cli.PrintableLines(b.String()))
	return err
}

// inspectResult is the document of tune inspect --json: of a model of
// static shapes, its summary and plan; over --range, the plan over the
// ranges, whether tune and tune build take them, and the DAG of --dag.
type inspectResult struct {
	Model       *frontend.Summary         `json:"model,omitempty"`
	Plan        *partition.PlanReport     `json:"plan,omitempty"`
	RangePlan   *partition.SymbolicReport `json:"range_plan,omitempty"`
	RangeTuning *tuning.RangeSupport      `json:"range_tuning,omitempty"`
	RangeDAG    *partition.SymbolicDAGRow `json:"range_dag,omitempty"`
}
