package backend_test

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te/tetest"
)

// TestCPU checks the cpu target's pieces fit: its key names the threads
// and the compiler, its sketches lower with its lowering, and its Measurer
// builds, runs and verifies the default schedule.
func TestCPU(t *testing.T) {
	b := &measure.Builder{CacheDir: t.TempDir()}
	tg := backend.CPU(backend.CPUConfig{Threads: 1, Builder: b, Run: measure.RunOptions{Repeat: 1, MinRepeatMs: 1}})
	defer tg.Close()
	if k := tg.Key(); !strings.HasPrefix(k, "cpu threads=1 | ") || backend.NameOf(k) != "cpu" {
		t.Errorf("key %q", k)
	}
	if _, err := backend.LowerOf(tg.Key()); err != nil {
		t.Error(err)
	}
	if _, err := backend.LowerOf("tpu v9"); err == nil {
		t.Error("LowerOf an unknown target: no error")
	}
	d := tetest.DAGs()["matmul_bias_relu"]
	s0 := schedule.NewState(d)
	// Records read back by their key get the features the search gave
	// their states: the same lowering and the same machine.
	features, err := backend.FeaturesOf(tg.Key())
	if err != nil {
		t.Fatal(err)
	}
	got, err := features(s0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tg.Features(s0)
	if err != nil || len(want) == 0 {
		t.Fatalf("features: %v, %d rows", err, len(want))
	}
	vb := slices.Index(costmodel.FeatureNames, "vector_bytes")
	if !slices.EqualFunc(got, want, slices.Equal) || want[0][vb] != float32(math.Log2(1+float64(tg.Machine.VectorBytes))) {
		t.Errorf("features of the key %v, of the target %v (vector_bytes of %+v)", got[0], want[0], tg.Machine)
	}
	sk, err := tg.Sketch.Lower(s0, "k")
	if err != nil || sk == nil {
		t.Fatal(err)
	}
	p, err := tg.Generate(s0)
	if err != nil || p.Entry != measure.KernelName || !strings.Contains(p.Code, measure.KernelName) {
		t.Fatalf("generate: %v, entry %q", err, p.Entry)
	}
	res, err := tg.Measurer(true).Measure(context.Background(), []measure.Input{{State: s0}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Kind != measure.None {
		t.Errorf("naive schedule: %v: %s", res[0].Kind, res[0].Msg)
	}
}

// TestNew: a target by name, and the errors of the flags that name one.
func TestNew(t *testing.T) {
	t.Setenv("TESSERA_CPU", "")
	host := &measure.Builder{}
	tg, err := backend.New(backend.Config{Name: "cpu", CPU: "native", Threads: 1, Host: host})
	if err != nil || tg.Name != "cpu" || tg.Runner.Opts.Threads != 1 {
		t.Fatalf("cpu: %v, %v", tg, err)
	}
	defer tg.Close()
	for _, c := range []struct {
		cfg  backend.Config
		want string
	}{
		{backend.Config{Name: "tpu", Host: host}, `--target "tpu": unknown target (known: cpu, opencl, cuda)`},
		{backend.Config{Name: "opencl", CPU: "x86-64-v2", Host: host}, "--cpu x86-64-v2: only the cpu target takes --cpu, not opencl"},
		{backend.Config{Name: "cpu", CPU: "no-such-cpu", Host: host}, "--cpu: "},
	} {
		if _, err := backend.New(c.cfg); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
	if g, err := tg.Generator(codegen.COptions{}); err != nil || g == nil {
		t.Errorf("Generator of the zero options: %v", err)
	}
}

// TestNewCrossCompiler: --cpu armv8-a on x86-64, with no compiler chosen,
// builds with Debian's aarch64 cross compiler, and $CC keeps its say.
func TestNewCrossCompiler(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("checks the aarch64 cross compiler of an x86-64 host")
	}
	crosstest.RequireAarch64(t)
	t.Setenv("CC", "")
	host := &measure.Builder{}
	tg, err := backend.New(backend.Config{Name: "cpu", CPU: "armv8-a", Host: host})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if host.CC != "aarch64-linux-gnu-gcc" {
		t.Errorf("the compiler of an armv8-a build: %q, want aarch64-linux-gnu-gcc", host.CC)
	}
	t.Setenv("CC", "my-cc")
	host = &measure.Builder{}
	if tg, err := backend.New(backend.Config{Name: "cpu", CPU: "armv8-a", Host: host}); err != nil {
		t.Fatal(err)
	} else {
		tg.Close()
	}
	if host.CC != "" {
		t.Errorf("with $CC set the builder's compiler became %q", host.CC)
	}
}
