package codegen

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// Transposed copies.
//
// A layout change vectorized along an axis that is strided in its source
// (Kᵀ packed for an attention's QKᵀ, a Transpose feeding a GEMM) reaches the
// printer as a run of vectorized copies, each a gather:
//
//	T[r_j + v] = B[q + j + s·v]    (lanes v, s the source's stride, j = 0, 1, ...)
//
// Printed one by one, each costs L scalar loads and L lane inserts. L of
// them with consecutive j read an L×L block of B whose rows are contiguous:
// such a group is printed as L row loads, a transpose in registers (log2 L
// rounds of L two-vector shuffles) and the L stores. The 16×64 Kᵀ tile of
// the BERT attention's QKᵀ took twice the GEMM's own time as gathers.
//
// Only straight copies between two different buffers are grouped, in a run
// of consecutive statements whose stores provably touch distinct elements,
// so that printing the run's copies in another order changes nothing.

// Register transposes take blocks of minTransposeLanes to
// maxTransposeLanes lanes (transposes): from a 128-bit vector (SSE, NEON)
// to AVX-512's 16 lanes, the widest vector register the machine model
// knows; L vectors of L lanes are the block. Narrower copies stay gathers:
// two lanes are not worth the shuffles.
const (
	minTransposeLanes = 4
	maxTransposeLanes = 16
)

// transposes reports whether vectors of L lanes are transposed in
// registers (tsr_transpose_vLf exists for them).
func transposes(L int) bool { return L >= minTransposeLanes && L <= maxTransposeLanes }

// tcopy is one copy in a run: a vectorized one of L lanes (group: of the
// form above, a transpose's part), a narrower or contiguous one, or one
// element (L 1). A run's copies that are not grouped are printed as they
// are, after the groups.
type tcopy struct {
	dst, src *tir.Buffer
	L        int
	group    bool
	stride   int64    // s
	q, r     tir.Expr // the source and destination indices less the lane's part
}

// copyOf reports whether st copies one buffer's elements into another's
// (float32, neither a scalarized Local), and how.
func (k *kernel) copyOf(st tir.Stmt) (tcopy, bool) {
	if k.gpu != nil {
		return tcopy{}, false
	}
	var s *tir.Store
	var p *vplan
	switch st := st.(type) {
	case *tir.Store:
		s = st
	case *tir.For:
		if st.Kind != tir.Vectorized || st.Var == nil || st.Extent < 2 || st.Extent > maxTransposeLanes || !isPow2(st.Extent) {
			return tcopy{}, false
		}
		if body, ok := st.Body.(*tir.Store); ok {
			if _, ok := body.Value.(*tir.Load); !ok {
				return tcopy{}, false // computes: no plan needed to tell
			}
		}
		p, _, _ = k.planVector(st, k.dom)
		if p == nil || len(p.items) != 1 || p.items[0].st == nil {
			return tcopy{}, false
		}
		s = p.items[0].st
	default:
		return tcopy{}, false
	}
	ld, ok := s.Value.(*tir.Load)
	if !ok || s.Buf.DType != tir.Float32 || ld.Buf.DType != tir.Float32 || ld.Buf == s.Buf {
		return tcopy{}, false
	}
	for _, b := range []*tir.Buffer{s.Buf, ld.Buf} {
		bb, err := k.lookupBuf(b)
		if err != nil || bb.scal != nil {
			return tcopy{}, false
		}
	}
	if p == nil {
		r, err1 := simplifiedIndex(s.Buf, s.Indices, k.dom)
		q, err2 := simplifiedIndex(ld.Buf, ld.Indices, k.dom)
		if err1 != nil || err2 != nil {
			return tcopy{}, false
		}
		return tcopy{dst: s.Buf, src: ld.Buf, L: 1, q: q, r: r}, true
	}
	dflat, err := p.flat(s.Buf, s.Indices)
	if err != nil {
		return tcopy{}, false
	}
	sflat, err := p.flat(ld.Buf, ld.Indices)
	if err != nil {
		return tcopy{}, false
	}
	dc, r, ok := tir.LinearIn(dflat, p.v)
	if !ok || dc != 1 {
		return tcopy{}, false
	}
	sc, q, ok := tir.LinearIn(sflat, p.v)
	if !ok {
		return tcopy{}, false
	}
	return tcopy{dst: s.Buf, src: ld.Buf, L: p.L, group: p.L >= minTransposeLanes && sc != 0 && sc != 1, stride: sc, q: q, r: r}, true
}

// kind is what copies must share to be grouped: lanes and stride.
type kind struct {
	L      int
	stride int64
}

// seqStmts prints a sequence, its runs of transposable copies grouped
// (nested sequences, an unrolled loop's copies of its body, flattened).
func (k *kernel) seqStmts(stmts []tir.Stmt) error {
	stmts = flattenSeq(stmts)
	for i := 0; i < len(stmts); {
		first, ok := k.copyOf(stmts[i])
		if !ok {
			if err := k.stmt(stmts[i]); err != nil {
				return err
			}
			i++
			continue
		}
		run := []tcopy{first}
		j := i + 1
		for ; j < len(stmts); j++ {
			c, ok := k.copyOf(stmts[j])
			if !ok || c.dst != first.dst || c.src != first.src {
				break
			}
			run = append(run, c)
		}
		if err := k.copyRun(run, stmts[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// copyRun prints a run of copies from one buffer to another: each group of
// L of one kind whose source indices are consecutive as a transpose, the
// rest as they are, after the groups.
func (k *kernel) copyRun(run []tcopy, stmts []tir.Stmt) error {
	plain := func() error {
		for _, s := range stmts {
			if err := k.stmt(s); err != nil {
				return err
			}
		}
		return nil
	}
	if !slices.ContainsFunc(run, func(c tcopy) bool { return c.group }) {
		return plain()
	}
	// Every index against the first copy's: constant offsets, or no groups.
	qoff := make([]int64, len(run))
	roff := make([]int64, len(run))
	for i, c := range run {
		var ok bool
		if roff[i], ok = tir.IsConst(tir.Simplify(tir.SubE(c.r, run[0].r), k.dom)); !ok {
			return plain()
		}
		if c.group {
			if qoff[i], ok = tir.IsConst(tir.Simplify(tir.SubE(c.q, run[0].q), k.dom)); !ok {
				c.group, run[i].group = false, false
			}
		}
	}
	// The stores must touch distinct elements for the order not to matter.
	byStore := make([]int, len(run))
	for i := range byStore {
		byStore[i] = i
	}
	sort.Slice(byStore, func(a, b int) bool { return roff[byStore[a]] < roff[byStore[b]] })
	for n := 1; n < len(byStore); n++ {
		prev := byStore[n-1]
		if roff[byStore[n]] < roff[prev]+int64(run[prev].L) {
			return plain()
		}
	}
	// Per kind, the copies by source offset; groups taken in offset order.
	at := map[kind]map[int64][]int{}
	for i, c := range run {
		if !c.group {
			continue
		}
		kd := kind{c.L, c.stride}
		if at[kd] == nil {
			at[kd] = map[int64][]int{}
		}
		at[kd][qoff[i]] = append(at[kd][qoff[i]], i)
	}
	byOffset := make([]int, len(run))
	for i := range byOffset {
		byOffset[i] = i
	}
	sort.SliceStable(byOffset, func(a, b int) bool { return qoff[byOffset[a]] < qoff[byOffset[b]] })
	grouped := make([]bool, len(run))
	var groups [][]int
	for _, first := range byOffset {
		if grouped[first] || !run[first].group {
			continue
		}
		c := run[first]
		offs := at[kind{c.L, c.stride}]
		g := make([]int, 0, c.L)
		for j := int64(0); j < int64(c.L); j++ {
			free := -1
			for _, i := range offs[qoff[first]+j] {
				if !grouped[i] && !slices.Contains(g, i) {
					free = i
					break
				}
			}
			if free < 0 {
				break
			}
			g = append(g, free)
		}
		if len(g) < c.L || g[0] != first {
			continue
		}
		for _, i := range g {
			grouped[i] = true
		}
		groups = append(groups, g)
	}
	for _, g := range groups {
		if err := k.transposeGroup(run, g); err != nil {
			return err
		}
	}
	for i, s := range stmts {
		if !grouped[i] {
			if err := k.stmt(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// transposeGroup prints L copies whose source indices are q, q+1, ...,
// q+L-1: copy j's lane l is B[q + j + s·l], element j of row l.
func (k *kernel) transposeGroup(run []tcopy, g []int) error {
	c0 := run[g[0]]
	L := c0.L
	src, err := k.lookupBuf(c0.src)
	if err != nil {
		return err
	}
	dst, err := k.lookupBuf(c0.dst)
	if err != nil {
		return err
	}
	k.m.used[L] = true
	k.line("{ /* %d copies %s -> %s: a %d×%d transpose */", L, sanitize(c0.src.Name), sanitize(c0.dst.Name), L, L)
	k.indent++
	k.line("%s tsr_t[%d];", vt(L), L)
	for l := 0; l < L; l++ {
		idx, err := k.expr(tir.Simplify(tir.AddE(c0.q, tir.Const(int64(l)*c0.stride)), k.dom))
		if err != nil {
			return err
		}
		k.line("tsr_t[%d] = tsr_load_v%df(&%s[%s]);", l, L, src.name, trimParens(idx))
	}
	k.line("tsr_transpose_v%df(tsr_t);", L)
	for j, i := range g {
		idx, err := k.expr(tir.Simplify(run[i].r, k.dom))
		if err != nil {
			return err
		}
		k.line("tsr_store_v%df(&%s[%s], tsr_t[%d]);", L, dst.name, trimParens(idx), j)
	}
	k.indent--
	k.line("}")
	return nil
}

// transposeHelper defines tsr_transpose_vLf, which transposes L vectors of
// L lanes in place: round b swaps bit b of every element's row and column
// (rows i and i|b exchange the lanes whose bit b differs from the row's).
// It is always inlined: gcc left a 16-lane one a call, its rows in memory.
func transposeHelper(L int) string {
	var b strings.Builder
	f := vt(L)
	fmt.Fprintf(&b, "static inline __attribute__((always_inline)) void tsr_transpose_v%df(%s *r) {\n", L, f)
	for bit := 1; bit < L; bit *= 2 {
		for i := 0; i < L; i++ {
			if i&bit != 0 {
				continue
			}
			lo, hi := make([]string, L), make([]string, L)
			for c := 0; c < L; c++ {
				if c&bit == 0 {
					lo[c], hi[c] = fmt.Sprint(c), fmt.Sprint(c+bit)
				} else {
					lo[c], hi[c] = fmt.Sprint(L+c-bit), fmt.Sprint(L+c)
				}
			}
			fmt.Fprintf(&b, "  { %s x = r[%d], y = r[%d]; r[%d] = __builtin_shufflevector(x, y, %s); r[%d] = __builtin_shufflevector(x, y, %s); }\n",
				f, i, i|bit, i, strings.Join(lo, ", "), i|bit, strings.Join(hi, ", "))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// stripCopies strip-mines, by the lanes L, each serial or parallel loop
// whose body is one vectorized gathering copy that the loop walks along
// the source's contiguous axis (its blocks of L iterations read L
// consecutive elements, and store at least L apart):
// for d { for v { T[.. + c·d + v] = B[.. + d + s·v] } } becomes a loop over
// blocks of L whose unrolled body the printer groups into one transpose,
// then a loop over the rest. A copy at the root (Kᵀ once per head, a
// Transpose op alone: one fused parallel loop) then transposes as one
// placed in a tile's unrolled loops does. Loops of dyn (extents given at
// run time) are left alone.
func stripCopies(s tir.Stmt, lanes int, dyn map[*tir.Var]bool) tir.Stmt {
	if s == nil || !transposes(lanes) {
		return s
	}
	return tir.MutateStmt(s, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		f, ok := st.(*tir.For)
		if !ok || f.Kind != tir.Serial && f.Kind != tir.Parallel || f.Var == nil || dyn[f.Var] || f.Extent < lanes {
			return st
		}
		n := f.Extent / lanes
		if f.Kind == tir.Parallel && n < minParallelBlocks {
			return st
		}
		if !copiesOnly(f.Body) {
			return st
		}
		outer := &tir.Var{Name: f.Var.Name + ".b", T: tir.Int}
		inner := &tir.Var{Name: f.Var.Name + ".l", T: tir.Int}
		body := substStmt(f.Body, map[*tir.Var]tir.Expr{f.Var: tir.AddE(tir.MulE(outer, tir.Const(int64(lanes))), inner)})
		dom := domain{outer: {Lo: 0, Hi: int64(n) - 1}, inner: {Lo: 0, Hi: int64(lanes) - 1}}
		if !stripsCopy(body, inner, lanes, dom, dyn) {
			return st
		}
		parts := []tir.Stmt{&tir.For{Var: outer, Extent: n, Kind: f.Kind,
			Body: &tir.For{Var: inner, Extent: lanes, Kind: tir.Unrolled, Body: body}}}
		if r := f.Extent % lanes; r > 0 {
			tail := &tir.Var{Name: f.Var.Name + ".r", T: tir.Int}
			parts = append(parts, &tir.For{Var: tail, Extent: r, Kind: f.Kind,
				Body: substStmt(f.Body, map[*tir.Var]tir.Expr{f.Var: tir.AddE(tir.Const(int64(n*lanes)), tail)})})
		}
		return tir.SeqOf(parts...)
	}})
}

// minParallelBlocks is the fewest blocks a parallel loop is strip-mined
// into: fewer would leave cores idle on a copy large enough to matter (a
// shorter one costs little as gathers).
const minParallelBlocks = 16

// stripsCopy reports whether body, a loop's body with its variable
// replaced by a block's (inner its lane in the block, dom their ranges),
// is a copy stripCopies groups.
func stripsCopy(body tir.Stmt, inner *tir.Var, lanes int, dom domain, dyn map[*tir.Var]bool) bool {
	pieces := []tir.Stmt{body}
	if seq, ok := body.(*tir.Seq); ok {
		pieces = seq.Stmts // a vectorized loop split into chunks
	}
	groupable := false
	for _, p := range pieces {
		switch {
		case stripsPiece(p, inner, lanes, dom, dyn):
			groupable = true
		case !isCopy(p):
			return false
		}
	}
	return groupable
}

// copiesOnly reports whether body is a copy or a sequence of them: the
// cheap test before stripCopies substitutes and simplifies.
func copiesOnly(body tir.Stmt) bool {
	if seq, ok := body.(*tir.Seq); ok {
		for _, p := range seq.Stmts {
			if !isCopy(p) {
				return false
			}
		}
		return len(seq.Stmts) > 0
	}
	return isCopy(body)
}

// isCopy reports whether s is a copy of one element or of a vector of them
// (a piece of a vectorized loop too narrow to group).
func isCopy(s tir.Stmt) bool {
	if f, ok := s.(*tir.For); ok && f.Kind == tir.Vectorized {
		s = f.Body
	}
	st, ok := s.(*tir.Store)
	if !ok {
		return false
	}
	_, ok = st.Value.(*tir.Load)
	return ok
}

// stripsPiece reports whether one vectorized loop of P lanes (P dividing
// L) is a gathering copy whose blocks read consecutive elements.
func stripsPiece(body tir.Stmt, inner *tir.Var, lanes int, dom domain, dyn map[*tir.Var]bool) bool {
	v, ok := body.(*tir.For)
	if !ok || v.Kind != tir.Vectorized || v.Var == nil || v.Extent < minTransposeLanes || lanes%v.Extent != 0 || dyn[v.Var] {
		return false
	}
	st, ok := v.Body.(*tir.Store)
	if !ok || st.Buf.DType != tir.Float32 {
		return false
	}
	ld, ok := st.Value.(*tir.Load)
	if !ok || ld.Buf == st.Buf || ld.Buf.DType != tir.Float32 {
		return false
	}
	dom = copyDom(dom)
	dom[v.Var] = tir.Interval{Lo: 0, Hi: int64(v.Extent) - 1}
	dst, err := simplifiedIndex(st.Buf, st.Indices, dom)
	if err != nil {
		return false
	}
	src, err := simplifiedIndex(ld.Buf, ld.Indices, dom)
	if err != nil {
		return false
	}
	coef := func(e tir.Expr, x *tir.Var) int64 {
		c, _, ok := tir.LinearIn(e, x)
		if !ok {
			return 0
		}
		return c
	}
	dv, sv := coef(dst, v.Var), coef(src, v.Var)
	dd, sd := coef(dst, inner), coef(src, inner)
	return dv == 1 && sv != 0 && sv != 1 && sd == 1 && (dd >= int64(v.Extent) || dd <= -int64(v.Extent))
}

// flattenSeq returns stmts with every nested sequence spliced in.
func flattenSeq(stmts []tir.Stmt) []tir.Stmt {
	if !slices.ContainsFunc(stmts, func(s tir.Stmt) bool { _, ok := s.(*tir.Seq); return ok }) {
		return stmts
	}
	var out []tir.Stmt
	for _, s := range stmts {
		if seq, ok := s.(*tir.Seq); ok {
			out = append(out, flattenSeq(seq.Stmts)...)
			continue
		}
		out = append(out, s)
	}
	return out
}
