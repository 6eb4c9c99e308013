package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/tessera-ml/tessera/schedule"
)

// Mutation is one kind of random change of a complete state, with its
// weight in the draw. Apply returns ErrNotApplicable when the state offers
// nothing to change; any other error means the changed steps did not
// replay.
type Mutation struct {
	Name   string
	Weight float64
	Apply  func(rng *rand.Rand, s *schedule.State, opts Options) (*schedule.State, error)
}

// ErrNotApplicable is returned by a mutation that finds nothing to change.
var ErrNotApplicable = errors.New("mutation not applicable")

// CPUMutations are Ansor's CPU mutations and weights.
var CPUMutations = []Mutation{
	{"tile_size", 0.90, mutateTileSize},
	{"compute_location", 0.05, mutateComputeLocation},
	{"auto_unroll", 0.04, mutateAutoUnroll},
	{"parallel", 0.01, mutateParallel},
}

// GPUMutations are Ansor's GPU mutations and weights: tile sizes (thread
// and block shapes with them) and auto-unroll.
var GPUMutations = []Mutation{
	{"tile_size", 0.90, mutateTileSize},
	{"auto_unroll", 0.10, mutateAutoUnroll},
}

// Mutate applies one mutation drawn by weight from ms. The state is not
// changed; a new one is returned.
func Mutate(rng *rand.Rand, s *schedule.State, ms []Mutation, opts Options) (*schedule.State, error) {
	total := 0.0
	for _, m := range ms {
		total += m.Weight
	}
	x := rng.Float64() * total
	for _, m := range ms {
		if x < m.Weight {
			return m.Apply(rng, s, opts)
		}
		x -= m.Weight
	}
	return ms[len(ms)-1].Apply(rng, s, opts)
}

// withSteps replays steps on the initial state of s's DAG.
func withSteps(s *schedule.State, steps []schedule.Step) (*schedule.State, error) {
	return schedule.Replay(schedule.NewState(s.DAG), steps)
}

// prefix replays the first k steps of s, to see the state a step saw.
func prefix(s *schedule.State, k int) (*schedule.State, error) {
	return withSteps(s, s.Steps[:k])
}

func replaced(s *schedule.State, k int, st schedule.Step) []schedule.Step {
	steps := append([]schedule.Step(nil), s.Steps...)
	steps[k] = st
	return steps
}

// mutateTileSize moves a prime factor from one part of a split to another
// (the outermost part included), keeping the product.
func mutateTileSize(rng *rand.Rand, s *schedule.State, opts Options) (*schedule.State, error) {
	var cands []int
	for k, st := range s.Steps {
		if _, ok := st.(*schedule.Split); ok {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return nil, ErrNotApplicable
	}
	k := cands[rng.IntN(len(cands))]
	sp := s.Steps[k].(*schedule.Split)
	before, err := prefix(s, k)
	if err != nil {
		return nil, err
	}
	ext := before.Stages[sp.Stage].Iters[sp.Iter].Extent
	prod := 1
	for _, l := range sp.Lengths {
		prod *= l
	}
	if prod == 0 || ext%prod != 0 {
		return nil, ErrNotApplicable
	}
	factors := append([]int{ext / prod}, sp.Lengths...)
	var from []int
	for i, f := range factors {
		if f > 1 {
			from = append(from, i)
		}
	}
	if len(from) == 0 || len(factors) < 2 {
		return nil, ErrNotApplicable
	}
	src := from[rng.IntN(len(from))]
	dst := rng.IntN(len(factors) - 1)
	if dst >= src {
		dst++
	}
	primes := primeFactors(factors[src])
	p := primes[rng.IntN(len(primes))]
	factors[src] /= p
	factors[dst] *= p
	if limit := maxInnerSplit(before, sp.Stage, opts); limit > 0 && factors[len(factors)-1] > limit {
		return nil, ErrNotApplicable
	}
	return withSteps(s, replaced(s, k, &schedule.Split{Stage: sp.Stage, Iter: sp.Iter, Lengths: factors[1:]}))
}

func primeFactors(n int) []int {
	var out []int
	for p := 2; p*p <= n; p++ {
		for n%p == 0 {
			out = append(out, p)
			n /= p
		}
	}
	if n > 1 {
		out = append(out, n)
	}
	return out
}

// mutateAutoUnroll draws another auto_unroll_max_step for one stage.
func mutateAutoUnroll(rng *rand.Rand, s *schedule.State, opts Options) (*schedule.State, error) {
	var cands []int
	for k, st := range s.Steps {
		if p, ok := st.(*schedule.Pragma); ok && p.Key == schedule.PragmaAutoUnroll {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 || len(opts.UnrollSteps) < 2 {
		return nil, ErrNotApplicable
	}
	k := cands[rng.IntN(len(cands))]
	p := *s.Steps[k].(*schedule.Pragma)
	var others []int
	for _, v := range opts.UnrollSteps {
		if v != p.Value {
			others = append(others, v)
		}
	}
	if len(others) == 0 {
		return nil, ErrNotApplicable
	}
	p.Value = others[rng.IntN(len(others))]
	return withSteps(s, replaced(s, k, &p))
}

// mutateComputeLocation moves a stage that annotation placed to another
// loop of the same consumer, or back to the root: annotation puts a stage
// at the root once in as many draws as its consumer has loops, and the
// best of a search's first samples may all have it attached (a
// transposed Kᵀ packed under every row tile of an attention, where one
// copy per head at the root was 10% faster at S=245).
func mutateComputeLocation(rng *rand.Rand, s *schedule.State, opts Options) (*schedule.State, error) {
	tiled := tiledStages(s)
	var cands []int
	for k, st := range s.Steps {
		if ca, ok := st.(*schedule.ComputeAt); ok && !tiled[ca.Stage] {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return nil, ErrNotApplicable
	}
	k := cands[rng.IntN(len(cands))]
	ca := *s.Steps[k].(*schedule.ComputeAt)
	before, err := prefix(s, k)
	if err != nil {
		return nil, err
	}
	var iters []int
	for p, it := range before.Stages[ca.TargetStage].Iters {
		if it.Kind != schedule.Spatial {
			break
		}
		if p != ca.TargetIter {
			iters = append(iters, p)
		}
	}
	// One more choice: the root.
	c := rng.IntN(len(iters) + 1)
	if c == len(iters) {
		return withSteps(s, replaced(s, k, &schedule.ComputeRoot{Stage: ca.Stage}))
	}
	ca.TargetIter = iters[c]
	return withSteps(s, replaced(s, k, &ca))
}

// mutateParallel changes how many outer loops of a stage are fused into
// its parallel loop, shifting the loop positions later steps use.
func mutateParallel(rng *rand.Rand, s *schedule.State, opts Options) (*schedule.State, error) {
	var cands []int // indices of parallel annotations at position 0
	for k, st := range s.Steps {
		if a, ok := st.(*schedule.Annotate); ok && a.Ann == schedule.Parallel && a.Iter == 0 {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return nil, ErrNotApplicable
	}
	k := cands[rng.IntN(len(cands))]
	stage := s.Steps[k].(*schedule.Annotate).Stage
	start, old := k, 1
	if k > 0 {
		if f, ok := s.Steps[k-1].(*schedule.Fuse); ok && f.Stage == stage && len(f.Iters) > 0 && f.Iters[0] == 0 {
			start, old = k-1, len(f.Iters)
		}
	}
	before, err := prefix(s, start)
	if err != nil {
		return nil, err
	}
	avail := 0
	for _, it := range before.Stages[stage].Iters {
		if it.Kind != schedule.Spatial || it.Ann != schedule.NoAnn {
			break
		}
		avail++
	}
	if avail < 2 {
		return nil, ErrNotApplicable
	}
	n := 1 + rng.IntN(avail-1)
	if n >= old {
		n++
	}
	if n > avail {
		return nil, ErrNotApplicable
	}
	steps := append([]schedule.Step(nil), s.Steps[:start]...)
	if n > 1 {
		iters := make([]int, n)
		for i := range iters {
			iters[i] = i
		}
		steps = append(steps, &schedule.Fuse{Stage: stage, Iters: iters})
	}
	steps = append(steps, &schedule.Annotate{Stage: stage, Iter: 0, Ann: schedule.Parallel})
	for _, st := range s.Steps[k+1:] {
		shifted, err := shiftIters(st, stage, old-n)
		if err != nil {
			return nil, err
		}
		steps = append(steps, shifted)
	}
	return withSteps(s, steps)
}

// shiftIters returns st with the positions (>= 1) of stage's loops moved by
// delta, for the steps that name loop positions.
func shiftIters(st schedule.Step, stage, delta int) (out schedule.Step, err error) {
	var bad error
	sh := func(p int) int {
		if p < 1 {
			return p
		}
		if p+delta < 1 {
			// The loop this step names is now inside the parallel fuse.
			bad = fmt.Errorf("%v names a loop the parallel fuse takes: %w", st, ErrNotApplicable)
		}
		return p + delta
	}
	defer func() {
		if bad != nil {
			out, err = nil, bad
		}
	}()
	switch st := st.(type) {
	case *schedule.Annotate:
		if st.Stage == stage {
			return &schedule.Annotate{Stage: stage, Iter: sh(st.Iter), Ann: st.Ann}, nil
		}
	case *schedule.Pragma:
		if st.Stage == stage {
			return &schedule.Pragma{Stage: stage, Iter: sh(st.Iter), Key: st.Key, Value: st.Value}, nil
		}
	case *schedule.Fuse:
		if st.Stage == stage {
			iters := make([]int, len(st.Iters))
			for i, p := range st.Iters {
				iters[i] = sh(p)
			}
			return &schedule.Fuse{Stage: stage, Iters: iters}, nil
		}
	case *schedule.ComputeAt:
		if st.TargetStage == stage {
			return &schedule.ComputeAt{Stage: st.Stage, TargetStage: stage, TargetIter: sh(st.TargetIter)}, nil
		}
		if st.Stage == stage {
			return st, nil
		}
	case *schedule.Split, *schedule.FollowSplit, *schedule.FollowFusedSplit, *schedule.Reorder, *schedule.Rfactor:
		if stageOf(st) == stage {
			return nil, fmt.Errorf("%v after the parallel fuse: %w", st, ErrNotApplicable)
		}
	}
	return st, nil
}

func stageOf(st schedule.Step) int {
	switch st := st.(type) {
	case *schedule.Split:
		return st.Stage
	case *schedule.FollowSplit:
		return st.Stage
	case *schedule.FollowFusedSplit:
		return st.Stage
	case *schedule.Reorder:
		return st.Stage
	case *schedule.Rfactor:
		return st.Stage
	}
	return -1
}

// Crossover makes a child of two states of the same sketch: the same steps
// but for split lengths and unroll steps, each taken from either parent.
// Ansor has no crossover; tile decisions of good parents often combine well.
func Crossover(rng *rand.Rand, a, b *schedule.State) (*schedule.State, error) {
	if len(a.Steps) != len(b.Steps) || a.DAG != b.DAG {
		return nil, ErrNotApplicable
	}
	steps := make([]schedule.Step, len(a.Steps))
	for k := range a.Steps {
		sa, sb := a.Steps[k], b.Steps[k]
		if shape(sa) != shape(sb) {
			return nil, ErrNotApplicable
		}
		steps[k] = sa
		if rng.IntN(2) == 1 {
			steps[k] = sb
		}
	}
	return withSteps(a, steps)
}

// shape prints a step without the decisions crossover may exchange.
func shape(st schedule.Step) string {
	switch st := st.(type) {
	case *schedule.Split:
		return fmt.Sprintf("split %d %d %d", st.Stage, st.Iter, len(st.Lengths))
	case *schedule.Pragma:
		return fmt.Sprintf("pragma %d %d %s", st.Stage, st.Iter, st.Key)
	}
	return st.String()
}
