package measure_test

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

// TestDotProductKernel: the default schedule of a convolution whose channel
// reduction runs in groups of four (qconv_dot4; qconv_dot4s with its pairs
// saturated; qconv_taps4s, an NCHW image's W taps in groups) packs its weights so that code generation emits the
// dot-product helper (tsr_dot4, tsr_dot4s) for it at every x86 level, and the kernel, compiled at each level this machine runs,
// matches the reference evaluator. (The sweeps check sampled schedules of
// the same DAG, with and without the helper.)
func TestDotProductKernel(t *testing.T) {
	levels, _ := machine.RunnableLevels(backend.NativeMachine())
	for _, c := range []struct{ level, dag, helper string }{
		{"x86-64-v2", "qconv_dot4", "tsr_dot4_v"},
		{"x86-64-v3", "qconv_dot4", "tsr_dot4_v"},
		{"x86-64-v4", "qconv_dot4", "tsr_dot4_v"},
		{"x86-64-v2", "qconv_dot4s", "tsr_dot4s_v"},
		{"x86-64-v3", "qconv_dot4s", "tsr_dot4s_v"},
		{"x86-64-v4", "qconv_dot4s", "tsr_dot4s_v"},
		{"x86-64-v3", "qmatmul_dot4s", "tsr_dot4s_v"},
		{"x86-64-v2", "qconv_taps4s", "tsr_dot4s_v"},
		{"x86-64-v3", "qconv_taps4s", "tsr_dot4s_v"},
	} {
		name := c.level
		m, err := machine.Level(name)
		if err != nil {
			t.Fatal(err)
		}
		d := tetest.DAGs()[c.dag]
		st, _, err := sketch.Default(schedule.NewState(d), sketch.CPUOptions(m))
		if err != nil {
			t.Fatal(err)
		}
		src, err := codegen.C(mustLower(t, st, "k"), codegen.COptions{VectorBits: m.VectorBits()})
		if err != nil {
			t.Fatal(err)
		}
		if body := src.Code[strings.Index(src.Code, "static int tsr_impl"):]; !strings.Contains(body, c.helper) {
			t.Errorf("%s: the default %s kernel does not call %s:\n%s", name, c.dag, c.helper, body)
		}
		if !strings.Contains(src.Code, "TSR_DOTS static int tsr_impl") {
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
