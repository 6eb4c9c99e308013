package backend_test

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te/tetest"
)

// TestDump: the kernel of a default schedule after each pass that makes a
// function (the tir printed, changed by unroll where the schedule unrolls),
// the source the compiler receives, and a clear error for a pass that makes none or does not exist.
func TestDump(t *testing.T) {
	tg := backend.CPU(backend.CPUConfig{Threads: 1, Builder: &measure.Builder{}})
	defer tg.Close()
	s, _, err := sketch.Default(schedule.NewState(tetest.DAGs()["matmul"]), tg.Sketch)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, pass := range tg.Passes() {
		out, err := tg.Dump(s, "k", pass)
		switch pass {
		case "lower/inline", "lower/bound", "lower/pack":
			if err == nil || !strings.Contains(err.Error(), "makes no function") {
				t.Errorf("%s: %v, want an error saying it makes no function", pass, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", pass, err)
		}
		if pass == backend.SourcePass {
			if !strings.Contains(out, "TSR_KERNEL int k(") {
				t.Errorf("%s: not the C of kernel k:\n%s", pass, out)
			}
			continue
		}
		if !strings.Contains(out, "func k(") {
			t.Errorf("%s: not a function:\n%s", pass, out)
		}
		seen[pass] = out
	}
	if seen["lower/nest"] == seen["codegen/forward-updates"] {
		t.Error("the kernel is the same after lowering and after the code generator's passes")
	}
	if out, err := tg.Dump(s, "k", "unroll"); err != nil || out != seen["codegen/unroll"] {
		t.Errorf("a code generator pass by its bare name: %v", err)
	}
	if _, err := tg.Dump(s, "k", "codegen/nope"); err == nil || !strings.Contains(err.Error(), "no such pass") {
		t.Errorf("an unknown pass: %v", err)
	}
}
