package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/tessera-ml/tessera/assemble/profileplot"
	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/records/curveplot"
	"github.com/tessera-ml/tessera/tsrt"
)

// benchUsage is the help of the command, before its flags.
const benchUsage = "usage: tune bench DIR [--threads N] [--warmup W] [--repeat R] [--profile [--trace FILE.json] [--plot FILE.svg|png]] [--json]\n\n" +
	"Times the model built into DIR end to end on random inputs (loaded into this\n" +
	"process, as a program would), and prints the fastest and the median run:\n  min ms = X\n  median ms = Y\n" +
	"With --profile, first a table of the steps: each kernel call's mean time in\n" +
	"the model against the time its task's record was measured at alone; --trace\n" +
	"writes them as a Chrome trace (Perfetto, chrome://tracing), --plot as a chart.\n" +
	"--json prints the report as one JSON document instead.\n\nflags:\n"

// runBench is `tune bench DIR [--threads N] [--warmup W] [--repeat R]`
// (tsrt.Model.BenchReport).
func runBench(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("tune bench", stderr, nil)
	threads := fs.Int("threads", runtime.NumCPU(), "threads of the model (OMP_NUM_THREADS)")
	warmup := fs.Int("warmup", 3, "untimed runs before the timed ones")
	repeat := fs.Int("repeat", 20, "timed runs")
	profile := fs.Bool("profile", false, "also time every step (kernel call) and print it against its task's record")
	trace := fs.String("trace", "", "with --profile, write the steps as a Chrome trace `FILE.json` (Perfetto, chrome://tracing): one slice per step, end to end")
	plot := fs.String("plot", "", "with --profile, draw each step's time beside its record's into `FILE` (.svg or .png)")
	asJSON := fs.Bool("json", false, "print the report as one JSON document")
	batch := fs.Int("batch", 0, "of a model built over a dynamic batch (tune build --range): run at batch `N` (default: the range's largest)")
	dim := fs.Int("dim", 0, "of a model built over a dimension given at run time (tune build --range S=lo..hi): run at its value `S` (default: the range's largest)")
	maxMemory := cli.MaxMemory(fs, "the most memory a run may take (inputs, outputs, weights, arena), e.g. 8GiB")
	cli.SetUsage(fs, benchUsage)
	model, err := cli.OpenBuildDir(fs, args)
	if err != nil {
		return err
	}
	defer model.Close()
	if *threads <= 0 || *warmup < 0 || *repeat <= 0 {
		return errors.New("--threads and --repeat must be positive, --warmup not negative")
	}
	if (*trace != "" || *plot != "") && !*profile {
		return errors.New("--trace and --plot draw the profile of the steps: add --profile")
	}
	var plotFormat string
	if *plot != "" {
		if plotFormat, err = curveplot.FormatOf(*plot); err != nil {
			return fmt.Errorf("--plot %s: the plot is .svg or .png", *plot)
		}
	}
	fmt.Fprintf(stderr, "bench %s (%s): %d threads, %d warm-up runs, %d timed runs\n", model.Dir(), model.Manifest().Model, *threads, *warmup, *repeat)
	opts := tsrt.RunOptions{Threads: *threads, MaxMemory: int64(*maxMemory), Batch: *batch, Dim: *dim}
	r, err := model.BenchReport(context.Background(), *warmup, *repeat, *profile, opts)
	if err != nil {
		return err
	}
	if *trace != "" {
		if err := cli.WriteOutput(*trace, r.WriteTrace); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *trace)
	}
	if *plot != "" {
		if err := cli.WriteOutput(*plot, func(w io.Writer) error { return profileplot.Draw(w, plotFormat, r) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *plot)
	}
	return cli.WriteReport(stdout, r, *asJSON)
}
