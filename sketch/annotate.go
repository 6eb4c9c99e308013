package sketch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Annotator is one step of random annotation: it fills in a decision of a
// sketch whose tile sizes are filled. tiled holds the stages a sketch rule
// split (annotation does not move them).
type Annotator struct {
	Name  string
	Apply func(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error)
}

// cpuAnnotators is Ansor's CPU order: compute locations of the stages no
// rule placed, parallel outer loops, auto-unroll, vectorized inner loops;
// then the weights that a tiled stage reads are repacked in the order its
// loops read them (Ansor's layout rewrite).
var cpuAnnotators = []Annotator{
	{"change_compute_location", changeComputeLocation},
	{"parallel", annotateParallel},
	{"unroll", annotateUnroll},
	{"vectorize", annotateVectorize},
	{"rewrite_layout", rewriteLayouts},
}

// Sample fills a sketch at random: tile sizes, then the annotators of
// opts in order. The result is complete; it usually lowers, and the caller
// drops the few that do not.
func Sample(rng *rand.Rand, sketch *schedule.State, opts Options) (*schedule.State, error) {
	s, err := fillTileSizes(rng, sketch, opts)
	if err != nil {
		return nil, err
	}
	tiled := tiledStages(s)
	for _, a := range opts.Annotators {
		if s, err = a.Apply(rng, s, tiled, opts); err != nil {
			return nil, fmt.Errorf("sketch: annotate %s: %w", a.Name, err)
		}
	}
	return s, nil
}

// fillTileSizes replays the sketch's steps, replacing every unfilled split
// by a random factorization of the extent it splits. On a GPU the splits
// that tile one stage's spatial axes are drawn together, again until the
// thread level makes a block of at least a warp (or of every output, when
// fewer) within the device's threads and virtual threads: the thread
// binding would reject the state otherwise, and with several tiled stages
// (a Winograd convolution has three) a state whose every stage passes
// would be rare. Drawing per stage keeps the distribution of the states
// that pass.
func fillTileSizes(rng *rand.Rand, sketch *schedule.State, opts Options) (*schedule.State, error) {
	s := schedule.NewState(sketch.DAG)
	drawn := map[int][]int{} // step index → lengths drawn with its group
	for k, st := range sketch.Steps {
		if sp, ok := st.(*schedule.Split); ok && unfilled(sp.Lengths) {
			lengths, ok := drawn[k]
			if !ok {
				if group := tileGroup(sketch, k, opts); len(group) > 0 {
					drawGPUTiles(rng, s, sketch, group, opts, drawn)
					lengths = drawn[k]
				} else {
					ext := s.Stages[sp.Stage].Iters[sp.Iter].Extent
					lengths = randomFactors(rng, ext, len(sp.Lengths), maxInnerSplit(s, sp.Stage, opts))
				}
			}
			st = &schedule.Split{Stage: sp.Stage, Iter: sp.Iter, Lengths: lengths}
		}
		var err error
		if s, err = s.Apply(st); err != nil {
			return nil, fmt.Errorf("sketch: fill step %d: %w", k, err)
		}
	}
	return s, nil
}

// tileGroup returns, on a GPU, the indices of the consecutive unfilled
// splits from step k on that tile one stage's spatial axes (as many
// lengths as the structure has S levels after the first); nil otherwise.
func tileGroup(sketch *schedule.State, k int, opts Options) []int {
	nS := strings.Count(opts.TileStructure, "S")
	if opts.GPU.WarpSize <= 0 || nS < 3 {
		return nil
	}
	first := sketch.Steps[k].(*schedule.Split)
	var group []int
	for j := k; j < len(sketch.Steps); j++ {
		sp, ok := sketch.Steps[j].(*schedule.Split)
		if !ok || sp.Stage != first.Stage || len(sp.Lengths) != nS-1 || !unfilled(sp.Lengths) {
			break
		}
		group = append(group, j)
	}
	return group
}

// drawGPUTiles draws the lengths of a group of tile splits (tileGroup) on
// state s (the state before the group) into drawn.
func drawGPUTiles(rng *rand.Rand, s *schedule.State, sketch *schedule.State, group []int, opts Options, drawn map[int][]int) {
	const tries = 100
	lim := opts.GPU
	exts := make([]int, len(group))
	total := 1
	for g, k := range group {
		sp := sketch.Steps[k].(*schedule.Split)
		exts[g] = s.Stages[sp.Stage].Iters[sp.Iter].Extent
		total *= max(exts[g], 1)
	}
	for try := 0; try < tries; try++ {
		threads, vthreads := 1, 1
		for g, k := range group {
			l := randomFactors(rng, exts[g], len(sketch.Steps[k].(*schedule.Split).Lengths), opts.MaxInnermostSplit)
			drawn[k] = l
			vthreads *= l[0]
			threads *= l[1]
		}
		if threads >= min(lim.WarpSize, total) &&
			(lim.MaxThreadsPerBlock <= 0 || threads <= lim.MaxThreadsPerBlock) &&
			(lim.MaxVThread <= 0 || vthreads <= lim.MaxVThread) {
			return
		}
	}
}

// maxInnerSplit bounds the innermost length of a split of stage i (drawn
// or mutated). The tiles of a reduction over a constant matrix
// (simplify_compute_with_const_tensor) sit under its unrolled loops, so a
// tile wider than a vector is unrolled scalar code: a Winograd data pack
// with a 32-wide channel tile printed as 1 MB of C that gcc compiled in 100
// to 130 s (the candidate's build timed out, three times). Its tiles stay
// within one vector register (Lanes; MaxVectorLanes on a GPU): each lane
// of the tile is a whole transform's worth of unrolled code (a 6 × 6 tile
// of inputs live at once), and a second vector doubles the code without
// making a transform faster. On AVX2 and SSE, whose register tiles are
// two vectors wide, this halves what gcc compiles for a Winograd
// candidate; on AVX-512 a register tile is one vector anyway.
func maxInnerSplit(s *schedule.State, i int, opts Options) int {
	if len(constMatrixIndexVars(s.Stages[i].Tensor)) == 0 {
		return opts.MaxInnermostSplit
	}
	if opts.Lanes > 0 {
		return min(opts.MaxInnermostSplit, opts.Lanes)
	}
	if opts.MaxVectorLanes > 0 {
		return min(opts.MaxInnermostSplit, opts.MaxVectorLanes)
	}
	return opts.MaxInnermostSplit
}

func unfilled(lengths []int) bool {
	for _, l := range lengths {
		if l == 0 {
			return true
		}
	}
	return false
}

// randomFactors returns n split lengths whose product divides ext, drawn
// inner first: the innermost is a divisor of ext no larger than maxInner,
// each next one a divisor of what is left.
func randomFactors(rng *rand.Rand, ext, n, maxInner int) []int {
	out := make([]int, n)
	left := max(ext, 1)
	for k := n - 1; k >= 0; k-- {
		limit := left
		if k == n-1 && maxInner > 0 {
			limit = min(limit, maxInner)
		}
		ds := divisors(left, limit)
		d := ds[rng.IntN(len(ds))]
		out[k] = d
		left /= d
	}
	return out
}

// divisors returns the divisors of n that are at most limit.
func divisors(n, limit int) []int {
	var ds []int
	for d := 1; d <= n && d <= limit; d++ {
		if n%d == 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// tiledStages lists the stages a sketch rule split (tiled stages and the
// consumers that follow them), by their index in s; annotation does not
// move them. A step names a stage by its index at the time, and steps that
// insert a stage (cache reads, cache writes, rfactor) shift the later
// ones, so the stages are followed through them. An rfactor passes the
// split of its stage's reduction to the partial reduction it creates.
func tiledStages(s *schedule.State) map[int]bool {
	ids := make([]int, len(s.DAG.Tensors)) // stage index → identity
	for i := range ids {
		ids[i] = i
	}
	next := len(ids)
	insert := func(p int) {
		ids = slices.Insert(ids, p, next)
		next++
	}
	tiled := map[int]bool{} // by identity
	for _, st := range s.Steps {
		switch st := st.(type) {
		case *schedule.CacheRead:
			insert(st.Stage + 1)
		case *schedule.CacheWrite:
			insert(st.Stage)
		case *schedule.Rfactor:
			insert(st.Stage)
			if orig := ids[st.Stage+1]; tiled[orig] {
				delete(tiled, orig)
				tiled[ids[st.Stage]] = true
			}
		case *schedule.Split:
			tiled[ids[st.Stage]] = true
		case *schedule.FollowSplit:
			tiled[ids[st.Stage]] = true
		}
	}
	out := map[int]bool{}
	for pos, id := range ids {
		if tiled[id] {
			out[pos] = true
		}
	}
	return out
}

// changeComputeLocation gives each stage that no rule placed (not tiled,
// not inlined, not an output) a random location: where it is, inlined if
// it can be and no consumer reads it again (readAgain), or at one of the
// spatial loops of its only consumer.
func changeComputeLocation(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	for i := len(s.Stages) - 1; i >= 0; i-- {
		st := s.Stages[i]
		if st.IsPlaceholder() || st.Output || st.Attach != schedule.Root || tiled[i] {
			continue
		}
		var choices []schedule.Step
		if st.Tensor.Reducer == 0 && len(s.Consumers(i)) > 0 && !readAgain(s, i) {
			choices = append(choices, &schedule.ComputeInline{Stage: i})
		}
		if cons := effectiveConsumers(s, i); len(cons) == 1 && !dotOperand(s, i) {
			c := s.Stages[cons[0]]
			if c.Attach != schedule.Inlined {
				for p, it := range c.Iters {
					if it.Kind != schedule.Spatial {
						break
					}
					choices = append(choices, &schedule.ComputeAt{Stage: i, TargetStage: cons[0], TargetIter: p})
				}
			}
		}
		// Staying at the root is one choice among the others. A place
		// with only loops of extent 1 around it (a batch of one) is the
		// root too, computed once, except that it would stop the parallel
		// annotation at that loop: the stage stays at the root then.
		k := rng.IntN(len(choices) + 1)
		if k == len(choices) || underUnitLoops(s, choices[k]) {
			continue
		}
		if n, err := s.Apply(choices[k]); err == nil {
			s = n
		}
	}
	return s, nil
}

// underUnitLoops reports whether step is a ComputeAt at an iterator that
// only iterators of extent 1 enclose, itself included.
func underUnitLoops(s *schedule.State, step schedule.Step) bool {
	at, ok := step.(*schedule.ComputeAt)
	if !ok {
		return false
	}
	return !slices.ContainsFunc(s.Stages[at.TargetStage].Iters[:at.TargetIter+1], func(it schedule.Iter) bool { return it.Extent != 1 })
}

// dotOperand reports whether stage i holds 8-bit integers that integer
// contractions read (a matmul operand packed for dot-product instructions
// at run time, te.ZeroPointMatMul's, or copied to a layout they read
// whole): its place is the root, computed once. Under a consumer's loop it
// is computed again for every tile of the consumer's rows, which every
// loop the annotator could choose lies within (a BERT layer's packed keys
// 16 times: its default attention task 0.95 ms, and 0.38–0.40 with them
// at the root; Zen 5, one thread).
func dotOperand(s *schedule.State, i int) bool {
	if dt := s.Stages[i].Tensor.DType(); dt != tir.Uint8 && dt != tir.Int8 {
		return false
	}
	cons := effectiveConsumers(s, i)
	return len(cons) > 0 && !slices.ContainsFunc(cons, func(c int) bool { return !intContraction(s.Stages[c].Tensor) })
}

// readAgain reports whether a consumer of stage i reads each of its
// elements many times (a matmul, a convolution: data reuse). Such a stage
// reached the annotator because it is costly (exp, a division by a
// computed value); inlined, it would be computed again for every reuse:
// a softmax's probabilities once per output column of the matmul after it.
func readAgain(s *schedule.State, i int) bool {
	for _, c := range effectiveConsumers(s, i) {
		if te.NeedsMultiLevelTiling(s.Stages[c].Tensor) {
			return true
		}
	}
	return false
}

// attachedIters returns the positions of stage i's iterators that have
// stages attached.
func attachedIters(s *schedule.State, i int) map[int]bool {
	out := map[int]bool{}
	for j, st := range s.Stages {
		if st.Attach == schedule.At && st.AttachStage == i {
			out[s.AttachIter(j)] = true
		}
	}
	return out
}

// annotateParallel fuses the outer spatial loops of every root stage while
// their product stays under 16 × cores (stopping at a reduce loop or a loop
// other stages are attached at) and marks the fused loop parallel. Of an
// untiled elementwise stage so small that the fusion would take its
// innermost loop too (a GRU step's gates, 256 elements), a vector's worth
// of that loop is kept out (split off where it is longer), for
// annotateVectorize: fused into the parallel loop, the stage ran a libm
// call or a scalar helper per element. A stage of little cheap work stays
// serial (serialStage).
func annotateParallel(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	for i, st := range s.Stages {
		if st.IsPlaceholder() || st.Attach != schedule.Root {
			continue
		}
		limit, keep := 16*opts.Cores, 0
		if lanes, split := keepLanes(s, i, tiled, limit, opts); lanes > 0 {
			keep = 1
			if split {
				n, err := s.Apply(&schedule.Split{Stage: i, Iter: len(st.Iters) - 1, Lengths: []int{lanes}})
				if err != nil {
					return nil, err
				}
				s = n
			}
		}
		if serialStage(s, i, opts) {
			continue
		}
		n, err := parallelOuter(s, i, limit, -1, keep)
		if err != nil {
			return nil, err
		}
		s = n
	}
	return s, nil
}

// minParallelWork is the least work (stageWork) annotateParallel shares
// among threads. A parallel region costs more than a small stage computes:
// about 1 us with one thread and 3 us with two (libgomp makes a team and
// ends it at a barrier, a futex call each; a Zen 5 virtual machine), where
// a GRU step's gates (576 elements) take 0.2 us and its h·R (192 × 576,
// read from L2) 5 us. A two-layer GRU over 100 steps (modelgen/zoo's
// gru_speech, 400 such stages) ran 1.65 ms at one thread and 3.0 at two
// with every stage parallel, against onnxruntime's 1.12 and 1.43; with
// the gates serial 1.22 and 1.26, and with h·R serial too 0.90 and 0.76.
const minParallelWork = 1 << 17

// serialStage reports whether root stage i is too small to share among
// threads: less than minParallelWork, all of its math computed on whole
// vectors (vectorMathOnly) and its innermost loop a multiple of a vector
// (vectorLanes), so that its iterations are cheap. A stage of scalar libm
// calls (an erf, a pow) or of a loop no vector divides costs many times
// its iterations and stays parallel.
func serialStage(s *schedule.State, i int, opts Options) bool {
	st := s.Stages[i]
	if len(st.Iters) == 0 || stageWork(s, i) >= minParallelWork || !vectorMathOnly(st.Tensor.Body) {
		return false
	}
	for j, o := range s.Stages {
		if j != i && o.Attach == schedule.At && o.AttachStage == i && o.Tensor.Body != nil && !vectorMathOnly(o.Tensor.Body) {
			return false
		}
	}
	shape := st.Tensor.Shape
	return len(shape) > 0 && vectorLanes(shape[len(shape)-1], opts) > 0
}

// stageWork is the iterations of stage i's computation and of the stages
// attached inside its loops: each one's elements times its reduction's
// extent.
func stageWork(s *schedule.State, i int) int {
	w := 0
	for j, st := range s.Stages {
		if j != i && (st.Attach != schedule.At || st.AttachStage != i) {
			continue
		}
		if j != i {
			w += stageWork(s, j) // with its own attached stages
			continue
		}
		n := 1
		for _, e := range st.Tensor.Shape {
			n *= max(e, 1)
		}
		for _, r := range st.Tensor.ReduceAxis {
			n *= max(r.Extent, 1)
		}
		w += n
	}
	return w
}

// keepLanes says how many lanes of stage i's innermost loop the parallel
// fusion of its outer loops (under limit) must leave to vectorization (0:
// none): an untiled stage without a reduction whose loops are all
// spatial, unannotated and unattached, whose outer loops multiply to less
// than limit, whose innermost loop is a multiple of a vector length
// (vectorLanes), and whose math the code generator computes on whole
// vectors (tir.MathFunc.Vector: a sigmoid, not a square root, which it
// would compute lane by lane, slower than the scalar loop); split when it
// is longer.
func keepLanes(s *schedule.State, i int, tiled map[int]bool, limit int, opts Options) (lanes int, split bool) {
	st := s.Stages[i]
	if tiled[i] || len(st.Tensor.ReduceAxis) > 0 || len(st.Iters) == 0 || opts.MaxVectorLanes <= 1 || !vectorMathOnly(st.Tensor.Body) {
		return 0, false
	}
	att := attachedIters(s, i)
	prod := 1
	for p, it := range st.Iters {
		if it.Kind != schedule.Spatial || it.Ann != schedule.NoAnn || it.Extent == 0 || att[p] {
			return 0, false
		}
		if p < len(st.Iters)-1 {
			prod *= it.Extent
		}
	}
	last := st.Iters[len(st.Iters)-1].Extent
	lanes = vectorLanes(last, opts)
	if prod >= limit || lanes == 0 {
		return 0, false
	}
	return lanes, last > lanes
}

// vectorLanes returns the lanes an untiled elementwise stage's innermost
// loop of extent n is vectorized by: MaxVectorLanes where they divide n,
// else one native vector (Lanes) where it does (a MobileNetV3 layer's 72
// or 120 channels on AVX2, whose MaxVectorLanes is 16: its quantized
// squeeze-excite product ran a scalar division per element), else the
// largest part of a native vector, of at least minLanes lanes, that does
// (the same 120 channels at AVX-512's 16 lanes: 8-lane vectors; the scalar
// loop took 0.16 ms of MobileNetV3's 3.0), else 0.
func vectorLanes(n int, opts Options) int {
	for _, l := range []int{opts.MaxVectorLanes, opts.Lanes} {
		if l > 1 && n%l == 0 {
			return l
		}
	}
	for l := opts.Lanes / 2; l >= minLanes; l /= 2 {
		if n%l == 0 {
			return l
		}
	}
	return 0
}

// vectorMathOnly reports whether every math call of e has a vector form
// (tir.MathFunc.Vector).
func vectorMathOnly(e tir.Expr) bool {
	ok := true
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if c, is := x.(*tir.Call); is && !tir.MathFuncs[c.Fn].Vector {
			ok = false
		}
		return ok
	})
	return ok
}

// parallelOuter fuses the outermost spatial loops of stage i and marks them
// parallel: as many as fit under limit, or exactly count when count >= 1,
// never the innermost keep loops.
func parallelOuter(s *schedule.State, i, limit, count, keep int) (*schedule.State, error) {
	st := s.Stages[i]
	att := attachedIters(s, i)
	prod, n := 1, 0
	for p, it := range st.Iters {
		if it.Kind != schedule.Spatial || it.Ann != schedule.NoAnn || it.Extent == 0 || p >= len(st.Iters)-keep {
			break
		}
		if count >= 1 && n == count {
			break
		}
		prod *= it.Extent
		n++
		if att[p] || (count < 1 && prod >= limit) {
			break
		}
	}
	if n == 0 || prod == 1 {
		return s, nil
	}
	var err error
	if n > 1 {
		iters := make([]int, n)
		for k := range iters {
			iters[k] = k
		}
		if s, err = s.Apply(&schedule.Fuse{Stage: i, Iters: iters}); err != nil {
			return nil, err
		}
	}
	return s.Apply(&schedule.Annotate{Stage: i, Iter: 0, Ann: schedule.Parallel})
}

// annotateUnroll puts a random auto_unroll_max_step on every stage with a
// reduction.
func annotateUnroll(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	for i, st := range s.Stages {
		if st.IsPlaceholder() || st.Attach == schedule.Inlined || st.Tensor.Reducer == 0 || len(opts.UnrollSteps) == 0 {
			continue
		}
		v := opts.UnrollSteps[rng.IntN(len(opts.UnrollSteps))]
		n, err := s.Apply(&schedule.Pragma{Stage: i, Iter: 0, Key: schedule.PragmaAutoUnroll, Value: v})
		if err != nil {
			return nil, err
		}
		s = n
	}
	return s, nil
}

// annotateVectorize fuses the innermost spatial loops of every stage while
// their product stays within the vector length and vectorizes the result;
// an untiled elementwise stage whose innermost loop is longer than a
// vector gets a vector's worth split off and vectorized.
func annotateVectorize(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	for i, st := range s.Stages {
		if st.IsPlaceholder() || st.Attach == schedule.Inlined {
			continue
		}
		att := attachedIters(s, i)
		last := len(st.Iters) - 1
		prod, first := 1, last+1
		for p := last; p >= 0; p-- {
			it := st.Iters[p]
			limit := opts.MaxVectorLanes
			if p == last && opts.Lanes > 0 {
				// One loop, not a fusion: whole vectors and a remainder
				// (a Swin window's 49 keys: 3 × 16 lanes + 1), and a
				// contraction's register tile of one row and up to
				// maxWideVectors vectors (widenForFewRows).
				limit = max(limit, maxWholeVectors*opts.Lanes)
				if tiled[i] && te.IsContraction(st.Tensor) {
					limit = max(limit, maxWideVectors*opts.Lanes)
				}
			}
			if it.Kind != schedule.Spatial || it.Ann != schedule.NoAnn || att[p] || it.Extent == 0 || prod*it.Extent > limit {
				break
			}
			if p < last && tiled[i] && intContraction(st.Tensor) {
				// An integer contraction's register tile: its rows fused
				// into the vector would read a lane-dependent activation,
				// which no dot-product instruction takes (a grouped
				// convolution's 8 channels of a group by 2 rows, at 16
				// lanes).
				break
			}
			prod *= it.Extent
			first = p
		}
		if first > last && len(st.Iters) > 0 && !tiled[i] && len(st.Tensor.ReduceAxis) == 0 {
			// An elementwise stage no rule tiled whose innermost loop is
			// longer than a vector (a GELU after its matmul: 3,072
			// columns): split off a vector's worth and vectorize it, or
			// its math runs a libm call per element (the C compiler's own
			// loop vectorizer is off).
			it := st.Iters[last]
			l := vectorLanes(it.Extent, opts)
			if l == 0 && opts.Lanes >= minLanes && it.Extent > maxWholeVectors*opts.Lanes {
				// No power of two of minLanes or more divides the loop
				// (a padded image row of 226 bytes, which an integer
				// convolution's stem copies): whole vectors, the last
				// guarded (lowering guards a split that does not divide).
				l = opts.Lanes
			}
			if it.Kind == schedule.Spatial && it.Ann == schedule.NoAnn && !att[last] && opts.MaxVectorLanes > 1 && l > 0 {
				var err error
				if s, err = s.Apply(&schedule.Split{Stage: i, Iter: last, Lengths: []int{l}}); err != nil {
					return nil, err
				}
				if s, err = s.Apply(&schedule.Annotate{Stage: i, Iter: last + 1, Ann: schedule.Vectorize}); err != nil {
					return nil, err
				}
				continue
			}
		}
		if first > last || prod < 2 {
			continue
		}
		var err error
		if first < last {
			iters := make([]int, 0, last-first+1)
			for p := first; p <= last; p++ {
				iters = append(iters, p)
			}
			if s, err = s.Apply(&schedule.Fuse{Stage: i, Iters: iters}); err != nil {
				return nil, err
			}
		}
		if s, err = s.Apply(&schedule.Annotate{Stage: i, Iter: first, Ann: schedule.Vectorize}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readsAtData reports whether stage c reads stage j at an index that
// holds a load: an embedding table that a Gather inlined into a matmul
// reads at the token ids. No layout follows the loops there (rewrite_layout
// refuses it, and every sample of the sketch with it: an LSTM language
// model's input projection fell back to the naive loop nest, 55 ms for
// 34 MFLOP).
func readsAtData(s *schedule.State, j, c int) bool {
	buf := s.Stages[j].Tensor.Buf
	found := false
	tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && l.Buf == buf {
			for _, ix := range l.Indices {
				tir.WalkExpr(ix, func(x tir.Expr) bool {
					if _, ok := x.(*tir.Load); ok {
						found = true
					}
					return !found
				})
			}
		}
		return !found
	})
	return found
}

// rewriteLayouts repacks every constant input (a weight) whose one reader
// is a stage with data reuse (a tiled matmul or convolution, or its local
// accumulation stage), or a reduction whose lanes reduce_outside_lanes put
// inside its reduce loops: the packed layout follows that stage's loops,
// so the register tile's weight operand (the lanes' operand) is one
// contiguous vector load and the reduction walks the weights in order.
func rewriteLayouts(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	for j, st := range s.Stages {
		if !st.IsPlaceholder() || !st.Tensor.Const || st.Packed {
			continue
		}
		cons := effectiveConsumers(s, j)
		if len(cons) != 1 || !te.NeedsMultiLevelTiling(s.Stages[cons[0]].Tensor) && !reducesOutsideLanes(s, cons[0]) || readsAtData(s, j, cons[0]) {
			continue
		}
		n, err := s.Apply(&schedule.RewriteLayout{Stage: j})
		if err != nil {
			return nil, err
		}
		s = n
	}
	return s, nil
}
