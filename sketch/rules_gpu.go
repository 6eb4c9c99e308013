package sketch

import (
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// gpuRules is Ansor's GPU rule list, in its order (less its special
// compute location and constant-tensor rules): shared-memory caches of
// the producers of tiled stages, inlining of every injective stage,
// cross-thread reduction, a local accumulation stage, then multi-level
// tiling (SSSRRSRS) with and without a fused consumer.
var gpuRules = []Rule{
	addCacheReadShared{},
	alwaysInlineGPU{},
	crossThreadReduction{},
	addCacheWrite{},
	tilingWithFusion{},
	tiling{},
	skipStage{},
}

// addCacheReadShared gives the producer of a tiled stage a copy in shared
// memory, computed inside the tiled stage at its outermost reduce tile:
// the block loads the tile of the operand its threads read once, and the
// threads read it from there (the loads are spread over the threads by
// thread binding, see cooperativeFetch). The stage is visited again, so
// the next rules (inlining a padding into its copy) see it.
type addCacheReadShared struct{}

func (addCacheReadShared) Name() string { return "add_cache_read_shared" }

func (addCacheReadShared) Condition(g *generator, s *schedule.State, i int) Cond {
	if sharedReader(s, i) < 0 {
		return Skip
	}
	return ApplyAndSkipRest
}

// sharedReader returns the tiled stage that should read stage i through a
// shared copy, or -1: i's only reader, tiled by a rule (it has splits and
// a reduce tile), not a cross-thread reduction.
func sharedReader(s *schedule.State, i int) int {
	st := s.Stages[i]
	if st.Attach == schedule.Inlined || st.Scope != tir.Global {
		return -1
	}
	cons := s.Consumers(i)
	if len(cons) != 1 {
		return -1
	}
	c := cons[0]
	ct := s.Stages[c]
	if !te.NeedsMultiLevelTiling(ct.Tensor) || !tiledStages(s)[c] || firstReduceTile(ct) < 0 {
		return -1
	}
	for _, it := range ct.Iters {
		if it.Kind == schedule.Reduce && it.Ann != schedule.NoAnn {
			return -1
		}
	}
	return c
}

// firstReduceTile returns the position of the last iterator of the
// outermost reduce tile of st (one iterator per reduce axis, from the
// first reduce iterator on), or -1.
func firstReduceTile(st *schedule.Stage) int {
	n := len(st.Tensor.ReduceAxis)
	for p, it := range st.Iters {
		if it.Kind != schedule.Reduce {
			continue
		}
		if p+n > len(st.Iters) {
			return -1
		}
		for _, o := range st.Iters[p : p+n] {
			if o.Kind != schedule.Reduce {
				return -1
			}
		}
		return p + n - 1
	}
	return -1
}

func (addCacheReadShared) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	c := sharedReader(s, i)
	n, err := s.Apply(&schedule.CacheRead{Stage: i, Scope: tir.Shared, Readers: []int{c}})
	if err != nil {
		return nil, err
	}
	c++ // the copy sits at i+1
	n, err = n.Apply(&schedule.ComputeAt{Stage: i + 1, TargetStage: c, TargetIter: firstReduceTile(n.Stages[c])})
	if err != nil {
		return nil, err
	}
	return []next{{n, i}}, nil
}

// alwaysInlineGPU inlines every injective stage that has a reader: on a
// GPU recomputing an element is cheaper than a kernel launch and a round
// trip through global memory.
type alwaysInlineGPU struct{}

func (alwaysInlineGPU) Name() string { return "always_inline_gpu" }

func (alwaysInlineGPU) Condition(g *generator, s *schedule.State, i int) Cond {
	st := s.Stages[i]
	if !schedulable(s, i) || st.Output || st.Tensor.Reducer != 0 || len(s.Consumers(i)) == 0 {
		return Skip
	}
	return ApplyAndSkipRest
}

func (alwaysInlineGPU) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	return alwaysInline{}.Apply(g, s, i)
}

// crossThreadReduction spreads a long reduction over the threads of a
// warp: its reduce loops are fused and split by the warp size, the inner
// part bound to threadIdx.x (lowered to an all-reduce). It applies to a
// reduction without data reuse longer than a warp, and to one with data
// reuse whose output is too small to feed a block's threads. The state
// without it goes on through the later rules too.
type crossThreadReduction struct{}

func (crossThreadReduction) Name() string { return "cross_thread_reduction" }

func (crossThreadReduction) Condition(g *generator, s *schedule.State, i int) Cond {
	st := s.Stages[i]
	if !schedulable(s, i) || !te.HasReduce(st.Tensor) || len(st.Iters) != len(st.Tensor.Axis)+len(st.Tensor.ReduceAxis) {
		return Skip
	}
	spatial, reduce := 1, 1
	for _, a := range st.Tensor.Axis {
		spatial *= a.Extent
	}
	for _, a := range st.Tensor.ReduceAxis {
		reduce *= a.Extent
	}
	warp := max(g.opts.GPU.WarpSize, 1)
	if te.NeedsMultiLevelTiling(st.Tensor) {
		if spatial > reduce || spatial > g.opts.GPU.MaxThreadsPerBlock {
			return Skip
		}
		return Apply
	}
	if reduce > warp {
		return Apply
	}
	return Skip
}

func (crossThreadReduction) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	st := s.Stages[i]
	first := len(st.Tensor.Axis)
	var err error
	if n := len(st.Iters) - first; n > 1 {
		iters := make([]int, n)
		for k := range iters {
			iters[k] = first + k
		}
		if s, err = s.Apply(&schedule.Fuse{Stage: i, Iters: iters}); err != nil {
			return nil, err
		}
	}
	ext := s.Stages[i].Iters[first].Extent
	if s, err = s.Apply(&schedule.Split{Stage: i, Iter: first, Lengths: []int{min(max(g.opts.GPU.WarpSize, 1), ext)}}); err != nil {
		return nil, err
	}
	if s, err = s.Apply(&schedule.Annotate{Stage: i, Iter: first + 1, Ann: schedule.ThreadX}); err != nil {
		return nil, err
	}
	return []next{{s, i - 1}}, nil
}

// GPUOptions returns Ansor's GPU rules and defaults for a device with the
// given limits: SSSRRSRS tiling, the consumer fused at the third spatial
// level, threads bound by annotation, auto-unroll up to 1024, and the
// target's lowering (LowerGPU within the limits).
func GPUOptions(lim schedule.GPULimits) Options {
	return Options{
		Rules:             gpuRules,
		Annotators:        gpuAnnotators,
		Lower:             lim.Lower,
		Cores:             1,
		TileStructure:     "SSSRRSRS",
		FusionLevels:      []int{3},
		MaxInnermostSplit: 64,
		MaxVectorLanes:    lim.VectorLanes,
		UnrollSteps:       []int{0, 16, 64, 512, 1024},
		GPU:               lim,
		DefaultTiles:      func(sk *schedule.State) ([]*schedule.State, error) { return fillTilesGPU(sk, lim) },
	}
}
