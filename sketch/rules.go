package sketch

import (
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// cpuRules is the CPU rule list, in Ansor's order. A rule is added by
// writing its type and putting it here; no rule knows about the others.
var cpuRules = []Rule{
	inlineOrKeepGuardedWindow{},
	inlineOrKeepTranspose{},
	inlineOrKeepQuantizedOperand{},
	inlineOrKeepShared{},
	alwaysInline{},
	simplifyConstTensor{},
	addRfactor{},
	addCacheWrite{},
	tilingWithFusion{},
	tiling{},
	reduceOutsideLanes{},
	skipStage{},
}

// schedulable reports whether stage i is a computation still at its
// initial place (rules only touch stages no earlier rule changed).
func schedulable(s *schedule.State, i int) bool {
	st := s.Stages[i]
	return !st.IsPlaceholder() && st.Attach == schedule.Root
}

// alwaysInline inlines a cheap injective stage (no reduction, no expensive
// math) into its consumers.
type alwaysInline struct{}

func (alwaysInline) Name() string { return "always_inline" }

func (alwaysInline) Condition(g *generator, s *schedule.State, i int) Cond {
	st := s.Stages[i]
	if !schedulable(s, i) || st.Output || !te.IsStrictlyInlineable(st.Tensor) || len(s.Consumers(i)) == 0 {
		return Skip
	}
	return ApplyAndSkipRest
}

func (alwaysInline) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	n, err := s.Apply(&schedule.ComputeInline{Stage: i})
	if err != nil {
		return nil, err
	}
	return []next{{n, i - 1}}, nil
}

// inlineOrKeepGuardedWindow forks on a cheap injective stage whose value
// is guarded (a Select: padding) and which a reduction reads through a
// sliding window (an index mixing a spatial and a reduce variable): one
// sketch inlines it, as always_inline would; in the other it stays a stage
// of its own, for the annotator to place. Inlined, the guard is evaluated
// again for every tap of the window, lane by lane where it depends on the
// vector lane, which makes large and slow code; kept, it costs one pass
// over the padded tensor.
type inlineOrKeepGuardedWindow struct{}

func (inlineOrKeepGuardedWindow) Name() string { return "inline_or_keep_guarded_window" }

func (inlineOrKeepGuardedWindow) Condition(g *generator, s *schedule.State, i int) Cond {
	if (alwaysInline{}).Condition(g, s, i) == Skip || !guarded(s.Stages[i].Tensor.Body) {
		return Skip
	}
	for _, c := range effectiveConsumers(s, i) {
		if windowed(s, i, c) || reduceGuarded(s, i, c) || guardReused(s, i, c) {
			return ApplyAndSkipRest
		}
	}
	return Skip
}

func (inlineOrKeepGuardedWindow) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	inlined, err := alwaysInline{}.Apply(g, s, i)
	if err != nil {
		return nil, err
	}
	if keepGuardFirst(s, i) {
		return append([]next{{s, i - 1}}, inlined...), nil
	}
	return append(inlined, next{s, i - 1}), nil
}

// keepGuardFirst reports whether inlineOrKeepGuardedWindow's first sketch
// (the default schedule's) keeps guarded stage i rather than inlining it.
func keepGuardFirst(s *schedule.State, i int) bool {
	summed := slices.ContainsFunc(effectiveConsumers(s, i), func(c int) bool { return reduceGuarded(s, i, c) || guardReused(s, i, c) })
	if (widensIntegers(s, i) || isByte(s.Stages[i].Tensor.DType()) || s.Stages[i].Tensor.DType() == tir.BFloat16) && reusedAcross(s, i) || steppedWindow(s, i) || summed {
		// Kept first, for the default schedule: inlined, every tap of
		// the window loads a byte, converts it and tests the guard before
		// its one multiply-add (the float-summed integer convolution
		// of a quantized model's first layer, ResNet-18's: 5.7 ms against
		// 3.2 on float input); kept, the window reads floats. Not for a
		// window whose every element feeds a few taps only (a depthwise
		// convolution): there, writing the padded floats and reading them
		// back costs more than the conversions (MobileNetV2's stride-2
		// depthwise convolution of 96 channels: a 5 MB float copy).
		// A window of bytes (an integer convolution's padded uint8
		// input) likewise: inlined, the guards of every tap sit in the
		// dot-product loop, where GCC keeps them live and spills
		// (ResNet-18's 3×3 convolutions of 128 channels: 1.5 ms, 1.3
		// kept), and an NCHW image's groups of W taps (te.IntConvOptions.
		// DotW) have a guard each, which no dot helper takes; the same
		// for a bfloat16 window (te.ConvToNHWCDotW's pairs of W taps:
		// ResNet-18's bf16 stem).
		// So is a window whose index steps with a spatial variable
		// (a floor division: ConvTranspose's phases, te.ConvTranspose,
		// read t + ⌈(pad − r)/s⌉ − j): inlined, its guard is no range of
		// lanes that the border split or a vector comparison can take,
		// and every vector it cuts loads lane by lane (a DCGAN layer's
		// 16-wide rows, where every row has a border: 5.5 ms, 4.5 for the
		// columns' form), and a guarded stage a reduction sums along the
		// axis its guard tests (reduceGuarded), or reads again for
		// every column of its output (guardReused).
		return true
	}
	return false
}

// reduceGuarded reports whether reduction c reads stage i, in an axis
// that stage i's guard tests, at an index of c's reduce variables alone: a
// Concat along the channels that a 1×1 convolution sums (DeepLab's ASPP
// projection of 3 × 256 channels). Inlined, the guard is evaluated at every
// step of the reduction, where no border split reaches it (the projection:
// 11.5 ms, 37 GFLOP/s); kept, the stage is a copy and the reduction reads
// one tensor.
func reduceGuarded(s *schedule.State, i, c int) bool {
	ct := s.Stages[c].Tensor
	if len(ct.ReduceAxis) == 0 || s.Stages[i].Tensor.Matrix != nil {
		return false // a constant matrix's selects are its entries, for simplifyConstTensor to fold
	}
	spatial, reduce := axisVars(ct)
	t := s.Stages[i].Tensor
	inGuard := guardVars(t)
	found := false
	tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && l.Buf == t.Buf {
			for d, ix := range l.Indices {
				if d < len(t.Axis) && inGuard[t.Axis[d].Var] && tir.UsesVar(ix, isIn(reduce)) && !tir.UsesVar(ix, isIn(spatial)) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// guardReused reports whether contraction c (a stage the tiling rules
// tile: a matmul, a convolution) reads guarded stage i outside a window
// (windowed), in an axis i's guard tests, at an index of c's spatial
// variables, and reads the same element again for every value of another
// spatial axis of c at least minGuardReuse long: Swin's shifted windows, a
// roll (two Slices and a Concat per axis) read by the qkv projection (196
// tokens by 384 channels, times 384 × 1152). Inlined, the roll's selects
// and both of their loads ran in the innermost loop, for each of the 1152
// columns (80 GFLOP/s, against 183 for the same projection of the blocks
// without a shift); kept, they are one copy of the tokens.
func guardReused(s *schedule.State, i, c int) bool {
	ct, t := s.Stages[c].Tensor, s.Stages[i].Tensor
	if len(ct.ReduceAxis) == 0 || t.Matrix != nil || !te.NeedsMultiLevelTiling(ct) || windowed(s, i, c) {
		return false
	}
	spatial, _ := axisVars(ct)
	inGuard := guardVars(t)
	found := false
	tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
		l, ok := e.(*tir.Load)
		if !ok || l.Buf != t.Buf {
			return !found
		}
		tested := false
		for d, ix := range l.Indices {
			tested = tested || d < len(t.Axis) && inGuard[t.Axis[d].Var] && tir.UsesVar(ix, isIn(spatial))
		}
		found = tested && slices.ContainsFunc(ct.Axis, func(ax te.IterVar) bool {
			return ax.Extent >= minGuardReuse && !slices.ContainsFunc(l.Indices, func(ix tir.Expr) bool {
				return tir.UsesVar(ix, func(v *tir.Var) bool { return v == ax.Var })
			})
		})
		return !found
	})
	return found
}

// minGuardReuse is the fewest times guardReused asks a contraction to read
// each element of a guarded stage again before the stage is kept.
const minGuardReuse = 16

// axisVars returns the sets of t's spatial and reduce variables.
func axisVars(t *te.Tensor) (spatial, reduce map[*tir.Var]bool) {
	spatial, reduce = map[*tir.Var]bool{}, map[*tir.Var]bool{}
	for _, a := range t.Axis {
		spatial[a.Var] = true
	}
	for _, a := range t.ReduceAxis {
		reduce[a.Var] = true
	}
	return spatial, reduce
}

// guardVars is the set of the variables that the guards (Selects) of t's
// body test.
func guardVars(t *te.Tensor) map[*tir.Var]bool {
	in := map[*tir.Var]bool{}
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if sel, ok := e.(*tir.Select); ok {
			tir.WalkExpr(sel.Cond, func(x tir.Expr) bool {
				if v, ok := x.(*tir.Var); ok {
					in[v] = true
				}
				return true
			})
		}
		return true
	})
	return in
}

// steppedWindow reports whether a reduction reads stage i through a
// window (windowed) at an index holding a floor division or remainder, in
// an axis that stage i's guard tests (a grouped convolution's channel
// index floor(m / M/G)·C/G + c does not count: its padding guards the
// rows and columns).
func steppedWindow(s *schedule.State, i int) bool {
	t := s.Stages[i].Tensor
	inGuard := guardVars(t)
	for _, c := range effectiveConsumers(s, i) {
		if !windowed(s, i, c) || len(constMatrixIndexVars(s.Stages[c].Tensor)) > 0 {
			// A Winograd data pack reads its tiles at floor(p / tiles)·m + ν,
			// and simplifyConstTensor schedules it with the padding inlined.
			continue
		}
		found := false
		tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
			if l, ok := e.(*tir.Load); ok && l.Buf == t.Buf {
				for d, ix := range l.Indices {
					if d >= len(t.Axis) || !inGuard[t.Axis[d].Var] {
						continue
					}
					tir.WalkExpr(ix, func(x tir.Expr) bool {
						if b, ok := x.(*tir.Binary); ok && (b.Op == tir.FloorDiv || b.Op == tir.FloorMod) {
							found = true
						}
						return !found
					})
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// isByte reports whether dt is an 8-bit integer type.
func isByte(dt tir.DType) bool { return dt == tir.Uint8 || dt == tir.Int8 }

// reusedAcross reports whether a consumer of stage i reads it without one
// of its own spatial axes of extent > 1 (a convolution's output channels:
// each element of the window feeds every one of them).
func reusedAcross(s *schedule.State, i int) bool {
	buf := s.Stages[i].Tensor.Buf
	for _, c := range effectiveConsumers(s, i) {
		axes := s.Stages[c].Tensor.Axis
		found := false
		tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
			l, ok := e.(*tir.Load)
			if !ok || l.Buf != buf {
				return true
			}
			for _, ax := range axes {
				used := slices.ContainsFunc(l.Indices, func(ix tir.Expr) bool { return tir.UsesVar(ix, func(v *tir.Var) bool { return v == ax.Var }) })
				found = found || ax.Extent > 1 && !used
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// widensIntegers reports whether stage i converts integers to float32, in
// its body or in a stage its body reads that is computed (and inlined)
// from integers.
func widensIntegers(s *schedule.State, i int) bool {
	widens := func(e tir.Expr) bool {
		found := false
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if c, ok := x.(*tir.Cast); ok && c.To == tir.Float32 && c.X != nil && c.X.Type().IntElem() {
				found = true
			}
			return !found
		})
		return found
	}
	body := s.Stages[i].Tensor.Body
	if widens(body) {
		return true
	}
	found := false
	tir.WalkExpr(body, func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok {
			for _, st := range s.Stages {
				if st.Tensor.Buf == l.Buf && !st.IsPlaceholder() && widens(st.Tensor.Body) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// inlineOrKeepTranspose forks on a cheap injective stage that moves its
// last axis (a transpose: attention's Kᵀ) and that a data-reuse stage (a
// matmul) reads along its own last spatial axis, the one the register
// tile vectorizes: one sketch inlines it, as always_inline would; in the
// other it stays a stage of its own, for the annotator to place (at the
// root, or under the consumer's outer loops: one head's Kᵀ at a time);
// that sketch comes first, so the default schedule keeps it.
// Inlined, every vector load of the tile is a gather across the source's
// rows; kept, the transpose is a copy (its reads strided once) and the
// matmul's loads are contiguous, as a GEMM library packs its operand.
type inlineOrKeepTranspose struct{}

func (inlineOrKeepTranspose) Name() string { return "inline_or_keep_transpose" }

func (inlineOrKeepTranspose) Condition(g *generator, s *schedule.State, i int) Cond {
	if (alwaysInline{}).Condition(g, s, i) == Skip || !movesLastAxis(s.Stages[i].Tensor) {
		return Skip
	}
	for _, c := range effectiveConsumers(s, i) {
		if te.NeedsMultiLevelTiling(s.Stages[c].Tensor) && readsAlongLast(s, i, c) {
			return ApplyAndSkipRest
		}
	}
	return Skip
}

func (inlineOrKeepTranspose) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	return keptThenInlined(g, s, i)
}

// keptThenInlined forks on stage i: kept as a stage of its own, first (the
// default schedule is made from the first sketch), then inlined.
func keptThenInlined(g *generator, s *schedule.State, i int) ([]next, error) {
	inlined, err := alwaysInline{}.Apply(g, s, i)
	if err != nil {
		return nil, err
	}
	return append([]next{{s, i - 1}}, inlined...), nil
}

// inlineOrKeepShared forks on a cheap injective stage that two or more
// stages read and whose value, with the cheap stages it will absorb,
// takes many operations (minSharedOps): one sketch, first, keeps it a
// stage of its own, computed once; the other inlines it, as always_inline
// would, and every consumer computes it again. A quantized BERT layer's
// softmax input (its scores and its mask each quantized and dequantized,
// added, the sum quantized and dequantized again) was computed by the row
// maximum and again by the exponentials: 0.26–0.30 ms of the attention's
// 0.73–0.89, and 0.09 kept (Zen 5, one thread).
type inlineOrKeepShared struct{}

func (inlineOrKeepShared) Name() string { return "inline_or_keep_shared" }

// minSharedOps is the fewest operations (sharedOps) of a stage read by
// several that inline_or_keep_shared keeps: a float softmax's input (a
// matmul's scores plus a mask) takes a few, the quantized one 30 or more.
const minSharedOps = 16

func (inlineOrKeepShared) Condition(g *generator, s *schedule.State, i int) Cond {
	if (alwaysInline{}).Condition(g, s, i) == Skip || len(effectiveConsumers(s, i)) < 2 || sharedOps(s, i, map[int]int{}) < minSharedOps {
		return Skip
	}
	return ApplyAndSkipRest
}

func (inlineOrKeepShared) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	return keptThenInlined(g, s, i)
}

// sharedOps counts the operations, math calls, conversions and loads of
// stage i's body, with those of every producer that always_inline would
// inline into it (memo: by stage).
func sharedOps(s *schedule.State, i int, memo map[int]int) int {
	if n, ok := memo[i]; ok {
		return n
	}
	memo[i] = 0 // a cycle cannot occur in a DAG; this only stops recounting
	n := 0
	tir.WalkExpr(s.Stages[i].Tensor.Body, func(e tir.Expr) bool {
		switch e := e.(type) {
		case *tir.Binary, *tir.Call, *tir.Cast, *tir.Select:
			n++
		case *tir.Load:
			n++
			for j, st := range s.Stages {
				if st.Tensor.Buf == e.Buf && j != i && schedulable(s, j) && te.IsStrictlyInlineable(st.Tensor) {
					n += sharedOps(s, j, memo)
				}
			}
			return false // an index's arithmetic is not the value's
		}
		return true
	})
	memo[i] = n
	return n
}

// inlineOrKeepQuantizedOperand forks on a cheap injective stage of 8-bit
// integers (a quantized tensor: a requantized value, a transpose or a
// reshape of one) that a data-reuse stage (an integer matmul or
// convolution) reads: one sketch inlines it, as always_inline would; in
// the other, first, it stays a stage of its own. Inlined, its work (the
// float round trip of a requantization, a transpose's index arithmetic)
// runs again for every reuse of each element, inside the reduction, and
// code generation finds no groups of four adjacent bytes for its
// dot-product helpers (a BERT layer's attention output projection read
// its transposed, reshaped input that way: 23 ms instead of 1.4); kept, it
// costs one pass over a tensor of a byte an element.
type inlineOrKeepQuantizedOperand struct{}

func (inlineOrKeepQuantizedOperand) Name() string { return "inline_or_keep_quantized_operand" }

func (inlineOrKeepQuantizedOperand) Condition(g *generator, s *schedule.State, i int) Cond {
	if (alwaysInline{}).Condition(g, s, i) == Skip {
		return Skip
	}
	if dt := s.Stages[i].Tensor.DType(); dt != tir.Uint8 && dt != tir.Int8 {
		return Skip
	}
	for _, c := range effectiveConsumers(s, i) {
		if te.NeedsMultiLevelTiling(s.Stages[c].Tensor) {
			return ApplyAndSkipRest
		}
	}
	return Skip
}

func (inlineOrKeepQuantizedOperand) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	return keptThenInlined(g, s, i)
}

// movesLastAxis reports whether t reads its inputs, each load of them,
// with an index whose last position does not use t's last axis: walking t
// along its last axis strides through what it reads.
func movesLastAxis(t *te.Tensor) bool {
	if t.Body == nil || len(t.Axis) == 0 {
		return false
	}
	last := t.Axis[len(t.Axis)-1].Var
	loads, moved := 0, 0
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && len(l.Indices) > 0 {
			loads++
			if !tir.UsesVar(l.Indices[len(l.Indices)-1], func(v *tir.Var) bool { return v == last }) &&
				slices.ContainsFunc(l.Indices, func(ix tir.Expr) bool { return tir.UsesVar(ix, func(v *tir.Var) bool { return v == last }) }) {
				moved++
			}
		}
		return true
	})
	return loads > 0 && moved == loads
}

// readsAlongLast reports whether stage c reads stage i with c's last
// spatial axis in the last index: contiguous along the vector axis.
func readsAlongLast(s *schedule.State, i, c int) bool {
	ct := s.Stages[c].Tensor
	if len(ct.Axis) == 0 {
		return false
	}
	last := ct.Axis[len(ct.Axis)-1].Var
	buf := s.Stages[i].Tensor.Buf
	found := false
	tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && l.Buf == buf && len(l.Indices) > 0 {
			found = found || tir.UsesVar(l.Indices[len(l.Indices)-1], func(v *tir.Var) bool { return v == last })
		}
		return !found
	})
	return found
}

// guarded reports whether e contains a Select.
func guarded(e tir.Expr) bool {
	found := false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		_, found = x.(*tir.Select)
		return !found
	})
	return found
}

// windowed reports whether reduction stage c reads stage i with an index
// that mixes one of c's spatial variables and one of its reduce variables.
func windowed(s *schedule.State, i, c int) bool {
	ct := s.Stages[c].Tensor
	if len(ct.ReduceAxis) == 0 {
		return false
	}
	spatial, reduce := axisVars(ct)
	buf := s.Stages[i].Tensor.Buf
	found := false
	tir.WalkExpr(effectiveBody(s, c), func(e tir.Expr) bool {
		l, ok := e.(*tir.Load)
		if !ok || l.Buf != buf {
			return !found
		}
		for _, ix := range l.Indices {
			found = found || tir.UsesVar(ix, isIn(spatial)) && tir.UsesVar(ix, isIn(reduce))
		}
		return !found
	})
	return found
}

func isIn(set map[*tir.Var]bool) func(*tir.Var) bool {
	return func(v *tir.Var) bool { return set[v] }
}

// addRfactor factors a reduction whose output is too small to keep the
// cores busy: the reduce loops are fused and split, and either part becomes
// a spatial axis of a partial reduction (two sketches). The state without
// rfactor goes on through the later rules too.
type addRfactor struct{}

func (addRfactor) Name() string { return "add_rfactor" }

func (addRfactor) Condition(g *generator, s *schedule.State, i int) Cond {
	st := s.Stages[i]
	if !schedulable(s, i) || !te.HasReduce(st.Tensor) || te.NeedsMultiLevelTiling(st.Tensor) {
		return Skip
	}
	spatial, reduce := 1, 1
	for _, a := range st.Tensor.Axis {
		spatial *= a.Extent
	}
	for _, a := range st.Tensor.ReduceAxis {
		reduce *= a.Extent
	}
	if spatial <= 16*g.opts.Cores && reduce > spatial && reduce >= 16 {
		return Apply
	}
	return Skip
}

func (addRfactor) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	st := s.Stages[i]
	first := len(st.Tensor.Axis)
	n := len(st.Iters)
	var err error
	if n-first > 1 {
		iters := make([]int, 0, n-first)
		for p := first; p < n; p++ {
			iters = append(iters, p)
		}
		if s, err = s.Apply(&schedule.Fuse{Stage: i, Iters: iters}); err != nil {
			return nil, err
		}
	}
	if s, err = s.Apply(&schedule.Split{Stage: i, Iter: first, Lengths: []int{0}}); err != nil {
		return nil, err
	}
	var out []next
	for _, part := range []int{first, first + 1} {
		n, err := s.Apply(&schedule.Rfactor{Stage: i, Iter: part})
		if err != nil {
			return nil, err
		}
		if part == first && contiguousSpatial(n, i) {
			// A channels-last pooling (out[c] = Σ x[h, w, c]): with the
			// partial sums' loop over c outermost, each channel walked
			// the whole input at the stride of a pixel (a 1.8 MB map of
			// 32 channels took 1.2 ms); the chunks of pixels outermost,
			// each reads its pixels once, every channel of them.
			rf := n.Stages[i]
			ns := len(rf.Tensor.Axis)
			order := []int{ns - 1}
			for p := range len(rf.Iters) {
				if p != ns-1 {
					order = append(order, p)
				}
			}
			if n, err = n.Apply(&schedule.Reorder{Stage: i, Order: order}); err != nil {
				return nil, err
			}
		}
		// The partial reduction now sits at i, the final one at i+1; both
		// are left to annotation.
		out = append(out, next{n, i - 1})
	}
	return out, nil
}

// contiguousSpatial reports whether stage i (a partial reduction whose
// last spatial axis is its factor) reads some input along its contiguous
// last axis by one of its other spatial axes: a reduction over the outer
// axes of a channels-last tensor.
func contiguousSpatial(s *schedule.State, i int) bool {
	t := s.Stages[i].Tensor
	if len(t.Axis) < 2 || len(t.ReduceAxis) == 0 {
		return false
	}
	spatial := map[*tir.Var]bool{}
	for _, a := range t.Axis[:len(t.Axis)-1] {
		if a.Extent > 1 {
			spatial[a.Var] = true
		}
	}
	found := false
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && len(l.Indices) > 0 && l.Buf.Shape[len(l.Buf.Shape)-1] > 1 {
			found = found || tir.UsesVar(l.Indices[len(l.Indices)-1], isIn(spatial))
		}
		return !found
	})
	return found
}

// addCacheWrite gives a stage with data reuse and no fusible consumer a
// local accumulation stage; the local stage is then tiled with the copy
// as its fused consumer. The state without it goes on too.
type addCacheWrite struct{}

func (addCacheWrite) Name() string { return "add_cache_write" }

func (addCacheWrite) Condition(g *generator, s *schedule.State, i int) Cond {
	if !schedulable(s, i) || !te.NeedsMultiLevelTiling(s.Stages[i].Tensor) || fusibleConsumer(s, i) >= 0 {
		return Skip
	}
	return Apply
}

func (addCacheWrite) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	n, err := s.Apply(&schedule.CacheWrite{Stage: i, Scope: tir.Local})
	if err != nil {
		return nil, err
	}
	return []next{{n, i}}, nil
}

// tilingWithFusion tiles a stage with data reuse and fuses its single
// elementwise consumer at each configured spatial tile level: the consumer
// follows the stage's outer tiles and the stage is computed inside them.
type tilingWithFusion struct{}

func (tilingWithFusion) Name() string { return "multi_level_tiling_with_fusion" }

func (tilingWithFusion) Condition(g *generator, s *schedule.State, i int) Cond {
	if !schedulable(s, i) || !te.NeedsMultiLevelTiling(s.Stages[i].Tensor) || fusibleConsumer(s, i) < 0 {
		return Skip
	}
	return ApplyAndSkipRest
}

func (tilingWithFusion) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	c := fusibleConsumer(s, i)
	tiled, splits, err := multiLevelTile(s, i, g.opts.TileStructure)
	if err != nil {
		return nil, err
	}
	var out []next
	for _, level := range g.opts.FusionLevels {
		if level < 1 || level >= strings.Count(g.opts.TileStructure, "S") {
			continue
		}
		n, err := followTiles(tiled, i, c, splits, level)
		if err != nil {
			return nil, err
		}
		out = append(out, next{n, i - 1})
	}
	return out, nil
}

// tiling tiles a stage with data reuse by the tile structure.
type tiling struct{}

func (tiling) Name() string { return "multi_level_tiling" }

func (tiling) Condition(g *generator, s *schedule.State, i int) Cond {
	if !schedulable(s, i) || !te.NeedsMultiLevelTiling(s.Stages[i].Tensor) {
		return Skip
	}
	return ApplyAndSkipRest
}

func (tiling) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	n, _, err := multiLevelTile(s, i, g.opts.TileStructure)
	if err != nil {
		return nil, err
	}
	return []next{{n, i - 1}}, nil
}

// reduceOutsideLanes gives a reduction without data reuse (a pooling, a
// sum over other than the last axis, a matrix-vector product) whose loads
// read its last spatial axis contiguously or not at all a second sketch:
// that axis is split and the reduce loops move between its parts, so the
// inner part is a run of contiguous lanes the annotator can vectorize, the
// window walked around a vector of accumulators. NHWC max pooling becomes, per
// pixel, 9 vector maxima over the channels instead of a scalar 9-tap loop
// per channel. A constant read only by this stage counts as contiguous
// whenever it is indexed by the last axis at all: the annotator repacks it
// in the order of the new loops (rewrite_layout), which puts that axis
// innermost — a classifier's Gemm with transB, y[j] = Σ_k x[k]·W[j, k],
// becomes vector FMAs over j. The state without it goes on to skip_stage.
type reduceOutsideLanes struct{}

func (reduceOutsideLanes) Name() string { return "reduce_outside_lanes" }

func (reduceOutsideLanes) Condition(g *generator, s *schedule.State, i int) Cond {
	st := s.Stages[i]
	t := st.Tensor
	if !schedulable(s, i) || !te.HasReduce(t) || te.NeedsMultiLevelTiling(t) || len(t.Axis) == 0 ||
		len(st.Iters) != len(t.Axis)+len(t.ReduceAxis) || t.Axis[len(t.Axis)-1].Extent < minLanes {
		return Skip
	}
	last := t.Axis[len(t.Axis)-1].Var
	reduce := map[*tir.Var]bool{}
	for _, a := range t.ReduceAxis {
		reduce[a.Var] = true
	}
	isLast := func(v *tir.Var) bool { return v == last }
	contiguous, ok := 0, true
	tir.WalkExpr(effectiveBody(s, i), func(e tir.Expr) bool {
		l, isLoad := e.(*tir.Load)
		if !isLoad || len(l.Indices) == 0 {
			return ok
		}
		if repackable(s, l.Buf) {
			if slices.ContainsFunc(l.Indices, func(ix tir.Expr) bool { return tir.UsesVar(ix, isLast) }) {
				contiguous++
			}
			return ok
		}
		// A load the last axis does not index is the same for every lane
		// (a broadcast); one it indexes must take it in its last index
		// alone, beside no reduce variable.
		n := len(l.Indices) - 1
		for _, ix := range l.Indices[:n] {
			ok = ok && !tir.UsesVar(ix, isLast)
		}
		if tir.UsesVar(l.Indices[n], isLast) {
			ok = ok && !tir.UsesVar(l.Indices[n], isIn(reduce))
			contiguous++
		}
		return ok
	})
	if !ok || contiguous == 0 {
		return Skip
	}
	return Apply
}

// repackable reports whether buf is a constant input that one stage reads
// (through inlined stages), so rewrite_layout can give it that stage's
// loop order.
func repackable(s *schedule.State, buf *tir.Buffer) bool {
	for j, st := range s.Stages {
		if st.Tensor.Buf == buf {
			return st.IsPlaceholder() && st.Tensor.Const && !st.Packed && len(effectiveConsumers(s, j)) == 1
		}
	}
	return false
}

// reducesOutsideLanes reports whether stage i's loop nest has the shape
// reduce_outside_lanes makes: its innermost loop spatial, a reduce loop
// outside it.
func reducesOutsideLanes(s *schedule.State, i int) bool {
	its := s.Stages[i].Iters
	n := len(its)
	return n >= 2 && its[n-1].Kind == schedule.Spatial && slices.ContainsFunc(its[:n-1], func(it schedule.Iter) bool { return it.Kind == schedule.Reduce })
}

func (reduceOutsideLanes) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	t := s.Stages[i].Tensor
	nS, nR := len(t.Axis), len(t.ReduceAxis)
	n, err := s.Apply(&schedule.Split{Stage: i, Iter: nS - 1, Lengths: []int{0}})
	if err != nil {
		return nil, err
	}
	// Iterators now: spatial 0..nS-2, last.outer (nS-1), last.inner (nS),
	// reduce nS+1..nS+nR.
	order := make([]int, 0, nS+1+nR)
	for p := 0; p < nS; p++ {
		order = append(order, p)
	}
	for p := nS + 1; p <= nS+nR; p++ {
		order = append(order, p)
	}
	order = append(order, nS)
	if n, err = n.Apply(&schedule.Reorder{Stage: i, Order: order}); err != nil {
		return nil, err
	}
	return []next{{n, i - 1}}, nil
}

// skipStage leaves a stage as it is (annotation will parallelize,
// vectorize or move it).
type skipStage struct{}

func (skipStage) Name() string                                          { return "skip_stage" }
func (skipStage) Condition(g *generator, s *schedule.State, i int) Cond { return Apply }
func (skipStage) Apply(g *generator, s *schedule.State, i int) ([]next, error) {
	return []next{{s, i - 1}}, nil
}

// fusibleConsumer returns the stage that can be fused with stage i as its
// elementwise consumer — the only consumer that reads it (possibly through
// inlined stages), reading it with exactly its own spatial axes, itself
// untouched — or -1.
func fusibleConsumer(s *schedule.State, i int) int {
	cons := effectiveConsumers(s, i)
	if len(cons) != 1 {
		return -1
	}
	c := cons[0]
	if !schedulable(s, c) || len(s.Stages[c].Iters) != len(s.Stages[c].Tensor.Axis) {
		return -1
	}
	body := effectiveBody(s, c)
	ct := s.Stages[c].Tensor
	if len(ct.ReduceAxis) > 0 || !sameShape(ct.Shape, s.Stages[i].Tensor.Shape) {
		return -1
	}
	buf := s.Stages[i].Tensor.Buf
	ok := true
	tir.WalkExpr(body, func(e tir.Expr) bool {
		if l, isLoad := e.(*tir.Load); isLoad && l.Buf == buf {
			for k, ix := range l.Indices {
				if v, isVar := ix.(*tir.Var); !isVar || v != ct.Axis[k].Var {
					ok = false
				}
			}
		}
		return ok
	})
	return map[bool]int{true: c, false: -1}[ok]
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// effectiveConsumers lists the non-inlined stages that read stage i,
// looking through inlined stages.
func effectiveConsumers(s *schedule.State, i int) []int {
	seen := map[int]bool{}
	var out []int
	var visit func(j int)
	visit = func(j int) {
		for _, c := range s.Consumers(j) {
			if seen[c] {
				continue
			}
			seen[c] = true
			if s.Stages[c].Attach == schedule.Inlined {
				visit(c)
			} else {
				out = append(out, c)
			}
		}
	}
	visit(i)
	return out
}

// effectiveBody returns stage c's body with the bodies of inlined stages
// substituted for their loads.
func effectiveBody(s *schedule.State, c int) tir.Expr {
	byBuf := map[*tir.Buffer]int{}
	for j, st := range s.Stages {
		byBuf[st.Tensor.Buf] = j
	}
	var subst func(e tir.Expr) tir.Expr
	subst = func(e tir.Expr) tir.Expr {
		return tir.MutateExpr(e, func(x tir.Expr) tir.Expr {
			l, ok := x.(*tir.Load)
			if !ok {
				return x
			}
			j, ok := byBuf[l.Buf]
			if !ok || s.Stages[j].Attach != schedule.Inlined {
				return x
			}
			p := s.Stages[j].Tensor
			m := map[*tir.Var]tir.Expr{}
			for k, a := range p.Axis {
				m[a.Var] = l.Indices[k]
			}
			return tir.Substitute(subst(p.Body), m)
		})
	}
	return subst(s.Stages[c].Tensor.Body)
}

// multiLevelTile splits every spatial axis of stage i into as many parts as
// the structure has S levels and every reduce axis into as many as it has R
// levels (lengths unfilled), then orders the parts by the structure. It
// returns the state and, per spatial axis, the index of its split step.
func multiLevelTile(s *schedule.State, i int, structure string) (*schedule.State, []int, error) {
	st := s.Stages[i]
	nS, nR := strings.Count(structure, "S"), strings.Count(structure, "R")
	nSpatial := len(st.Tensor.Axis)
	nIters := len(st.Iters)
	parts := make([]int, nIters)
	splitStep := make([]int, nSpatial)
	for a := range parts {
		parts[a] = nS
		if a >= nSpatial {
			parts[a] = max(nR, 1)
		}
	}
	// Split from the last axis to the first so positions stay valid.
	var err error
	for a := nIters - 1; a >= 0; a-- {
		if parts[a] < 2 {
			continue
		}
		if a < nSpatial {
			splitStep[a] = len(s.Steps)
		}
		if s, err = s.Apply(&schedule.Split{Stage: i, Iter: a, Lengths: make([]int, parts[a]-1)}); err != nil {
			return nil, nil, err
		}
	}
	base := make([]int, nIters)
	for a := 1; a < nIters; a++ {
		base[a] = base[a-1] + parts[a-1]
	}
	var order []int
	sLevel, rLevel := 0, 0
	for _, ch := range structure {
		if ch == 'S' {
			for a := 0; a < nSpatial; a++ {
				order = append(order, base[a]+sLevel)
			}
			sLevel++
		} else {
			for a := nSpatial; a < nIters; a++ {
				if rLevel < parts[a] {
					order = append(order, base[a]+rLevel)
				}
			}
			rLevel++
		}
	}
	if nR == 0 { // reduce axes unsplit: innermost
		for a := nSpatial; a < nIters; a++ {
			order = append(order, base[a])
		}
	}
	if s, err = s.Apply(&schedule.Reorder{Stage: i, Order: order}); err != nil {
		return nil, nil, err
	}
	return s, splitStep, nil
}

// followTiles splits consumer c's spatial axes to follow the first level
// spatial tile levels of stage i (split steps splits), orders the parts
// level by level, and computes stage i inside the consumer's innermost
// followed level.
func followTiles(s *schedule.State, i, c int, splits []int, level int) (*schedule.State, error) {
	n := len(s.Stages[c].Iters)
	var err error
	for a := n - 1; a >= 0; a-- {
		if s, err = s.Apply(&schedule.FollowSplit{Stage: c, Iter: a, SrcStep: splits[a], NParts: level + 1}); err != nil {
			return nil, err
		}
	}
	var order []int
	for l := 0; l <= level; l++ {
		for a := 0; a < n; a++ {
			order = append(order, a*(level+1)+l)
		}
	}
	if s, err = s.Apply(&schedule.Reorder{Stage: c, Order: order}); err != nil {
		return nil, err
	}
	return s.Apply(&schedule.ComputeAt{Stage: i, TargetStage: c, TargetIter: n*level - 1})
}
