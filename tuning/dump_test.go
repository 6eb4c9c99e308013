package tuning

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/partition"
)

// TestDumpPass: "list" names the target's passes, one a line; a task's
// kernel is printed after the pass asked for, under a line naming the
// task and the pass, differently after lowering than after the code
// generator; a task the plan lacks, a pass before the function exists
// and an unknown pass are errors that say so.
func TestDumpPass(t *testing.T) {
	_, p, err := LoadModel("../testdata/tiny.onnx", frontend.LoadOptions{}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := backend.Config{Name: "cpu"}
	nest, err := DumpPass(p, 0, "lower/nest", cpu)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		n      int
		pass   string
		cfg    backend.Config
		want   []string // in the output, or the error's
		err    bool
		differ string // the output differs from this one
	}{
		{"list", -1, "list", cpu, []string{"lower/nest\n", "codegen/unroll\n", "codegen/forward-updates\n"}, false, ""},
		{"lowered", 0, "lower/nest", cpu, []string{"# task 0 (", "default schedule (", "after lower/nest\n", "func task0("}, false, ""},
		{"generated", 0, "forward-updates", cpu, []string{"# task 0 (", "after forward-updates\n", "func task0("}, false, nest},
		{"no task", -1, "lower/nest", cpu, []string{"--dump needs --dag N, a task of the model's"}, true, ""},
		{"task past the last", len(p.Tasks), "lower/nest", cpu, []string{"--dump needs --dag N"}, true, ""},
		{"no function yet", 0, "lower/bound", cpu, []string{"makes no function"}, true, ""},
		{"unknown pass", 0, "codegen/nope", cpu, []string{"no such pass"}, true, ""},
		{"unknown target", 0, "lower/nest", backend.Config{Name: "tpu"}, []string{"tpu"}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := DumpPass(p, c.n, c.pass, c.cfg)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want an error: %v", err, c.err)
			}
			if err != nil {
				out = err.Error()
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q lacks %q", out, w)
				}
			}
			if c.differ != "" && out == c.differ {
				t.Errorf("the same kernel after %s as after lower/nest", c.pass)
			}
			if c.pass == "list" && !strings.HasSuffix(out, "\n") {
				t.Errorf("the list does not end its last line: %q", out)
			}
		})
	}
}
