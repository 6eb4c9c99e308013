package tsrt

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunFiles(t *testing.T) {
	x := ManifestTensor{Name: "x", Shape: []int{2}}
	y := ManifestTensor{Name: "y", Shape: []int{2}}
	if m, err := MatchFiles("input", map[string]string{"": "a.npy"}, []ManifestTensor{x}); err != nil || m["x"] != "a.npy" {
		t.Errorf("a bare file of the only input: %v, %v", m, err)
	}
	for _, c := range []struct {
		files map[string]string
		err   string
	}{
		{map[string]string{"": "a.npy"}, "--input a.npy: the model has 2 inputs (x[2] y[2]); say which: --input NAME=FILE"},
		{map[string]string{"z": "a.npy"}, `--input z=a.npy: the model has no input "z" (its inputs: x[2] y[2])`},
	} {
		if _, err := MatchFiles("input", c.files, []ManifestTensor{x, y}); err == nil || err.Error() != c.err {
			t.Errorf("MatchFiles(%v) = %v, want %q", c.files, err, c.err)
		}
	}
	if _, err := ReadInputs([]ManifestTensor{x, y}, nil); err == nil || err.Error() != "no --input for x[2], y[2]" {
		t.Errorf("ReadInputs without files: %v", err)
	}
	paths, err := OutputPaths([]ManifestTensor{{Name: "a/b"}, {Name: ".."}}, "out", ".npy")
	if err != nil || !slices.Equal(paths, []string{filepath.Join("out", "a_b.npy"), filepath.Join("out", "_...npy")}) {
		t.Errorf("OutputPaths = %q, %v", paths, err)
	}
	if _, err := OutputPaths([]ManifestTensor{{Name: "a/b"}, {Name: "a_b"}}, "out", ".npy"); err == nil || !strings.Contains(err.Error(), "would both be written to") {
		t.Errorf("colliding outputs: %v", err)
	}
}
