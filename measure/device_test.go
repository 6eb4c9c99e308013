package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/codegen"
)

// openCLDevice returns the OpenCL device of this machine; without one the
// test is skipped, unless TESSERA_REQUIRE_GPU_TOOLS is set (CI installs
// PoCL: scripts/deps.sh).
func openCLDevice(t *testing.T) *Device {
	t.Helper()
	d := &Device{API: OpenCL, Builder: testBuilder()}
	if _, err := d.Probe(context.Background()); err != nil {
		if errors.Is(err, ErrNoDevice) && os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") == "" {
			t.Skipf("no OpenCL device (scripts/deps.sh installs PoCL): %v", err)
		}
		t.Fatal(err)
	}
	return d
}

// scaleKernel is an OpenCL program: B[i] = 2*A[i] + T[i] over 4 blocks of
// 8 threads, T a temporary the first kernel fills.
const scaleKernel = `
__kernel void fill(__global float *T) { T[get_global_id(0)] = 1.0f; }
__kernel void scale(__global const float *A, __global float *B, __global const float *T) {
  int i = get_global_id(0);
  B[i] = 2.0f * A[i] + T[i];
}
`

// scaleJob is a job of scaleKernel's program at lib, B = 2A + 1 over 32
// values, and its input A.
func scaleJob(lib string) (Job, []float32) {
	a := make([]float32, 32)
	for i := range a {
		a[i] = float32(i)
	}
	return Job{Lib: lib, Args: []Arg{{Name: "A", Size: 32}, {Name: "B", Size: 32, Output: true}},
		Inputs: [][]float32{a}, Temps: []int{32},
		Launches: []codegen.Launch{
			{Name: "fill", Grid: [3]int{4, 1, 1}, Block: [3]int{8, 1, 1}, Args: []int{2}},
			{Name: "scale", Grid: [3]int{4, 1, 1}, Block: [3]int{8, 1, 1}, Args: []int{0, 1, 2}},
		}}, a
}

func TestOpenCLDeviceRuns(t *testing.T) {
	d := openCLDevice(t)
	if info, err := d.Probe(context.Background()); err != nil || info.Processors < 1 {
		t.Errorf("probe: %+v, %v: want its compute units", info, err)
	}
	built := d.Build(context.Background(), []Source{{Code: scaleKernel}, {Code: "__kernel void broken( {"}})
	if built[0].Kind != None {
		t.Fatalf("build: %v: %s", built[0].Kind, built[0].Msg)
	}
	if built[1].Kind != CompileError || built[1].Infra || built[1].Msg == "" {
		t.Errorf("a program that does not build: %+v", built[1])
	}
	r := &Runner{Builder: testBuilder(), Device: d, Opts: RunOptions{Repeat: 2, MinRepeatMs: 1, Check: true}}
	defer r.Close()
	job, a := scaleJob(built[0].Path)
	res := r.Run(context.Background(), []Job{job})[0]
	if res.Kind != None {
		t.Fatalf("%v: %s", res.Kind, res.Msg)
	}
	if len(res.Costs) == 0 || res.Costs[0] <= 0 || len(res.Outputs) != 1 {
		t.Fatalf("result %+v", res)
	}
	for i, v := range res.Outputs[0] {
		if v != 2*a[i]+1 {
			t.Fatalf("B[%d] = %v, want %v", i, v, 2*a[i]+1)
		}
	}
	flush := RunOptions{Repeat: 2, MinRepeatMs: 50, FlushCache: true}
	if res := r.RunWith(context.Background(), flush, []Job{job})[0]; res.Kind != None || res.Number != 1 || len(res.Costs) != 2 {
		t.Errorf("with the cache flushed before every call: %+v", res)
	}
	job.Launches[1].Name = "missing"
	if res := r.Run(context.Background(), []Job{job})[0]; res.Kind != RuntimeError || !strings.Contains(res.Msg, "no kernel missing") {
		t.Errorf("a launch of a kernel the program lacks: %v %s", res.Kind, res.Msg)
	}
}

// TestCUDADeviceWithoutGPU: on a machine without the CUDA driver (this one
// and CI) the probe is one clear line wrapping ErrNoDevice, never a crash,
// and a build is an infrastructure error, not a candidate's.
func TestCUDADeviceWithoutGPU(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	d := &Device{API: CUDA, Builder: testBuilder()}
	_, err := d.Probe(context.Background())
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "no CUDA driver") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("probe without a GPU: %v", err)
	}
	b := d.Build(context.Background(), []Source{{Code: "x"}})
	if b[0].Kind != CompileError || !b[0].Infra {
		t.Errorf("build without a GPU: %+v", b[0])
	}
}

// TestCUDACompileWithoutContext: compiling for a probed architecture
// starts no CUDA context, so it needs NVRTC but not the driver (this
// machine has neither: the error names NVRTC, not the driver), and an
// architecture that is not sm_XY is a usage error.
func TestCUDACompileWithoutContext(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	d := &Device{API: CUDA, Builder: testBuilder()}
	prog, err := d.program(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := dir + "/k.cu"
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ arch, want string }{
		{"sm_90", "no NVRTC"},
		{"sm_100", "no NVRTC"},
		{"gfx90a", "bad architecture"},
	} {
		out, err := exec.Command(prog, "compile", src, dir+"/out", c.arch).CombinedOutput()
		if exitCode(err) != 1 || !strings.Contains(string(out), c.want) {
			t.Errorf("compile for %s: exit %d, %q; want exit 1 and %q", c.arch, exitCode(err), out, c.want)
		}
	}
}

// TestGPURunnerServes: the GPU runner child serves job after job without
// starting again; a job that fails ends it and the next job gets a new
// one with its right result; a job past its deadline is killed and
// reported, and the one after it runs.
func TestGPURunnerServes(t *testing.T) {
	d := openCLDevice(t)
	built := d.Build(context.Background(), []Source{{Code: scaleKernel + `
__kernel void spin(__global float *T) { for (;;) T[0] += 1.0f; }
`}})
	if built[0].Kind != None {
		t.Fatalf("build: %v: %s", built[0].Kind, built[0].Msg)
	}
	r := &Runner{Builder: testBuilder(), Device: d, Opts: RunOptions{Repeat: 1, MinRepeatMs: 1, Check: true, Timeout: 20 * time.Second}}
	defer r.Close()
	good, a := scaleJob(built[0].Path)
	bad := good
	bad.Launches = []codegen.Launch{{Name: "missing", Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Args: []int{2}}}
	spin := good
	spin.Launches = []codegen.Launch{{Name: "spin", Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Args: []int{2}}}
	check := func(what string, res Result) {
		t.Helper()
		if res.Kind != None {
			t.Fatalf("%s: %v: %s", what, res.Kind, res.Msg)
		}
		for i, v := range res.Outputs[0] {
			if v != 2*a[i]+1 {
				t.Fatalf("%s: B[%d] = %v, want %v", what, i, v, 2*a[i]+1)
			}
		}
	}
	res := r.Run(context.Background(), []Job{good, good, good})
	for i := range res {
		check(fmt.Sprintf("job %d", i), res[i])
	}
	pid := r.server.cmd.Process.Pid
	check("a fourth job", r.Run(context.Background(), []Job{good})[0])
	if r.server == nil || r.server.cmd.Process.Pid != pid {
		t.Errorf("the runner started again between jobs")
	}
	res = r.Run(context.Background(), []Job{bad, good})
	if res[0].Kind != RuntimeError || !strings.Contains(res[0].Msg, "no kernel missing") {
		t.Errorf("a job that fails: %v %s", res[0].Kind, res[0].Msg)
	}
	check("the job after a failed one", res[1])
	short := r.Opts
	short.Timeout = 2 * time.Second
	if res := r.RunWith(context.Background(), short, []Job{spin})[0]; res.Kind != RunTimeout {
		t.Errorf("a job that does not end: %v %s", res.Kind, res.Msg)
	}
	check("the job after a killed one", r.Run(context.Background(), []Job{good})[0])
}
