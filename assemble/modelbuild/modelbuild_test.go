package modelbuild

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/records"
)

// TestOpen: a model as bound is built in the first layout when no
// records weigh the layouts, with nothing to say why, and runs into its
// directory with a report; records that cover neither layout say so;
// over a batch and a sequence length it is the model at batch 1 and the
// largest length, the options carrying both plans; a range of no
// dimension, a missing database and an unknown target are errors.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	g, _ := modelgen.SeqMatMul() // x [2, S, 8], here [N, S, 8]
	x := g.Values["x"]
	x.Shape[0], x.DimParams[0] = -1, "N"
	path := filepath.Join(dir, "dyn.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	store, err := records.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	bound := frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}
	both := []string{assemble.LayoutNHWC, assemble.LayoutNCHW}
	for _, c := range []struct {
		name       string
		o          Options
		x          []int // the shape of x in the graph built
		batch, dim bool  // the plans of the ranges in the options
		reason     string
		run        bool // build it, and check the report
		err        string
	}{
		{name: "bound, one layout", o: Options{Load: bound, Layouts: []string{assemble.LayoutNCHW}, NoRecords: true}, x: []int{2, 5, 8}, run: true},
		{name: "bound, no records to weigh layouts", o: Options{Load: bound, Layouts: both, NoRecords: true}, x: []int{2, 5, 8}},
		{name: "bound, records of neither layout", o: Options{Load: bound, Layouts: both, DB: empty}, x: []int{2, 5, 8}, reason: "layout nhwc: records cover 0.0% of its FLOPs"},
		{name: "a batch and a sequence length", o: Options{Ranges: map[string][2]int{"N": {1, 4}, "S": {16, 32}}, Layouts: both, NoRecords: true},
			x: []int{1, 32, 8}, batch: true, dim: true},
		{name: "a range of no dimension", o: Options{Load: bound, Ranges: map[string][2]int{"T": {1, 4}}, Layouts: both, NoRecords: true}, err: "no dynamic dimension of the inputs"},
		{name: "no database", o: Options{Load: bound, Layouts: both, DB: filepath.Join(dir, "none.db")}, err: "none.db does not exist: tune the model first"},
		{name: "no such target", o: Options{Load: bound, Layouts: both, NoRecords: true, Target: backend.Config{Name: "tpu"}}, err: `--target "tpu"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.o.Target.Name == "" {
				c.o.Target = backend.Config{Name: "cpu", CPU: "native", Threads: 1}
			}
			c.o.Assemble = assemble.Options{Model: "dyn.onnx", SingleFile: true}
			c.o.Dir = filepath.Join(t.TempDir(), "out")
			b, err := Open(context.Background(), path, c.o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%v, want an error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.Graph.Values["x"].Shape; !slices.Equal(got, c.x) || len(b.Plan.Tasks) != 1 {
				t.Errorf("x %v, %d tasks; want %v, 1", got, len(b.Plan.Tasks), c.x)
			}
			o := b.Options
			if (o.Batch != nil) != c.batch || (o.Dim != nil) != c.dim || o.Model != "dyn.onnx" || !o.SingleFile || o.Target == nil || (o.Records == nil) != c.o.NoRecords {
				t.Errorf("batch %v, dim %v, options %+v", o.Batch != nil, o.Dim != nil, o)
			}
			if !strings.HasPrefix(b.Reason, c.reason) || (c.reason == "") != (b.Reason == "") {
				t.Errorf("reason %q, want %q", b.Reason, c.reason)
			}
			if !c.run {
				return
			}
			var out strings.Builder
			m, err := b.Run(context.Background(), &out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "built dyn.onnx into "+c.o.Dir) || m.Coverage.Tasks != 1 || m.Coverage.TunedTasks != 0 {
				t.Errorf("report:\n%s", out.String())
			}
			if err := b.WriteOtherTargets(&out, m); err != nil {
				t.Error(err)
			}
		})
	}
}
