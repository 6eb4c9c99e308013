package sketch

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestGPUDefaultRegisterTile: a tiled stage's default gives each thread a
// register tile on its two innermost axes, read through vector loads,
// and shrinks it until there is a block for every multiprocessor: on an
// H100's 132, a 4096² matmul gets 8 × 8 outputs a thread (blocks of 128 ×
// 128), a 1024² one 4 × 4 (8 × 8 would leave 64 blocks), BERT's FFN
// over 128 tokens 2 × 4, ResNet-18's first 3×3 convolution 2 × 2, its
// last none.
func TestGPUDefaultRegisterTile(t *testing.T) {
	for _, c := range []struct {
		name               string
		d                  *te.DAG
		threads, perThread int
		vector             bool
	}{
		{"matmul 4096", matmulDAG(t, 4096, 4096, 4096), 256, 64, true},
		{"matmul 1024", matmulDAG(t, 1024, 1024, 1024), 256, 16, true},
		{"matmul 128×768×3072", matmulDAG(t, 128, 768, 3072), 256, 8, true},
		{"conv 56×56×64", conv3x3DAG(t, 56, 64), 224, 4, true},
		{"conv 7×7×512", conv3x3DAG(t, 7, 512), 112, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, k := gpuDefaultKernel(t, c.d, testGPU)
			if k == nil {
				t.Fatal("more than one kernel")
			}
			outputs := 1
			for _, a := range c.d.Outputs[0].Shape {
				outputs *= a
			}
			perThread := outputs / (k.Blocks() * k.Threads())
			if k.Threads() != c.threads || perThread != c.perThread {
				t.Errorf("%d threads a block, %d outputs a thread; want %d and %d", k.Threads(), perThread, c.threads, c.perThread)
			}
			if c.perThread > 1 && k.Blocks() < testGPU.Processors {
				t.Errorf("%d blocks for %d multiprocessors", k.Blocks(), testGPU.Processors)
			}
			if got := vectorizedLocal(s); got != c.vector {
				t.Errorf("register tile vectorized: %v, want %v\n%v", got, c.vector, s)
			}
		})
	}
}

// vectorizedLocal reports whether a stage computed inside a kernel that
// accumulates (a tiled stage's registers) has a vectorized loop.
func vectorizedLocal(s *schedule.State) bool {
	for _, st := range s.Stages {
		if st.Attach == schedule.Root || st.Attach == schedule.Inlined || st.Tensor.Reducer == 0 {
			continue
		}
		for _, it := range st.Iters {
			if it.Ann == schedule.Vectorize {
				return true
			}
		}
	}
	return false
}

// TestGPUDefaultRegisterTileNumbers: register-tiled defaults compute the
// reference evaluator's numbers: tiles of 6 and 3 (the vector loop cut
// into a float4 and a float2), a fused bias and ReLU, a batch, a
// convolution whose operand is gathered along the vector loop, and
// attention's Kᵀ.
func TestGPUDefaultRegisterTileNumbers(t *testing.T) {
	lim := testGPU
	lim.Processors = 1
	P, K := te.Placeholder, te.Constant
	must := func(x *te.Tensor, err error) *te.Tensor {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	dag := dagOf(t)
	dags := map[string]*te.DAG{
		"matmul 64×48×96":  matmulDAG(t, 64, 48, 96),
		"matmul bias relu": dag(te.Relu("relu", must(te.Gemm("gemm", P("A", 48, 40), K("B", 40, 32), K("C", 32), te.DefaultGemmAttrs())))),
		"batch matmul":     dag(te.MatMul("C", P("A", 3, 32, 24), P("B", 3, 24, 64))),
		"conv nhwc bias relu": dag(te.Relu("relu", must(te.ConvNHWC("conv", P("X", 1, 12, 12, 16), K("W", 32, 16, 3, 3), K("bias", 32),
			te.ConvAttrs{Pads: []int{1, 1, 1, 1}})))),
		"scores kt": dag(te.MatMul("S", P("Q", 2, 32, 16), must(te.Transpose("kt", P("K", 2, 48, 16), []int{0, 2, 1})))),
	}
	for _, name := range slices.Sorted(maps.Keys(dags)) {
		t.Run(name, func(t *testing.T) {
			d := dags[name]
			s, f, _ := gpuDefaultKernel(t, d, lim)
			if !vectorizedLocal(s) {
				t.Errorf("no vectorized register tile:\n%v", s)
			}
			if err := schedtest.CheckGPU(d, f, 3); err != nil {
				t.Fatalf("%v\nsteps: %v\n%v", err, s.Steps, f)
			}
		})
	}
}

// gpuDefaultKernel returns the default GPU schedule of d, lowered, and
// its kernel (nil where it lowers to several).
func gpuDefaultKernel(t *testing.T, d *te.DAG, lim schedule.GPULimits) (*schedule.State, *tir.PrimFunc, *tir.Kernel) {
	t.Helper()
	opts := GPUOptions(lim)
	s, how, err := Default(schedule.NewState(d), opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(how, "naive") {
		t.Fatalf("default is %s", how)
	}
	f, err := opts.Lower(s, "kernel")
	if err != nil {
		t.Fatal(err)
	}
	ks, _, err := tir.Kernels(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 {
		return s, f, nil
	}
	return s, f, &ks[0]
}

// dagOf returns the function that makes the DAG of an op's result
// (dagOf(t)(te.MatMul(...))), ending the test on an error.
func dagOf(t *testing.T) func(out *te.Tensor, err error) *te.DAG {
	return func(out *te.Tensor, err error) *te.DAG {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		d, err := te.NewDAG(out)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// matmulDAG is the DAG of an m×k by k×n matrix multiplication.
func matmulDAG(t *testing.T, m, k, n int) *te.DAG {
	t.Helper()
	return dagOf(t)(te.MatMul("C", te.Placeholder("A", m, k), te.Placeholder("B", k, n)))
}

// conv3x3DAG is a ResNet 3×3 convolution, channels-last, of ch channels
// in and out over hw×hw.
func conv3x3DAG(t *testing.T, hw, ch int) *te.DAG {
	t.Helper()
	x, w := te.Placeholder("X", 1, hw, hw, ch), te.Constant("W", ch, ch, 3, 3)
	return dagOf(t)(te.ConvNHWC("conv", x, w, nil, te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{1, 1}}))
}
