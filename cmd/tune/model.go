package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"tessera/build"
	"tessera/measure"
	"tessera/partition"
	"tessera/records"
	"tessera/target"
)

// The model commands: build a model from the records, run it, time it.
//
//	tune build model.onnx --db tuning.db -o out/   → out/{libmodel.so, tessera.h, model.c, runtime.c, weights.bin, manifest.json}
//	tune run out/ --input x=FILE [--reference y=FILE] [-o DIR]
//	tune bench out/ [--threads N] [--warmup W] [--repeat R]
//
// The work is package build's; these functions parse flags and print.

// runBuild is `tune build model.onnx [--db FILE | --no-records] -o DIR`.
func runBuild(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	db := fs.String("db", "tuning.db", "records database `FILE` (from tune)")
	noRecords := fs.Bool("no-records", false, "use no records: every task gets the default schedule")
	out := fs.String("o", "", "output `DIR` (created; required)")
	targetName := fs.String("target", "cpu", "target to build for: "+strings.Join(target.Names, ", "))
	threads := fs.Int("threads", runtime.NumCPU(), "use the records measured with `N` threads (the --threads of tune)")
	cpu := fs.String("cpu", cpuDefault(), cpuFlagHelp+"; the library refuses to load on a processor without the level's features")
	singleFile := fs.Bool("single-file", false, "embed the weights in the library: libmodel.so alone is the model (no weights.bin)")
	layout := fs.String("layout", "auto", "activation layout: nhwc (the convert-layout pass), nchw (as the model gives it), or auto: the one whose tasks have records; where both have, both are built, timed end to end, and the faster is kept")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tune build model.onnx [--db FILE | --no-records] -o DIR [flags]\n\n"+
			"Compiles the whole model with the best record of every task in --db (a task\n"+
			"without one gets a default schedule and a warning) into DIR: a shared library,\n"+
			"its C header, the weights and a manifest. With records of both activation\n"+
			"layouts (tune, and tune --no-pass convert-layout), it builds both, times them\n"+
			"end to end and keeps the faster (--layout).\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *out == "" {
		fmt.Fprintln(stderr, "tune build: want one model file and -o DIR (run 'tune build -h')")
		return errUsage
	}
	if *threads <= 0 {
		return errors.New("--threads must be positive")
	}
	layouts, err := buildLayouts(*layout, mf)
	if err != nil {
		return err
	}
	tg, err := newTarget(*targetName, *cpu, *threads, measure.RunOptions{}, &measure.Builder{Timeout: build.LibraryTimeout}, false)
	if err != nil {
		return err
	}
	defer tg.Close()
	opts := build.Options{Target: tg, Model: pos[0], Warn: stderr, SingleFile: *singleFile}
	if !*noRecords {
		// A missing database is a mistake here; an existing one is only
		// read.
		if _, err := os.Stat(*db); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("records database %s does not exist: tune the model first (tune --db %s %s), or build with default schedules (--no-records)", *db, *db, pos[0])
		}
		store, err := records.OpenReadOnly(*db)
		if err != nil {
			return err
		}
		defer store.Close()
		opts.Records = store
	}
	opts.Frozen = strings.Fields(mf.freeze.String())
	ctx, caught, stop := signalContext()
	defer stop()
	start := time.Now()
	if len(layouts) > 1 {
		chosen, err := chooseLayout(ctx, pos[0], mf, layouts, opts, *out, *threads, stderr)
		if err != nil {
			if sig := caught(); sig != 0 {
				return &interruptedError{sig: sig, msg: "the build was stopped; " + *out + " is incomplete"}
			}
			return err
		}
		layouts = []string{chosen}
	}
	l, err := loadModel(pos[0], mf.withLayout(layouts[0]))
	if err != nil {
		return err
	}
	l.printNotes(stderr, "tune build")
	// Every alternative algorithm is offered: the build keeps, per group,
	// the one with the fastest record (none: the direct definition).
	plan, err := partition.Extract(l.g, partition.Options{Winograd: true})
	if err != nil {
		return err
	}
	m, err := build.Build(ctx, l.g, plan, *out, opts)
	if err != nil {
		if sig := caught(); sig != 0 {
			return &interruptedError{sig: sig, msg: "the build was stopped; " + *out + " is incomplete"}
		}
		return err
	}
	writeBuildReport(stdout, m, *out, time.Since(start))
	if store, ok := opts.Records.(*records.Store); ok {
		return hintOtherTargets(stderr, store, m)
	}
	return nil
}

// hintOtherTargets says which other targets have records of the tasks
// that got default schedules: most often records measured with another
// --threads.
func hintOtherTargets(w io.Writer, store *records.Store, m *build.Manifest) error {
	untuned := map[string]bool{}
	for _, t := range m.Tasks {
		if t.Schedule == build.FromDefault {
			untuned[t.Key] = true
		}
	}
	if len(untuned) == 0 {
		return nil
	}
	stats, err := store.Stats()
	if err != nil {
		return err
	}
	tasks := map[string]map[string]bool{} // target → untuned tasks with a valid record there
	for _, st := range stats {
		if untuned[st.WorkloadKey] && st.Records > st.Errors && st.Target != m.Target {
			if tasks[st.Target] == nil {
				tasks[st.Target] = map[string]bool{}
			}
			tasks[st.Target][st.WorkloadKey] = true
		}
	}
	targets := slices.Sorted(maps.Keys(tasks))
	for _, t := range targets {
		fmt.Fprintf(w, "hint: %d of the %d tasks built with default schedules have records for target %q (another --threads?)\n", len(tasks[t]), len(untuned), t)
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
		key := t.Key
		if len(key) > 11 {
			key = key[:11]
		}
		layout := t.Layout
		if layout == "" {
			layout = "-"
		}
		if len(t.Packed) > 0 {
			layout += ", packed weights"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.1f%%\t%s\n", t.Index, key, t.Ops, layout, t.Weight, share, sched)
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

// writeProfile prints the mean time of every step of a built model (a
// kernel call) next to the time its task's record was measured at (alone,
// with warm caches), the sum over the steps, and the rest of the mean run
// (copies, the executor, the clock).
func writeProfile(w io.Writer, m *build.Manifest, steps []float64, mean float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\ttask\tms\trecord ms\tratio\tshare\t ops")
	sum := 0.0
	for _, t := range steps {
		sum += t
	}
	for i, st := range m.Steps {
		rec, ratio := "-", "-"
		if st.Task >= 0 && st.Task < len(m.Tasks) && m.Tasks[st.Task].Record != nil {
			c := m.Tasks[st.Task].Record.Cost
			rec = fmt.Sprintf("%.4f", c*1e3)
			if c > 0 {
				ratio = fmt.Sprintf("%.2f", steps[i]/c)
			}
		}
		share := 0.0
		if sum > 0 {
			share = 100 * steps[i] / sum
		}
		fmt.Fprintf(tw, "%d\t%d\t%.4f\t%s\t%s\t%.1f%%\t %s\n", i, st.Task, steps[i]*1e3, rec, ratio, share, st.Ops)
	}
	tw.Flush()
	fmt.Fprintf(w, "steps sum ms = %.3f\n", sum*1e3)
	fmt.Fprintf(w, "outside steps ms = %.3f (mean run %.3f)\n", (mean-sum)*1e3, mean*1e3)
}

// filesFlag collects repeated `name=FILE` flags.
type filesFlag map[string]string

func (f filesFlag) String() string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n+"="+f[n])
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

func (f filesFlag) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok {
		name, file = "", v // a bare FILE: the model's only tensor
	}
	if file == "" {
		return fmt.Errorf("want name=FILE, got %q", v)
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("%q given twice", name)
	}
	f[name] = file
	return nil
}

// resolve maps the flag's names to the tensors ts: a bare FILE goes to the
// only tensor; every name must be one of ts.
func (f filesFlag) resolve(what string, ts []build.TensorInfo) (map[string]string, error) {
	out := map[string]string{}
	for name, file := range f {
		if name == "" {
			if len(ts) != 1 {
				return nil, fmt.Errorf("--%s %s: the model has %d %ss (%s); say which: --%s NAME=FILE", what, file, len(ts), what, build.TensorList(ts), what)
			}
			name = ts[0].Name
		} else if !slices.ContainsFunc(ts, func(t build.TensorInfo) bool { return t.Name == name }) {
			return nil, fmt.Errorf("--%s %s=%s: the model has no %s %q (its %ss: %s)", what, name, file, what, name, what, build.TensorList(ts))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--%s: %s given twice", what, name)
		}
		out[name] = file
	}
	return out, nil
}

// runModel is `tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]`.
func runModel(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	inputs, refs := filesFlag{}, filesFlag{}
	fs.Var(inputs, "input", "input `name=FILE` (raw float32, .npy or ONNX TensorProto .pb; repeatable; a bare FILE for a model of one input)")
	fs.Var(refs, "reference", "expected output `name=FILE` to compare with (repeatable)")
	outDir := fs.String("o", ".", "write the outputs into `DIR`")
	format := fs.String("format", "npy", "format of the written outputs: npy, pb or raw")
	threads := fs.Int("threads", runtime.NumCPU(), "threads of the model")
	rtol := fs.Float64("rtol", 1e-3, "relative tolerance of the comparison with --reference")
	atol := fs.Float64("atol", 1e-4, "absolute tolerance of the comparison with --reference")
	maxMemory := bytesFlag(measure.DefaultMaxMemory)
	fs.Var(&maxMemory, "max-memory", "the most memory a run may take (inputs, outputs, weights, arena), e.g. 8GiB")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]\n\n"+
			"Runs the model built into DIR by tune build once, writes its outputs as\n"+
			"NAME.npy (or .pb, .bin) and compares them with the references: an element\n"+
			"differs when |got-want| > atol + rtol·|want|.\n\nflags:\n")
		fs.PrintDefaults()
	}
	model, err := openBuildDir(fs, args)
	if err != nil {
		return err
	}
	ext, ok := map[string]string{"npy": ".npy", "pb": ".pb", "raw": ".bin"}[*format]
	if !ok {
		return fmt.Errorf("--format %q: want npy, pb or raw", *format)
	}
	man := model.Manifest
	inFiles, err := inputs.resolve("input", man.Inputs)
	if err != nil {
		return err
	}
	refFiles, err := refs.resolve("reference", man.Outputs)
	if err != nil {
		return err
	}
	// Two outputs whose names make one file name would overwrite each
	// other: refuse before running.
	paths := make([]string, len(man.Outputs))
	byPath := map[string]string{}
	for i, t := range man.Outputs {
		paths[i] = filepath.Join(*outDir, fileName(t.Name)+ext)
		if other, dup := byPath[paths[i]]; dup {
			return fmt.Errorf("outputs %q and %q would both be written to %s: rename one in the model", other, t.Name, paths[i])
		}
		byPath[paths[i]] = t.Name
	}
	data := make([][]float32, len(man.Inputs))
	var missing []string
	for i, t := range man.Inputs {
		file, ok := inFiles[t.Name]
		if !ok {
			missing = append(missing, t.String())
			continue
		}
		if data[i], err = build.ReadTensor(file, t); err != nil {
			return fmt.Errorf("input %s: %w", t.Name, err)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no --input for %s", strings.Join(missing, ", "))
	}
	outs, err := model.Run(context.Background(), data, build.RunOptions{Threads: *threads, MaxMemory: int64(maxMemory)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	var bad []string
	for i, t := range man.Outputs {
		path := paths[i]
		if err := build.WriteTensor(path, t, outs[i]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "output %s → %s\n", printable(t.String()), printable(path))
		file, ok := refFiles[t.Name]
		if !ok {
			continue
		}
		want, err := build.ReadTensor(file, t)
		if err != nil {
			return fmt.Errorf("reference %s: %w", t.Name, err)
		}
		d := build.Diff(outs[i], want, *rtol, *atol)
		verdict := "ok"
		if d.Bad > 0 {
			verdict = fmt.Sprintf("FAIL: %d of %d elements beyond atol %g + rtol %g·|want|", d.Bad, len(want), *atol, *rtol)
			bad = append(bad, t.Name)
		}
		fmt.Fprintf(stdout, "  vs %s: max abs error = %.3g, max rel error = %.3g: %s\n", file, d.MaxAbs, d.MaxRel, verdict)
	}
	if len(bad) > 0 {
		return fmt.Errorf("output %s differs from the reference", strings.Join(bad, ", "))
	}
	return nil
}

// openBuildDir parses the flags of a command that takes one build
// directory and opens it.
func openBuildDir(fs *flag.FlagSet, args []string) (*build.Model, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		fmt.Fprintf(fs.Output(), "%s: want one build directory (run '%s -h')\n", fs.Name(), fs.Name())
		return nil, errUsage
	}
	return build.Open(pos[0])
}

// fileName makes a tensor name usable as a file name.
func fileName(name string) string {
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, name)
	if name == "" || name == "." || name == ".." {
		name = "_" + name
	}
	return name
}

// runBench is `tune bench DIR [--threads N] [--warmup W] [--repeat R]`.
func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	threads := fs.Int("threads", runtime.NumCPU(), "threads of the model (OMP_NUM_THREADS)")
	warmup := fs.Int("warmup", 3, "untimed runs before the timed ones")
	repeat := fs.Int("repeat", 20, "timed runs")
	profile := fs.Bool("profile", false, "also time every step (kernel call) and print it against its task's record")
	maxMemory := bytesFlag(measure.DefaultMaxMemory)
	fs.Var(&maxMemory, "max-memory", "the most memory a run may take (inputs, outputs, weights, arena), e.g. 8GiB")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tune bench DIR [--threads N] [--warmup W] [--repeat R] [--profile]\n\n"+
			"Times the model built into DIR end to end on random inputs (loaded into this\n"+
			"process, as a program would), and prints the fastest and the median run:\n  min ms = X\n  median ms = Y\n"+
			"With --profile, first a table of the steps: each kernel call's mean time in\n"+
			"the model against the time its task's record was measured at alone.\n\nflags:\n")
		fs.PrintDefaults()
	}
	model, err := openBuildDir(fs, args)
	if err != nil {
		return err
	}
	if *threads <= 0 || *warmup < 0 || *repeat <= 0 {
		return errors.New("--threads and --repeat must be positive, --warmup not negative")
	}
	fmt.Fprintf(stderr, "bench %s (%s): %d threads, %d warm-up runs, %d timed runs\n", model.Dir, model.Manifest.Model, *threads, *warmup, *repeat)
	opts := build.RunOptions{Threads: *threads, MaxMemory: int64(maxMemory)}
	var times, steps []float64
	if *profile {
		times, steps, err = model.Profile(context.Background(), *warmup, *repeat, opts)
	} else {
		times, err = model.Bench(context.Background(), *warmup, *repeat, opts)
	}
	if err != nil {
		return err
	}
	r := measure.Result{Costs: times}
	if *profile {
		mean := 0.0
		for _, t := range times {
			mean += t / float64(len(times))
		}
		writeProfile(stdout, model.Manifest, steps, mean)
	}
	fmt.Fprintf(stdout, "min ms = %.3f\n", r.Min()*1e3)
	fmt.Fprintf(stdout, "median ms = %.3f\n", r.Median()*1e3)
	return nil
}
