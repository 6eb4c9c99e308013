package assemble

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
)

// TestGPUModels builds models for the opencl target (default schedules:
// the GPU rules, lowered for the device) and runs them on this machine's
// OpenCL device (PoCL on CI): kernels, device buffers and the host
// executor that launches them in order, checked against the reference.
func TestGPUModels(t *testing.T) {
	tg, err := backend.OpenCL(context.Background(), backend.GPUConfig{Host: &measure.Builder{Timeout: LibraryTimeout}})
	if errors.Is(err, measure.ErrNoDevice) && os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") == "" {
		t.Skipf("no OpenCL device (scripts/deps.sh installs PoCL): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	for _, c := range []struct {
		name  string
		build func() (*graph.Graph, error)
	}{
		{"tiny", func() (*graph.Graph, error) { return onnx.DecodeFile("../testdata/tiny.onnx") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			p := prepare(t, g)
			var warn bytes.Buffer
			dir := t.TempDir()
			m := buildRunCheck(t, p, dir, Options{Records: emptyRecords{}, Target: tg, Model: c.name, Warn: &warn})
			if !strings.HasPrefix(m.Target, "opencl device ") {
				t.Errorf("manifest target %q", m.Target)
			}
			src, err := os.ReadFile(dir + "/" + SourceFile)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "tsm_dev_launch(") || !strings.Contains(string(src), "__kernel") {
				t.Errorf("%s does not launch device kernels", SourceFile)
			}
		})
	}
}
