package tsrt_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/internal/pytest"
	"github.com/tessera-ml/tessera/tsrt"
)

// TestExamples runs the three examples of examples/ (C, Go, Python) on
// the tiny model and one input, and checks that each writes the output
// `tune run` writes for that input, to the last bit, and prints its top-1
// class.
func TestExamples(t *testing.T) {
	py := pytest.Require(t)
	dir := buildTiny(t)
	work := t.TempDir()
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := randomInput(m, 11)
	inName := m.Inputs()[0].Name
	outName := m.Outputs()[0].Name
	m.Close()
	inFile := filepath.Join(work, "in.bin")
	if err := os.WriteFile(inFile, in[0].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, cmd *exec.Cmd) string {
		t.Helper()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		return string(out)
	}
	ctx := context.Background()

	tune := filepath.Join(work, "tune-bin")
	run("go build ./cmd/tune", exec.CommandContext(ctx, "go", "build", "-o", tune, filepath.Join(root, "cmd/tune")))
	run("tune run", exec.CommandContext(ctx, tune, "run", dir, "--input", inName+"="+inFile, "--format", "raw", "-o", filepath.Join(work, "tune")))
	want, err := os.ReadFile(filepath.Join(work, "tune", outName+".bin"))
	if err != nil {
		t.Fatal(err)
	}

	classify := filepath.Join(work, "classify-c")
	run("cc", exec.CommandContext(ctx, "cc", "-O2", "-Wall", "-Werror", "-I", dir, filepath.Join(root, "examples/c/main.c"),
		"-L", dir, "-lmodel", "-Wl,-rpath,"+dir, "-o", classify))
	classifyGo := filepath.Join(work, "classify-go")
	run("go build ./examples/go", exec.CommandContext(ctx, "go", "build", "-o", classifyGo, filepath.Join(root, "examples/go")))
	pyCmd := exec.CommandContext(ctx, py, filepath.Join(root, "examples/python/classify.py"), dir, inFile, filepath.Join(work, "py.bin"))
	pyCmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "tsrt/python"))
	for _, c := range []struct {
		name string
		cmd  *exec.Cmd
		out  string
	}{
		{"C", exec.CommandContext(ctx, classify, dir, inFile, filepath.Join(work, "c.bin")), "c.bin"},
		{"Go", exec.CommandContext(ctx, classifyGo, dir, inFile, filepath.Join(work, "go.bin")), "go.bin"},
		{"Python", pyCmd, "py.bin"},
	} {
		printed := run(c.name, c.cmd)
		if !strings.Contains(printed, "top-1 class") || !strings.Contains(printed, "ms per run") {
			t.Errorf("%s example printed %q", c.name, printed)
		}
		got, err := os.ReadFile(filepath.Join(work, c.out))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s example: its output differs from tune run's", c.name)
		}
		t.Logf("%s: %s", c.name, strings.TrimSpace(printed))
	}
}
