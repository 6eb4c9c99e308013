package tsrt_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/internal/pytest"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
	"github.com/tessera-ml/tessera/tuning"
)

// TestPython loads the tiny model with the Python module (tessera.py):
// its outputs must equal the Go package's to the last bit, runs from 8
// threads at once must agree, and bad calls must raise tessera.Error with
// their status.
func TestPython(t *testing.T) {
	py := pytest.Require(t)
	dir := buildTiny(t)
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := randomInput(m, 5)
	want, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "in.bin"), in[0].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, concurrent.futures
import numpy as np
import tessera
model = tessera.load(sys.argv[1])
(inp,), (outp,) = model.inputs, model.outputs
x = np.fromfile(sys.argv[2], np.float32).reshape(inp.shape)
y = model.run({inp.name: x})[outp.name]
y.tofile(sys.argv[3])
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    ys = list(pool.map(lambda _: model.run({inp.name: x})[outp.name], range(64)))
assert all(np.array_equal(a, y) for a in ys), "concurrent runs differ"
def status(f):
    try:
        f()
    except tessera.Error as e:
        assert e.message, "no message"
        return e.status
    return "no error"
print(status(lambda: model.run({inp.name: x[..., :-1]})))
print(status(lambda: model.run({inp.name: x.astype(np.int64)})))
print(status(lambda: model.run({"nope": x})))
print(status(lambda: tessera.load(sys.argv[1] + "/missing")))
model.close()
print(status(lambda: model.run({inp.name: x})))
`
	cmd := exec.Command(py, "-c", script, dir, filepath.Join(work, "in.bin"), filepath.Join(work, "out.bin"))
	cmd.Env = append(os.Environ(), "PYTHONPATH=python")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(work, "out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want[0].Data) {
		t.Error("the Python module's output differs from the Go package's")
	}
	wantStatus := "TESSERA_SHAPE_MISMATCH\nTESSERA_DTYPE_MISMATCH\nTESSERA_INVALID_ARGUMENT\nTESSERA_NOT_FOUND\nTESSERA_INVALID_ARGUMENT\n"
	if string(out) != wantStatus {
		t.Errorf("statuses of the bad calls:\n%s\nwant\n%s", out, wantStatus)
	}
	t.Logf("python (%s): %s", py, strings.TrimSpace(strings.ReplaceAll(string(out), "\n", " ")))
}

// buildTinyBatch builds the tiny model over a dynamic batch N=1..4 (its
// input [N, 3, 16, 16]).
func buildTinyBatch(t *testing.T) string {
	t.Helper()
	g, err := modelgen.Tiny(modelgen.DefaultSeed)
	if err == nil {
		g, err = modelgen.Dynamic(g, map[string]map[int]string{"input": {0: "N"}})
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny_batch.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tg := backend.CPU(backend.CPUConfig{Builder: &measure.Builder{Timeout: assemble.LibraryTimeout}})
	if _, err := assemble.Build(context.Background(), bp.One.Graph, bp.One.Plan, dir, assemble.Options{Target: tg, Batch: bp}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPythonBatch runs a model built over a dynamic batch from Python: the
// range and the -1 of the batched shapes are there, a run at batch 3
// gives the Go package's outputs to the last bit, and batch 5 raises
// TESSERA_SHAPE_MISMATCH.
func TestPythonBatch(t *testing.T) {
	py := pytest.Require(t)
	dir := buildTinyBatch(t)
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.Inputs()[0].At(3)
	x := make([]float32, info.Elems())
	for i := range x {
		x[i] = float32(i%13) / 7
	}
	want, err := m.Run(context.Background(), []tsrt.Tensor{tsrt.NewTensor(info.Shape, x)})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	in := tsrt.NewTensor(info.Shape, x)
	if err := os.WriteFile(filepath.Join(work, "in.bin"), in.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import sys
import numpy as np
import tessera
model = tessera.load(sys.argv[1])
(inp,), (outp,) = model.inputs, model.outputs
print(model.batch, inp.shape[0], outp.shape[0])
x = np.fromfile(sys.argv[2], np.float32).reshape((3,) + inp.shape[1:])
y = model.run({inp.name: x})[outp.name]
print(y.shape[0])
y.tofile(sys.argv[3])
try:
    model.run({inp.name: np.zeros((5,) + inp.shape[1:], np.float32)})
    print("no error")
except tessera.Error as e:
    print(e.status)
`
	cmd := exec.Command(py, "-c", script, dir, filepath.Join(work, "in.bin"), filepath.Join(work, "out.bin"))
	cmd.Env = append(os.Environ(), "PYTHONPATH=python")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, wantOut := string(out), "('N', 1, 4) -1 -1\n3\nTESSERA_SHAPE_MISMATCH\n"; got != wantOut {
		t.Errorf("python printed\n%s\nwant\n%s", got, wantOut)
	}
	got, err := os.ReadFile(filepath.Join(work, "out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want[0].Data) {
		t.Error("the Python module's output at batch 3 differs from the Go package's")
	}
}
