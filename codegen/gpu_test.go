package codegen_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// testGPU are the limits of a CUDA device of compute capability 9.0.
var testGPU = schedule.GPULimits{WarpSize: 32, MaxThreadsPerBlock: 1024, MaxSharedBytes: 48 << 10, MaxVThread: 8, Processors: 132, VectorLanes: codegen.GPUVectorLanes}

// gpuTool returns the path of a tool the GPU tests need; without it the
// test is skipped, unless TESSERA_REQUIRE_GPU_TOOLS is set (CI sets it:
// scripts/deps.sh installs the tools), where it fails.
func gpuTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") != "" {
			t.Fatalf("%s is not installed (scripts/deps.sh installs it)", name)
		}
		t.Skipf("%s is not installed (scripts/deps.sh installs it)", name)
	}
	return path
}

// gpuSample returns the default GPU schedule and n random ones (samples of
// the GPU rules, some mutated) of every op of the library, lowered, named
// after the op.
func gpuSample(t *testing.T, n int) []*tir.PrimFunc {
	t.Helper()
	opts := sketch.GPUOptions(testGPU)
	dags := tetest.DAGs()
	var names []string
	for name := range dags {
		names = append(names, name)
	}
	slicesSort(names)
	var fs []*tir.PrimFunc
	for _, name := range names {
		d := dags[name]
		s0 := schedule.NewState(d)
		def, _, err := sketch.Default(s0, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		states := []*schedule.State{def}
		sk, err := sketch.Generate(s0, opts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, uint64(len(name))))
		for tries := 0; len(states) < n+1 && tries < 2000; tries++ {
			s, err := sketch.Sample(rng, sk[rng.IntN(len(sk))], opts)
			if err != nil {
				continue
			}
			if tries%2 == 1 {
				if m, err := sketch.Mutate(rng, s, sketch.GPUMutations, opts); err == nil {
					s = m
				}
			}
			if _, err := opts.Lower(s, "k"); err == nil {
				states = append(states, s)
			}
		}
		for i, s := range states {
			f, err := opts.Lower(s, fmt.Sprintf("%s_%d", name, i))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fs = append(fs, f)
		}
	}
	return fs
}

func slicesSort(a []string) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// TestGPUCUDACompiles prints the default and a random GPU schedule of
// every op of the library as CUDA and compiles the module to PTX for
// sm_90 with clang (no CUDA headers, no libdevice): any error fails.
func TestGPUCUDACompiles(t *testing.T) {
	clang := gpuTool(t, "clang-16")
	fs := gpuSample(t, 1)
	src, err := codegen.GPU(fs, codegen.CUDA)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cu := filepath.Join(dir, "kernels.cu")
	if err := os.WriteFile(cu, []byte(src.Code), 0o644); err != nil {
		t.Fatal(err)
	}
	ptx := filepath.Join(dir, "kernels.ptx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, clang, "--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_90",
		"-O3", "-Werror=implicit-function-declaration", "-S", "-o", ptx, cu).CombinedOutput()
	if err != nil {
		t.Fatalf("clang: %v\n%s", err, head(string(out), 40))
	}
	data, err := os.ReadFile(ptx)
	if err != nil {
		t.Fatal(err)
	}
	code := string(data)
	kernels := 0
	for _, f := range src.Funcs {
		for _, l := range f.Launches {
			kernels++
			if !strings.Contains(code, ".entry "+l.Name+"(") {
				t.Errorf("no PTX entry for %s", l.Name)
			}
		}
	}
	vec := strings.Count(code, ".v4.f32") + strings.Count(code, ".v2.f32")
	t.Logf("cuda: %d GPU schedules, %d kernels compiled to PTX for sm_90 by %s, %d vector loads and stores", len(fs), kernels, filepath.Base(clang), vec)
	if vec == 0 {
		t.Error("no float2/float4 access in the PTX")
	}
}

// TestGPUOpenCLParses prints the same sample as OpenCL C 1.2 and has clang
// check it (PoCL builds and runs it in package backend).
func TestGPUOpenCLParses(t *testing.T) {
	clang := gpuTool(t, "clang-16")
	fs := gpuSample(t, 1)
	src, err := codegen.GPU(fs, codegen.OpenCL)
	if err != nil {
		t.Fatal(err)
	}
	cl := filepath.Join(t.TempDir(), "kernels.cl")
	if err := os.WriteFile(cl, []byte(src.Code), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(clang, "-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header",
		"-fsyntax-only", "-Werror=implicit-function-declaration", cl).CombinedOutput()
	if err != nil {
		t.Fatalf("clang: %v\n%s", err, head(string(out), 40))
	}
}

func head(s string, lines int) string {
	parts := strings.SplitN(s, "\n", lines+1)
	if len(parts) > lines {
		parts = parts[:lines]
	}
	return strings.Join(parts, "\n")
}

// TestGPUVectorAccess: an aligned contiguous vector loop is one float4
// load and one float4 store in both dialects; a misaligned one is scalar.
func TestGPUVectorAccess(t *testing.T) {
	A := &tir.Buffer{Name: "A", DType: tir.Float32, Shape: []int{64}}
	B := &tir.Buffer{Name: "B", DType: tir.Float32, Shape: []int{64}}
	mk := func(offset int64) *tir.PrimFunc {
		tx, v := tir.NewVar("tx"), tir.NewVar("v")
		idx := tir.AddE(tir.AddE(tir.MulE(tx, tir.Const(4)), v), tir.Const(offset))
		body := &tir.For{Var: v, Extent: 4, Kind: tir.Vectorized, Body: &tir.IfThenElse{
			Cond: tir.Cmp(tir.LT, idx, tir.Const(64)),
			Then: &tir.Store{Buf: B, Indices: []tir.Expr{idx}, Value: tir.MulE(&tir.Load{Buf: A, Indices: []tir.Expr{idx}}, tir.F32(2))}}}
		return &tir.PrimFunc{Name: fmt.Sprintf("copy%d", offset), Params: []*tir.Buffer{A, B},
			Body: &tir.For{Var: tx, Extent: 15, Kind: tir.ThreadBound, Thread: "threadIdx.x", Body: body}}
	}
	for _, c := range []struct {
		d          codegen.Dialect
		load, stor string
	}{
		{codegen.CUDA, "const tsr_float4 vec0 = *(const tsr_float4 *)(&A[", "*(tsr_float4 *)(&B["},
		{codegen.OpenCL, "const float4 vec0 = *(const __global float4 *)(&A[", "*(__global float4 *)(&B["},
	} {
		src, err := codegen.GPU([]*tir.PrimFunc{mk(0), mk(1)}, c.d)
		if err != nil {
			t.Fatal(err)
		}
		aligned, misaligned, _ := strings.Cut(src.Code[strings.Index(src.Code, "copy0_k0"):], "copy1_k0")
		if !strings.Contains(aligned, c.load) || !strings.Contains(aligned, c.stor) || !strings.Contains(aligned, "vec0.w") {
			t.Errorf("%v: aligned copy without vector access:\n%s", c.d, aligned)
		}
		if strings.Contains(misaligned, "float4 *)") {
			t.Errorf("%v: misaligned copy with vector access:\n%s", c.d, misaligned)
		}
	}
}
