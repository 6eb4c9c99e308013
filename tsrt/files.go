package tsrt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The files of a run from the command line (RunFiles): tune run's
// --input and --reference flags name a file per tensor (MatchFiles), its
// inputs are read from theirs (ReadInputs) and its outputs written to
// files named after them (OutputPaths).

// FileRun is one run of a built model on files, as tune run makes it.
type FileRun struct {
	// Inputs and References map a tensor name to its file; the name ""
	// stands for the only input or output (MatchFiles).
	Inputs, References map[string]string
	OutDir             string // where the outputs are written
	Format             string // of the written outputs: npy, pb or raw
	RTol, ATol         float64
	RunOptions
}

// WrittenOutput is an output RunFiles wrote, and how it compares with its
// reference, where it has one.
type WrittenOutput struct {
	Tensor    ManifestTensor
	Path      string
	Reference string     // the reference file; "" for none
	Diff      *DiffStats // nil without a reference
}

// Verdict says whether the output is within the tolerances of r, in words.
func (o WrittenOutput) Verdict(r FileRun) string {
	if o.Diff.Bad == 0 {
		return "ok"
	}
	return fmt.Sprintf("FAIL: %d of %d elements beyond atol %g + rtol %g·|want|", o.Diff.Bad, o.Tensor.Elems(), r.ATol, r.RTol)
}

// RunFiles runs the model once on the input files, writes its outputs
// into r.OutDir and compares those with a reference with it. It returns
// the outputs written; the error names the outputs that differ from
// their references, after all are written.
func (m *Model) RunFiles(ctx context.Context, r FileRun) ([]WrittenOutput, error) {
	ext, ok := map[string]string{"npy": ".npy", "pb": ".pb", "raw": ".bin"}[r.Format]
	if !ok {
		return nil, fmt.Errorf("--format %q: want npy, pb or raw", r.Format)
	}
	man, err := m.needManifest()
	if err != nil {
		return nil, err
	}
	inFiles, err := MatchFiles("input", r.Inputs, man.Inputs)
	if err != nil {
		return nil, err
	}
	refFiles, err := MatchFiles("reference", r.References, man.Outputs)
	if err != nil {
		return nil, err
	}
	paths, err := OutputPaths(man.Outputs, r.OutDir, ext)
	if err != nil {
		return nil, err
	}
	data, dim, err := readInputs(man.Inputs, inFiles)
	if err != nil {
		return nil, err
	}
	opts := r.RunOptions
	if opts.Dim == 0 {
		opts.Dim = dim
	}
	outs, err := m.runSized(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.OutDir, 0o755); err != nil {
		return nil, err
	}
	var written []WrittenOutput
	var bad []string
	for i, out := range outs {
		t := ManifestTensor{Name: man.Outputs[i].Name, Shape: ints(out.Shape), DType: man.Outputs[i].DType}
		if err := WriteTensorFile(paths[i], out); err != nil {
			return written, err
		}
		o := WrittenOutput{Tensor: t, Path: paths[i], Reference: refFiles[t.Name]}
		if o.Reference != "" {
			want, err := readTensor(o.Reference, t)
			if err != nil {
				return written, fmt.Errorf("reference %s: %w", t.Name, err)
			}
			d, err := diffTensors(out, want, r.RTol, r.ATol)
			if err != nil {
				return written, fmt.Errorf("reference %s: %w", t.Name, err)
			}
			o.Diff = &d
			if d.Bad > 0 {
				bad = append(bad, t.Name)
			}
		}
		written = append(written, o)
	}
	if len(bad) > 0 {
		return written, fmt.Errorf("output %s differs from the reference", strings.Join(bad, ", "))
	}
	return written, nil
}

// MatchFiles maps the files of the flag --flag (name → file; the name ""
// for a bare FILE) to the tensors ts: a bare FILE goes to the only
// tensor; every name must be one of ts. The errors speak of the flag.
func MatchFiles(flag string, files map[string]string, ts []ManifestTensor) (map[string]string, error) {
	out := map[string]string{}
	for name, file := range files {
		if name == "" {
			if len(ts) != 1 {
				return nil, fmt.Errorf("--%s %s: the model has %d %ss (%s); say which: --%s NAME=FILE", flag, file, len(ts), flag, TensorList(ts), flag)
			}
			name = ts[0].Name
		} else if !slices.ContainsFunc(ts, func(t ManifestTensor) bool { return t.Name == name }) {
			return nil, fmt.Errorf("--%s %s=%s: the model has no %s %q (its %ss: %s)", flag, name, file, flag, name, flag, TensorList(ts))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--%s: %s given twice", flag, name)
		}
		out[name] = file
	}
	return out, nil
}

// ReadInputs reads every input of the model from its file (ReadTensor);
// an input without one is an error that names tune run's --input.
func ReadInputs(inputs []ManifestTensor, files map[string]string) ([][]float32, error) {
	data, _, err := readInputs(inputs, files)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(data))
	for i, t := range data {
		if out[i], err = float32sOf(t); err != nil {
			return nil, fmt.Errorf("input %s: %w", inputs[i].Name, err)
		}
	}
	return out, nil
}

// readInputs reads every input of the model from its file in the input's
// dtype (ReadTensorFile), and returns the value of the dimension given at
// run time the inputs hold, where the first file of an input that has it
// gives its shape (0 if none does).
func readInputs(inputs []ManifestTensor, files map[string]string) ([]Tensor, int, error) {
	data := make([]Tensor, len(inputs))
	var missing []string
	dim := 0
	for i, t := range inputs {
		file, ok := files[t.Name]
		if !ok {
			missing = append(missing, t.String())
			continue
		}
		vals, err := ReadTensorFile(file, t)
		if err != nil {
			return nil, 0, fmt.Errorf("input %s: %w", t.Name, err)
		}
		data[i] = vals
		if dim == 0 && len(t.DimAxes) > 0 && vals.Shape != nil {
			dim = int(vals.Shape[t.DimAxes[0]])
		}
	}
	if len(missing) > 0 {
		return nil, 0, fmt.Errorf("no --input for %s", strings.Join(missing, ", "))
	}
	return data, dim, nil
}

// OutputPaths returns the file each output is written to in dir: its
// name made a file name, with the extension ext. Two outputs whose names
// make one file name would overwrite each other: an error, before
// anything runs.
func OutputPaths(outputs []ManifestTensor, dir, ext string) ([]string, error) {
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
