package assemble

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/tsrt"
)

// builtTiny builds testdata/tiny.onnx with default schedules into a fresh
// directory.
func builtTiny(t *testing.T) (string, *tsrt.Manifest) {
	t.Helper()
	g, err := onnx.DecodeFile("../testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, g)
	dir := t.TempDir()
	m, err := Build(context.Background(), p.g, p.plan, dir, Options{Target: testTarget("", nil), Model: "tiny.onnx"})
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// TestLibraryRefusesBadWeights: the library itself (tsrt.Open) must refuse
// weights that are missing, truncated, corrupt or another build's, with a
// message naming what is wrong; so does tsrt.VerifyWeights, the check
// against the manifest that tune run makes first.
func TestLibraryRefusesBadWeights(t *testing.T) {
	dir, man := builtTiny(t)
	good, err := os.ReadFile(filepath.Join(dir, tsrt.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(good)
	flipped[tsrt.WeightsHeaderSize+100] ^= 1
	other := slices.Clone(good)
	binary.LittleEndian.PutUint64(other[16:], 12345) // another build's checksum
	for _, c := range []struct {
		name string
		data []byte // nil: no file
		want string
	}{
		{"missing", nil, "such file or directory"},
		{"not weights", []byte("hello"), "not a tessera weights file"},
		{"truncated", good[:len(good)-64], "truncated"},
		{"trailing bytes", append(slices.Clone(good), 0), "bytes after"},
		{"corrupt", flipped, "corrupt"},
		{"another build", other, "another build"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, tsrt.WeightsFile)
			os.Remove(path)
			if c.data != nil {
				if err := os.WriteFile(path, c.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tsrt.Open(dir); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("the library: got %v, want an error containing %q", err, c.want)
			}
			if err := tsrt.VerifyWeights(path, man.Weights); err == nil {
				t.Errorf("VerifyWeights accepts the weights")
			} else if c.data != nil && !errors.Is(err, tsrt.ErrCorruptWeights) {
				t.Errorf("VerifyWeights: %v, want tsrt.ErrCorruptWeights", err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir, _ := builtTiny(t)
	if _, err := tsrt.Open(t.TempDir()); !errors.Is(err, &tsrt.Error{Status: tsrt.NotFound}) {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := tsrt.Open(filepath.Join(dir, "nothere")); !errors.Is(err, &tsrt.Error{Status: tsrt.NotFound}) {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := tsrt.ReadManifest(t.TempDir()); !errors.Is(err, tsrt.ErrNoManifest) {
		t.Errorf("ReadManifest of an empty directory: %v", err)
	}
	os.Remove(filepath.Join(dir, tsrt.LibraryFile))
	if _, err := tsrt.Open(dir); err == nil || !strings.Contains(err.Error(), tsrt.LibraryFile) {
		t.Errorf("missing library: %v", err)
	}
}

func TestRunChecksInputs(t *testing.T) {
	dir, man := builtTiny(t)
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.RunFloat32(ctx, nil, tsrt.RunOptions{}); err == nil || !strings.Contains(err.Error(), "0 inputs given, the model has 1 (input[1,3,16,16])") {
		t.Errorf("no inputs: %v", err)
	}
	if _, err := m.RunFloat32(ctx, [][]float32{make([]float32, 5)}, tsrt.RunOptions{}); err == nil || !strings.Contains(err.Error(), "5 values") {
		t.Errorf("short input: %v", err)
	}
	if _, err := m.Bench(ctx, 0, 0, tsrt.RunOptions{}); err == nil {
		t.Errorf("bench with no repetitions: no error")
	}
	times, err := m.Bench(ctx, 1, 3, tsrt.RunOptions{Threads: 1})
	if err != nil || len(times) != 3 {
		t.Errorf("bench: %v, %v", times, err)
	}
	// Profile times every step of the executor; the steps lie within the
	// runs, so their sum is at most the mean run.
	times, steps, err := m.Profile(ctx, 1, 3, tsrt.RunOptions{Threads: 1})
	if err != nil || len(times) != 3 || len(steps) != len(man.Steps) || len(steps) == 0 {
		t.Fatalf("profile: %d times, %d steps (manifest %d), %v", len(times), len(steps), len(man.Steps), err)
	}
	sum, mean := 0.0, 0.0
	for _, s := range steps {
		if !(s > 0) {
			t.Errorf("profile: a step took %v s", s)
		}
		sum += s
	}
	for _, x := range times {
		mean += x / 3
	}
	if sum > mean*1.0001 {
		t.Errorf("profile: steps sum to %v s, more than the mean run %v s", sum, mean)
	}
	// The same inputs give the same outputs, run after run.
	in := randomInputs(man, 3)
	a, err := m.RunFloat32(ctx, in, tsrt.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.RunFloat32(ctx, in, tsrt.RunOptions{Threads: 1})
	if err != nil || !slices.Equal(a[0], b[0]) {
		t.Errorf("two runs differ: %v", err)
	}
}

// TestHeader compiles a C program against tessera.h, links it with the
// library, and runs it: the header declares what the library defines, and
// every bad call (a NULL pointer, a wrong shape or dtype, another ABI
// version, a missing weights file, an index out of range) comes back as
// its status with a message, never a crash.
func TestHeader(t *testing.T) {
	dir, man := builtTiny(t)
	prog := `#include <stdio.h>
#include <string.h>
#include "tessera.h"
static int expect(tessera_status got, tessera_status want, const char *what) {
  if (got != want) {
    fprintf(stderr, "%s: got %s, want %s (%s)\n", what, tessera_status_name(got), tessera_status_name(want), tessera_last_error());
    return 1;
  }
  if (want != TESSERA_OK && tessera_last_error()[0] == 0) {
    fprintf(stderr, "%s: no message\n", what);
    return 1;
  }
  return 0;
}
int main(void) {
  static float in[768], out[10];
  int64_t in_shape[] = {1, 3, 16, 16}, out_shape[] = {1, 10}, bad_shape[] = {1, 3, 16, 15};
  tessera_tensor ins[] = {{TESSERA_FLOAT32, 4, in_shape, in}};
  tessera_tensor outs[] = {{TESSERA_FLOAT32, 2, out_shape, out}};
  tessera_model *m = NULL;
  int bad = 0;
  if (tessera_abi_version() != TESSERA_ABI_VERSION)
    return 9;
  bad |= expect(tessera_open(TESSERA_ABI_VERSION, "does-not-exist", &m), TESSERA_NOT_FOUND, "missing weights");
  bad |= expect(tessera_open(TESSERA_ABI_VERSION + 1, ".", &m), TESSERA_ABI_MISMATCH, "another ABI");
  bad |= expect(tessera_open(TESSERA_ABI_VERSION, NULL, &m), TESSERA_INVALID_ARGUMENT, "no path, no embedded weights");
  bad |= expect(tessera_open(TESSERA_ABI_VERSION, ".", NULL), TESSERA_INVALID_ARGUMENT, "NULL model");
  if (bad || tessera_open(TESSERA_ABI_VERSION, ".", &m) != TESSERA_OK) {
    fprintf(stderr, "%s\n", tessera_last_error());
    return 2;
  }
  const char *name;
  tessera_dtype dt;
  int32_t rank;
  const int64_t *shape;
  bad |= expect(tessera_input_info(m, 0, &name, &dt, &rank, &shape), TESSERA_OK, "input 0");
  if (dt != TESSERA_FLOAT32 || rank != 4 || shape[2] != 16 || tessera_num_inputs(m) != 1 || tessera_num_outputs(m) != 1)
    return 3;
  bad |= expect(tessera_input_info(m, 7, &name, NULL, NULL, NULL), TESSERA_INVALID_ARGUMENT, "input 7");
  bad |= expect(tessera_input_info(NULL, 0, &name, NULL, NULL, NULL), TESSERA_INVALID_ARGUMENT, "info of NULL");
  bad |= expect(tessera_set_num_threads(m, 1), TESSERA_OK, "threads");
  bad |= expect(tessera_run(m, ins, 1, outs, 1), TESSERA_OK, "run");
  bad |= expect(tessera_run(m, ins, 1, NULL, 1), TESSERA_INVALID_ARGUMENT, "NULL outputs");
  bad |= expect(tessera_run(NULL, ins, 1, outs, 1), TESSERA_INVALID_ARGUMENT, "NULL model");
  bad |= expect(tessera_run(m, ins, 2, outs, 1), TESSERA_INVALID_ARGUMENT, "two inputs");
  tessera_tensor wrong = ins[0];
  wrong.shape = bad_shape;
  bad |= expect(tessera_run(m, &wrong, 1, outs, 1), TESSERA_SHAPE_MISMATCH, "wrong shape");
  wrong.shape = NULL;
  bad |= expect(tessera_run(m, &wrong, 1, outs, 1), TESSERA_SHAPE_MISMATCH, "NULL shape");
  wrong = ins[0];
  wrong.dtype = TESSERA_INT64;
  bad |= expect(tessera_run(m, &wrong, 1, outs, 1), TESSERA_DTYPE_MISMATCH, "wrong dtype");
  wrong = ins[0];
  wrong.data = NULL;
  bad |= expect(tessera_run(m, &wrong, 1, outs, 1), TESSERA_INVALID_ARGUMENT, "NULL data");
  double steps[64] = {0};
  if (tessera_num_steps(m) < 1 || tessera_num_steps(m) > 64 || tessera_step_name(m, 0) == NULL)
    return 4;
  bad |= expect(tessera_profile(m, steps, 0), TESSERA_INVALID_ARGUMENT, "profile into too short an array");
  bad |= expect(tessera_profile(m, steps, 64), TESSERA_OK, "profile");
  bad |= expect(tessera_run(m, ins, 1, outs, 1), TESSERA_OK, "profiled run");
  if (steps[0] <= 0)
    return 5;
  if (bad)
    return 6;
  printf("%s %s %g\n", name, tessera_target(m), out[0]);
  tessera_close(m);
  tessera_close(NULL);
  tessera_close(m);
  if (expect(tessera_run(m, ins, 1, outs, 1), TESSERA_INVALID_ARGUMENT, "run after close") ||
      expect(tessera_profile(m, steps, 64), TESSERA_INVALID_ARGUMENT, "profile after close") || tessera_num_inputs(m) != 0 ||
      strstr(tessera_last_error(), "closed") == NULL)
    return 7;
  return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := exec.Command("cc", "-std=c11", "-Wall", "-Werror", "-o", "main", "main.c", "-L.", "-lmodel", "-Wl,-rpath,$ORIGIN")
	cc.Dir = dir
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	run := exec.Command("./main")
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), man.Inputs[0].Name+" "+man.Target+" ") {
		t.Errorf("program printed %q", out)
	}
}

// TestManifestMustMatchLibrary: a manifest edited after the build (or
// another build's) is an error of Open naming the difference, never a run
// that writes the wrong number of values with success; sizes that cannot
// be allocated are refused before anything is.
func TestManifestMustMatchLibrary(t *testing.T) {
	dir, _ := builtTiny(t)
	data, err := os.ReadFile(filepath.Join(dir, tsrt.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	write := func(edit func(m *tsrt.Manifest)) {
		var m tsrt.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(&m)
		out, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tsrt.ManifestFile), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		edit func(m *tsrt.Manifest)
		open string // the error of Open, or "" when Open succeeds
		run  string // then the error of RunFloat32 and Bench
		max  int64
	}{
		{"output shape", func(m *tsrt.Manifest) { m.Outputs[0].Shape = []int{1, 2} }, "has \"output\" (float32, 10 elements)", "", 0},
		{"no outputs", func(m *tsrt.Manifest) { m.Outputs = nil }, "lists 0 outputs, the library libmodel.so has 1", "", 0},
		{"renamed output", func(m *tsrt.Manifest) { m.Outputs[0].Name = "other" }, "the library libmodel.so has \"output\"", "", 0},
		{"input shape", func(m *tsrt.Manifest) { m.Inputs[0].Shape = []int{1, 3, 16, 8} }, "input 0", "", 0},
		{"huge input", func(m *tsrt.Manifest) { m.Inputs[0].Shape = []int{1, 3, 1 << 31, 1 << 31} }, "at most 1099511627776 elements", "", 0},
		{"zero dimension", func(m *tsrt.Manifest) { m.Inputs[0].Shape = []int{1, 0} }, "positive dimensions", "", 0},
		{"negative arena", func(m *tsrt.Manifest) { m.Memory.ArenaBytes = -1 }, "memory.arena_bytes", "", 0},
		{"over the memory limit", func(m *tsrt.Manifest) {}, "", "more than the 1.0 KiB allowed", 1024},
	} {
		write(c.edit)
		m, err := tsrt.Open(dir)
		if c.open != "" {
			if err == nil || !strings.Contains(err.Error(), c.open) {
				t.Errorf("%s: Open: %v, want an error containing %q", c.name, err, c.open)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Open: %v", c.name, err)
		}
		defer m.Close()
		if _, err := m.RunFloat32(ctx, randomInputs(m.Manifest(), 1), tsrt.RunOptions{MaxMemory: c.max}); err == nil || !strings.Contains(err.Error(), c.run) {
			t.Errorf("%s: Run: %v, want an error containing %q", c.name, err, c.run)
		}
		if _, err := m.Bench(ctx, 0, 1, tsrt.RunOptions{MaxMemory: c.max}); err == nil || !strings.Contains(err.Error(), c.run) {
			t.Errorf("%s: Bench: %v, want an error containing %q", c.name, err, c.run)
		}
	}
}
