package sketch

import (
	"slices"

	"github.com/tessera-ml/tessera/schedule"
)

// The GPU's default tiles. A tiled stage (SSSRRSRS: blocks, virtual
// threads, threads, two reduce levels, then two spatial levels inside)
// gets a block of threads laid out over its innermost spatial axes and,
// in each thread, a register tile: up to gpuRegTile outputs along each of
// its two innermost split axes at the innermost spatial level, so that
// every value a thread reads from shared memory feeds several
// multiply-adds and a block's shared tiles serve many outputs. One output
// a thread (the rule before) read two shared values per multiply-add and,
// for a 1024² matmul, staged 256 columns of B for each row of A: 0.073×
// cuBLAS at 4096³ on an H200. The register tile shrinks, its larger side
// first, until the kernel has a block for every multiprocessor of the
// device (GPULimits.Processors), and is at most gpuRegOutputs outputs, so
// the accumulators stay in registers. Where the tile does not lower
// (shared memory), the fills without register tiles follow.
const (
	gpuAxisThreads = 16 // threads along each of the two innermost split axes of a register-tiled block
	gpuRegTile     = 8  // a register tile's outputs along one axis
	gpuRegOutputs  = 64 // a register tile's outputs
)

// fillTilesGPU is the GPU's default tile rule, as a list of fills in the
// order Default tries them. Each spatial tile split gives its thread
// level the largest divisor of its extent that keeps the block within 256
// threads (the last axis first: it is contiguous), at most gpuAxisThreads
// along the two innermost axes when the thread has a register tile, or
// within the device's threads when 256 leaves a stage under a warp (odd
// extents); each reduce tile split loads tiles of up to 8 along its axis
// into shared memory. Where that is more shared memory than a block has
// (a 3×3 convolution of 256 channels: 256 × 8 × 9 weights), the next
// choices load tiles of 4, 2 and 1, then blocks of 128 threads do; the
// fills with register tiles come first, those of one output a thread
// after them.
func fillTilesGPU(sk *schedule.State, lim schedule.GPULimits) ([]*schedule.State, error) {
	var out []*schedule.State
	for _, regs := range []bool{true, false} {
		for _, threads := range []int{256, 128} {
			for _, reduce := range []int{8, 4, 2, 1} {
				f := gpuFill{threads: threads, reduce: reduce, regs: regs}
				s, short, err := fillTilesGPUWithin(sk, f, lim)
				if err == nil && short && lim.MaxThreadsPerBlock > threads {
					f.threads = lim.MaxThreadsPerBlock
					s, _, err = fillTilesGPUWithin(sk, f, lim)
				}
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// gpuFill is one choice of the default tile rule.
type gpuFill struct {
	threads int  // at most this many threads a block
	reduce  int  // reduce tiles of up to this many along each reduce axis
	regs    bool // a register tile in each thread
}

// gpuSplit is an unfilled split of the sketch.
type gpuSplit struct {
	step    int // index in the sketch's steps
	stage   int // stage index at the time of the split
	ext     int
	spatial bool
	levels  int
	outputs int // of the stage
}

// fillTilesGPUWithin fills the tiles of sk by f; short reports a stage
// left with fewer threads than a warp (or than its outputs, when fewer).
func fillTilesGPUWithin(sk *schedule.State, f gpuFill, lim schedule.GPULimits) (*schedule.State, bool, error) {
	// First pass: the unfilled splits, their stages and extents.
	var splits []gpuSplit
	s := schedule.NewState(sk.DAG)
	for k, st := range sk.Steps {
		if sp, ok := st.(*schedule.Split); ok && slices.Contains(sp.Lengths, 0) {
			it := s.Stages[sp.Stage].Iters[sp.Iter]
			outputs := 1
			for _, a := range s.Stages[sp.Stage].Tensor.Axis {
				outputs *= a.Extent
			}
			splits = append(splits, gpuSplit{step: k, stage: sp.Stage, ext: it.Extent, spatial: it.Kind == schedule.Spatial, levels: len(sp.Lengths), outputs: outputs})
			st = &schedule.Split{Stage: sp.Stage, Iter: sp.Iter, Lengths: ones(len(sp.Lengths))}
		}
		var err error
		if s, err = s.Apply(st); err != nil {
			return nil, false, err
		}
	}
	lengths := map[int][]int{} // by step index
	byStage := map[int][]gpuSplit{}
	var stages []int
	for _, sp := range splits {
		l := ones(sp.levels)
		if !sp.spatial {
			l[0] = largestDivisor(sp.ext, f.reduce, false)
		}
		lengths[sp.step] = l
		if sp.spatial && sp.levels >= 2 {
			if byStage[sp.stage] == nil {
				stages = append(stages, sp.stage)
			}
			byStage[sp.stage] = append(byStage[sp.stage], sp)
		}
	}
	short := false
	for _, stage := range stages {
		axes := byStage[stage]
		outputs := axes[0].outputs
		threads := blockThreads(axes, f.threads, f.regs)
		total := product(threads)
		if f.regs && total < min(lim.WarpSize, outputs) {
			threads = blockThreads(axes, f.threads, false)
			total = product(threads)
		}
		short = short || total < min(lim.WarpSize, outputs)
		var regs []int
		if f.regs {
			regs = registerTile(axes, threads, outputs, lim.Processors)
		}
		for n, sp := range axes {
			lengths[sp.step][1] = threads[n]
			if n < len(regs) && sp.levels >= 4 {
				lengths[sp.step][3] = regs[n]
			}
		}
	}
	steps := slices.Clone(sk.Steps)
	for _, sp := range splits {
		old := sk.Steps[sp.step].(*schedule.Split)
		steps[sp.step] = &schedule.Split{Stage: old.Stage, Iter: old.Iter, Lengths: lengths[sp.step]}
	}
	out, err := schedule.Replay(schedule.NewState(sk.DAG), steps)
	return out, short, err
}

// blockThreads lays at most limit threads over a stage's spatial tile
// splits in their order (the innermost axis first): each takes the
// largest divisor of its extent that fits, the first two at most
// gpuAxisThreads when capped.
func blockThreads(axes []gpuSplit, limit int, capped bool) []int {
	out := make([]int, len(axes))
	total := 1
	for n, sp := range axes {
		room := limit / total
		if capped && n < 2 {
			room = min(room, gpuAxisThreads)
		}
		out[n] = largestDivisor(sp.ext, room, false)
		total *= out[n]
	}
	return out
}

// registerTile returns a thread's outputs along the first two of axes
// (which have threads threads each): the largest divisors of what the
// threads leave of up to gpuRegTile each and gpuRegOutputs in all,
// shrunk (the larger first, the second axis on a tie) until the stage of
// outputs outputs has a block for each of processors multiprocessors.
func registerTile(axes []gpuSplit, threads []int, outputs, processors int) []int {
	n := min(len(axes), 2)
	tile := make([]int, n)
	left := make([]int, n)
	for a := range n {
		left[a] = axes[a].ext / threads[a]
		tile[a] = largestDivisor(left[a], gpuRegTile, false)
	}
	perBlock := product(threads)
	blocks := func() int { return outputs / (perBlock * product(tile)) }
	for product(tile) > 1 && (product(tile) > gpuRegOutputs || blocks() < processors) {
		a := n - 1
		if n == 2 && tile[0] > tile[1] {
			a = 0
		}
		if tile[a] == 1 {
			a = 1 - a
		}
		tile[a] = largestDivisor(left[a], tile[a]-1, false)
	}
	return tile
}

func ones(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

func product(a []int) int {
	p := 1
	for _, v := range a {
		p *= v
	}
	return p
}

// bindNaive is the naive state with the spatial loops of every root stage
// fused and split into blocks of up to 256 threads: a GPU's last resort.
func bindNaive(s0 *schedule.State, opts Options) (*schedule.State, error) {
	s := s0
	for i := 0; i < len(s.Stages); i++ {
		st := s.Stages[i]
		if st.IsPlaceholder() || st.Attach != schedule.Root {
			continue
		}
		lead := 0
		for _, it := range st.Iters {
			if it.Kind != schedule.Spatial {
				break
			}
			lead++
		}
		if lead == 0 {
			continue
		}
		var err error
		if s, err = fuseRange(s, i, 0, lead); err != nil {
			return nil, err
		}
		t := min(256, s.Stages[i].Iters[0].Extent)
		if opts.GPU.MaxThreadsPerBlock > 0 {
			t = min(t, opts.GPU.MaxThreadsPerBlock)
		}
		for _, st := range []schedule.Step{
			&schedule.Split{Stage: i, Iter: 0, Lengths: []int{t}},
			&schedule.Annotate{Stage: i, Iter: 0, Ann: schedule.BlockX},
			&schedule.Annotate{Stage: i, Iter: 1, Ann: schedule.ThreadX},
		} {
			if s, err = s.Apply(st); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}
