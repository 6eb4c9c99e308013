package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	if status := run([]string{"-o", dir, "tiny"}, &stdout, &stderr); status != 0 {
		t.Fatalf("status %d: %s", status, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(dir, "tiny.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("genmodels -o DIR tiny differs from testdata/tiny.onnx")
	}
	for _, c := range []struct {
		args   []string
		status int
		stderr string
	}{
		{[]string{"tiny"}, 1, "-o DIR is required"},
		{[]string{"-o", dir, "resnet51"}, 1, `unknown model "resnet51"`},
		{[]string{"-h"}, 0, "resnet50"},
	} {
		stderr.Reset()
		if status := run(c.args, &stdout, &stderr); status != c.status || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("genmodels %v: status %d, stderr %q; want %d and %q", c.args, status, stderr.String(), c.status, c.stderr)
		}
	}
}
