package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/assemble/modelbuild"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/internal/cli"
)

// buildUsage is the help of the command, before its flags.
const buildUsage = "usage: tune build model.onnx [--db FILE | --no-records] -o DIR [flags]\n\n" +
	"Compiles the whole model with the best record of every task in --db (a task\n" +
	"without one gets a default schedule and a warning) into DIR: a shared library,\n" +
	"its C header, the weights and a manifest. With records of both activation\n" +
	"layouts (tune, and tune --no-pass convert-layout), it builds both, times them\n" +
	"end to end and keeps the faster (--layout).\n\nflags:\n"

// buildFlags are the flags of `tune build`.
type buildFlags struct {
	mf                    cli.Model
	target                backend.Config
	db, out, layout       string
	noRecords, singleFile bool
}

func (b *buildFlags) Register(fs *flag.FlagSet) {
	b.mf.Register(fs)
	cli.RegisterDB(fs, &b.db, " (from tune)")
	fs.BoolVar(&b.noRecords, "no-records", false, "use no records: every task gets the default schedule")
	fs.StringVar(&b.out, "o", "", "output `DIR` (created; required)")
	cli.RegisterTarget(fs, &b.target, "target to build for", cli.CPUHelp+"; the library refuses to load on a processor without the level's features", "use the records measured with `N` threads (the --threads of tune)")
	fs.BoolVar(&b.singleFile, "single-file", false, "embed the weights in the library: libmodel.so alone is the model (no weights.bin)")
	fs.StringVar(&b.layout, "layout", "auto", "activation layout: nhwc (the convert-layout pass), nchw (as the model gives it), or auto: the one whose tasks have records; where both have, both are built, timed end to end, and the faster is kept")
	cli.SetUsage(fs, buildUsage)
}

// runBuild is `tune build model.onnx [--db FILE | --no-records] -o DIR`:
// the model is loaded over --range or in the layout chosen
// (modelbuild.Open), then built (modelbuild.Build.Run); a signal stops it,
// leaving -o incomplete.
func runBuild(args []string, stdout, stderr io.Writer) error {
	var bf buildFlags
	pos, err := cli.Parse(cli.NewFlagSet("tune build", stderr, &bf), args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || bf.out == "" {
		return cli.Usagef(stderr, "tune build: want one model file and -o DIR (run 'tune build -h')")
	}
	if bf.target.Threads <= 0 {
		return errors.New("--threads must be positive")
	}
	layouts, err := assemble.Layouts(bf.layout, bf.mf.NoPass["convert-layout"])
	if err != nil {
		return err
	}
	ctx, sigs := cli.NotifySignals()
	defer sigs.Stop()
	stopped := "the build was stopped; " + bf.out + " is incomplete"
	b, err := modelbuild.Open(ctx, pos[0], modelbuild.Options{Load: bf.mf.LoadOptions(cli.CPUOf(bf.target)), Partition: bf.mf.Partition(), Ranges: bf.mf.Ranges,
		Layouts: layouts, Target: bf.target, DB: bf.db, NoRecords: bf.noRecords, Dir: bf.out,
		Assemble: assemble.Options{Model: pos[0], Warn: stderr, SingleFile: bf.singleFile, Frozen: strings.Fields(bf.mf.Freeze.String())}})
	if err != nil {
		return sigs.Interrupted(err, stopped)
	}
	defer b.Close()
	if b.Reason != "" {
		fmt.Fprintf(stderr, "tune build: %s\n", b.Reason)
	}
	cli.Notes(stderr, "tune build", b.Notes)
	m, err := b.Run(ctx, stdout)
	if err != nil {
		return sigs.Interrupted(err, stopped)
	}
	return b.WriteOtherTargets(stderr, m)
}
