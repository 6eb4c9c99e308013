package tsrt_test

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// buildOpenCL builds the tiny model for the opencl target (this machine's
// OpenCL device: PoCL here and on CI).
func buildOpenCL(t *testing.T) string {
	t.Helper()
	tg, err := backend.OpenCL(context.Background(), backend.GPUConfig{Host: &measure.Builder{Timeout: assemble.LibraryTimeout}})
	if errors.Is(err, measure.ErrNoDevice) && os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") == "" {
		t.Skipf("no OpenCL device (scripts/deps.sh installs PoCL): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	return buildTinyFor(t, tg, false)
}

// TestTwoModels loads two models into one process, one built for the CPU
// and one for OpenCL, runs them at the same time from Go, then does the
// same from a C program that dlopens both libraries: each library keeps
// its own runtime and kernels (only the ABI is exported), and both give
// the same outputs within the tolerance of two devices' arithmetic.
func TestTwoModels(t *testing.T) {
	cpuDir, clDir := buildTiny(t), buildOpenCL(t)
	cpu, err := tsrt.Open(cpuDir)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	cl, err := tsrt.Open(clDir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if !strings.HasPrefix(cl.Target(), "opencl device ") || strings.HasPrefix(cpu.Target(), "opencl") {
		t.Fatalf("targets %q and %q", cpu.Target(), cl.Target())
	}
	if _, err := tsrt.Open(clDir); err == nil || !strings.Contains(err.Error(), "has a model open already") {
		t.Errorf("a second open of the GPU library: %v, want a refusal", err)
	}
	in := randomInput(cpu, 4)
	ctx := context.Background()
	var wg sync.WaitGroup
	outs := make([][]tsrt.Tensor, 2)
	errs := make([]error, 2)
	for i, m := range []*tsrt.Model{cpu, cl} {
		wg.Go(func() {
			for range 20 {
				outs[i], errs[i] = m.Run(ctx, in)
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, _ := tsrt.Values[float32](outs[0][0])
	b, _ := tsrt.Values[float32](outs[1][0])
	for i := range a {
		if d := math.Abs(float64(a[i] - b[i])); d > 1e-4+1e-3*math.Abs(float64(a[i])) {
			t.Fatalf("output %d: cpu %g, opencl %g", i, a[i], b[i])
		}
	}
	cl.Close() // the C program below opens the GPU library's model itself

	prog := `#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include "tessera.h"
typedef tessera_status (*open_fn)(uint32_t, const char *, tessera_model **);
typedef tessera_status (*run_fn)(tessera_model *, const tessera_tensor *, int32_t, const tessera_tensor *, int32_t);
typedef const char *(*err_fn)(void);
static float in[768], out[2][10];
int main(int argc, char **argv) {
  int64_t in_shape[] = {1, 3, 16, 16}, out_shape[] = {1, 10};
  for (int i = 0; i < 768; i++)
    in[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  for (int k = 0; k < 2; k++) {
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/libmodel.so", argv[1 + k]);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    open_fn op = (open_fn)dlsym(h, "tessera_open");
    run_fn run = (run_fn)dlsym(h, "tessera_run");
    err_fn last = (err_fn)dlsym(h, "tessera_last_error");
    if (dlsym(h, "tessera_kernel0") != NULL) { fprintf(stderr, "a kernel is exported\n"); return 2; }
    tessera_model *m;
    if (op(TESSERA_ABI_VERSION, argv[1 + k], &m) != TESSERA_OK) { fprintf(stderr, "%s\n", last()); return 3; }
    tessera_tensor ti = {TESSERA_FLOAT32, 4, in_shape, in}, to = {TESSERA_FLOAT32, 2, out_shape, out[k]};
    if (run(m, &ti, 1, &to, 1) != TESSERA_OK) { fprintf(stderr, "%s\n", last()); return 4; }
  }
  for (int i = 0; i < 10; i++)
    if (fabsf(out[0][i] - out[1][i]) > 1e-4f + 1e-3f * fabsf(out[0][i])) { fprintf(stderr, "output %d: %g vs %g\n", i, out[0][i], out[1][i]); return 5; }
  printf("cpu and opencl agree: %g %g\n", out[0][0], out[1][0]);
  return 0;
}
`
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "two.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(work, "two")
	if out, err := exec.Command("cc", "-O1", "-Wall", "-Werror", "-I", cpuDir, "-o", exe, filepath.Join(work, "two.c"), "-ldl", "-lm").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(exe, cpuDir, clDir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("C: %s", strings.TrimSpace(string(out)))
}
