package measure_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/internal/testscale"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// randomPerOp is how many random schedules of a DAG are compiled and run:
// more for a DAG with a reduction or several computations, whose schedules
// have the most to get wrong (reduce tiles, compute locations, caches,
// rfactor), fewer for one elementwise or injective computation, whose
// schedules are loop splits, fusions and annotations alike for every op.
// Both scale with TESSERA_TEST_SCALE (package testscale).
func randomPerOp(t *testing.T, d *te.DAG) int {
	if rich(d) {
		return testscale.N(t, 24)
	}
	return testscale.N(t, 8)
}

// rich reports whether d has a reduction or more than one computation.
func rich(d *te.DAG) bool {
	computes := 0
	for _, x := range d.Tensors {
		if !x.IsPlaceholder() {
			computes++
			if len(x.ReduceAxis) > 0 {
				return true
			}
		}
	}
	return computes > 1
}

// TestAllOpsCompiled lowers the naive schedule and randomPerOp random legal
// schedules of every op of the library (and the fused examples), compiles
// them with the cpu target's flags, runs each in a child process and
// compares its outputs with the reference evaluator. This is the
// end-to-end check of lowering, code generation, the build and the runner.
func TestAllOpsCompiled(t *testing.T) {
	checkCompiled(t, nativePlatform(), func(i int, d *te.DAG) []*schedule.State {
		rng := rand.New(rand.NewPCG(2026, uint64(i)))
		s0 := schedule.NewState(d)
		states := []*schedule.State{s0}
		for range randomPerOp(t, d) {
			s, _ := schedtest.RandomLowerable(rng, s0, 10)
			states = append(states, s)
		}
		return states
	})
}

// sampledPerOp is how many states the sketch sampler draws for a DAG: as
// randomPerOp, more where the sketches have tiles to fill.
func sampledPerOp(t *testing.T, d *te.DAG) int {
	if rich(d) {
		return testscale.N(t, 12)
	}
	return testscale.N(t, 4)
}

// TestSampledStatesCompiled draws sampledPerOp states from the sketches of
// every example DAG and checks them compiled and run against the reference
// evaluator, like TestAllOpsCompiled, at every portable ISA level this
// machine runs (x86-64-v2, -v3, -v4): each level's sketch options, vector
// width and -march. A level the machine lacks is skipped with a line
// saying so. Where the machine has dot-product instructions no portable
// level has (VNNI, AVX512_BF16), the integer and bf16 DAGs are swept once
// more at -march=native, their default schedules first.
func TestSampledStatesCompiled(t *testing.T) {
	levels, skipped := machine.RunnableLevels(backend.NativeMachine())
	for name, miss := range skipped {
		t.Logf("%s skipped: this machine lacks %s", name, strings.Join(miss, " "))
	}
	for _, m := range levels {
		t.Run(m.Name, func(t *testing.T) {
			checkCompiled(t, platform{m: m}, sampledStates(t, m, sampledPerOp))
		})
	}
	// The portable levels have no dot-product instructions: where this
	// machine has them (VNNI's vpdpbusd, AVX512_BF16's vdpbf16ps), the
	// integer and bf16 DAGs are swept once more for it, -march=native, so
	// the helpers' instruction forms run, not only compile.
	native := backend.NativeMachine()
	var dots []string
	for _, f := range []string{"avxvnni", "avx512vnni", "avx512bf16"} {
		if native.Has(f) {
			dots = append(dots, f)
		}
	}
	if len(dots) == 0 {
		t.Logf("native dot-product sweep skipped: this machine has none of VNNI, AVX-VNNI, AVX512_BF16")
		return
	}
	t.Run("native "+strings.Join(dots, "+"), func(t *testing.T) {
		integer := regexp.MustCompile(`^(q|i8_|u8_|bf16_)`)
		gen := sampledStates(t, native, sampledPerOp)
		checkCompiled(t, platform{m: native}, func(i int, d *te.DAG) []*schedule.State {
			if !integer.MatchString(d.Outputs[0].Name) {
				return nil
			}
			// The default schedule first: its full-width vectors are
			// where the instructions are, which random tiles seldom draw.
			def, _, err := sketch.Default(schedule.NewState(d), sketch.CPUOptions(native))
			if err != nil {
				t.Fatal(err)
			}
			return append([]*schedule.State{def}, gen(i, d)...)
		})
	})
}

// TestSampledStatesAarch64 cross-compiles sampled states of every example
// DAG for aarch64 (armv8-a: NEON, 4 lanes, 32 registers) with Debian's
// gcc-aarch64-linux-gnu and runs them under qemu-aarch64, checked against
// the reference evaluator: correct NEON code (its speed is not claimed).
// Skipped where the cross compiler or qemu is missing, unless
// TESSERA_REQUIRE_CROSS is set (scripts/test.sh sets it: CI installs them).
func TestSampledStatesAarch64(t *testing.T) {
	tools := crosstest.RequireAarch64(t)
	m, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	m.Cores = 2
	p := platform{name: "aarch64 (qemu)", m: m, cc: tools.CC, exec: tools.Exec}
	checkCompiled(t, p, sampledStates(t, m, func(t *testing.T, d *te.DAG) int { return testscale.N(t, 2) }))
}

// sampledStates draws n(d) states from the sketches of each DAG with the
// CPU options of machine m.
func sampledStates(t *testing.T, m machine.Machine, n func(*testing.T, *te.DAG) int) func(i int, d *te.DAG) []*schedule.State {
	return func(i int, d *te.DAG) []*schedule.State {
		opts := sketch.CPUOptions(m)
		sk, err := sketch.Generate(schedule.NewState(d), opts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1104, uint64(i)))
		var states []*schedule.State
		for k := range n(t, d) {
			s, err := sketch.Sample(rng, sk[k%len(sk)], opts)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, s)
		}
		return states
	}
}

// platform is what checkCompiled compiles for and runs on: a machine, its
// C compiler (empty: the host's), and an emulator to run the harness
// under (nil: run it here).
type platform struct {
	name string // in the log; empty: the machine's name
	m    machine.Machine
	cc   string
	exec []string
}

func nativePlatform() platform { return platform{m: backend.MustDefaultMachine()} }

// moduleBudget bounds the C source of one DAG's module, in bytes (scaled
// by TESSERA_TEST_SCALE): gcc's time grows with the source, and one
// sketch-sampled Winograd F(4×4, 3×3) schedule prints as 300 KB of C
// (twelve of them took gcc minutes). A DAG's schedules are kept in the
// order gen makes them while they fit, and the first minPerModule always,
// unless one alone passes maxKernelSource: a random schedule of
// grid_sample_bicubic_reflection unrolls its 4×4 taps into 5.7 MB of C,
// which gcc 12 compiles in 2.5 minutes on a Zen 3, past the build's
// timeout (left out, and counted so, as the budget's are).
const (
	moduleBudget    = 256 << 10
	minPerModule    = 2
	maxKernelSource = 2 << 20
)

// checkCompiled builds, for every example DAG, one module holding the
// states gen makes (within moduleBudget), runs each kernel in a child
// process and compares its outputs with the reference evaluator.
func checkCompiled(t *testing.T, p platform, gen func(i int, d *te.DAG) []*schedule.State) {
	dags := tetest.DAGs()
	names := make([]string, 0, len(dags))
	// TESSERA_SWEEP_ONLY (a regular expression) narrows the sweep to the
	// DAGs it matches, with the states the whole sweep gives them, for a
	// developer chasing one; the suite sweeps all.
	only, err := regexp.Compile(os.Getenv("TESSERA_SWEEP_ONLY"))
	if err != nil {
		t.Fatalf("TESSERA_SWEEP_ONLY: %v", err)
	}
	for n := range dags {
		names = append(names, n)
	}
	sort.Strings(names)

	b := &measure.Builder{CC: p.cc, March: p.m.March, CacheDir: t.TempDir(), Timeout: 120 * time.Second}
	runTimeout := 20 * time.Second
	if p.exec != nil {
		runTimeout = 120 * time.Second // emulated
	}
	r := &measure.Runner{Builder: b, Exec: p.exec, Opts: measure.RunOptions{Threads: 2, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: runTimeout}}
	defer r.Close()
	cg := codegen.COptions{VectorBits: p.m.VectorBits()}

	type module struct {
		name      string
		dag       *te.DAG
		states    []*schedule.State
		funcs     []*tir.PrimFunc
		workspace []int
	}
	mods := make([]module, len(names))
	srcs := make([]measure.Source, len(names))
	budget := testscale.N(t, moduleBudget)
	left := 0
	for i, name := range names {
		d := dags[name]
		m := module{name: name, dag: d}
		size := 0
		var states []*schedule.State
		if only.MatchString(name) { // i stays the DAG's index in the whole sweep: the same random states
			states = gen(i, d)
		}
		for k, s := range states {
			f := mustLower(t, s, fmt.Sprintf("k%d", k))
			c, err := codegen.C(f, cg)
			if err != nil {
				t.Fatalf("%s kernel k%d: %v", name, k, err)
			}
			if len(m.funcs) >= minPerModule && size+len(c.Code) > budget || k > 0 && len(c.Code) > maxKernelSource {
				left++
				continue
			}
			size += len(c.Code)
			m.states, m.funcs = append(m.states, s), append(m.funcs, f)
		}
		src, err := codegen.CModule(m.funcs, cg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m.workspace = src.Workspace
		mods[i], srcs[i] = m, measure.Source{Code: src.Code}
	}
	start := time.Now()
	built := b.Build(context.Background(), srcs)
	compiled := time.Since(start)
	start = time.Now()

	checked, failures := 0, 0
	for i, m := range mods {
		if built[i].Kind != measure.None {
			t.Errorf("%s: %v: %s", m.name, built[i].Kind, built[i].Msg)
			continue
		}
		args := measure.Args(m.dag)
		inputs := measure.RandomInputs(args, 5)[:len(m.dag.Inputs)]
		want, err := m.dag.Eval(inputs)
		if err != nil {
			t.Fatalf("%s: eval: %v", m.name, err)
		}
		jobs := make([]measure.Job, len(m.states))
		for k, f := range m.funcs {
			// A kernel that repacks a constant takes it packed.
			jobs[k] = measure.Job{Lib: built[i].Path, Entry: f.Name, Workspace: m.workspace[k],
				Args: measure.FuncArgs(f, len(m.dag.Outputs)), Inputs: tir.PackArgs(f.Params, inputs)}
		}
		tol := measure.Tolerance(m.dag)
		for k, res := range r.Run(context.Background(), jobs) {
			checked++
			msg := ""
			if res.Kind != measure.None {
				msg = fmt.Sprintf("%v: %s", res.Kind, res.Msg)
			} else {
				for o := range want {
					if ok, why := measure.CompareOutput(m.dag, m.dag.Outputs[o], res.Outputs[o], want[o], tol, tol); !ok {
						msg = "wrong result: " + why
						break
					}
				}
			}
			if msg != "" {
				failures++
				t.Errorf("%s kernel %s: %s\nsteps: %v\nstate:\n%v", m.name, m.funcs[k].Name, msg, m.states[k].Steps, m.states[k])
			}
		}
	}
	name := p.name
	if name == "" {
		name = p.m.Name
	}
	t.Logf("%s: %d schedules, %d wrong", name, checked, failures)
	t.Logf("%d kernels of %d DAGs compiled and checked, %d failures (%d left out by the budget of %d KB of C per DAG or as one kernel over 2 MB); compiled in %v, run and checked in %v",
		checked, len(mods), failures, left, budget>>10, compiled.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func mustLower(t *testing.T, s *schedule.State, name string) *tir.PrimFunc {
	t.Helper()
	f, err := schedule.Lower(s, name)
	if err != nil {
		t.Fatalf("lower %s: %v\n%v", name, err, s)
	}
	return f
}

// TestMeasurerVerifies runs the Measurer on a good schedule and on a
// deliberately broken build, with verification on.
func TestMeasurerVerifies(t *testing.T) {
	d := tetest.DAGs()["matmul"]
	if d == nil {
		t.Fatal("no matmul example")
	}
	b := &measure.Builder{CacheDir: t.TempDir()}
	m := backend.CPU(backend.CPUConfig{Threads: 1, Builder: b, Run: measure.RunOptions{Repeat: 2, MinRepeatMs: 1}}).Measurer(true)
	defer m.Runner.Close()
	s0 := schedule.NewState(d)
	rng := rand.New(rand.NewPCG(9, 9))
	s1, _ := schedtest.RandomLowerable(rng, s0, 10)
	res, err := m.Measure(context.Background(), []measure.Input{{State: s0}, {State: s1}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Kind != measure.None || len(r.Costs) != 2 || r.Median() <= 0 {
			t.Errorf("input %d: %+v", i, r)
		}
	}
	// An incomplete state (unfilled split) fails to lower: a compile error,
	// and the batch goes on.
	bad, err := s0.Apply(&schedule.Split{Stage: s0.StageOf(d.Outputs[0]), Iter: 0, Lengths: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = m.Measure(context.Background(), []measure.Input{{State: bad}, {State: s0}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Kind != measure.CompileError || !strings.Contains(res[0].Msg, "unfilled") {
		t.Errorf("unfilled state: %+v", res[0])
	}
	if res[1].Kind != measure.None || res[1].BuildTime <= 0 {
		t.Errorf("good state after a bad one: %+v", res[1])
	}
}
