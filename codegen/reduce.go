package codegen

import (
	"fmt"

	"tessera/tir"
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
// reduction is (and as the interleaved chains of forward.go are).

// reductionLoop emits f as a vector row reduction (see above) and reports
// whether it did; it returns false, having emitted nothing, when f is not
// one.
func (k *kernel) reductionLoop(f *tir.For) (bool, error) {
	L := k.m.lanes
	st, ok := f.Body.(*tir.Store)
	if !ok || L < 4 || f.Extent < 2*L || st.Buf == nil || st.Buf.DType != tir.Float32 {
		return false, nil
	}
	b, ok := st.Value.(*tir.Binary)
	if !ok || b.Op != tir.Add && b.Op != tir.Max && b.Op != tir.Min {
		return false, nil
	}
	isElem := func(e tir.Expr) bool {
		l, ok := e.(*tir.Load)
		if !ok || l.Buf != st.Buf || len(l.Indices) != len(st.Indices) {
			return false
		}
		for i := range l.Indices {
			if !exprEqual(l.Indices[i], st.Indices[i]) {
				return false
			}
		}
		return true
	}
	var term tir.Expr
	switch {
	case isElem(b.A) && !tir.Reads(b.B, st.Buf):
		term = b.B
	case isElem(b.B) && !tir.Reads(b.A, st.Buf):
		term = b.A
	default:
		return false, nil
	}
	for _, ix := range st.Indices {
		if dependsOn(ix, f.Var) {
			return false, nil
		}
	}
	// The vector body: r = c*L + v, c the chunk, v the lane.
	chunks := f.Extent / L
	c := &tir.Var{Name: f.Var.Name + "_c", T: tir.Int}
	v := &tir.Var{Name: f.Var.Name + "_l", T: tir.Int}
	vterm := tir.Substitute(term, map[*tir.Var]tir.Expr{f.Var: tir.AddE(tir.MulE(c, tir.Const(int64(L))), v)})
	dom := copyDom(k.dom)
	dom[c] = tir.Interval{Lo: 0, Hi: int64(chunks) - 1}
	dom[v] = tir.Interval{Lo: 0, Hi: int64(L) - 1}
	p := &vplan{v: v, L: L, dom: dom}
	if !contiguousLoads(p, vterm) {
		return false, nil
	}

	k.line("{")
	k.indent++
	k.openScope()
	defer k.closeScope()
	identity, vop, sop := reduceOps(b.Op, L)
	acc := k.declare(st.Buf.Name + "_acc")
	k.m.used[L] = true
	k.line("%s %s = tsr_splat_v%df(%s);", vt(L), acc, L, identity)
	cname := k.declare(c.Name)
	unbind := k.bindVar(c, cname)
	saved := k.dom
	k.dom = dom
	code, isVec, err := k.vexpr(p, vterm)
	k.dom = saved
	unbind()
	if err != nil {
		return true, err
	}
	if !isVec {
		return true, fmt.Errorf("internal: row reduction term %s does not depend on its lane", tir.ExprString(vterm))
	}
	k.line("for (%s %s = 0; %s < %d; ++%s) {", k.intType(), cname, cname, chunks, cname)
	k.line("  %s = %s;", acc, vop(acc, trimParens(code)))
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
	for r := chunks * L; r < f.Extent; r++ {
		t, err := k.expr(tir.Substitute(term, map[*tir.Var]tir.Expr{f.Var: tir.Const(int64(r))}))
		if err != nil {
			return true, err
		}
		k.line("%s = %s;", sname, sop(sname, trimParens(t)))
	}
	var value tir.Expr = &tir.Binary{Op: b.Op, A: &tir.Load{Buf: st.Buf, Indices: st.Indices}, B: sum}
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
