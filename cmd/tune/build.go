package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"tessera/build"
	"tessera/measure"
	"tessera/records"
	"tessera/target"
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
	mf                    modelFlags
	db, out, target, cpu  string
	layout                string
	noRecords, singleFile bool
	threads               int
}

func (b *buildFlags) register(fs *flag.FlagSet) {
	b.mf.register(fs)
	fs.StringVar(&b.db, "db", "tuning.db", "records database `FILE` (from tune)")
	fs.BoolVar(&b.noRecords, "no-records", false, "use no records: every task gets the default schedule")
	fs.StringVar(&b.out, "o", "", "output `DIR` (created; required)")
	fs.StringVar(&b.target, "target", "cpu", "target to build for: "+strings.Join(target.Names, ", "))
	fs.IntVar(&b.threads, "threads", runtime.NumCPU(), "use the records measured with `N` threads (the --threads of tune)")
	fs.StringVar(&b.cpu, "cpu", cpuDefault(), cpuFlagHelp+"; the library refuses to load on a processor without the level's features")
	fs.BoolVar(&b.singleFile, "single-file", false, "embed the weights in the library: libmodel.so alone is the model (no weights.bin)")
	fs.StringVar(&b.layout, "layout", "auto", "activation layout: nhwc (the convert-layout pass), nchw (as the model gives it), or auto: the one whose tasks have records; where both have, both are built, timed end to end, and the faster is kept")
	setUsage(fs, buildUsage)
}

// runBuild is `tune build model.onnx [--db FILE | --no-records] -o DIR`:
// the layout is chosen (build.ChooseLayout), then built (build.Build).
func runBuild(args []string, stdout, stderr io.Writer) error {
	var bf buildFlags
	fs := flagSet("tune build", stderr, &bf)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || bf.out == "" {
		fmt.Fprintln(stderr, "tune build: want one model file and -o DIR (run 'tune build -h')")
		return errUsage
	}
	if bf.threads <= 0 {
		return errors.New("--threads must be positive")
	}
	layouts, err := buildLayouts(bf.layout, bf.mf)
	if err != nil {
		return err
	}
	tg, err := newTarget(bf.target, bf.cpu, bf.threads, measure.RunOptions{}, &measure.Builder{Timeout: build.LibraryTimeout}, false)
	if err != nil {
		return err
	}
	defer tg.Close()
	opts := build.Options{Target: tg, Model: pos[0], Warn: stderr, SingleFile: bf.singleFile, Frozen: strings.Fields(bf.mf.freeze.String())}
	var store *records.Store
	if !bf.noRecords {
		if store, err = openBuildRecords(bf.db, pos[0]); err != nil {
			return err
		}
		defer store.Close()
		opts.Records = store
	}
	ctx, caught, stop := signalContext()
	defer stop()
	stopped := func(err error) error {
		if sig := caught(); sig != 0 {
			return &interruptedError{sig: sig, msg: "the build was stopped; " + bf.out + " is incomplete"}
		}
		return err
	}
	start := time.Now()
	c, err := build.ChooseLayout(ctx, pos[0], bf.mf.loadOptions(), layouts, opts, build.RunOptions{Threads: bf.threads})
	if err != nil {
		return stopped(err)
	}
	printLayoutChoice(stderr, c, bf.threads, bf.out)
	printNotes(stderr, "tune build", c.Chosen.Notes)
	m, err := build.Build(ctx, c.Chosen.Graph, c.Chosen.Plan, bf.out, opts)
	if err != nil {
		return stopped(err)
	}
	writeBuildReport(stdout, m, bf.out, time.Since(start))
	if store != nil {
		return hintOtherTargets(stderr, store, m)
	}
	return nil
}

// openBuildRecords opens the records database of a build: a missing one
// is a mistake here; an existing one is only read.
func openBuildRecords(db, model string) (*records.Store, error) {
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("records database %s does not exist: tune the model first (tune --db %s %s), or build with default schedules (--no-records)", db, db, model)
	}
	return records.OpenReadOnly(db)
}

// buildLayouts returns the layouts --layout asks for, in order of
// preference on a tie. --no-pass convert-layout leaves only NCHW.
func buildLayouts(layout string, mf modelFlags) ([]string, error) {
	noConvert := mf.noPass["convert-layout"]
	switch layout {
	case "auto":
		if noConvert {
			return []string{build.LayoutNCHW}, nil
		}
		return []string{build.LayoutNHWC, build.LayoutNCHW}, nil
	case build.LayoutNHWC:
		if noConvert {
			return nil, fmt.Errorf("--layout nhwc needs the convert-layout pass, which --no-pass convert-layout disables")
		}
		return []string{build.LayoutNHWC}, nil
	case build.LayoutNCHW:
		return []string{build.LayoutNCHW}, nil
	}
	return nil, fmt.Errorf("--layout %q: want auto, nhwc or nchw", layout)
}

// printLayoutChoice says why the layout was chosen, where there was a
// choice: the race's times, or what the records cover of each layout.
func printLayoutChoice(w io.Writer, c *build.LayoutChoice, threads int, out string) {
	switch {
	case c.Raced:
		fmt.Fprintf(w, "tune build: both layouts are tuned; end to end, %d threads, median of %d rounds of %d runs:", threads, build.RaceRounds, build.RaceRepeat)
		for _, lm := range c.Weighed {
			if lm.Share >= build.MinTunedShare {
				fmt.Fprintf(w, " %s %.3f ms (records' estimate %.3f);", lm.Layout, lm.Median*1e3, lm.Estimate*1e3)
			}
		}
		fmt.Fprintf(w, " building %s into %s\n", c.Chosen.Layout, out)
	case len(c.Weighed) > 1:
		fmt.Fprintf(w, "tune build: layout %s: records cover %.1f%% of its FLOPs", c.Chosen.Layout, c.Chosen.Share)
		for _, lm := range c.Weighed {
			if lm != c.Chosen {
				fmt.Fprintf(w, ", %.1f%% of %s's", lm.Share, lm.Layout)
			}
		}
		fmt.Fprintf(w, " (layouts are raced end to end when records cover %d%% of each)\n", build.MinTunedShare)
	}
}

// hintOtherTargets says which other targets have records of the tasks
// that got default schedules: most often records measured with another
// --threads.
func hintOtherTargets(w io.Writer, store *records.Store, m *build.Manifest) error {
	var untuned []string
	for _, t := range m.Tasks {
		if t.Schedule == build.FromDefault {
			untuned = append(untuned, t.Key)
		}
	}
	if len(untuned) == 0 {
		return nil
	}
	targets, err := store.Targets(untuned)
	if err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		n := 0 // untuned tasks with a valid record on t
		for _, st := range targets[t] {
			if st.Records > st.Errors {
				n++
			}
		}
		if n > 0 && t != m.Target {
			fmt.Fprintf(w, "hint: %d of the %d tasks built with default schedules have records for target %q (another --threads?)\n", n, len(untuned), t)
		}
	}
	return nil
}

// writeBuildReport prints the task table, the coverage and the memory plan.
func writeBuildReport(w io.Writer, m *build.Manifest, dir string, took time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tkey\tops\tlayout\tweight\tshare\tschedule")
	for _, t := range m.Tasks {
		sched := "default"
		if t.Record != nil {
			sched = fmt.Sprintf("record, %.4f ms", t.Record.Cost*1e3)
		}
		share := 0.0
		if m.Coverage.FLOPs > 0 {
			share = 100 * float64(t.Weight) * t.FLOPs / m.Coverage.FLOPs
		}
		layout := t.Layout
		if layout == "" {
			layout = "-"
		}
		if len(t.Packed) > 0 {
			layout += ", packed weights"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.1f%%\t%s\n", t.Index, shortKey(t.Key), t.Ops, layout, t.Weight, share, sched)
	}
	tw.Flush()
	fmt.Fprintf(w, "built %s into %s in %.1fs (target %s)\n", m.Model, dir, took.Seconds(), m.Target)
	fmt.Fprintf(w, "tuned tasks = %d/%d\n", m.Coverage.TunedTasks, m.Coverage.Tasks)
	fmt.Fprintf(w, "tuned FLOPs = %.1f%%\n", m.Coverage.TunedShare())
	fmt.Fprintf(w, "arena peak bytes = %d\n", m.Memory.ArenaBytes)
	fmt.Fprintf(w, "sum of intermediates bytes = %d\n", m.Memory.IntermediatesBytes)
	fmt.Fprintf(w, "largest live set bytes = %d (%d intermediate tensors)\n", m.Memory.LiveMaxBytes, m.Memory.Intermediates)
	fmt.Fprintf(w, "weights bytes = %d (%d tensors)\n", m.Weights.Bytes, m.Weights.Tensors)
}
