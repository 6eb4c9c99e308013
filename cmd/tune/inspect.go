package main

import (
	"io"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tuning"
)

// inspectUsage is the help of the command, before its flags.
const inspectUsage = "usage: tune inspect model.onnx [--input name=d0,d1,... ...] [--range NAME=lo..hi ...] [--no-pass NAME ...]\n" +
	"       tune inspect model.onnx --dag N --dump PASS [--target T] [--cpu NAME]   (PASS: list, lower/NAME, codegen/NAME, source)\n\nflags:\n"

// runInspect is `tune inspect model.onnx [--input name=dims ...] [--no-pass NAME ...]`:
// the graph's size before and after the passes, the fused groups and the
// task table (tuning.Inspect).
func runInspect(args []string, stdout, stderr io.Writer) error {
	var mf cli.Model
	fs := cli.NewFlagSet("tune inspect", stderr, &mf)
	groups := fs.Bool("groups", true, "list the fused groups")
	maxDepth := fs.Int("max-fuse-depth", partition.DefaultMaxFuseDepth, "largest group fusion may build, in ops")
	dag := fs.Int("dag", -1, "print the compute DAG of task `N` (with --range: its form over the ranges)")
	asJSON := fs.Bool("json", false, "print it all as one JSON document (notes go to stderr)")
	dump := fs.String("dump", "", "with --dag N: print the kernel of task N's default schedule as it is after `PASS` (lower/NAME or codegen/NAME; source: the C or GPU source the compiler receives; list: the passes)")
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
	in, err := tuning.Inspect(pos[0], tuning.InspectOptions{Load: mf.LoadOptions(cli.CPUOf(tc)), Partition: po, Ranges: mf.Ranges, Groups: *groups, DAG: *dag})
	if err != nil {
		return err
	}
	cli.Notes(stderr, "tune inspect", in.Notes)
	if *dump != "" && len(mf.Ranges) == 0 { // over --range, --dump is not looked at
		out, err := in.Dump(*dump, tc)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, out)
		return err
	}
	if *asJSON {
		doc, err := in.Report()
		if err != nil {
			return err
		}
		return cli.WriteJSON(stdout, doc)
	}
	var b strings.Builder
	if err := in.WriteText(&b); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, cli.PrintableLines(b.String()))
	return err
}
