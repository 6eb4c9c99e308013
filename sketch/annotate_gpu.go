package sketch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/tir"
)

// gpuAnnotators is Ansor's GPU order after the tile sizes: thread binding
// (with the cooperative fetch of shared copies), then auto-unroll; and,
// ours, the vector loads of a register tile.
var gpuAnnotators = []Annotator{
	{"thread_bind", annotateThreadBind},
	{"unroll", annotateUnroll},
	{"vectorize_register_tile", annotateRegisterTileGPU},
}

// annotateRegisterTileGPU vectorizes the innermost loop of every stage
// that accumulates in a thread's registers (a local cache of a tiled
// stage, or a tiled stage computed at its fused consumer) when it is
// spatial and longer than one: a thread's register tile
// along the contiguous axis then reads its operand from shared memory as
// float4 (or float2) loads, a quarter of the load instructions of scalar
// ones and without their bank conflicts (scalar loads at a stride of the
// tile width hit each bank several times a warp). The printer cuts longer
// loops into float4 pieces, and an operand that is not contiguous along
// the loop is gathered lane by lane, as many loads as before.
func annotateRegisterTileGPU(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	for i, st := range s.Stages {
		if !(st.Scope == tir.Local || tiled[i]) || st.Attach == schedule.Inlined || st.Attach == schedule.Root || len(st.Iters) == 0 {
			continue
		}
		last := len(st.Iters) - 1
		it := st.Iters[last]
		if it.Kind != schedule.Spatial || it.Ann != schedule.NoAnn || it.Extent < 2 || attachedIters(s, i)[last] {
			continue
		}
		n, err := s.Apply(&schedule.Annotate{Stage: i, Iter: last, Ann: schedule.Vectorize})
		if err != nil {
			continue
		}
		s = n
	}
	return s, nil
}

// threadChoices are the block sizes a kernel without tiles is split by.
var threadChoices = []int{32, 64, 128, 256, 512, 1024}

// annotateThreadBind binds the loops of every kernel to blocks and
// threads, and spreads the fetch of every shared copy over its reader's
// threads.
func annotateThreadBind(rng *rand.Rand, s *schedule.State, tiled map[int]bool, opts Options) (*schedule.State, error) {
	var err error
	for i := 0; i < len(s.Stages); i++ {
		st := s.Stages[i]
		if st.IsPlaceholder() || st.Attach == schedule.Inlined {
			continue
		}
		switch {
		case st.Attach == schedule.Root:
			s, err = bindKernel(rng, s, i, tiled[i], opts)
		case st.Scope == tir.Shared:
			s, err = cooperativeFetch(rng, s, i, opts)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// bindKernel binds the loops of root stage i. A cross-thread reduction
// (threads already on its reduce loop) gets its spatial loops fused onto
// blocks. A multi-level tiled stage fuses each of its first three spatial
// tile levels into one loop: blocks, virtual threads, threads; a thread
// tile under a warp (when the stage has that many outputs), or over the
// device's threads or virtual threads, makes the state invalid. Any other
// stage fuses its outer spatial loops and splits them into blocks of a
// random size from threadChoices.
func bindKernel(rng *rand.Rand, s *schedule.State, i int, tiled bool, opts Options) (*schedule.State, error) {
	st := s.Stages[i]
	lead := 0
	for _, it := range st.Iters {
		if it.Kind != schedule.Spatial || it.Ann != schedule.NoAnn {
			break
		}
		lead++
	}
	for _, it := range st.Iters {
		if it.Kind == schedule.Reduce && it.Ann == schedule.ThreadX {
			if lead == 0 {
				return s, nil
			}
			s, err := fuseRange(s, i, 0, lead)
			if err != nil {
				return nil, err
			}
			return s.Apply(&schedule.Annotate{Stage: i, Iter: 0, Ann: schedule.BlockX})
		}
	}
	lim := opts.GPU
	n := len(st.Tensor.Axis)
	if tiled && n > 0 && lead >= 3*n && strings.Count(opts.TileStructure, "S") >= 3 {
		var err error
		for g := 2; g >= 0; g-- {
			if s, err = fuseRange(s, i, g*n, (g+1)*n); err != nil {
				return nil, err
			}
		}
		total := 1
		for _, a := range st.Tensor.Axis {
			total *= a.Extent
		}
		its := s.Stages[i].Iters
		vt, tx := its[1].Extent, its[2].Extent
		switch {
		case tx < min(lim.WarpSize, total):
			return nil, fmt.Errorf("%d threads per block, under the warp size %d: %w", tx, lim.WarpSize, ErrNotApplicable)
		case lim.MaxThreadsPerBlock > 0 && tx > lim.MaxThreadsPerBlock:
			return nil, fmt.Errorf("%d threads per block, more than %d: %w", tx, lim.MaxThreadsPerBlock, ErrNotApplicable)
		case lim.MaxVThread > 0 && vt > lim.MaxVThread:
			return nil, fmt.Errorf("%d virtual threads, more than %d: %w", vt, lim.MaxVThread, ErrNotApplicable)
		}
		for p, a := range []schedule.Annotation{schedule.BlockX, schedule.VThread, schedule.ThreadX} {
			if s, err = s.Apply(&schedule.Annotate{Stage: i, Iter: p, Ann: a}); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	if lead == 0 {
		return s, nil
	}
	s, err := fuseRange(s, i, 0, lead)
	if err != nil {
		return nil, err
	}
	ext := s.Stages[i].Iters[0].Extent
	var choices []int
	for _, t := range threadChoices {
		if lim.MaxThreadsPerBlock <= 0 || t <= lim.MaxThreadsPerBlock {
			choices = append(choices, t)
		}
	}
	if len(choices) == 0 {
		choices = []int{1}
	}
	t := min(choices[rng.IntN(len(choices))], ext)
	if s, err = s.Apply(&schedule.Split{Stage: i, Iter: 0, Lengths: []int{t}}); err != nil {
		return nil, err
	}
	if s, err = s.Apply(&schedule.Annotate{Stage: i, Iter: 0, Ann: schedule.BlockX}); err != nil {
		return nil, err
	}
	return s.Apply(&schedule.Annotate{Stage: i, Iter: 1, Ann: schedule.ThreadX})
}

// fuseRange fuses the iterators [from, to) of stage i (nothing for one).
func fuseRange(s *schedule.State, i, from, to int) (*schedule.State, error) {
	if to-from < 2 {
		return s, nil
	}
	iters := make([]int, 0, to-from)
	for p := from; p < to; p++ {
		iters = append(iters, p)
	}
	return s.Apply(&schedule.Fuse{Stage: i, Iters: iters})
}

// cooperativeFetch spreads the copy of shared stage i over the threads of
// the tiled stage it is computed in: its loops are fused, split by a
// random vector length (the lanes one thread loads at once, vectorized),
// and the rest split by that stage's thread count (FollowFusedSplit of
// its thread-level tile splits) and bound to threadIdx.x, so consecutive
// threads load consecutive vectors. Without the tile splits to follow the
// copy stays unbound: thread 0 makes it.
func cooperativeFetch(rng *rand.Rand, s *schedule.State, i int, opts Options) (*schedule.State, error) {
	st := s.Stages[i]
	nS := strings.Count(opts.TileStructure, "S")
	srcs := spatialSplitSteps(s, st.AttachStage, nS-1)
	if len(srcs) == 0 || nS < 3 {
		return s, nil
	}
	s, err := fuseRange(s, i, 0, len(st.Iters))
	if err != nil {
		return nil, err
	}
	// The vector lengths of a fetch: 1, 2, ... up to the device's widest
	// vector load (MaxVectorLanes, a float4).
	var vecs []int
	for v := 1; v <= max(opts.MaxVectorLanes, 1); v *= 2 {
		vecs = append(vecs, v)
	}
	v := 1
	if len(vecs) > 0 {
		v = vecs[rng.IntN(len(vecs))]
	}
	if v > 1 {
		if n, err := s.Apply(&schedule.Split{Stage: i, Iter: 0, Lengths: []int{v}}); err == nil {
			s = n
		} else {
			v = 1
		}
	}
	// The thread level is the third S of the structure: position 1 of
	// the lengths of each spatial tile split.
	n, err := s.Apply(&schedule.FollowFusedSplit{Stage: i, Iter: 0, SrcSteps: srcs, Level: 1})
	if err != nil {
		return s, nil // more threads than elements: leave it to thread 0
	}
	if s, err = n.Apply(&schedule.Annotate{Stage: i, Iter: 1, Ann: schedule.ThreadX}); err != nil {
		return nil, err
	}
	if v > 1 {
		return s.Apply(&schedule.Annotate{Stage: i, Iter: 2, Ann: schedule.Vectorize})
	}
	return s, nil
}

// spatialSplitSteps returns the indices of the steps that split stage c's
// spatial axes into tiles: splits of c with nLengths lengths, followed
// back through the steps that inserted stages before it.
func spatialSplitSteps(s *schedule.State, c, nLengths int) []int {
	var out []int
	idx := c
	for k := len(s.Steps) - 1; k >= 0; k-- {
		switch st := s.Steps[k].(type) {
		case *schedule.CacheRead:
			if idx == st.Stage+1 {
				return reversed(out) // c is this copy
			}
			if idx > st.Stage+1 {
				idx--
			}
		case *schedule.CacheWrite:
			if idx == st.Stage {
				return reversed(out) // c is this cache
			}
			if idx > st.Stage {
				idx--
			}
		case *schedule.Rfactor:
			if idx == st.Stage {
				return reversed(out)
			}
			if idx > st.Stage {
				idx--
			}
		case *schedule.Split:
			if st.Stage == idx && len(st.Lengths) == nLengths {
				out = append(out, k)
			}
		}
	}
	return reversed(out)
}

func reversed(a []int) []int {
	slices.Reverse(a)
	return a
}
