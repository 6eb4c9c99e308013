package quantize

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
)

// TestReadSamplesPairing: files go to the inputs by name or, bare, in
// order, round after round; mixing the two, or a sample short of an
// input, is refused before any file is read; no file, no samples.
func TestReadSamplesPairing(t *testing.T) {
	g := &graph.Graph{Inputs: []string{"a", "b"}}
	if s, err := ReadSamples(g, nil); s != nil || err != nil {
		t.Errorf("no files: %v, %v; want nil, nil", s, err)
	}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"a=x.npy", "y.npy"}, "give every file as name=FILE or every file bare, in the order of the inputs (a, b)"},
		{[]string{"x.npy", "y.npy", "z.npy"}, "2 files for input a, 1 for b: every input needs one file per sample"},
		{[]string{"a=x.npy", "a=z.npy", "b=y.npy"}, "2 files for input a, 1 for b"},
	} {
		if _, err := ReadSamples(g, c.files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.files, err, c.want)
		}
	}
}
