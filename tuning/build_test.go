package tuning

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/frontend"
)

// TestLoadBuild: a model as bound is built in the first layout when no
// records weigh them, with nothing to say why and the options as given;
// over a batch and a sequence length it is the model at batch 1 and the
// largest length, the options carrying both plans; a range of no
// dimension is LoadDims' error.
func TestLoadBuild(t *testing.T) {
	path := dynamicModel(t, true)
	bound := frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}
	for _, c := range []struct {
		name       string
		o          BuildOptions
		x          []int // the shape of x in the graph built
		batch, dim bool  // the plans of the ranges in the options
		err        string
	}{
		{name: "bound, one layout", o: BuildOptions{Load: bound, Layouts: []string{assemble.LayoutNCHW}}, x: []int{2, 5, 8}},
		{name: "bound, no records to weigh layouts", o: BuildOptions{Load: bound, Layouts: []string{assemble.LayoutNHWC, assemble.LayoutNCHW}}, x: []int{2, 5, 8}},
		{name: "a batch and a sequence length", o: BuildOptions{Ranges: map[string][2]int{"N": {1, 4}, "S": {16, 32}}, Layouts: []string{assemble.LayoutNHWC, assemble.LayoutNCHW}},
			x: []int{1, 32, 8}, batch: true, dim: true},
		{name: "a range of no dimension", o: BuildOptions{Load: bound, Ranges: map[string][2]int{"T": {1, 4}}, Layouts: []string{assemble.LayoutNHWC}}, err: "no dynamic dimension of the inputs"},
	} {
		c.o.Assemble = assemble.Options{Model: "dyn.onnx", SingleFile: true}
		src, err := LoadBuild(context.Background(), path, c.o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := src.Graph.Values["x"].Shape; !slices.Equal(got, c.x) || len(src.Plan.Tasks) != 1 {
			t.Errorf("%s: x %v, %d tasks; want %v, 1", c.name, got, len(src.Plan.Tasks), c.x)
		}
		o := src.Options
		if (o.Batch != nil) != c.batch || (o.Dim != nil) != c.dim || o.Model != "dyn.onnx" || !o.SingleFile || src.Reason != "" {
			t.Errorf("%s: batch %v, dim %v, options %+v, reason %q", c.name, o.Batch != nil, o.Dim != nil, o, src.Reason)
		}
	}
}
