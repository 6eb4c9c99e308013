package backend_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te/tetest"
)

// requireTools reports whether a missing GPU tool (PoCL, clang-16) must
// fail the test rather than skip it: CI installs them (scripts/deps.sh).
func requireTools() bool { return os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") != "" }

func openCL(t *testing.T) *backend.Target {
	t.Helper()
	tg, err := backend.OpenCL(context.Background(), backend.GPUConfig{
		Host: &measure.Builder{CacheDir: t.TempDir()},
		// PoCL runs a work-group's threads on the CPU, switching at
		// barriers: a random schedule of a few thousand threads takes
		// seconds on a loaded machine, past the 10 s default.
		Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1, Timeout: 2 * time.Minute},
	})
	if errors.Is(err, measure.ErrNoDevice) && !requireTools() {
		t.Skipf("no OpenCL device (scripts/deps.sh installs PoCL): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

// TestOpenCLOnPoCL builds a sample of GPU schedules, one of every op of
// the library (a random schedule of the GPU rules, or for every other op
// its default schedule), as OpenCL C, runs them on this machine's OpenCL
// device (PoCL on CI) and checks every output against the reference
// evaluator.
func TestOpenCLOnPoCL(t *testing.T) {
	tg := openCL(t)
	if !strings.HasPrefix(tg.Key(), "opencl device ") {
		t.Errorf("key %q", tg.Key())
	}
	dags := tetest.DAGs()
	var names []string
	for name := range dags {
		names = append(names, name)
	}
	slices.Sort(names)
	var inputs []measure.Input
	var labels []string
	for k, name := range names {
		s0 := schedule.NewState(dags[name])
		if k%2 == 1 {
			def, _, err := sketch.Default(s0, tg.Sketch)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			inputs = append(inputs, measure.Input{State: def})
			labels = append(labels, name+" (default)")
			continue
		}
		sk, err := sketch.Generate(s0, tg.Sketch)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(9, uint64(k)))
		for tries := 0; tries < 500; tries++ {
			s, err := sketch.Sample(rng, sk[rng.IntN(len(sk))], tg.Sketch)
			if err != nil {
				continue
			}
			if _, err := tg.Lower(s, "k"); err == nil {
				inputs = append(inputs, measure.Input{State: s})
				labels = append(labels, fmt.Sprintf("%s (sample %d)", name, tries))
				break
			}
		}
	}
	m := tg.Measurer(true)
	res, err := m.Measure(context.Background(), inputs)
	t.Logf("times %+v", m.Times())
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for i, r := range res {
		if r.Kind != measure.None {
			wrong++
			t.Errorf("%s: %v: %s\nsteps: %v", labels[i], r.Kind, r.Msg, inputs[i].State.Steps)
		}
	}
	t.Logf("opencl: %d GPU schedules built and run on %q, %d wrong", len(inputs), tg.Key(), wrong)
}

// TestCUDATarget: on a machine without an NVIDIA driver (this one, CI)
// the cuda target is one clear error wrapping measure.ErrNoDevice; on one
// with a GPU, the default schedules of a few ops are built by NVRTC, run
// and checked against the reference evaluator (never run by CI: no GPU).
func TestCUDATarget(t *testing.T) {
	tg, err := backend.CUDA(context.Background(), backend.GPUConfig{
		Host: &measure.Builder{CacheDir: t.TempDir()},
		// PoCL runs a work-group's threads on the CPU, switching at
		// barriers: a random schedule of a few thousand threads takes
		// seconds on a loaded machine, past the 10 s default.
		Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1, Timeout: 2 * time.Minute},
	})
	if errors.Is(err, measure.ErrNoDevice) {
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "no CUDA") && !strings.Contains(msg, "no NVRTC") {
			t.Errorf("without a GPU: %q", msg)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	var inputs []measure.Input
	for _, name := range []string{"matmul", "conv_bias_relu", "softmax", "layernorm"} {
		s, _, err := sketch.Default(schedule.NewState(tetest.DAGs()[name]), tg.Sketch)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, measure.Input{State: s})
	}
	res, err := tg.Measurer(true).Measure(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Kind != measure.None {
			t.Errorf("%d: %v: %s", i, r.Kind, r.Msg)
		}
	}
}

// TestCUDARandomSchedules is the GPU sweep run as real CUDA: random legal
// GPU schedules of every op of the library (schedtest's, which reach
// corners the rules do not, and samples of the GPU sketch rules, what
// tuning measures), built by NVRTC, run on the GPU and checked against the
// reference evaluator. It needs an NVIDIA GPU, so CI (none) skips it; the
// number per op and source is TESSERA_CUDA_SWEEP (default 3).
func TestCUDARandomSchedules(t *testing.T) {
	ctx := context.Background()
	tg, err := backend.CUDA(ctx, backend.GPUConfig{Host: &measure.Builder{CacheDir: t.TempDir()},
		Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1, Timeout: time.Minute}})
	if errors.Is(err, measure.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	perOp := 3
	if v := os.Getenv("TESSERA_CUDA_SWEEP"); v != "" {
		if perOp, err = strconv.Atoi(v); err != nil || perOp <= 0 {
			t.Fatalf("TESSERA_CUDA_SWEEP=%q: want a positive count", v)
		}
	}
	inputs, labels := sweepInputs(t, tg, perOp)
	// In batches, each logged, so that a run cut short still says how
	// far it got.
	start := time.Now()
	m := tg.Measurer(true)
	wrong := 0
	for lo := 0; lo < len(inputs); lo += 64 {
		hi := min(lo+64, len(inputs))
		res, err := m.Measure(ctx, inputs[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Kind != measure.None {
				wrong++
				t.Errorf("%s: %v: %s\nsteps: %v", labels[lo+i], r.Kind, r.Msg, inputs[lo+i].State.Steps)
			}
		}
		t.Logf("cuda: %d of %d GPU schedules run, %d wrong, %v (%+v)", hi, len(inputs), wrong, time.Since(start).Round(time.Second), m.Times())
	}
	t.Logf("cuda: %d GPU schedules (%d ops) built by NVRTC and run on %q in %v, %d wrong",
		len(inputs), len(tetest.DAGs()), tg.Key(), time.Since(start).Round(time.Second), wrong)
}

// sweepInputs returns perOp random schedules of every example DAG from
// each source (schedtest's GPU generator and the GPU sketch rules), each
// one lowerable for tg's device, and a label of each.
func sweepInputs(t *testing.T, tg *backend.Target, perOp int) ([]measure.Input, []string) {
	t.Helper()
	dags := tetest.DAGs()
	names := slices.Sorted(maps.Keys(dags))
	var inputs []measure.Input
	var labels []string
	for k, name := range names {
		s0 := schedule.NewState(dags[name])
		rng := rand.New(rand.NewPCG(23, uint64(k)))
		for i, tries := 0, 0; i < perOp && tries < 50*perOp; tries++ {
			s, _ := schedtest.RandomGPULowerable(rng, s0, 10)
			if _, err := tg.Lower(s, "k"); err != nil {
				continue // over this device's limits
			}
			inputs = append(inputs, measure.Input{State: s})
			labels = append(labels, fmt.Sprintf("%s (random %d)", name, tries))
			i++
		}
		sk, err := sketch.Generate(s0, tg.Sketch)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, tries := 0, 0; i < perOp && tries < 50*perOp; tries++ {
			s, err := sketch.Sample(rng, sk[rng.IntN(len(sk))], tg.Sketch)
			if err != nil {
				continue
			}
			if _, err := tg.Lower(s, "k"); err != nil {
				continue
			}
			inputs = append(inputs, measure.Input{State: s})
			labels = append(labels, fmt.Sprintf("%s (sample %d)", name, tries))
			i++
		}
	}
	return inputs, labels
}

// TestGPUGatherThroughVectorLoad: a vectorized store whose value gathers
// through a loaded value (scatter_elements: U[int(last[i])][i]) made the
// GPU printer read the gathered operand as one float4, its index taken
// from a lane of another vector load (found by the sweep on an H200 as
// "variable vec1 is not in scope"). It is built for PoCL and checked.
func TestGPUGatherThroughVectorLoad(t *testing.T) {
	tg := openCL(t)
	d := tetest.DAGs()["scatter_elements"]
	s := schedule.NewState(d)
	last := len(s.Stages) - 1
	for _, st := range []schedule.Step{
		&schedule.Annotate{Stage: last, Iter: 0, Ann: schedule.VThread},
		&schedule.Annotate{Stage: last, Iter: 1, Ann: schedule.Vectorize},
	} {
		var err error
		if s, err = s.Apply(st); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tg.Measurer(true).Measure(context.Background(), []measure.Input{{State: s}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Kind != measure.None {
		t.Fatalf("%v: %s", res[0].Kind, res[0].Msg)
	}
}
