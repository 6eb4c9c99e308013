package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Default schedules. A task without a record gets the first sketch of the
// target's rules (the multi-level tiling sketch where one applies) with its tile
// sizes chosen by a rule rather than at random (fillTiles), then annotated
// by Sample: parallel outer loops, vectorized inner loops. Random
// tile sizes make kernels slower than the naive loop nest far too often
// (a conv of ResNet-50 at 0.2 to 1.3 GFLOP/s against the naive 5); the
// rule gives the register tile of a hand-written kernel. The unroll step
// is pinned so the register tile is unrolled and kept in registers. The
// remaining random choice of Sample (where a stage no rule placed is
// computed) comes from defaultAttempts fixed seeds; of the states that
// lower, the one whose kernel does the least work wins (tir.Work: a
// softmax's row maximum attached below the loop over the row computes it
// again for every element), the first on a tie, and the naive schedule
// (no steps, every stage at the root) is the last resort; "lowers" means
// the target's lowering (Options.Lower) accepts it. Everything here is deterministic: the same
// DAG gets the same schedule on the same machine (the core count is a
// sketch option).
const (
	defaultSeed     = 0x7e55e7a
	defaultAttempts = 8
	defaultUnroll   = 512
)

// Default returns the default schedule of the DAG of s0 and a description
// of how it was made. It is what a model build uses for a task without a
// record, and what tuning measures first for every task, so that a task's
// best record is never slower than it.
func Default(s0 *schedule.State, opts Options) (*schedule.State, string, error) {
	opts.UnrollSteps = []int{defaultUnroll}
	sketches, err := Generate(s0, opts)
	if err == nil && len(sketches) > 0 {
		fill := opts.DefaultTiles
		if fill == nil {
			fill = func(sk *schedule.State) ([]*schedule.State, error) {
				f, err := fillTiles(sk, opts.Lanes, opts.VectorRegs, opts.L2)
				return []*schedule.State{f}, err
			}
		}
		fills, err := fill(sketches[0])
		for k := 0; err == nil && k < len(fills); k++ {
			var best *schedule.State
			var how string
			least := math.Inf(1)
			for a := 0; a < defaultAttempts; a++ {
				rng := rand.New(rand.NewPCG(defaultSeed, uint64(a)))
				st, err := Sample(rng, fills[k], opts)
				if err != nil {
					continue
				}
				f, err := opts.lower(st, "default")
				if err != nil {
					continue
				}
				if w := tir.Work(f); w < least {
					best, least = st, w
					how = fmt.Sprintf("first sketch, rule tiles, sample %d of seed %#x", a, defaultSeed)
					if k > 0 {
						how = fmt.Sprintf("first sketch, rule tiles (choice %d), sample %d of seed %#x", k+1, a, defaultSeed)
					}
				}
			}
			if best != nil {
				return best, how, nil
			}
		}
	}
	if opts.GPU.WarpSize > 0 {
		// A naive kernel on a GPU is one thread: bind its loops at least.
		if st, err := bindNaive(s0, opts); err == nil {
			if _, err := opts.lower(st, "default"); err == nil {
				return st, "naive, bound to blocks of threads (the first sketch does not lower)", nil
			}
		}
	}
	if _, err := opts.lower(s0, "default"); err != nil {
		return nil, "", fmt.Errorf("no schedule lowers, not even the naive one: %w", err)
	}
	return s0, "naive (the first sketch does not lower)", nil
}

// Tile sizes of the default schedule, the register tile of a hand-written
// kernel: the last spatial axis a stage splits (the contiguous one) gets
// vectorTile lanes at the innermost level if a power of two of at least
// minLanes divides it; else, when it spans one to maxWholeVectors vectors,
// all of it (the printer splits it into whole vectors and a remainder:
// a Swin window's 49 keys are 3 × 16 lanes + 1), else 1; the row axis
// gets up to rowTile rows. The row axis is the longest other split
// spatial axis that the loads reading along the vector axis do not use, so
// that each vector load serves every row: a convolution's output channels
// (not its rows), a matmul's rows. A reduce axis keeps a short window (a
// 3×3 kernel's rows) whole at its inner level and up to reduceTile of a
// long one. Every other level is 1 (Sample's parallel annotation fuses
// what is left outside), except that a stage streaming a weight larger
// than the L2 (streamsWeights) counts its row tiles at level 1, inside the
// vector axis's outer loop: untuned ViT-B/32 65.4 → 57.2 ms, a BERT-base
// layer 13.2 → 12.3 ms (one thread, AMD EPYC Zen 5).
// Measured on ResNet-18's 3×3 convolutions, one thread: 80 to 88 GFLOP/s
// at 56×56 and 112×112 (a 16 × 16 or 16 × 8 tile), 11 to 13 at 14×14 and
// 7×7 (no lanes divide them: 16 rows of scalars), where odd lane counts
// (7, 14) gave 2 to 4.
//
// The vector axis and the rows come from the machine (RegisterTile): on
// AVX2 (8 lanes, 16 registers) a 16-lane axis is two vectors and takes 6
// rows; an axis that gets fewer vectors gets more rows (TileRows), so the
// accumulators stay within the register file.
const (
	minLanes        = 4 // fewer lanes than this are not worth a vector
	maxWholeVectors = 4 // a vector axis no power of two divides is tiled whole up to this many vectors
	reduceWindow    = 7 // a reduce axis this short stays whole
	reduceTile      = 4
)

// fillTiles returns the sketch with every unfilled split filled by the
// rule, for a machine of lanes float32 lanes per vector, regs vector
// registers and an L2 of l2 bytes (Options.L2).
func fillTiles(sk *schedule.State, lanes, regs, l2 int) (*schedule.State, error) {
	vectorTile, _ := RegisterTile(lanes, regs)
	type split struct {
		k       int // step index
		stage   int
		ext     int
		spatial bool
		axis    string     // the root axis the split iterator is
		tensor  *te.Tensor // of the stage, which later steps may move to another index
	}
	// First pass: the extent and kind of every unfilled split.
	var splits []split
	s := schedule.NewState(sk.DAG)
	for k, st := range sk.Steps {
		if sp, ok := st.(*schedule.Split); ok && slices.Contains(sp.Lengths, 0) {
			it := s.Stages[sp.Stage].Iters[sp.Iter]
			splits = append(splits, split{k, sp.Stage, it.Extent, it.Kind == schedule.Spatial, it.Name, s.Stages[sp.Stage].Tensor})
		}
		var err error
		if s, err = s.Apply(st); err != nil {
			return nil, err
		}
	}
	inner := map[int]int{}       // step index → innermost length; 1 when absent
	rowsInside := map[int]bool{} // step index → the row tiles loop inside the vector axis's outer tiles
	for _, sp := range splits {
		if !sp.spatial {
			inner[sp.k] = sp.ext
			if sp.ext > reduceWindow {
				inner[sp.k] = largestDivisor(sp.ext, reduceTile, false)
			}
		}
	}
	// Per stage, the vector axis is the first spatial split: the sketch
	// rules split from the last axis to the first.
	done := map[int]bool{}
	for _, vec := range splits {
		if !vec.spatial || done[vec.stage] {
			continue
		}
		done[vec.stage] = true
		vecs, tile := 1, vectorTile
		dotTile := intContraction(vec.tensor) || bf16Contraction(vec.tensor) // a dot instruction's broadcast is a load of its own
		if dotTile {
			tile = max(tile, intDotVectors*lanes)
		}
		if len(constMatrixIndexVars(vec.tensor)) > 0 {
			tile = min(tile, lanes) // one vector register (maxInnerSplit)
		}
		if vec.tensor.DType() == tir.Int32 {
			// A vector within one group, where a group holds one of
			// minLanes lanes or more (a channel multiplier of 2 would
			// leave no vector).
			if l := largestDivisor(laneGroup(vec.tensor, vec.axis), tile, true); l >= minLanes && l&(l-1) == 0 {
				tile = min(tile, l)
			}
		}
		l := largestDivisor(vec.ext, tile, true)
		pow2 := l >= minLanes && l&(l-1) == 0
		rowExt := 0 // the longest other spatial split of the stage
		for _, o := range splits {
			if o.spatial && o.stage == vec.stage && o.k != vec.k {
				rowExt = max(rowExt, o.ext)
			}
		}
		if w := tailTile(vec.tensor, vec.axis, vec.ext, rowExt, lanes, tile); w > 0 && (!pow2 || l < lanes) {
			inner[vec.k] = w
			vecs = w / lanes
		} else if pow2 {
			inner[vec.k] = l
			vecs = (l + lanes - 1) / lanes
		} else if lanes >= minLanes && vec.ext >= lanes && vec.ext <= maxWholeVectors*lanes {
			inner[vec.k] = vec.ext // 49 keys of a Swin window: 3 × 16 lanes + 1
			vecs = (vec.ext + lanes - 1) / lanes
		}
		rowTile := TileRows(vecs, regs)
		if dotTile && vecs >= intDotVectors {
			rowTile = min(rowTile, intDotRows)
		}
		shared := axesBesideVector(vec.tensor, vec.axis)
		row, rowShared := -1, false
		for r, o := range splits {
			if !o.spatial || o.stage != vec.stage || o.k == vec.k {
				continue
			}
			better := row < 0 || shared[o.axis] && !rowShared || shared[o.axis] == rowShared && o.ext > splits[row].ext
			if better {
				row, rowShared = r, shared[o.axis]
			}
		}
		rows := 1
		if row >= 0 {
			rows = rowLength(splits[row].ext, rowTile)
			inner[splits[row].k] = rows
			if streamsWeights(vec.tensor, vec.axis, l2) {
				rowsInside[splits[row].k] = true
			}
		}
		if te.IsContraction(vec.tensor) && len(constMatrixIndexVars(vec.tensor)) == 0 {
			inner[vec.k] = widenForFewRows(vec.ext, inner[vec.k], lanes, vecs, rows, rowTile)
		}
	}
	steps := slices.Clone(sk.Steps)
	for _, sp := range splits {
		old := steps[sp.k].(*schedule.Split)
		lengths := make([]int, len(old.Lengths))
		for i := range lengths {
			lengths[i] = 1
		}
		in := max(inner[sp.k], 1)
		lengths[len(lengths)-1] = in
		if rowsInside[sp.k] && len(lengths) >= 2 && sp.ext%in == 0 {
			lengths[0] = sp.ext / in // level 1, inside the vector axis's outer loop
		}
		steps[sp.k] = &schedule.Split{Stage: old.Stage, Iter: old.Iter, Lengths: lengths}
	}
	return schedule.Replay(schedule.NewState(sk.DAG), steps)
}

// tailTile returns the width of a contraction's vector tile, in whole
// vectors, for a vector axis of ext channels that no vector divides (or
// only a fraction of one: RegNet-X's 408 = 25.5 × 16 lanes) and that is
// longer than maxWholeVectors vectors: the last tile is guarded (lowering
// guards a split that does not divide), its lanes beyond ext masked.
// Of the tile's width and one vector, the one that pads ext the least,
// the wider at a tie; 0 where the rule does not apply: a grouped
// contraction (laneGroup), whose vector must stay within a group, keeps
// its narrower vectors, and so do an axis of fewer than minTailTiles
// tiles and a stage of fewer than minTailRows rows (rowExt: its longest
// other spatial axis). At AVX-512's 16 lanes the 8-lane vectors these
// axes had before ran at half the width: RegNet-X's 1×1 convolutions of
// 408 channels 0.147 -> 0.090 ms (int8, Zen 5).
func tailTile(t *te.Tensor, axis string, ext, rowExt, lanes, tile int) int {
	if !te.IsContraction(t) || lanes < minLanes || ext <= maxWholeVectors*lanes || rowExt < minTailRows || laneGroup(t, axis) != 0 || len(constMatrixIndexVars(t)) > 0 {
		return 0
	}
	pad := func(w int) int { return (ext+w-1)/w*w - ext }
	w := max(tile/lanes, 1) * lanes
	if pad(lanes) < pad(w) {
		w = lanes
	}
	if (ext+w-1)/w < minTailTiles {
		return 0
	}
	return w
}

// minTailTiles is the fewest tiles a tailTile axis is cut into: the
// guarded last one costs several whole ones (its accumulators are masked
// lane by lane), so it must be a small share. RegNet-X's 72 channels in 5
// tiles of 16: its 1×1 convolution at 112×112 went 0.21 -> 0.69 ms.
const minTailTiles = 8

// minTailRows is the fewest rows a tailTile stage has: a matrix-vector
// product (a classifier at batch 1: no row axis at all) accumulates in its
// output, not in a register tile whose guarded stores the code generator
// versions, and its guard went to every lane of every statement:
// ResNet-18's 1000-way classifier 0.063 -> 0.19 ms, 477 -> 11,638 lines
// of C.
const minTailRows = 4

// maxWideVectors bounds the vectors of a register tile widened for few
// rows (widenForFewRows).
const maxWideVectors = 8

// widenForFewRows returns the vector axis's tile (of ext, now tile lanes,
// vecs vectors) for a stage whose row axis gives only rows of the rowTile
// rows the register tile was sized for: a matrix-vector product (a GRU
// step's h·R, a classifier or squeeze-excite layer at batch 1) has one row,
// and with two vectors its tile had two accumulators, each a chain of
// dependent multiply-adds that waited for the last (4 cycles each): 14 of
// a GRU step's 17.5 us. The tile takes the accumulators the rows left
// (rowTile·vecs over rows, at most maxWideVectors vectors, a power of two
// of lanes dividing ext): one row of 8 vectors on AVX2. The caller widens
// the register tiles of contractions only (a matmul, a convolution, a
// matrix-vector product: te.IsContraction), not of a constant matrix (one
// vector: maxInnerSplit) nor a pooling window.
func widenForFewRows(ext, tile, lanes, vecs, rows, rowTile int) int {
	if lanes < minLanes || rows*2 > rowTile || tile != vecs*lanes || tile&(tile-1) != 0 {
		return tile
	}
	want := min(rowTile*vecs/rows, maxWideVectors) * lanes
	if l := largestDivisor(ext, want, true); l > tile && l&(l-1) == 0 {
		return l
	}
	return tile
}

// streamsWeights reports whether the weights t reads along its vector axis
// vec (constant placeholders) are more than l2 bytes (more than the L2
// holds; never where l2 is 0) and larger than everything else it reads:
// a matmul of few rows by a large weight
// (a transformer's linear layers at batch 1). Its default tile order then
// puts the row tiles inside the vector axis's outer loop, so each panel of
// the weight is read from memory once and serves every row tile from the
// cache, instead of the whole weight streamed once per row tile (ViT-B/32's
// 50 tokens in 5 tiles of 10 read each 9.4 MB weight 5 times).
func streamsWeights(t *te.Tensor, vec string, l2 int) bool {
	if t.Body == nil || l2 <= 0 {
		return false
	}
	weights, other := 0, 0
	seen := map[*tir.Buffer]bool{}
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		ld, ok := e.(*tir.Load)
		if !ok || seen[ld.Buf] {
			return true
		}
		seen[ld.Buf] = true
		bytes := 4 * ld.Buf.Size()
		src, _ := ld.Buf.Owner.(*te.Tensor)
		alongVec := false
		for _, idx := range ld.Indices {
			alongVec = alongVec || tir.UsesVar(idx, func(v *tir.Var) bool { return v.Name == vec })
		}
		if src != nil && src.Const && alongVec {
			weights += bytes
		} else {
			other += bytes
		}
		return true
	})
	return weights > l2 && weights > other
}

// rowLength returns the rows of the register tile along an axis of ext
// iterations: the largest divisor of ext up to rows, or, where that is
// under half of rows (a prime 17 or 149, Inception's sizes), the length
// of at least half of rows whose tiles cover ext with the least padding
// (the longer of equals): lowering guards the last tile, which beats a
// tile of one row. Measured on Inception v3's 3×3 stride-2 convolution to
// 17×17 (one thread, AMD EPYC Zen 5): 1 row 45 ms, 9 rows (two tiles, one
// padded row) below 5 ms.
func rowLength(ext, rows int) int {
	d := largestDivisor(ext, rows, false)
	if 2*d >= rows || ext <= rows {
		return d
	}
	best, waste := d, ext
	for t := (rows + 1) / 2; t <= rows; t++ {
		if w := (ext+t-1)/t*t - ext; w <= waste {
			best, waste = t, w
		}
	}
	return best
}

// axesBesideVector returns the axes of t that no load of t's body reading
// along axis vec uses: along them, a vector load of the vec axis is the
// same.
func axesBesideVector(t *te.Tensor, vec string) map[string]bool {
	out := map[string]bool{}
	for _, a := range t.Axis {
		out[a.Var.Name] = true
	}
	if t.Body == nil {
		return out
	}
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		ld, ok := e.(*tir.Load)
		if !ok {
			return true
		}
		used := map[string]bool{}
		for _, idx := range ld.Indices {
			tir.WalkExpr(idx, func(e tir.Expr) bool {
				if v, ok := e.(*tir.Var); ok {
					used[v.Name] = true
				}
				return true
			})
		}
		if used[vec] {
			for name := range used {
				out[name] = false
			}
		}
		return true
	})
	return out
}

// The register tile of an integer contraction (int32 sums of 8-bit
// products, a dot-product instruction per group of four): intDotVectors
// vectors by at most intDotRows rows. Its broadcast of four activation
// bytes cannot be an operand of vpdpbusd in memory (an FMA takes its
// float broadcast so: the 16 × 16 float tile of AVX-512), so each one
// feeds two; 8 rows keep the 16 accumulators and the unrolled groups'
// weight vectors within 32 registers (14 rows spilled). Zen 5, one
// thread: the 1024³ u8×s8 GEMM 895 → 959 GOP/s (oneDNN's u8s8s32 929 in
// the same run), ResNet-18 int8's tasks 4.67–5.25 → 4.52–4.58 ms. On
// AVX2 the float tile is two vectors already (RegisterTile).
const (
	intDotVectors = 2
	intDotRows    = 8
)

// bf16Contraction reports whether t is a float32 contraction of bfloat16
// operands (a paired product of a bf16 build: ops.lowerCtx.pairs), which
// codegen emits as vdpbf16ps (or bfdot): its broadcast pair of
// activations is a load of its own, as the integer dots' broadcast is, so
// it takes their register tile. With the float tile (16 rows by one
// vector) every product had a load beside it: the BERT layer's 128 × 768
// by 768 × 3072 product ran at 58% of the bf16 peak, default and tuned
// alike (Zen 5, one thread).
func bf16Contraction(t *te.Tensor) bool {
	if t.DType() != tir.Float32 || !te.IsContraction(t) {
		return false
	}
	bf16 := func(e tir.Expr) bool {
		l, ok := e.(*tir.Load)
		return ok && l.Buf.DType == tir.BFloat16
	}
	found := false
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if found {
			return false
		}
		if l, ok := e.(*tir.Load); ok {
			// A bfloat16 buffer, or a conversion stage of one (inlined or not).
			p, _ := l.Buf.Owner.(*te.Tensor)
			c, isCast := (*tir.Cast)(nil), false
			if p != nil {
				c, isCast = p.Body.(*tir.Cast)
			}
			found = bf16(l) || isCast && bf16(c.X)
		}
		return !found
	})
	return found
}

// intContraction reports whether t is an integer contraction: int32 sums
// of products (of 8-bit operands, in dot groups where the lowering formed
// them).
func intContraction(t *te.Tensor) bool { return t.DType() == tir.Int32 && te.IsContraction(t) }

// laneGroup returns the greatest common divisor of the constant divisors
// g of floordiv(axis·k + …, g) in the indices of t's loads (a grouped
// convolution reads the input channels of output channel m's group at
// floordiv(m, g)), or 0 for none. A vector of the axis whose lanes span
// two groups reads its activations lane by lane (a 16-lane vector of
// RegNet-X's 24-channel groups); one within a group reads one value for
// all lanes, which the integer dot products need. Integer sums only: on
// a Zen 5 (16 lanes), RegNet-X int8 10.0 → 8.9 ms (a stride-2 grouped
// convolution 0.66 → 0.065 ms), ResNeXt-50 int8 16.2 → 14.1; the float
// ResNeXt-50 went the other way (its 4- and 8-channel groups at 4 and 8
// lanes: 60 → 75 ms, the tasks' sum in tune bench --profile).
func laneGroup(t *te.Tensor, axis string) int {
	if t.Body == nil {
		return 0
	}
	g := 0
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		b, ok := e.(*tir.Binary)
		if !ok || b.Op != tir.FloorDiv || b.A == nil || b.B == nil {
			return true
		}
		d, isConst := tir.IsConst(b.B)
		if !isConst || d <= 1 {
			return true
		}
		uses := false
		tir.WalkExpr(b.A, func(e tir.Expr) bool {
			if v, ok := e.(*tir.Var); ok && v.Name == axis {
				uses = true
			}
			return !uses
		})
		if uses {
			g = int(tir.GCD(int64(g), d))
		}
		return true
	})
	return g
}

// largestDivisor returns the largest divisor of n that is at most limit;
// with pow2, the largest power of two among them unless that is below 4.
func largestDivisor(n, limit int, pow2 bool) int {
	best, bestPow2 := 1, 1
	for d := 1; d <= min(n, limit); d++ {
		if n%d == 0 {
			best = d
			if d&(d-1) == 0 {
				bestPow2 = d
			}
		}
	}
	if pow2 && bestPow2 >= 4 {
		return bestPow2
	}
	return best
}
