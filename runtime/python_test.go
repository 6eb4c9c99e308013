package runtime_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tessera/runtime"
)

// requirePython returns a Python 3 that imports numpy, or skips t (fails
// it under TESSERA_REQUIRE_PYTHON, which scripts/test.sh sets: deps.sh
// installs python3-numpy).
func requirePython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import numpy").Run() == nil {
			return py
		}
	}
	msg := "no python3 with numpy (scripts/deps.sh installs python3-numpy)"
	if os.Getenv("TESSERA_REQUIRE_PYTHON") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestPython loads the tiny model with the Python module (tessera.py):
// its outputs must equal the Go package's to the last bit, runs from 8
// threads at once must agree, and bad calls must raise tessera.Error with
// their status.
func TestPython(t *testing.T) {
	py := requirePython(t)
	dir := buildTiny(t)
	m, err := runtime.Open(dir)
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
	wantStatus := "TESSERA_SHAPE_MISMATCH\nTESSERA_DTYPE_MISMATCH\nTESSERA_INVALID_ARGUMENT\nTESSERA_INVALID_ARGUMENT\nTESSERA_INVALID_ARGUMENT\n"
	if string(out) != wantStatus {
		t.Errorf("statuses of the bad calls:\n%s\nwant\n%s", out, wantStatus)
	}
	t.Logf("python (%s): %s", py, strings.TrimSpace(strings.ReplaceAll(string(out), "\n", " ")))
}
