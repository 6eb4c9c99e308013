package measure_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// TestDotProductKernel: the default schedule of a convolution whose channel
// reduction runs in groups of four (qconv_dot4; qconv_dot4s with its pairs
// saturated; qconv_taps4s, an NCHW image's W taps in groups; qconv_grouped,
// a grouped convolution) packs its weights so that code generation emits the
// dot-product helper (tsr_dot4a, which adds a group to its accumulator;
// tsr_dot4s) for it at every x86 level, and the kernel, compiled at each
// level this machine runs,
// matches the reference evaluator. (The sweeps check sampled schedules of
// the same DAG, with and without the helper.)
func TestDotProductKernel(t *testing.T) {
	levels, _ := machine.RunnableLevels(backend.NativeMachine())
	for _, c := range []struct{ level, dag, helper string }{
		{"x86-64-v2", "qconv_dot4", "tsr_dot4a_v"},
		{"x86-64-v3", "qconv_dot4", "tsr_dot4a_v"},
		{"x86-64-v4", "qconv_dot4", "tsr_dot4a_v"},
		{"x86-64-v2", "qconv_dot4s", "tsr_dot4s_v"},
		{"x86-64-v3", "qconv_dot4s", "tsr_dot4s_v"},
		{"x86-64-v4", "qconv_dot4s", "tsr_dot4s_v"},
		{"x86-64-v3", "qmatmul_dot4s", "tsr_dot4s_v"},
		{"x86-64-v2", "qconv_taps4s", "tsr_dot4s_v"},
		{"x86-64-v3", "qconv_taps4s", "tsr_dot4s_v"},
		{"x86-64-v2", "qconv_grouped", "tsr_dot4s_v"},
		{"x86-64-v3", "qconv_grouped", "tsr_dot4s_v"},
		{"x86-64-v4", "qconv_grouped", "tsr_dot4s_v"},
	} {
		name := c.level
		m, err := machine.Level(name)
		if err != nil {
			t.Fatal(err)
		}
		d := tetest.DAGs()[c.dag]
		st, _, body := defaultKernel(t, d, m, "k")
		if !strings.Contains(body, c.helper) {
			t.Errorf("%s: the default %s kernel does not call %s:\n%s", name, c.dag, c.helper, body)
		}
		if !strings.Contains(body, "TSR_DOTS static int tsr_impl") {
			t.Errorf("%s: the default %s kernel is not marked TSR_DOTS (GCC's TER off)", name, c.dag)
		}
		for _, l := range levels {
			if l.Name != name {
				continue
			}
			checkCompiled(t, platform{m: m}, func(i int, dd *te.DAG) []*schedule.State {
				if dd.Outputs[0].Name != c.dag {
					return nil
				}
				return []*schedule.State{st}
			})
		}
	}
}

// TestDotProductKernelAarch64: the default schedules of the dot-product
// DAGs, cross-compiled for aarch64 at three -march levels and run under
// qemu-aarch64 (its cores have every extension), match the reference
// evaluator: armv8-a (NEON: tsr_dot4s by 16-bit products and saturating
// adds, the exact sums lane by lane), armv8.2-a+dotprod (sdot, and for
// uint8 activations sdot on x − 128 with the weights' sums) and
// armv8.6-a+i8mm (usdot). The assembly holds the instructions each level
// promises.
func TestDotProductKernelAarch64(t *testing.T) {
	tools := crosstest.RequireAarch64(t)
	base, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "dots.c")
	states := writeDefaultModule(t, base, []string{"qconv_dot4", "qconv_dot4s", "qmatmul_dot4s", "qconv_taps4s", "qconv_nhwc", "qconv_dot4_i8"}, file)
	for _, c := range []struct {
		march string
		want  []string // instructions the assembly holds
	}{
		{"armv8-a", []string{"sqadd", "uzp1"}},
		{"armv8.2-a+dotprod", []string{"sdot"}},
		{"armv8.6-a+i8mm", []string{"usdot", "sdot"}}, // sdot: the int8 activations
	} {
		text := assembly(t, tools.CC, c.march, file)
		for _, ins := range c.want {
			if !regexp.MustCompile(`\s` + ins + `\s`).Match(text) {
				t.Errorf("%s: no %s in the assembly", c.march, ins)
			}
		}
		m := base
		m.Name, m.March, m.Cores = c.march, c.march, 2
		checkCompiled(t, platform{name: "aarch64 " + c.march + " (qemu)", m: m, cc: tools.CC, exec: tools.Exec}, func(i int, d *te.DAG) []*schedule.State {
			if st, ok := states[d.Outputs[0].Name]; ok {
				return []*schedule.State{st}
			}
			return nil
		})
	}
}

// TestBF16PairKernel: the default schedules of the bf16 precision's
// products in pairs (bf16_conv_nhwc, bf16_stem, bf16_winograd, bf16_matmul:
// te.ConvNHWCDot, te.ConvToNHWCDotW, te.WinogradConv2DNHWCPairs,
// te.MatMulDot) pack their weights so that code generation emits the
// pair helper (tsr_dot2bf) at every x86 level, and each kernel, compiled
// at the levels this machine runs, matches the reference evaluator. With
// AVX512_BF16 (-march=cooperlake, 8 and 16 lanes) the helper is one
// vdpbf16ps, asserted in the assembly here and run where the CPU has it
// (TestSampledStatesCompiled's native sweep); on aarch64 with BF16
// (armv8.6-a) one bfdot, run under qemu-aarch64 and checked, as is the
// generic form at armv8-a.
func TestBF16PairKernel(t *testing.T) {
	levels, _ := machine.RunnableLevels(backend.NativeMachine())
	dags := []string{"bf16_conv_nhwc", "bf16_stem", "bf16_winograd", "bf16_matmul", "bf16_gemm"}
	var bits256, bits512 []*tir.PrimFunc
	for _, level := range []string{"x86-64-v2", "x86-64-v3", "x86-64-v4"} {
		m, err := machine.Level(level)
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]*schedule.State{}
		for _, name := range dags {
			st, f, body := defaultKernel(t, tetest.DAGs()[name], m, name)
			if !strings.Contains(body, "tsr_dot2bf_v") {
				t.Errorf("%s: the default %s kernel does not call tsr_dot2bf:\n%s", level, name, body)
			}
			states[name] = st
			switch m.VectorBits() {
			case 256:
				bits256 = append(bits256, f)
			case 512:
				bits512 = append(bits512, f)
			}
		}
		for _, l := range levels {
			if l.Name == level {
				checkCompiled(t, platform{m: m}, func(i int, d *te.DAG) []*schedule.State {
					return bf16State(states, d)
				})
			}
		}
	}
	dir := t.TempDir()
	for bits, funcs := range map[int][]*tir.PrimFunc{256: bits256, 512: bits512} {
		src, err := codegen.CModule(funcs, codegen.COptions{VectorBits: bits})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, fmt.Sprintf("bf16_%d.c", bits))
		if err := os.WriteFile(file, []byte(src.Code), 0o644); err != nil {
			t.Fatal(err)
		}
		text := assembly(t, "cc", "cooperlake", file)
		reg := map[int]string{256: "ymm", 512: "zmm"}[bits]
		if !regexp.MustCompile(`\svdpbf16ps\s+%` + reg).Match(text) {
			t.Errorf("%d-bit vectors, -march=cooperlake: no vdpbf16ps on %s in the assembly", bits, reg)
		}
	}
	tools := crosstest.RequireAarch64(t)
	base, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "bf16_neon.c")
	states := writeDefaultModule(t, base, dags, file)
	for _, c := range []struct {
		march string
		bfdot bool
	}{{"armv8-a", false}, {"armv8.6-a", true}} {
		text := assembly(t, tools.CC, c.march, file)
		if got := regexp.MustCompile(`\sbfdot\s`).Match(text); got != c.bfdot {
			t.Errorf("%s: bfdot in the assembly %v, want %v", c.march, got, c.bfdot)
		}
		m := base
		m.Name, m.March, m.Cores = c.march, c.march, 2
		checkCompiled(t, platform{name: "aarch64 " + c.march + " (qemu)", m: m, cc: tools.CC, exec: tools.Exec}, func(i int, d *te.DAG) []*schedule.State {
			return bf16State(states, d)
		})
	}
}

// bf16State returns the state of states whose DAG d is: the one its
// output's name begins with (a convolution's output is its bias stage).
func bf16State(states map[string]*schedule.State, d *te.DAG) []*schedule.State {
	for name, st := range states {
		if strings.HasPrefix(d.Outputs[0].Name, name) {
			return []*schedule.State{st}
		}
	}
	return nil
}

// TestGroupedDotKernel: RegNet-X 1.6GF's last grouped convolution (912
// channels, 24 a group, 14×14 in, stride 2) quantized: its default
// schedule's tiles of 16 output channels straddle groups, so its
// activations' index names the lane, though over a vector of 8 it does not
// depend on it; the kernel calls the dot-product helper at x86-64-v3. It
// summed product by product in int32 vectors, 8× slower (a quantized
// RegNet-X ran at 0.3× onnxruntime's int8). With AVX-512's 16 lanes a
// vector spanned two groups and read its activations lane by lane (0.66
// ms on a Zen 5, 0.065 with vectors of 8 within a group): the default
// vector tile divides the group (sketch's laneGroup), for the saturated
// pairs and for the exact groups of VNNI. The sweeps check the same
// grouped form (qconv_grouped, smaller) against the reference.
func TestGroupedDotKernel(t *testing.T) {
	for _, c := range []struct {
		level  string
		sat    bool
		helper string
	}{
		{"x86-64-v3", true, "tsr_dot4s_v8u8("},
		{"x86-64-v4", true, "tsr_dot4s_v8u8("},
		{"x86-64-v4", false, "tsr_dot4a_v8u8("},
	} {
		m, err := machine.Level(c.level)
		if err != nil {
			t.Fatal(err)
		}
		x := te.TypedPlaceholder("X", tir.Uint8, 1, 14, 14, 912)
		w := te.TypedPlaceholder("W", tir.Int8, 912, 24, 3, 3)
		w.Const = true
		acc, err := te.IntConv("acc", x, w, 3, te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}, Group: 38},
			te.IntConvOptions{NHWC: true, Dot: 4, SaturatePairs: c.sat})
		if err != nil {
			t.Fatal(err)
		}
		mult := te.Constant("mult", 912)
		out, err := te.Requantize("q", acc, nil, mult, 3, 0, tir.Uint8)
		if err != nil {
			t.Fatal(err)
		}
		d, err := te.NewDAG(out)
		if err != nil {
			t.Fatal(err)
		}
		_, _, body := defaultKernel(t, d, m, "k")
		if !strings.Contains(body, c.helper) {
			t.Errorf("%s: the default kernel does not call %s:\n%s", c.level, c.helper, body[:min(len(body), 4000)])
		}
		if lanes := regexp.MustCompile(`\(tsr_v\d+i\)\{\(int32_t\)`).FindString(body); lanes != "" {
			t.Errorf("%s: the default kernel builds a vector lane by lane (%s…): a vector spans groups", c.level, lanes)
		}
	}
}

// defaultKernel returns DAG d's default schedule for machine m, its
// lowering (named name) and the C of the kernel (from its implementation's
// line on, without the helpers before it).
func defaultKernel(t *testing.T, d *te.DAG, m machine.Machine, name string) (*schedule.State, *tir.PrimFunc, string) {
	t.Helper()
	st, _, err := sketch.Default(schedule.NewState(d), sketch.CPUOptions(m))
	if err != nil {
		t.Fatal(err)
	}
	f := mustLower(t, st, name)
	src, err := codegen.C(f, codegen.COptions{VectorBits: m.VectorBits()})
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(src.Code, "static int tsr_impl")
	return st, f, src.Code[strings.LastIndex(src.Code[:start], "\n")+1:] // with the line's attributes
}

// writeDefaultModule writes the C module of the default schedules of the
// example DAGs named, for machine m, to file, and returns the states by
// name.
func writeDefaultModule(t *testing.T, m machine.Machine, dags []string, file string) map[string]*schedule.State {
	t.Helper()
	states := map[string]*schedule.State{}
	var funcs []*tir.PrimFunc
	for _, name := range dags {
		st, _, err := sketch.Default(schedule.NewState(tetest.DAGs()[name]), sketch.CPUOptions(m))
		if err != nil {
			t.Fatal(err)
		}
		states[name] = st
		funcs = append(funcs, mustLower(t, st, name))
	}
	src, err := codegen.CModule(funcs, codegen.COptions{VectorBits: m.VectorBits()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(src.Code), 0o644); err != nil {
		t.Fatal(err)
	}
	return states
}

// assembly compiles C file with compiler cc for -march=march (-O2,
// OpenMP) and returns the assembly.
func assembly(t *testing.T, cc, march, file string) []byte {
	t.Helper()
	asm := strings.TrimSuffix(file, ".c") + "." + march + ".s"
	if out, err := exec.Command(cc, "-O2", "-march="+march, "-fopenmp", "-S", "-o", asm, file).CombinedOutput(); err != nil {
		t.Fatalf("%s -march=%s: %v\n%s", cc, march, err, out)
	}
	text, err := os.ReadFile(asm)
	if err != nil {
		t.Fatal(err)
	}
	return text
}
