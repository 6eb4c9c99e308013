package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"tessera/build"
	"tessera/internal/cli"
)

// runUsage is the help of the command, before its flags.
const runUsage = "usage: tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]\n\n" +
	"Runs the model built into DIR by tune build once, writes its outputs as\n" +
	"NAME.npy (or .pb, .bin) and compares them with the references: an element\n" +
	"differs when |got-want| > atol + rtol·|want|.\n\nflags:\n"

// runFlags are the flags of `tune run`.
type runFlags struct {
	inputs, refs   cli.Files
	outDir, format string
	threads        int
	rtol, atol     float64
	maxMemory      *cli.Bytes
}

func (r *runFlags) Register(fs *flag.FlagSet) {
	r.inputs, r.refs = cli.Files{}, cli.Files{}
	fs.Var(r.inputs, "input", "input `name=FILE` (raw float32, .npy or ONNX TensorProto .pb; repeatable; a bare FILE for a model of one input)")
	fs.Var(r.refs, "reference", "expected output `name=FILE` to compare with (repeatable)")
	fs.StringVar(&r.outDir, "o", ".", "write the outputs into `DIR`")
	fs.StringVar(&r.format, "format", "npy", "format of the written outputs: npy, pb or raw")
	fs.IntVar(&r.threads, "threads", runtime.NumCPU(), "threads of the model")
	fs.Float64Var(&r.rtol, "rtol", 1e-3, "relative tolerance of the comparison with --reference")
	fs.Float64Var(&r.atol, "atol", 1e-4, "absolute tolerance of the comparison with --reference")
	r.maxMemory = cli.MaxMemory(fs, "the most memory a run may take (inputs, outputs, weights, arena), e.g. 8GiB")
	cli.SetUsage(fs, runUsage)
}

// runModel is `tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]`.
func runModel(args []string, stdout, stderr io.Writer) error {
	var rf runFlags
	model, err := openBuildDir(cli.NewFlagSet("tune run", stderr, &rf), args)
	if err != nil {
		return err
	}
	ext, ok := map[string]string{"npy": ".npy", "pb": ".pb", "raw": ".bin"}[rf.format]
	if !ok {
		return fmt.Errorf("--format %q: want npy, pb or raw", rf.format)
	}
	man := model.Manifest
	inFiles, err := build.MatchFiles("input", rf.inputs, man.Inputs)
	if err != nil {
		return err
	}
	refFiles, err := build.MatchFiles("reference", rf.refs, man.Outputs)
	if err != nil {
		return err
	}
	paths, err := build.OutputPaths(man.Outputs, rf.outDir, ext)
	if err != nil {
		return err
	}
	data, err := build.ReadInputs(man.Inputs, inFiles)
	if err != nil {
		return err
	}
	outs, err := model.Run(context.Background(), data, build.RunOptions{Threads: rf.threads, MaxMemory: int64(*rf.maxMemory)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(rf.outDir, 0o755); err != nil {
		return err
	}
	return rf.write(stdout, man.Outputs, outs, paths, refFiles)
}

// write writes the outputs to their paths and compares those with a
// reference file with it.
func (rf *runFlags) write(stdout io.Writer, ts []build.TensorInfo, outs [][]float32, paths []string, refs map[string]string) error {
	var bad []string
	for i, t := range ts {
		if err := build.WriteTensor(paths[i], t, outs[i]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "output %s → %s\n", cli.Printable(t.String()), cli.Printable(paths[i]))
		if file, ok := refs[t.Name]; ok {
			same, err := compare(stdout, t, outs[i], file, rf.rtol, rf.atol)
			if err != nil {
				return err
			}
			if !same {
				bad = append(bad, t.Name)
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("output %s differs from the reference", strings.Join(bad, ", "))
	}
	return nil
}

// compare prints how output t differs from the reference in file, and
// reports whether every element is within the tolerances.
func compare(w io.Writer, t build.TensorInfo, got []float32, file string, rtol, atol float64) (bool, error) {
	want, err := build.ReadTensor(file, t)
	if err != nil {
		return false, fmt.Errorf("reference %s: %w", t.Name, err)
	}
	d := build.Diff(got, want, rtol, atol)
	verdict := "ok"
	if d.Bad > 0 {
		verdict = fmt.Sprintf("FAIL: %d of %d elements beyond atol %g + rtol %g·|want|", d.Bad, len(want), atol, rtol)
	}
	fmt.Fprintf(w, "  vs %s: max abs error = %.3g, max rel error = %.3g: %s\n", file, d.MaxAbs, d.MaxRel, verdict)
	return d.Bad == 0, nil
}

// openBuildDir parses the flags of a command that takes one build
// directory and opens it.
func openBuildDir(fs *flag.FlagSet, args []string) (*build.Model, error) {
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, cli.Usagef(fs.Output(), "%s: want one build directory (run '%s -h')", fs.Name(), fs.Name())
	}
	return build.Open(pos[0])
}
