package main

import (
	"fmt"
	"io"
	"strings"

	"tessera/internal/cli"
	"tessera/partition"
	"tessera/tuning"
)

// inspectUsage is the help of the command, before its flags.
const inspectUsage = "usage: tune inspect model.onnx [--input name=d0,d1,... ...] [--range NAME=lo..hi ...] [--no-pass NAME ...]\n\nflags:\n"

// runInspect is `tune inspect model.onnx [--input name=dims ...] [--no-pass NAME ...]`:
// the graph's size before and after the passes, the fused groups and the
// task table.
func runInspect(args []string, stdout, stderr io.Writer) error {
	var mf modelFlags
	fs := cli.NewFlagSet("tune inspect", stderr, &mf)
	groups := fs.Bool("groups", true, "list the fused groups")
	maxDepth := fs.Int("max-fuse-depth", partition.DefaultMaxFuseDepth, "largest group fusion may build, in ops")
	dag := fs.Int("dag", -1, "print the compute DAG of task `N` (with --range: its form over the ranges)")
	cli.SetUsage(fs, inspectUsage)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return cli.ErrUsage
	}
	if len(mf.ranges) > 0 {
		r, err := tuning.LoadRange(pos[0], mf.loadOptions(), mf.ranges, partition.Options{MaxFuseDepth: *maxDepth, Alternatives: mf.winograd})
		if err != nil {
			return err
		}
		sp := r.Plan
		var b strings.Builder
		if err := partition.WriteSymbolic(&b, sp); err != nil {
			return err
		}
		// Whether tune and tune build take the ranges: a batch whose
		// samples every group computes apart, and one dimension whose
		// value the kernels take at run time.
		if _, bp, dp, err := r.Dims(); err != nil {
			fmt.Fprintf(&b, "tune and tune build over %s: no: %v\n", mf.ranges, err)
		} else {
			var how []string
			if bp != nil {
				how = append(how, fmt.Sprintf("%s one sample at a time (the model at %s=1, each task run once per sample)", bp.Symbol, bp.Symbol.Name))
			}
			if dp != nil {
				how = append(how, fmt.Sprintf("%s given to the kernels at run time (tuned at %s=%v, %d workloads, their best schedules probed at %v; built at each of its %d values)",
					dp.Symbol, dp.Symbol.Name, dp.Symbol.TunePoints(), len(tuning.RangeTasks(nil, dp)), dp.Symbol.ProbePoints(), dp.Symbol.Hi-dp.Symbol.Lo+1))
			}
			fmt.Fprintf(&b, "tune and tune build over %s: yes: %s\n", mf.ranges, strings.Join(how, "; "))
		}
		if *dag >= len(sp.Tasks) {
			return fmt.Errorf("--dag %d: the model has %d tasks", *dag, len(sp.Tasks))
		}
		if *dag >= 0 {
			fmt.Fprintf(&b, "\ntask %d (%s, key %s), its DAG over the ranges:\n%s", *dag, sp.Tasks[*dag].Ops, sp.Tasks[*dag].Key, sp.Tasks[*dag].Form)
		}
		_, err = io.WriteString(stdout, cli.PrintableLines(b.String()))
		return err
	}
	m, p, err := tuning.LoadModel(pos[0], mf.loadOptions(), partition.Options{MaxFuseDepth: *maxDepth, Alternatives: mf.winograd})
	if err != nil {
		return err
	}
	cli.Notes(stderr, "tune inspect", m.Notes)
	var b strings.Builder
	m.WriteSummary(&b, pos[0])
	if err := partition.WritePlan(&b, m.Graph, p, *groups, *dag); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, cli.PrintableLines(b.String()))
	return err
}
