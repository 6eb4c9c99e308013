package tsrt_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tsrt"
)

// deviceStub stands for what a GPU model's generated model.c defines before
// it includes its device runtime (assemble/gpusource.go), and uses every
// function the device runtime gives it.
const deviceStub = `#include <stddef.h>
static const char tsm_kernel_source[] = "";
static const char *const tsm_kernel_names[] = {"k0"};
#define TSM_NUM_KERNELS 1
#define TSM_NUM_DBUFS 1
static const size_t tsm_dbuf_bytes[] = {4};
#include "tessera_model.h"
#include "DEVICE"
void tsr_error(const char *fmt, ...) { (void)fmt; }
int use(float *x);
int use(float *x) {
  int a[1] = {0};
  return tsm_dev_init() || tsm_dev_upload(0, x, 4) || tsm_dev_launch(0, 1, 1, 1, 1, 1, 1, 1, a) ||
         tsm_dev_download(x, 0, 4) || tsm_dev_finish();
}
`

// TestDeviceRuntimesCompile compiles both device runtimes of GPU models
// with every warning an error, CUDA's too on a machine without CUDA: the
// runtime declares what it uses of the driver and NVRTC itself.
func TestDeviceRuntimesCompile(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatalf("no C compiler (scripts/deps.sh installs gcc): %v", err)
	}
	for _, device := range []string{"opencl", "cuda"} {
		t.Run(device, func(t *testing.T) {
			dir := t.TempDir()
			files := tsrt.Files(device)
			files["stub.c"] = strings.Replace(deviceStub, "DEVICE", "device_"+device+".c", 1)
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("cc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", "-c", "stub.c", "-o", "stub.o")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
