package assemble

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// TestBuildPerLevel builds the tiny model for every ISA level this machine
// runs (tune build --cpu LEVEL) and checks its outputs; then it makes the
// load check of the first level's library see a processor without one of
// the level's features and checks that tessera_open refuses with that
// feature's name instead of running code the processor lacks.
func TestBuildPerLevel(t *testing.T) {
	levels, skipped := machine.RunnableLevels(backend.NativeMachine())
	for name, miss := range skipped {
		t.Logf("%s skipped: this machine lacks %s", name, strings.Join(miss, " "))
	}
	var firstDir string
	var first machine.Machine
	var firstTarget *backend.Target
	root := t.TempDir()
	for _, m := range levels {
		t.Run(m.Name, func(t *testing.T) {
			g, err := onnx.DecodeFile("../testdata/tiny.onnx")
			if err != nil {
				t.Fatal(err)
			}
			b := &measure.Builder{Timeout: LibraryTimeout}
			tg := backend.CPU(backend.CPUConfig{Builder: b, Machine: m, Key: "cpu test " + m.Name})
			dir := filepath.Join(root, m.Name)
			buildRunCheck(t, prepare(t, g), dir, Options{Records: emptyRecords{}, Target: tg, Model: "tiny"})
			src, err := os.ReadFile(filepath.Join(dir, "model.c"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "tsm_cpu_check") {
				t.Fatal("model.c has no load check")
			}
			if firstDir == "" {
				firstDir, first, firstTarget = dir, m, tg
			}
		})
	}
	if firstDir == "" {
		t.Fatal("no level built")
	}
	feature := first.Features[len(first.Features)-1]
	src, err := os.ReadFile(filepath.Join(firstDir, "model.c"))
	if err != nil {
		t.Fatal(err)
	}
	call := `__builtin_cpu_supports("` + feature + `")`
	if !strings.Contains(string(src), call) {
		t.Fatalf("model.c does not check %s", feature)
	}
	// The processor "lacks" feature: its check answers no.
	lacking := strings.Replace(string(src), call, "0", 1)
	if err := os.WriteFile(filepath.Join(firstDir, "model.c"), []byte(lacking), 0o644); err != nil {
		t.Fatal(err)
	}
	kernels, err := filepath.Glob(filepath.Join(firstDir, "kernels", "kernel*.c"))
	if err != nil || len(kernels) == 0 {
		t.Fatalf("no kernel sources in %s: %v", firstDir, err)
	}
	f := &Files{Source: lacking, Runtime: tsrt.Files("")}
	for i := range kernels {
		k := KernelSource{Name: kernelName(i)}
		code, err := os.ReadFile(filepath.Join(firstDir, k.file()))
		if err != nil {
			t.Fatal(err)
		}
		k.Code = string(code)
		f.Kernels = append(f.Kernels, k)
	}
	lib, err := compileLibrary(context.Background(), f, firstTarget)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(firstDir, tsrt.LibraryFile), lib, 0o755); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, firstDir, func(m *tsrt.Manifest) { m.LibraryBytes, m.LibrarySHA256 = tsrt.LibraryDigest(lib) })
	_, err = tsrt.Open(firstDir)
	if err == nil || !strings.Contains(err.Error(), "this processor lacks "+feature) {
		t.Fatalf("a processor without %s: got %v, want the load check's error", feature, err)
	}
	t.Logf("%s library on a processor without %s: %v", first.Name, feature, err)
}

// TestBuildAarch64 cross-compiles the tiny model for aarch64 (armv8-a,
// NEON) with Debian's gcc-aarch64-linux-gnu, runs it under qemu-aarch64
// and compares its outputs with the reference evaluator. Skipped where the
// tools are missing, unless TESSERA_REQUIRE_CROSS is set (scripts/test.sh).
func TestBuildAarch64(t *testing.T) {
	tools := crosstest.RequireAarch64(t)
	m, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.DecodeFile("../testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, g)
	b := &measure.Builder{CC: tools.CC, Timeout: LibraryTimeout}
	tg := backend.CPU(backend.CPUConfig{Builder: b, Machine: m, Key: "cpu test aarch64"})
	dir := t.TempDir()
	man, err := Build(context.Background(), p.g, p.plan, dir, Options{Records: emptyRecords{}, Target: tg, Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("file", filepath.Join(dir, tsrt.LibraryFile)).Output(); err == nil && !strings.Contains(string(out), "aarch64") {
		t.Fatalf("%s is not an aarch64 library: %s", tsrt.LibraryFile, out)
	}
	model, err := Emulate(context.Background(), dir, tools.Exec, b)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	inputs := randomInputs(man, 1)
	got, err := model.RunFloat32(context.Background(), inputs, tsrt.RunOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, "tiny", p, inputs)
	for i, o := range man.Outputs {
		if ok, msg := compareOutputs(got[i], want[i]); !ok {
			t.Errorf("output %s: %s", o.Name, msg)
		}
	}
	t.Logf("aarch64 (qemu): the tiny model's %d outputs agree with the reference evaluator", len(man.Outputs))
}

// rewriteManifest changes the manifest of the build folder dir with edit.
func rewriteManifest(t *testing.T, dir string, edit func(*tsrt.Manifest)) {
	t.Helper()
	m, err := tsrt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tsrt.ManifestFile), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
