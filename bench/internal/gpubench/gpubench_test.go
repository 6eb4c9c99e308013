package gpubench

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/te"
)

// TestRaceOnPoCL runs a race end to end without a GPU: a small GEMM and a
// convolution on PoCL's OpenCL device against PyTorch on the CPU, the same
// files, check and protocol as on the cuda target.
func TestRaceOnPoCL(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skipf("no PyTorch (scripts/deps.sh installs python3-torch): %v", err)
	}
	openCL := func(ctx context.Context) (*backend.Target, error) {
		return backend.OpenCL(ctx, backend.GPUConfig{Host: &measure.Builder{CacheDir: t.TempDir()},
			Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1, Timeout: 2 * time.Minute}})
	}
	if tg, err := openCL(context.Background()); errors.Is(err, measure.ErrNoDevice) {
		t.Skipf("no OpenCL device (scripts/deps.sh installs PoCL): %v", err)
	} else if err != nil {
		t.Fatal(err)
	} else {
		tg.Close()
	}
	a, b := te.Placeholder("A", 48, 40), te.Placeholder("B", 40, 56)
	c, err := te.MatMul("C", a, b)
	if err != nil {
		t.Fatal(err)
	}
	gemm, err := te.NewDAG(c)
	if err != nil {
		t.Fatal(err)
	}
	x, w := te.Placeholder("X", 1, 8, 10, 10), te.Constant("W", 16, 8, 3, 3)
	y, err := te.Conv("conv", x, w, nil, te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := te.NewDAG(y)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Race{
		{Name: "gemm", Label: "48x40x56", DAG: gemm, Torch: "matmul", Library: "cpu-matmul", DB: t.TempDir() + "/gpu.db", Trials: 8},
		{Name: "conv", Label: "8->16", DAG: conv, Torch: "conv2d:1:2", Library: "cpu-conv"},
	} {
		r.Rounds, r.Python, r.Target, r.TorchDevice = 1, "/usr/bin/python3", openCL, "cpu"
		var out bytes.Buffer
		if err := Run(context.Background(), r, &out); err != nil {
			t.Fatalf("%s: %v\n%s", r.Name, err, out.String())
		}
		t.Logf("%s", out.String())
		if !strings.Contains(out.String(), "check default vs "+r.Library+": ok") || !strings.Contains(out.String(), "github.com/tessera-ml/tessera/"+r.Library+" "+r.Label+" = ") {
			t.Errorf("%s: no check or ratio line:\n%s", r.Name, out.String())
		}
		if r.Trials > 0 && !strings.Contains(out.String(), "check record vs "+r.Library+": ok") {
			t.Errorf("%s: tuned, but no record raced:\n%s", r.Name, out.String())
		}
	}
}
