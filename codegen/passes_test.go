package codegen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te/tetest"
	"github.com/tessera-ml/tessera/tir"
)

// TestPassOrderChecked: the init check refuses a table that breaks a
// constraint, names a pass twice, or has a constraint on a pass it lacks.
func TestPassOrderChecked(t *testing.T) {
	swapped := slices.Clone(Passes)
	i := slices.IndexFunc(swapped, func(p Pass) bool { return p.Name == "unroll" })
	j := slices.IndexFunc(swapped, func(p Pass) bool { return p.Name == "fold-floats" })
	swapped[i], swapped[j] = swapped[j], swapped[i]
	twice := append(slices.Clone(Passes), Passes[0])
	missing := slices.DeleteFunc(slices.Clone(Passes), func(p Pass) bool { return p.Name == "strip-copies" })
	for _, c := range []struct {
		name string
		ps   []Pass
		want string
	}{
		{"the table", Passes, ""},
		{"fold-floats before unroll", swapped, "must run before fold-floats"},
		{"a pass twice", twice, "twice"},
		{"a constraint on a missing pass", missing, "lacks"},
	} {
		err := checkPassOrder(c.ps)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if got := PassNames(false); got[0] != "partition-loops" || slices.Contains(got, "unroll-vthreads") {
		t.Errorf("the CPU pipeline: %v", got)
	}
	if got := PassNames(true); got[0] != "unroll-vthreads" || slices.Contains(got, "version-guards") {
		t.Errorf("the GPU pipeline: %v", got)
	}
}

// TestStrictPasses is the strict mode of the lowering and code generator
// passes over random schedules of every op of the library: after every
// lowering pass that makes the function (schedule.LowerTrace: nest,
// simplify, check-scopes) and every pass of the code generator's CPU
// pipeline (at 8 and 16 lanes, AVX2's and AVX-512's widths) or GPU
// pipeline (random GPU schedules), the function is interpreted against
// the reference evaluator, and from check-scopes on its scopes are checked
// (tir.CheckScopes), so a pass that breaks a kernel is named.
func TestStrictPasses(t *testing.T) {
	perOp := 6
	if testing.Short() {
		perOp = 2
	}
	dags := tetest.DAGs()
	names := make([]string, 0, len(dags))
	for name := range dags {
		names = append(names, name)
	}
	sort.Strings(names)
	var schedules, checks int
	var wrong, unaffordable []string
	for k, name := range names {
		d := dags[name]
		rng := rand.New(rand.NewPCG(49, uint64(k)))
		s0 := schedule.NewState(d)
		for i := range perOp {
			gpu := i%3 == 2
			seed := uint64(100*k + i)
			var s *schedule.State
			if gpu {
				s, _ = schedtest.RandomGPULowerable(rng, s0, 10)
			} else {
				s, _ = schedtest.RandomLowerable(rng, s0, 10)
			}
			schedules++
			lanes := []int{8, 16}[i%2]
			check := func(pass string, g *tir.PrimFunc) error {
				checks++
				if pass != "nest" && pass != "simplify" { // check-scopes and the codegen passes
					if err := tir.CheckScopes(g); err != nil {
						return fmt.Errorf("after %s: %w", pass, err)
					}
				}
				run := schedtest.Check
				if gpu {
					run = schedtest.CheckGPU
				}
				if err := run(d, g, seed); err != nil {
					return fmt.Errorf("after %s: %w", pass, err)
				}
				return nil
			}
			var lowerErr error
			f, err := schedule.LowerTrace(s, "kernel", gpu, func(pass string, g *tir.PrimFunc) {
				if lowerErr == nil {
					lowerErr = check("lower/"+pass, g)
				}
			})
			if err == nil {
				err = lowerErr
			}
			if err == nil {
				err = Trace(f, gpu, lanes, check)
			}
			switch {
			case err != nil && errors.Is(err, tir.ErrBudget) && strings.HasPrefix(err.Error(), "after lower/nest:"):
				// The schedule itself costs more loop iterations than
				// the interpreter affords (a stage recomputed inside
				// an inner loop): no pass can be checked on it.
				unaffordable = append(unaffordable, fmt.Sprintf("%s schedule %d (gpu %v)", name, i, gpu))
			case err != nil:
				wrong = append(wrong, fmt.Sprintf("%s schedule %d (gpu %v, %d lanes): %v", name, i, gpu, lanes, err))
			}
		}
	}
	line := fmt.Sprintf("codegen strict: %d schedules, every pass checked (%d checks), %d wrong, %d beyond the interpreter's budget %v", schedules, checks, len(wrong), len(unaffordable), unaffordable)
	t.Log(line)
	if len(unaffordable)*50 > schedules {
		t.Errorf("%d of %d schedules beyond the interpreter's budget: more than 2%% checks nothing", len(unaffordable), schedules)
	}
	for _, w := range wrong {
		t.Error(w)
	}
}
