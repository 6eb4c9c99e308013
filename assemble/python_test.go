package assemble

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/internal/pytest"
	"github.com/tessera-ml/tessera/tsrt"
)

// The Python package (tsrt/python: tessera, python3 -m tessera) on
// models built here: its command line through PYTHONPATH, and the package
// installed by pip into a venv.

// pythonPackage returns the absolute path of tsrt/python.
func pythonPackage(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../tsrt/python")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// infoText is what python3 -m tessera info prints of the model in dir,
// from what the Go runtime reads of it (no batch, no dimension).
func infoText(t *testing.T, dir string) string {
	t.Helper()
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	width := 1
	for _, ts := range [][]tsrt.TensorInfo{m.Inputs(), m.Outputs()} {
		for _, x := range ts {
			width = max(width, len(x.Name))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model    %s\ntarget   %s\n", dir, m.Target())
	for _, c := range []struct {
		what string
		ts   []tsrt.TensorInfo
	}{{"inputs", m.Inputs()}, {"outputs", m.Outputs()}} {
		fmt.Fprintf(&b, "%-8s %d\n", c.what, len(c.ts))
		for _, x := range c.ts {
			dims := make([]string, len(x.Shape))
			for i, d := range x.Shape {
				dims[i] = fmt.Sprint(d)
			}
			fmt.Fprintf(&b, "  %-*s  %-7s [%s]\n", width, x.Name, x.DType, strings.Join(dims, ", "))
		}
	}
	fmt.Fprintf(&b, "steps    %d\n", len(m.Steps()))
	for _, s := range m.Steps() {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// pythonCommand runs python -m tessera args in the folder work and
// returns what it printed.
func pythonCommand(t *testing.T, py, work string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-m", "tessera"}, args...)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python -m tessera %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestPythonCLI: python3 -m tessera info prints the model's tensors with
// their dtypes and shapes, its target and its steps; python3 -m tessera
// run takes .npy inputs (an int32 file for an int64 input, converted
// exactly) and writes each output as OUTDIR/NAME.npy in its dtype, the
// values Model.RunFiles writes.
func TestPythonCLI(t *testing.T) {
	py := pytest.Require(t)
	dir := builtIntegers(t)
	env := []string{"PYTHONPATH=" + pythonPackage(t)}
	work := t.TempDir()
	if got, want := pythonCommand(t, py, work, env, "info", dir), infoText(t, dir); got != want {
		t.Errorf("info printed\n%s\nwant\n%s", got, want)
	}
	scores, ids := filepath.Join(work, "scores.npy"), filepath.Join(work, "ids.npy")
	if err := tsrt.WriteTensorFile(scores, tsrt.NewTensor([]int64{2, 6}, []float32{0, 1, 9, 2, 0, 0, 5, 4, 3, 2, 1, 0})); err != nil {
		t.Fatal(err)
	}
	if err := tsrt.WriteTensorFile(ids, tsrt.NewTensor([]int64{3}, []int32{-5, 0, 1<<24 - 2})); err != nil {
		t.Fatal(err)
	}
	printed := pythonCommand(t, py, work, env, "run", dir, "--input", "scores="+scores, "--input", "ids="+ids, "-o", "out")
	if want := "output best int64[2, 1] -> out/best.npy\noutput next int64[3] -> out/next.npy\n"; printed != want {
		t.Errorf("run printed\n%s\nwant\n%s", printed, want)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	goOut := filepath.Join(work, "go")
	if _, err := m.RunFiles(context.Background(), tsrt.FileRun{Inputs: map[string]string{"scores": scores, "ids": ids}, OutDir: goOut, Format: "npy"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Manifest().Outputs {
		got, err := tsrt.ReadTensorFile(filepath.Join(work, "out", o.Name+".npy"), o)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tsrt.ReadTensorFile(filepath.Join(goOut, o.Name+".npy"), o)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType != tsrt.Int64 || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("output %s: Python wrote %s %v, tune run %v", o.Name, got.DType, got.Data, want.Data)
		}
	}
	// A float32 input that is not all integers is refused for int64.
	bad := filepath.Join(work, "bad.npy")
	if err := tsrt.WriteTensorFile(bad, tsrt.NewTensor([]int64{3}, []float32{0.5, 1, 2})); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "tessera", "run", dir, "--input", "scores="+scores, "--input", "ids="+bad)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "whose values are not all int64") {
		t.Errorf("a float32 input of 0.5 for int64: %v\n%s", err, out)
	}
}

// TestPythonPackage installs tsrt/python with pip into a fresh venv
// (seeing Debian's numpy, setuptools and wheel; no network: --no-index),
// from another folder, as README's command does; the venv's python then
// imports tessera from the venv, and python -m tessera info and run work
// on the tiny model. Skipped where python3 has no venv or pip, unless
// TESSERA_REQUIRE_PYTHON is set.
func TestPythonPackage(t *testing.T) {
	py := pytest.Require(t)
	venv := filepath.Join(t.TempDir(), "venv")
	skip := func(msg string, out []byte) {
		t.Helper()
		msg = fmt.Sprintf("%s (scripts/deps.sh installs python3-venv, python3-pip, python3-setuptools and python3-wheel): %s", msg, bytes.TrimSpace(out))
		if os.Getenv("TESSERA_REQUIRE_PYTHON") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if out, err := exec.Command(py, "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
		skip(py+" -m venv failed", out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := exec.Command(vpy, "-m", "pip", "--version").CombinedOutput(); err != nil {
		skip("the venv has no pip", out)
	}
	if out, err := exec.Command(vpy, "-c", "import setuptools, wheel").CombinedOutput(); err != nil {
		skip("the venv sees no setuptools and wheel to build with", out)
	}
	// A copy of the package: pip builds in the source folder (build/,
	// *.egg-info), which is the repository's.
	src := filepath.Join(t.TempDir(), "python")
	if err := os.CopyFS(src, os.DirFS(pythonPackage(t))); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	pip := exec.Command(vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", src)
	pip.Dir = work
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	env := []string{"PYTHONPATH="} // not tsrt/python: the installed package
	imp := exec.Command(vpy, "-c", "import tessera, sys; print(tessera.__file__)")
	imp.Dir, imp.Env = work, append(os.Environ(), env...)
	out, err := imp.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), venv+string(filepath.Separator)) {
		t.Fatalf("import tessera: %v: %s (want a file in %s)", err, out, venv)
	}
	dir, _ := builtTiny(t)
	if got, want := pythonCommand(t, vpy, work, env, "info", dir), infoText(t, dir); got != want {
		t.Errorf("info printed\n%s\nwant\n%s", got, want)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := randomInputs(m.Manifest(), 3)
	want, err := m.RunFloat32(context.Background(), in, tsrt.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tsrt.WriteTensor(filepath.Join(work, "in.npy"), m.Manifest().Inputs[0], in[0]); err != nil {
		t.Fatal(err)
	}
	pythonCommand(t, vpy, work, env, "run", dir, "--input", "in.npy", "-o", "out") // a bare FILE: the only input
	o := m.Manifest().Outputs[0]
	got, err := tsrt.ReadTensor(filepath.Join(work, "out", o.Name+".npy"), o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tsrt.NewTensor(nil, got).Data, tsrt.NewTensor(nil, want[0]).Data) {
		t.Errorf("python -m tessera run's output differs from Model.RunFloat32's")
	}
	t.Logf("pip: %s", strings.TrimSpace(string(out)))
}
