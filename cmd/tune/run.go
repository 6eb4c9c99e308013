package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/tsrt"
)

// runUsage is the help of the command, before its flags.
const runUsage = "usage: tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]\n\n" +
	"Runs the model built into DIR by tune build once, writes its outputs as\n" +
	"NAME.npy (or .pb, each in its dtype; .bin, raw float32) and compares them\n" +
	"with the references: an element differs when |got-want| > atol + rtol·|want|.\n" +
	"An .npy input of another integer dtype than the model's is taken where\n" +
	"every value is one of the model's dtype.\n\nflags:\n"

// runFlags are the flags of `tune run`: a tsrt.FileRun.
type runFlags struct {
	tsrt.FileRun
	inputs, refs cli.Files
	maxMemory    *cli.Bytes
}

func (r *runFlags) Register(fs *flag.FlagSet) {
	r.inputs, r.refs = cli.Files{}, cli.Files{}
	fs.Var(r.inputs, "input", "input `name=FILE` (raw float32, .npy or ONNX TensorProto .pb; repeatable; a bare FILE for a model of one input)")
	fs.Var(r.refs, "reference", "expected output `name=FILE` to compare with (repeatable)")
	fs.StringVar(&r.OutDir, "o", ".", "write the outputs into `DIR`")
	fs.StringVar(&r.Format, "format", "npy", "format of the written outputs: npy or pb (in each output's dtype), raw (float32)")
	fs.IntVar(&r.Threads, "threads", runtime.NumCPU(), "threads of the model")
	fs.IntVar(&r.Dim, "dim", 0, "of a model built over a dimension given at run time, with raw inputs and a batch: its value `S` (.npy and .pb inputs give it)")
	fs.Float64Var(&r.RTol, "rtol", 1e-3, "relative tolerance of the comparison with --reference")
	fs.Float64Var(&r.ATol, "atol", 1e-4, "absolute tolerance of the comparison with --reference")
	r.maxMemory = cli.MaxMemory(fs, "the most memory a run may take (inputs, outputs, weights, arena), e.g. 8GiB")
	cli.SetUsage(fs, runUsage)
}

// runModel is `tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]`
// (tsrt.Model.RunFiles).
func runModel(args []string, stdout, stderr io.Writer) error {
	var rf runFlags
	model, err := cli.OpenBuildDir(cli.NewFlagSet("tune run", stderr, &rf), args)
	if err != nil {
		return err
	}
	defer model.Close()
	r := rf.FileRun
	r.Inputs, r.References, r.MaxMemory = rf.inputs, rf.refs, int64(*rf.maxMemory)
	written, err := model.RunFiles(context.Background(), r)
	for _, o := range written {
		fmt.Fprintf(stdout, "output %s → %s\n", cli.Printable(o.Tensor.String()), cli.Printable(o.Path))
		if o.Diff != nil {
			fmt.Fprintf(stdout, "  vs %s: max abs error = %.3g, max rel error = %.3g: %s\n", o.Reference, o.Diff.MaxAbs, o.Diff.MaxRel, o.Verdict(r))
		}
	}
	return err
}
