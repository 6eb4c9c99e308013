package sketch

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// testGPU are the limits of a CUDA GPU of compute capability 9.0 (48 KiB
// of static shared memory) with 132 multiprocessors (an H100 or H200).
var testGPU = schedule.GPULimits{WarpSize: 32, MaxThreadsPerBlock: 1024, MaxSharedBytes: 48 << 10, MaxVThread: 8, Processors: 132, VectorLanes: codegen.GPUVectorLanes}

func gpuSketches(t *testing.T, name string) []*schedule.State {
	t.Helper()
	d := tetest.DAGs()[name]
	if d == nil {
		t.Fatalf("no example DAG %q", name)
	}
	sk, err := Generate(schedule.NewState(d), GPUOptions(testGPU))
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// TestGPUSketchMatmul: the matmul's sketches read A and B through shared
// copies computed at the outermost reduce tile, tile SSSRRSRS, and the
// first accumulates in a local stage fused into the output at the third
// spatial level.
func TestGPUSketchMatmul(t *testing.T) {
	sk := gpuSketches(t, "matmul")
	if len(sk) != 2 {
		t.Fatalf("%d sketches, want 2 (with and without the local cache):\n%v", len(sk), sk)
	}
	local := stageLine(sk[0], "matmul.local")
	if !strings.Contains(local, "@matmul.") || !strings.HasSuffix(local,
		"i0.0(?) i1.0(?) i0.1(?) i1.1(?) i0.2(?) i1.2(?) r0.0(?) r0.1(?) i0.3(?) i1.3(?) r0.2(?) i0.4(?) i1.4(?)") {
		t.Errorf("local stage not SSSRRSRS-tiled and attached: %q", local)
	}
	for _, s := range sk {
		for _, in := range []string{"A.shared", "B.shared"} {
			if l := stageLine(s, in); !strings.Contains(l, ".r0.0") {
				t.Errorf("%s not computed at the outermost reduce tile: %q\n%v", in, l, s)
			}
		}
	}
}

// TestGPUSketchReductions: a long reduction without data reuse gets a
// cross-thread sketch (its reduce loop split by the warp, threads bound).
func TestGPUSketchReductions(t *testing.T) {
	for _, name := range []string{"softmax", "reduce_small_output"} {
		found := false
		for _, s := range gpuSketches(t, name) {
			if strings.Contains(s.String(), "@threadIdx.x(32)") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no cross-thread reduction sketch", name)
		}
	}
}

// TestGPUSamplesLowerAndMatch samples GPU schedules of every op of the
// library from the GPU rules (and mutates some), lowers them within the
// device's limits and runs them through the thread-emulating interpreter
// against the reference evaluator.
func TestGPUSamplesLowerAndMatch(t *testing.T) {
	const perOp = 30
	dags := tetest.DAGs()
	opts := GPUOptions(testGPU)
	var total, wrong, races, sharedN, crossN atomic.Int64
	t.Run("ops", func(t *testing.T) {
		for _, name := range sortedNames(dags) {
			d := dags[name]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s0 := schedule.NewState(d)
				sk, err := Generate(s0, opts)
				if err != nil || len(sk) == 0 {
					t.Fatalf("sketches: %v", err)
				}
				rng := rand.New(rand.NewPCG(5, uint64(len(name))))
				got := 0
				var valid []*schedule.State
				// As the search does: fresh samples (many are invalid:
				// a random thread tile under a warp), and mutations of
				// the valid ones.
				for tries := 0; got < perOp && tries < 100*perOp; tries++ {
					var s *schedule.State
					if len(valid) > 0 && (tries%2 == 1 || tries > 20*perOp) {
						m, err := Mutate(rng, valid[rng.IntN(len(valid))], GPUMutations, opts)
						if err != nil {
							continue
						}
						s = m
					} else {
						var err error
						s, err = Sample(rng, sk[rng.IntN(len(sk))], opts)
						if err != nil {
							if !errors.Is(err, ErrNotApplicable) {
								t.Fatalf("sample: %v", err)
							}
							continue
						}
					}
					f, err := opts.Lower(s, "kernel")
					if err != nil {
						continue // over the limits: dropped, as the search drops it
					}
					got++
					valid = append(valid, s)
					total.Add(1)
					str := f.String()
					if strings.Contains(str, " shared\n") {
						sharedN.Add(1)
					}
					if strings.Contains(str, ".red_shared") {
						crossN.Add(1)
					}
					if err := schedtest.CheckGPU(d, f, uint64(got)); err != nil {
						if tir.IsRace(err) {
							races.Add(1)
						} else {
							wrong.Add(1)
						}
						t.Fatalf("%v\nsteps: %v\nstate:\n%v\nlowered:\n%v", err, s.Steps, s, f)
					}
				}
				if got < perOp {
					t.Errorf("only %d of %d GPU samples lower within the limits", got, perOp)
				}
			})
		}
	})
	t.Logf("sketch: %d GPU schedules, %d wrong, %d races (%d with shared memory, %d cross-thread reductions)",
		total.Load(), wrong.Load(), races.Load(), sharedN.Load(), crossN.Load())
}

// TestGPUDefault: the default GPU schedule of every op lowers within the
// limits, binds threads, and computes the right numbers.
func TestGPUDefault(t *testing.T) {
	dags := tetest.DAGs()
	opts := GPUOptions(testGPU)
	for _, name := range sortedNames(dags) {
		d := dags[name]
		s, how, err := Default(schedule.NewState(d), opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.HasPrefix(how, "naive") {
			t.Errorf("%s: default is %s", name, how)
			continue
		}
		f, err := opts.Lower(s, "kernel")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := schedtest.CheckGPU(d, f, 1); err != nil {
			t.Fatalf("%s: %v\n%v", name, err, f)
		}
	}
}

// TestGPUDefaultWideConv: the 3×3 convolutions of ResNet-18's last stages
// (256 and 512 channels) got the naive schedule, one thread per kernel,
// on an H200: their first tile choice stages 256 × 8 × 9 weights, more
// shared memory than a block has. The next choices fit; and the naive
// last resort binds its loops to blocks of threads.
func TestGPUDefaultWideConv(t *testing.T) {
	opts := GPUOptions(testGPU)
	for _, c := range []struct{ hw, ch int }{{14, 256}, {7, 512}} {
		d := conv3x3DAG(t, c.hw, c.ch)
		_, how, err := Default(schedule.NewState(d), opts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(how, "naive") {
			t.Errorf("%d×%d×%d: default is %s", c.hw, c.hw, c.ch, how)
		}
	}
	d := tetest.DAGs()["conv_bias_relu"]
	s, err := bindNaive(schedule.NewState(d), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := opts.Lower(s, "kernel")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.String(), "threadIdx.x") {
		t.Errorf("the bound naive schedule binds no threads:\n%v", f)
	}
	if err := schedtest.CheckGPU(d, f, 1); err != nil {
		t.Fatalf("%v\n%v", err, f)
	}
}
