package main

import (
	"fmt"
	"io"
	"strings"

	"tessera/internal/cli"
	"tessera/partition"
)

// inspectUsage is the help of the command, before its flags.
const inspectUsage = "usage: tune inspect model.onnx [--input name=d0,d1,... ...] [--no-pass NAME ...]\n\nflags:\n"

// runInspect is `tune inspect model.onnx [--input name=dims ...] [--no-pass NAME ...]`:
// the graph's size before and after the passes, the fused groups and the
// task table.
func runInspect(args []string, stdout, stderr io.Writer) error {
	var mf modelFlags
	fs := cli.NewFlagSet("tune inspect", stderr, &mf)
	groups := fs.Bool("groups", true, "list the fused groups")
	maxDepth := fs.Int("max-fuse-depth", partition.DefaultMaxFuseDepth, "largest group fusion may build, in ops")
	dag := fs.Int("dag", -1, "print the compute DAG of task `N`")
	cli.SetUsage(fs, inspectUsage)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return cli.ErrUsage
	}
	m, err := loadModel(pos[0], mf)
	if err != nil {
		return err
	}
	cli.Notes(stderr, "tune inspect", m.Notes)
	p, err := partition.Extract(m.Graph, partition.Options{MaxFuseDepth: *maxDepth, Winograd: mf.winograd})
	if err != nil {
		return err
	}
	var b strings.Builder
	m.WriteSummary(&b, pos[0])
	if *groups {
		fmt.Fprintf(&b, "\nfused groups (%d):\n", len(p.Groups))
		if err := partition.WriteGroups(&b, m.Graph, p.Groups); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "\ntasks:\n")
	if err := partition.WriteTasks(&b, m.Graph, p); err != nil {
		return err
	}
	if *dag >= 0 {
		if *dag >= len(p.Tasks) {
			return fmt.Errorf("--dag %d: the model has %d tasks", *dag, len(p.Tasks))
		}
		t := p.Tasks[*dag]
		fmt.Fprintf(&b, "\ntask %d (%s, key %s), DAG of group %d:\n%s", *dag, t.Ops(), t.Key, t.Groups[0].ID, t.DAG)
	}
	_, err = io.WriteString(stdout, cli.PrintableLines(b.String()))
	return err
}
