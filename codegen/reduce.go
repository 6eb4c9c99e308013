package codegen

import (
	"fmt"

	"github.com/tessera-ml/tessera/tir"
)

// Row reductions in vector registers.
//
// A serial loop over a reduce axis whose whole body is one update of one
// element,
//
//	for r in [0, E):  B[i] = op(B[i], t(r))   (op +, max or min; i free of r)
//
// is a chain of E dependent scalar operations: a layer norm's mean over
// 768 channels waits 768 times for an add (4 cycles each), and ViT-B/32's
// layer norms ran at 6 GFLOP/s after 492 trials of tuning. Where every load
// of t that moves with r is contiguous in r (the row is contiguous in
// memory, so a vector of L lanes is one load) and E spans at least two
// vectors, the loop is emitted as E/L vector operations into an
// accumulator of L lanes, a tree across the lanes, the remaining E mod L
// terms in scalar code, and one update of B[i]. Max and min give the same
// result; a sum is rounded in another order, as a split or factored
// reduction is (and as the interleaved chains of forward.go are). The
// auto-unroll pragma leaves such a loop rolled when it spans minVectorRow
// vectors or more (keepForVectors); an explicitly unrolled one is unrolled.

// minVectorRow is the shortest row, in vectors, that an auto-unrolled loop
// leaves rolled to run as a row reduction (keepForVectors): shorter ones
// unroll into interleaved scalar chains (forward.go), about as fast (a
// Swin window's 49 keys are 3 vectors and a remainder).
const minVectorRow = 4

// keepForVectors reports whether the auto-unroll pragma should leave the
// serial loop f rolled: a row reduction of at least minVectorRow vectors
// of lanes, which the printer runs in vector registers instead.
func keepForVectors(f *tir.For, lanes int) bool {
	if f.Extent < minVectorRow*lanes {
		return false
	}
	_, ok := matchRowReduction(f, lanes, domain{})
	return ok
}

// rowReduction is a loop found to be a row reduction (see above).
type rowReduction struct {
	st    *tir.Store // B[i] = op(B[i], term)
	elem  *tir.Load  // B[i]
	op    tir.BinOp
	term  tir.Expr // t(r)
	chunk *tir.Var // r = chunk*L + lane
	p     *vplan   // the lane, L and the domain with chunk and lane
	vterm tir.Expr // t(chunk*L + lane)
}

// matchRowReduction returns f as a row reduction of L lanes within the
// enclosing ranges dom, or false.
func matchRowReduction(f *tir.For, L int, dom domain) (*rowReduction, bool) {
	st, ok := f.Body.(*tir.Store)
	if !ok || f.Var == nil || L < 4 || f.Extent < 2*L || st.Buf == nil || st.Buf.DType != tir.Float32 {
		return nil, false
	}
	b, ok := st.Value.(*tir.Binary)
	if !ok || b.Op != tir.Add && b.Op != tir.Max && b.Op != tir.Min {
		return nil, false
	}
	elem := &tir.Load{Buf: st.Buf, Indices: st.Indices}
	isElem := func(e tir.Expr) bool { return exprEqual(e, elem) }
	r := &rowReduction{st: st, elem: elem, op: b.Op}
	switch {
	case isElem(b.A) && !tir.Reads(b.B, st.Buf):
		r.term = b.B
	case isElem(b.B) && !tir.Reads(b.A, st.Buf):
		r.term = b.A
	default:
		return nil, false
	}
	for _, ix := range st.Indices {
		if dependsOn(ix, f.Var) {
			return nil, false
		}
	}
	r.chunk = &tir.Var{Name: f.Var.Name + "_c", T: tir.Int}
	v := &tir.Var{Name: f.Var.Name + "_l", T: tir.Int}
	r.vterm = tir.Substitute(r.term, map[*tir.Var]tir.Expr{f.Var: tir.AddE(tir.MulE(r.chunk, tir.Const(int64(L))), v)})
	vdom := copyDom(dom)
	vdom[r.chunk] = tir.Interval{Lo: 0, Hi: int64(f.Extent/L) - 1}
	vdom[v] = tir.Interval{Lo: 0, Hi: int64(L) - 1}
	r.p = &vplan{v: v, L: L, dom: vdom}
	if !contiguousLoads(r.p, r.vterm) {
		return nil, false
	}
	return r, true
}

// reductionLoop emits f as a vector row reduction (see above) and reports
// whether it did; it returns false, having emitted nothing, when f is not
// one.
func (k *kernel) reductionLoop(f *tir.For) (bool, error) {
	L := k.m.lanes
	r, ok := matchRowReduction(f, L, k.dom)
	if !ok {
		return false, nil
	}
	st, chunks := r.st, f.Extent/L
	k.line("{")
	k.indent++
	k.openScope()
	defer k.closeScope()
	identity, vop, sop := reduceOps(r.op, L)
	acc := k.declare(st.Buf.Name + "_acc")
	k.m.used[L] = true
	k.line("%s %s = tsr_splat_v%df(%s);", vt(L), acc, L, identity)
	cname := k.declare(r.chunk.Name)
	unbind := k.bindVar(r.chunk, cname)
	saved := k.dom
	k.dom = r.p.dom
	code, isVec, err := k.vexpr(r.p, r.vterm)
	k.dom = saved
	unbind()
	if err != nil {
		return true, err
	}
	if !isVec {
		return true, fmt.Errorf("internal: row reduction term %s does not depend on its lane", tir.ExprString(r.vterm))
	}
	k.line("for (%s %s = 0; %s < %d; ++%s) {", k.intType(), cname, cname, chunks, cname)
	k.line("  %s = %s;", acc, vop(acc, code))
	k.line("}")
	// A tree across the lanes, then the tail in scalar code.
	lanes := make([]string, L)
	for l := range lanes {
		lanes[l] = fmt.Sprintf("%s[%d]", acc, l)
	}
	for len(lanes) > 1 {
		next := make([]string, 0, len(lanes)/2)
		for i := 0; i < len(lanes); i += 2 {
			next = append(next, sop(lanes[i], lanes[i+1]))
		}
		lanes = next
	}
	sum := &tir.Var{Name: st.Buf.Name + "_row", T: tir.Float32}
	sname := k.declare(sum.Name)
	k.line("float %s = %s;", sname, lanes[0])
	defer k.bindVar(sum, sname)()
	for i := chunks * L; i < f.Extent; i++ {
		t, err := k.expr(tir.Substitute(r.term, map[*tir.Var]tir.Expr{f.Var: tir.Const(int64(i))}))
		if err != nil {
			return true, err
		}
		k.line("%s = %s;", sname, sop(sname, t))
	}
	value := &tir.Binary{Op: r.op, A: r.elem, B: sum}
	if err := k.stmt(&tir.Store{Buf: st.Buf, Indices: st.Indices, Value: value}); err != nil {
		return true, err
	}
	k.indent--
	k.line("}")
	return true, nil
}

// reduceOps returns the identity of op and how to print it on vectors of L
// lanes and on scalars.
func reduceOps(op tir.BinOp, L int) (identity string, vec, scalar func(a, b string) string) {
	switch op {
	case tir.Max:
		return "-INFINITY",
			func(a, b string) string { return fmt.Sprintf("tsr_max_v%df(%s, %s)", L, a, b) },
			func(a, b string) string { return fmt.Sprintf("tsr_maxf(%s, %s)", a, b) }
	case tir.Min:
		return "INFINITY",
			func(a, b string) string { return fmt.Sprintf("tsr_min_v%df(%s, %s)", L, a, b) },
			func(a, b string) string { return fmt.Sprintf("tsr_minf(%s, %s)", a, b) }
	}
	add := func(a, b string) string { return "(" + a + " + " + b + ")" }
	return "0.0f", add, add
}

// contiguousLoads reports whether every load of e that moves with the lane
// is a float32 load whose flat index is the lane plus a lane-free rest (one
// vector load, not a gather), and e has one at least.
func contiguousLoads(p *vplan, e tir.Expr) bool {
	ok, any := true, false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		l, isLoad := x.(*tir.Load)
		if !ok || !isLoad || !dependsOn(l, p.v) {
			return ok
		}
		flat, err := p.flat(l.Buf, l.Indices)
		if err != nil || l.Buf.DType != tir.Float32 {
			ok = false
			return false
		}
		coef, _, linear := tir.LinearIn(flat, p.v)
		ok = linear && coef == 1
		any = true
		return ok
	})
	return ok && any
}
