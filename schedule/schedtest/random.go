// Package schedtest generates random valid schedules for tests: any state a
// sequence of legal steps can reach must lower to a program that computes
// what the reference evaluator computes. The sketch rules come later and
// explore a narrower space; this generator deliberately reaches corners they
// never do (odd splits, reorders across reductions, attachments anywhere).
// The GPU variants add what only a GPU schedule has (block, thread and
// virtual thread bindings, shared-memory caches) and check the lowered
// function with the thread-emulating interpreter (tir.RunGPU).
package schedtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// RandomState applies up to n random steps to s, keeping only those that
// apply, and returns the result. The state is complete (every split length
// filled) but may not lower: callers that need a lowerable state use
// RandomLowerable.
func RandomState(rng *rand.Rand, s *schedule.State, n int) *schedule.State {
	return randomState(rng, s, n, false)
}

// RandomGPUState is RandomState with GPU steps among the proposals.
func RandomGPUState(rng *rand.Rand, s *schedule.State, n int) *schedule.State {
	return randomState(rng, s, n, true)
}

func randomState(rng *rand.Rand, s *schedule.State, n int, gpu bool) *schedule.State {
	for tries := 0; tries < 4*n && len(s.Steps) < n; tries++ {
		var st schedule.Step
		if gpu && rng.IntN(3) == 0 {
			st = randomGPUStep(rng, s)
		} else {
			st = randomStep(rng, s)
		}
		if st == nil {
			continue
		}
		if next, err := s.Apply(st); err == nil {
			s = next
		}
	}
	return s
}

// RandomLowerable returns a random state of up to n steps that lowers, and
// the lowered function; it falls back to fewer steps when it cannot find
// one, down to the initial state.
func RandomLowerable(rng *rand.Rand, s0 *schedule.State, n int) (*schedule.State, *tir.PrimFunc) {
	return randomLowerable(rng, s0, n, RandomState, schedule.Lower)
}

// RandomGPULowerable is RandomLowerable for the GPU: random states with
// GPU steps, lowered by schedule.LowerGPU.
func RandomGPULowerable(rng *rand.Rand, s0 *schedule.State, n int) (*schedule.State, *tir.PrimFunc) {
	return randomLowerable(rng, s0, n, RandomGPUState, schedule.LowerGPU)
}

func randomLowerable(rng *rand.Rand, s0 *schedule.State, n int,
	random func(*rand.Rand, *schedule.State, int) *schedule.State,
	lower func(*schedule.State, string) (*tir.PrimFunc, error)) (*schedule.State, *tir.PrimFunc) {
	for size := n; size >= 0; size-- {
		for try := 0; try < 8; try++ {
			s := random(rng, s0, size)
			if f, err := lower(s, "kernel"); err == nil {
				return s, f
			}
		}
	}
	f, err := lower(s0, "kernel")
	if err != nil {
		panic("schedtest: initial state does not lower: " + err.Error())
	}
	return s0, f
}

// liveStages lists the stages with loops of their own.
func liveStages(s *schedule.State) []int {
	var live []int
	for i, st := range s.Stages {
		if !st.IsPlaceholder() && st.Attach != schedule.Inlined {
			live = append(live, i)
		}
	}
	return live
}

// randomGPUStep proposes a step only GPU schedules take: a block, thread
// or virtual thread binding, or a shared-memory cache of a producer
// computed inside the reader.
func randomGPUStep(rng *rand.Rand, s *schedule.State) schedule.Step {
	live := liveStages(s)
	if len(live) == 0 {
		return nil
	}
	i := live[rng.IntN(len(live))]
	st := s.Stages[i]
	it := rng.IntN(len(st.Iters))
	switch rng.IntN(5) {
	case 2:
		// Split by the product of one level of earlier splits (a
		// cooperative fetch following its reader's threads).
		var splits []int
		minLen := 0
		for k, step := range s.Steps {
			if sp, ok := step.(*schedule.Split); ok && (len(splits) < 2 || rng.IntN(2) == 0) {
				if len(splits) == 2 {
					splits = splits[1:]
				}
				splits = append(splits, k)
				minLen = len(sp.Lengths)
			}
		}
		if len(splits) == 0 {
			return nil
		}
		for _, k := range splits {
			minLen = min(minLen, len(s.Steps[k].(*schedule.Split).Lengths))
		}
		return &schedule.FollowFusedSplit{Stage: i, Iter: it, SrcSteps: splits, Level: rng.IntN(minLen)}
	case 0:
		prods := s.Producers(i)
		if len(prods) == 0 {
			return nil
		}
		return &schedule.CacheRead{Stage: prods[rng.IntN(len(prods))], Scope: tir.Shared, Readers: []int{i}}
	case 1:
		// Fuse the iterators of a stage and bind the result to threads:
		// the shape of a cooperative fetch, or of a kernel's outer loop.
		if len(st.Iters) < 2 {
			return nil
		}
		return &schedule.Fuse{Stage: i, Iters: []int{0, 1}}
	}
	anns := []schedule.Annotation{schedule.BlockX, schedule.BlockY, schedule.ThreadX, schedule.ThreadY, schedule.VThread}
	return &schedule.Annotate{Stage: i, Iter: it, Ann: anns[rng.IntN(len(anns))]}
}

// randomStep proposes one step; it may not apply.
func randomStep(rng *rand.Rand, s *schedule.State) schedule.Step {
	if rng.IntN(16) == 0 {
		var consts []int
		for i, st := range s.Stages {
			if st.IsPlaceholder() && st.Tensor.Const {
				consts = append(consts, i)
			}
		}
		if len(consts) > 0 {
			return &schedule.RewriteLayout{Stage: consts[rng.IntN(len(consts))]}
		}
	}
	live := liveStages(s)
	if len(live) == 0 {
		return nil
	}
	i := live[rng.IntN(len(live))]
	st := s.Stages[i]
	nIt := len(st.Iters)
	it := rng.IntN(nIt)
	switch rng.IntN(14) {
	case 0, 1, 2:
		n := 1 + rng.IntN(2)
		lengths := make([]int, n)
		for k := range lengths {
			lengths[k] = pickLength(rng, st.Iters[it].Extent)
		}
		return &schedule.Split{Stage: i, Iter: it, Lengths: lengths}
	case 3:
		if it+1 >= nIt {
			return nil
		}
		return &schedule.Fuse{Stage: i, Iters: []int{it, it + 1}}
	case 4:
		return &schedule.Reorder{Stage: i, Order: rng.Perm(nIt)}
	case 5, 6:
		var targets []int
		for _, j := range live {
			if j > i {
				targets = append(targets, j)
			}
		}
		if len(targets) == 0 {
			return nil
		}
		j := targets[rng.IntN(len(targets))]
		return &schedule.ComputeAt{Stage: i, TargetStage: j, TargetIter: rng.IntN(len(s.Stages[j].Iters))}
	case 7:
		return &schedule.ComputeInline{Stage: i}
	case 8:
		return &schedule.ComputeRoot{Stage: i}
	case 9:
		return &schedule.CacheWrite{Stage: i, Scope: tir.Local}
	case 10:
		// Cache a producer (often an input) for this stage.
		prods := s.Producers(i)
		if len(prods) == 0 {
			return nil
		}
		return &schedule.CacheRead{Stage: prods[rng.IntN(len(prods))], Scope: tir.Local, Readers: []int{i}}
	case 11:
		return &schedule.Rfactor{Stage: i, Iter: it}
	case 12:
		anns := []schedule.Annotation{schedule.Parallel, schedule.Vectorize, schedule.Unroll, schedule.NoAnn}
		return &schedule.Annotate{Stage: i, Iter: it, Ann: anns[rng.IntN(len(anns))]}
	default:
		steps := []int{0, 16, 64, 512}
		return &schedule.Pragma{Stage: i, Iter: rng.IntN(nIt), Key: schedule.PragmaAutoUnroll, Value: steps[rng.IntN(len(steps))]}
	}
}

// pickLength returns a split length: usually a divisor of ext, sometimes
// a length that does not divide it (which needs guards).
func pickLength(rng *rand.Rand, ext int) int {
	if ext <= 1 || rng.IntN(4) == 0 {
		return 1 + rng.IntN(8)
	}
	var divs []int
	for d := 1; d <= ext; d++ {
		if ext%d == 0 {
			divs = append(divs, d)
		}
	}
	return divs[rng.IntN(len(divs))]
}

// Inputs returns fixed random inputs for d (te.RandomSlots: floats in
// [-1, 1), integers over their type's range).
func Inputs(d *te.DAG, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, len(d.Inputs))
	for i, t := range d.Inputs {
		out[i] = make([]float32, t.Size())
		te.RandomSlots(t.DType(), out[i], rng.Float64)
	}
	return out
}

// Check interprets f (lowered from a schedule of d) on random inputs and
// compares every output with the reference evaluator.
func Check(d *te.DAG, f *tir.PrimFunc, seed uint64) error {
	return check(d, f, seed, tir.Run)
}

// CheckGPU is Check for a function lowered for a GPU: it runs through the
// thread-emulating interpreter, so a race comes back as a *tir.RaceError.
func CheckGPU(d *te.DAG, f *tir.PrimFunc, seed uint64) error {
	return check(d, f, seed, tir.RunGPU)
}

func check(d *te.DAG, f *tir.PrimFunc, seed uint64, run func(*tir.PrimFunc, [][]float32) error) error {
	in := Inputs(d, seed)
	want, err := d.Eval(in)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	args := tir.PackArgs(f.Params, in)
	for _, o := range d.Outputs {
		args = append(args, make([]float32, o.Size()))
	}
	if err := run(f, args); err != nil {
		return err
	}
	tol := d.Tolerance()
	for k, w := range want {
		o := d.Outputs[k]
		if i, msg := te.Mismatch(o.DType(), args[len(in)+k], w, tol, d.IntTolerance(o)); i >= 0 {
			return fmt.Errorf("output %s element %d: %s", o.Name, i, msg)
		}
	}
	return nil
}
