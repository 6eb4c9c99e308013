package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"tessera/build"
)

// runUsage is the help of the command, before its flags.
const runUsage = "usage: tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]\n\n" +
	"Runs the model built into DIR by tune build once, writes its outputs as\n" +
	"NAME.npy (or .pb, .bin) and compares them with the references: an element\n" +
	"differs when |got-want| > atol + rtol·|want|.\n\nflags:\n"

// runFlags are the flags of `tune run`.
type runFlags struct {
	inputs, refs   filesFlag
	outDir, format string
	threads        int
	rtol, atol     float64
	maxMemory      *bytesFlag
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.inputs, r.refs = filesFlag{}, filesFlag{}
	fs.Var(r.inputs, "input", "input `name=FILE` (raw float32, .npy or ONNX TensorProto .pb; repeatable; a bare FILE for a model of one input)")
	fs.Var(r.refs, "reference", "expected output `name=FILE` to compare with (repeatable)")
	fs.StringVar(&r.outDir, "o", ".", "write the outputs into `DIR`")
	fs.StringVar(&r.format, "format", "npy", "format of the written outputs: npy, pb or raw")
	fs.IntVar(&r.threads, "threads", runtime.NumCPU(), "threads of the model")
	fs.Float64Var(&r.rtol, "rtol", 1e-3, "relative tolerance of the comparison with --reference")
	fs.Float64Var(&r.atol, "atol", 1e-4, "absolute tolerance of the comparison with --reference")
	r.maxMemory = maxMemoryFlag(fs, "the most memory a run may take (inputs, outputs, weights, arena), e.g. 8GiB")
	setUsage(fs, runUsage)
}

// runModel is `tune run DIR --input name=FILE ... [--reference name=FILE ...] [-o DIR]`.
func runModel(args []string, stdout, stderr io.Writer) error {
	var rf runFlags
	fs := flagSet("tune run", stderr, &rf)
	model, err := openBuildDir(fs, args)
	if err != nil {
		return err
	}
	ext, ok := map[string]string{"npy": ".npy", "pb": ".pb", "raw": ".bin"}[rf.format]
	if !ok {
		return fmt.Errorf("--format %q: want npy, pb or raw", rf.format)
	}
	man := model.Manifest
	inFiles, err := rf.inputs.resolve("input", man.Inputs)
	if err != nil {
		return err
	}
	refFiles, err := rf.refs.resolve("reference", man.Outputs)
	if err != nil {
		return err
	}
	paths, err := outputPaths(man.Outputs, rf.outDir, ext)
	if err != nil {
		return err
	}
	data, err := readInputs(man.Inputs, inFiles)
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
	var bad []string
	for i, t := range man.Outputs {
		if err := build.WriteTensor(paths[i], t, outs[i]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "output %s → %s\n", printable(t.String()), printable(paths[i]))
		if file, ok := refFiles[t.Name]; ok {
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

// outputPaths returns the file each output is written to. Two outputs
// whose names make one file name would overwrite each other: refused
// before running.
func outputPaths(outputs []build.TensorInfo, dir, ext string) ([]string, error) {
	paths := make([]string, len(outputs))
	byPath := map[string]string{}
	for i, t := range outputs {
		paths[i] = filepath.Join(dir, fileName(t.Name)+ext)
		if other, dup := byPath[paths[i]]; dup {
			return nil, fmt.Errorf("outputs %q and %q would both be written to %s: rename one in the model", other, t.Name, paths[i])
		}
		byPath[paths[i]] = t.Name
	}
	return paths, nil
}

// readInputs reads every input of the model from its file.
func readInputs(inputs []build.TensorInfo, files map[string]string) ([][]float32, error) {
	data := make([][]float32, len(inputs))
	var missing []string
	for i, t := range inputs {
		file, ok := files[t.Name]
		if !ok {
			missing = append(missing, t.String())
			continue
		}
		var err error
		if data[i], err = build.ReadTensor(file, t); err != nil {
			return nil, fmt.Errorf("input %s: %w", t.Name, err)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no --input for %s", strings.Join(missing, ", "))
	}
	return data, nil
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

// filesFlag collects repeated `name=FILE` flags.
type filesFlag map[string]string

func (f filesFlag) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, n+"="+f[n])
	}
	return strings.Join(parts, " ")
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
