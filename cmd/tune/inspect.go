package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"tessera/graph"
	"tessera/partition"
)

// inspectUsage is the help of the command, before its flags.
const inspectUsage = "usage: tune inspect model.onnx [--input name=d0,d1,... ...] [--no-pass NAME ...]\n\nflags:\n"

// runInspect is `tune inspect model.onnx [--input name=dims ...] [--no-pass NAME ...]`:
// the graph's size before and after the passes, the fused groups and the
// task table.
func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	groups := fs.Bool("groups", true, "list the fused groups")
	maxDepth := fs.Int("max-fuse-depth", partition.DefaultMaxFuseDepth, "largest group fusion may build, in ops")
	dag := fs.Int("dag", -1, "print the compute DAG of task `N`")
	setUsage(fs, inspectUsage)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	m, err := loadModel(pos[0], mf)
	if err != nil {
		return err
	}
	m.printNotes(stderr, "tune inspect")
	p, err := partition.Extract(m.g, partition.Options{MaxFuseDepth: *maxDepth, Winograd: mf.winograd})
	if err != nil {
		return err
	}
	var b strings.Builder
	writeGraph(&b, pos[0], m, mf)
	if *groups {
		fmt.Fprintf(&b, "\nfused groups (%d):\n", len(p.Groups))
		if err := partition.WriteGroups(&b, m.g, p.Groups); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "\ntasks:\n")
	if err := partition.WriteTasks(&b, m.g, p); err != nil {
		return err
	}
	if *dag >= 0 {
		if *dag >= len(p.Tasks) {
			return fmt.Errorf("--dag %d: the model has %d tasks", *dag, len(p.Tasks))
		}
		t := p.Tasks[*dag]
		fmt.Fprintf(&b, "\ntask %d (%s, key %s), DAG of group %d:\n%s", *dag, t.Ops(), t.Key, t.Groups[0].ID, t.DAG)
	}
	_, err = io.WriteString(stdout, printableLines(b.String()))
	return err
}

// printableLines applies printable to every line of s: a model's names
// reach the terminal escaped.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// writeGraph prints the model's inputs and outputs and its size before and
// after the passes.
func writeGraph(w io.Writer, path string, m *loaded, mf modelFlags) {
	g := m.g
	values := func(names []string) string {
		parts := make([]string, len(names))
		for i, n := range names {
			dims := make([]string, len(g.Values[n].Shape))
			for k, d := range g.Values[n].Shape {
				dims[k] = fmt.Sprint(d)
			}
			parts[i] = n + "[" + strings.Join(dims, ",") + "]"
		}
		return strings.Join(parts, " ")
	}
	fmt.Fprintf(w, "model %s: graph %q, opset %d\n", path, g.Name, g.Opset)
	fmt.Fprintf(w, "  inputs:  %s\n  outputs: %s\n", values(g.Inputs), values(g.Outputs))
	if len(mf.freeze) > 0 {
		fmt.Fprintf(w, "  frozen:  %s\n", mf.freeze)
	}
	var run []string
	for _, name := range graph.PassNames() {
		if !mf.noPass[name] {
			run = append(run, name)
		}
	}
	fmt.Fprintf(w, "\ngraph                 nodes  constants  constant MB\n")
	for _, r := range []struct {
		name string
		s    graph.Stats
	}{{"decoded", m.Before}, {"after passes", m.After}} {
		fmt.Fprintf(w, "  %-18s %6d %10d %12.1f   %s\n", r.name, r.s.Nodes, r.s.Consts, float64(r.s.ConstBytes)/1e6, r.s.OpsString())
	}
	fmt.Fprintf(w, "  passes: %s\n", strings.Join(run, ", "))
}
