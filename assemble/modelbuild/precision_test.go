package modelbuild

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
)

// TestCompareFloat32: the shipped tiny model (convolutions and a Gemm)
// built with the bf16 precision runs, its report saying how far it is
// from float32, and differs from its float32 build by bfloat16's
// rounding: more than float32 sums in another order could (1e-5 of the
// output's scale), less than 2%; a float32 build is not compared.
func TestCompareFloat32(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "tiny.onnx")
	for _, bf16 := range []bool{true, false} {
		o := Options{Load: frontend.LoadOptions{BF16: bf16}, Layouts: []string{assemble.LayoutNHWC}, NoRecords: true,
			Target:   backend.Config{Name: "cpu", CPU: "native", Threads: 1},
			Assemble: assemble.Options{Model: "tiny.onnx"}, Dir: filepath.Join(t.TempDir(), "out")}
		b, err := Open(context.Background(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		var report strings.Builder
		if _, err := b.Run(context.Background(), &report); err != nil {
			b.Close()
			t.Fatal(err)
		}
		b.Close()
		if got := strings.Contains(report.String(), "bf16 against float32"); got != bf16 {
			t.Errorf("bf16 %v: the report compares with float32: %v\n%s", bf16, got, report.String())
		}
		diffs, err := CompareFloat32(context.Background(), path, o.Dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if !bf16 {
			if diffs != nil {
				t.Errorf("float32 build compared: %+v", diffs)
			}
			continue
		}
		var out strings.Builder
		WritePrecision(&out, diffs)
		t.Logf("%s", out.String())
		if len(diffs) == 0 {
			t.Fatal("no outputs compared")
		}
		for _, d := range diffs {
			if d.NaN != 0 || d.MaxRef == 0 || d.MaxAbs <= 1e-5*d.MaxRef || d.MaxAbs > 0.02*d.MaxRef {
				t.Errorf("output %s: %+v, want a bfloat16-sized difference", d.Output, d)
			}
		}
	}
}
