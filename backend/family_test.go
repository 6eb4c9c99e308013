package backend_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/internal/testscale"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// familyDAGs are computations over a dimension n that varies at run time:
// a row count, a reduction's extent, and both at once (attention's keys).
var familyDAGs = []struct {
	name string
	dag  func(n int) (*te.Tensor, error)
}{
	{"matmul", func(n int) (*te.Tensor, error) {
		return te.MatMul("mm", te.Placeholder("A", n, 13), te.Constant("B", 13, 19))
	}},
	{"softmax", func(n int) (*te.Tensor, error) { return te.Softmax("sm", te.Placeholder("X", 3, n), -1) }},
	{"layernorm", func(n int) (*te.Tensor, error) {
		return te.LayerNormalization("ln", te.Placeholder("X", n, 33), te.Constant("scale", 33), te.Constant("bias", 33), -1, 1e-5)
	}},
	{"attention", func(n int) (*te.Tensor, error) {
		s, err := te.MatMul("qk", te.Placeholder("Q", 2, n, 8), te.Placeholder("K", 2, 8, n))
		if err != nil {
			return nil, err
		}
		p, err := te.Softmax("p", s, -1)
		if err != nil {
			return nil, err
		}
		return te.MatMul("pv", p, te.Placeholder("V", 2, n, 8))
	}},
	{"scores_kt", func(n int) (*te.Tensor, error) { // Kᵀ in the group, as exported: its copy transposes (n queries)
		kt, err := te.Transpose("kt", te.Placeholder("K", 16, 20, 16), []int{0, 2, 1})
		if err != nil {
			return nil, err
		}
		return te.MatMul("qk", te.Placeholder("Q", 16, n, 16), kt)
	}},
}

// TestFamilySchedules is the random-schedule sweep over a dynamic
// dimension: random schedules, sampled at one value of n, replayed at every
// value of a range and printed as a family (Target.Family), each class's
// kernel compiled once and run at values drawn per run (1, primes, and
// others) against the reference evaluator.
func TestFamilySchedules(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	hi := 24 + rng.IntN(16)
	checks := []int{1, 2}
	for _, p := range []int{3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37} {
		if p <= hi && rng.IntN(3) == 0 || p == 13 {
			checks = append(checks, p)
		}
	}
	checks = append(checks, 2+rng.IntN(hi-1), hi)
	slices.Sort(checks)
	checks = slices.Compact(checks)
	t.Logf("seed %d: n = 1..%d, checked at %v", seed, hi, checks)

	tg := backend.CPU(backend.CPUConfig{})
	b := &measure.Builder{CacheDir: t.TempDir(), Timeout: 120 * time.Second}
	r := &measure.Runner{Builder: b, Opts: measure.RunOptions{Threads: 2, Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true, Timeout: 30 * time.Second}}
	defer r.Close()
	perDAG := testscale.N(t, 4)

	type check struct {
		what  string
		dag   *te.DAG
		f     *tir.PrimFunc
		v     int
		src   int // index in srcs
		entry string
		ws    int
	}
	var checksToRun []check
	var srcs []measure.Source
	schedules, classes, values := 0, 0, 0
	for _, g := range familyDAGs {
		dags := map[int]*te.DAG{}
		for n := 1; n <= hi; n++ {
			out, err := g.dag(n)
			if err != nil {
				t.Fatalf("%s at n=%d: %v", g.name, n, err)
			}
			if dags[n], err = te.NewDAG(out); err != nil {
				t.Fatalf("%s at n=%d: %v", g.name, n, err)
			}
		}
		n0 := 2 + rng.IntN(hi-1)
		sk, err := sketch.Generate(schedule.NewState(dags[n0]), tg.Sketch)
		if err != nil {
			t.Fatal(err)
		}
		for k := range perDAG {
			var steps []schedule.Step
			if k == 0 {
				s, _, err := sketch.Default(schedule.NewState(dags[n0]), tg.Sketch)
				if err != nil {
					t.Fatal(err)
				}
				steps = s.Steps
			} else {
				s, err := sketch.Sample(rng, sk[rng.IntN(len(sk))], tg.Sketch)
				if err != nil {
					t.Fatal(err)
				}
				steps = s.Steps
			}
			states := map[int]*schedule.State{}
			for n, d := range dags {
				if s, err := schedule.Replay(schedule.NewState(d), steps); err == nil {
					states[n] = s
				}
			}
			if states[n0] == nil {
				t.Fatalf("%s: a schedule sampled at n=%d does not replay there", g.name, n0)
			}
			fam, _, err := tg.Family(states, "k")
			if err != nil {
				t.Fatalf("%s schedule %d (sampled at n=%d): %v\nsteps: %v", g.name, k, n0, err, steps)
			}
			schedules++
			classes += len(fam.Classes)
			values += len(states)
			what := fmt.Sprintf("%s schedule %d (sampled at n=%d, %d classes over %d values)", g.name, k, n0, len(fam.Classes), len(states))
			// One source per class that holds a checked value: the class's
			// kernel and an entry per value that calls it there.
			wrappers := map[int]*strings.Builder{}
			for _, v := range checks {
				c, ok := fam.Class(v)
				if !ok {
					continue // the schedule does not replay at v
				}
				w := wrappers[c]
				if w == nil {
					w = &strings.Builder{}
					w.WriteString(fam.Classes[c].Code)
					wrappers[c] = w
				}
				fmt.Fprintf(w, "\nTSR_KERNEL int k_at%d(float *const *args) { return k(args, %d); }\n", v, v)
			}
			at := map[int]int{}
			for _, c := range slices.Sorted(maps.Keys(wrappers)) {
				at[c] = len(srcs)
				srcs = append(srcs, measure.Source{Code: wrappers[c].String()})
			}
			for _, v := range checks {
				c, ok := fam.Class(v)
				if !ok {
					continue
				}
				f, err := tg.Lower(states[v], "k")
				if err != nil {
					t.Fatal(err)
				}
				checksToRun = append(checksToRun, check{what: what, dag: dags[v], f: f, v: v, src: at[c], entry: fmt.Sprintf("k_at%d", v), ws: fam.Classes[c].Workspace})
			}
		}
	}
	built := b.Build(context.Background(), srcs)
	for i, bt := range built {
		if bt.Kind != measure.None {
			t.Fatalf("source %d: %v: %s", i, bt.Kind, bt.Msg)
		}
	}
	jobs := make([]measure.Job, len(checksToRun))
	want := make([][][]float32, len(checksToRun))
	for i, c := range checksToRun {
		inputs := measure.RandomInputs(measure.Args(c.dag), uint64(c.v))[:len(c.dag.Inputs)]
		w, err := c.dag.Eval(inputs)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = w
		jobs[i] = measure.Job{Lib: built[c.src].Path, Entry: c.entry, Workspace: c.ws,
			Args: measure.FuncArgs(c.f, len(c.dag.Outputs)), Inputs: tir.PackArgs(c.f.Params, inputs)}
	}
	wrong := 0
	for i, res := range r.Run(context.Background(), jobs) {
		c := checksToRun[i]
		msg := ""
		if res.Kind != measure.None {
			msg = fmt.Sprintf("%v: %s", res.Kind, res.Msg)
		} else {
			tol := measure.Tolerance(c.dag)
			for o := range want[i] {
				if ok, m := measure.Compare(res.Outputs[o], want[i][o], tol, tol); !ok {
					msg = "wrong result: " + m
					break
				}
			}
		}
		if msg != "" {
			wrong++
			t.Errorf("%s at n=%d: %s", c.what, c.v, msg)
		}
	}
	t.Logf("families: %d schedules over n=1..%d (%d values, %d classes), %d runs at %v, %d wrong", schedules, hi, values, classes, len(jobs), checks, wrong)
}

// TestFamilyPadsBuffers: the buffers a family's kernels allocate
// themselves have the largest shape of the range at every value, so that
// their strides and offsets in the workspace are constants of the
// kernels: a softmax's maxima, exponentials and sums over [3, n], stored
// at the root by its default schedule, sit in the workspace at offsets
// that do not depend on n in kernels that serve several values (before:
// polynomials of n), and the DAG's own buffers keep their shapes. The
// kernels are AVX2's (x86-64-v3, compiled, not run), whatever the host: at
// 16 lanes the default schedule's reductions fuse a loop whose inner
// extent is a function of n (i0_i1 / 4 at n=16, / 8 at n=32), so every
// value of 16..48 is its own class there and no offset is shared.
func TestFamilyPadsBuffers(t *testing.T) {
	m, err := machine.Level("x86-64-v3")
	if err != nil {
		t.Fatal(err)
	}
	tg := backend.CPU(backend.CPUConfig{Machine: m})
	states := map[int]*schedule.State{}
	var dags []*te.DAG
	var steps []schedule.Step
	for n := 16; n <= 48; n++ {
		out, err := familyDAGs[1].dag(n)
		if err != nil {
			t.Fatal(err)
		}
		d, err := te.NewDAG(out)
		if err != nil {
			t.Fatal(err)
		}
		dags = append(dags, d)
		if steps == nil {
			s, _, err := sketch.Default(schedule.NewState(d), tg.Sketch)
			if err != nil {
				t.Fatal(err)
			}
			steps = s.Steps
		}
		if states[n], err = schedule.Replay(schedule.NewState(d), steps); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
	shapes := func() (out []string) {
		for _, d := range dags {
			for _, x := range d.Tensors {
				out = append(out, fmt.Sprint(x.Buf.Shape))
			}
		}
		return out
	}
	before := shapes()
	fam, _, err := tg.Family(states, "k")
	if err != nil {
		t.Fatal(err)
	}
	offsets, shared := 0, 0
	for _, c := range fam.Classes {
		if len(c.Values) > 1 {
			shared++
		}
		for _, line := range strings.Split(c.Code, "\n") {
			if strings.Contains(line, "(tsr_ws + ") {
				offsets++
				if strings.Contains(line, "tsr_dim") {
					t.Errorf("a workspace offset depends on n: %s", strings.TrimSpace(line))
				}
			}
		}
	}
	for _, c := range fam.Classes {
		t.Logf("DBG class %v", c.Values)
	}
	if offsets == 0 || shared == 0 {
		t.Fatalf("%d workspace offsets, %d classes of more than one value: the test no longer tests padding", offsets, shared)
	}
	if after := shapes(); !slices.Equal(before, after) {
		t.Error("the DAGs' buffers changed shape")
	}
}
