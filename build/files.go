package build

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The files of a run from the command line: tune run's --input and
// --reference flags name a file per tensor (MatchFiles), its inputs are
// read from theirs (ReadInputs) and its outputs written to files named
// after them (OutputPaths).

// MatchFiles maps the files of the flag --flag (name → file; the name ""
// for a bare FILE) to the tensors ts: a bare FILE goes to the only
// tensor; every name must be one of ts. The errors speak of the flag.
func MatchFiles(flag string, files map[string]string, ts []TensorInfo) (map[string]string, error) {
	out := map[string]string{}
	for name, file := range files {
		if name == "" {
			if len(ts) != 1 {
				return nil, fmt.Errorf("--%s %s: the model has %d %ss (%s); say which: --%s NAME=FILE", flag, file, len(ts), flag, TensorList(ts), flag)
			}
			name = ts[0].Name
		} else if !slices.ContainsFunc(ts, func(t TensorInfo) bool { return t.Name == name }) {
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
func ReadInputs(inputs []TensorInfo, files map[string]string) ([][]float32, error) {
	data := make([][]float32, len(inputs))
	var missing []string
	for i, t := range inputs {
		file, ok := files[t.Name]
		if !ok {
			missing = append(missing, t.String())
			continue
		}
		var err error
		if data[i], err = ReadTensor(file, t); err != nil {
			return nil, fmt.Errorf("input %s: %w", t.Name, err)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no --input for %s", strings.Join(missing, ", "))
	}
	return data, nil
}

// OutputPaths returns the file each output is written to in dir: its
// name made a file name, with the extension ext. Two outputs whose names
// make one file name would overwrite each other: an error, before
// anything runs.
func OutputPaths(outputs []TensorInfo, dir, ext string) ([]string, error) {
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
