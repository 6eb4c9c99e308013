package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// TestOpenBuildDir: one build directory, among flags, opens; none, two
// or a wrong flag are usage errors that say so; a folder that is not a
// build's is named as such.
func TestOpenBuildDir(t *testing.T) {
	g, err := onnx.DecodeFile("../../testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(g, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tg := backend.CPU(backend.CPUConfig{Builder: &measure.Builder{Timeout: assemble.LibraryTimeout}})
	if _, err := assemble.Build(context.Background(), g, plan, dir, assemble.Options{Target: tg, Model: "tiny.onnx"}); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		name    string
		args    []string
		err     error  // nil: it opens
		msg     string // in the error, or for ErrUsage in the output
		threads int    // the flag parsed, where it opens
	}{
		{"folder", []string{dir}, nil, "", 1},
		{"folder among flags", []string{"--threads", "3", dir}, nil, "", 3},
		{"none", nil, ErrUsage, "tune run: want one build directory (run 'tune run -h')", 0},
		{"two", []string{dir, dir}, ErrUsage, "tune run: want one build directory", 0},
		{"wrong flag", []string{dir, "--nope"}, ErrUsage, "run 'tune run -h' for usage", 0},
		{"not a directory", []string{filepath.Join(empty, "nothere")}, nil, "is not a directory", 0},
		{"no manifest", []string{empty}, tsrt.ErrNoManifest, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			fs := flag.NewFlagSet("tune run", flag.ContinueOnError)
			fs.SetOutput(&out)
			threads := fs.Int("threads", 1, "threads")
			m, err := OpenBuildDir(fs, c.args)
			if c.err == nil && c.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if m.Dir() != dir || *threads != c.threads {
					t.Errorf("opened %s, --threads %d; want %s, %d", m.Dir(), *threads, dir, c.threads)
				}
				return
			}
			if err == nil {
				m.Close()
				t.Fatal("opened")
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("err = %v, want %v", err, c.err)
			}
			where := err.Error()
			if c.err == ErrUsage {
				where = out.String()
			}
			if !strings.Contains(where, c.msg) {
				t.Errorf("%q lacks %q", where, c.msg)
			}
		})
	}
}
