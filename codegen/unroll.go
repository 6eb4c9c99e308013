package codegen

import (
	"github.com/tessera-ml/tessera/tir"
)

// Unrolling in the emitted source.
//
// An Unrolled loop is replaced by one copy of its body per iteration with
// the loop variable substituted (indices are simplified when printed), as
// long as the copies hold at most maxUnrollSteps steps; a larger one keeps
// its loop under "#pragma GCC unroll". Inside Pragma{"auto_unroll_max_step",
// N}, every serial loop whose step count is at most N is unrolled the same
// way (TVM's UnrollLoop). A loop's step count is its extent times the step
// count of its body, where a store is one step, a sequence sums its parts
// and a vectorized loop is one step. Under auto_unroll_max_step a store of
// an integer dot-product group counts one step per product (productSteps):
// a group of four 8-bit products is four multiply-adds of the float form,
// so that an int8 kernel unrolls as much of its reduction as the float
// kernel of the same tile, not four times as much. A 1×1 convolution of
// 112 channels on a 5×16 tile (MobileNetV3's expand) unrolled its whole
// reduction, 280 dot groups in each of its two guarded versions, and ran
// at half the speed of the same code with its reduction loop kept
// (0.49 → 0.36 ms on Zen 3): the copies no longer fit the op cache.

// maxUnrollSteps bounds the size of one loop unrolled in the source.
const maxUnrollSteps = 1024

// hasDynamic reports whether s is or holds a loop of dyn.
func hasDynamic(s tir.Stmt, dyn map[*tir.Var]bool) bool {
	if len(dyn) == 0 {
		return false
	}
	found := false
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		if f, ok := st.(*tir.For); ok && dyn[f.Var] {
			found = true
		}
		return !found
	})
	return found
}

// maxLocalUnrollSteps bounds a serial loop that unrollLocalLoops unrolls.
const maxLocalUnrollSteps = 64

// unrollLocalLoops marks Unrolled the short serial loops (at most
// maxLocalUnrollSteps steps each) whose variables index a Local buffer,
// when that leaves every index of the buffer constant or a vector lane:
// the buffer then becomes registers (scalarize.go). The copy of a GEMM's
// accumulator tile to its output (for i.1 in 0..4: C[..i.1..] =
// C.local[i.1*16 ...]) otherwise keeps the whole tile in memory: every FMA
// of the reduction loop loads and stores its accumulator (AVX2, 1024³: 46
// GFLOP/s in memory). Where some index would still vary, nothing is
// unrolled: the copies would only make the C longer (random schedules'
// modules grew 4× and compiled 4× slower before this check).
func unrollLocalLoops(s tir.Stmt, dyn map[*tir.Var]bool) tir.Stmt {
	if s == nil {
		return nil
	}
	return tir.MutateStmt(s, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		a, ok := st.(*tir.Allocate)
		if !ok || a.Buf.Scope != tir.Local {
			return st
		}
		marked := false
		body := tir.MutateStmt(a.Body, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
			f, ok := st.(*tir.For)
			if !ok || f.Kind != tir.Serial || f.Var == nil || f.Extent <= 1 ||
				stepCount(f) > maxLocalUnrollSteps || !indexesBuffer(f.Body, a.Buf, f.Var) || hasDynamic(f, dyn) {
				return st
			}
			marked = true
			return &tir.For{Var: f.Var, Extent: f.Extent, Kind: tir.Unrolled, Body: f.Body}
		}})
		if !marked || !constantIndices(body, a.Buf) {
			return st
		}
		return &tir.Allocate{Buf: a.Buf, Body: body}
	}})
}

// constantIndices reports whether every index of buf in s uses only the
// variables of Unrolled and Vectorized loops inside s: constants, or
// vector lanes, once the loops are unrolled.
func constantIndices(s tir.Stmt, buf *tir.Buffer) bool {
	fixed := map[*tir.Var]bool{}
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		if f, ok := st.(*tir.For); ok && f.Var != nil && (f.Kind == tir.Unrolled || f.Kind == tir.Vectorized) {
			fixed[f.Var] = true
		}
		return true
	})
	return !anyIndex(s, buf, func(v *tir.Var) bool { return !fixed[v] })
}

// indexesBuffer reports whether s reads or writes buf at an index that
// uses v.
func indexesBuffer(s tir.Stmt, buf *tir.Buffer, v *tir.Var) bool {
	return anyIndex(s, buf, func(x *tir.Var) bool { return x == v })
}

// anyIndex reports whether an index of a store to or a load of buf in s
// uses a variable for which pred holds.
func anyIndex(s tir.Stmt, buf *tir.Buffer, pred func(*tir.Var) bool) bool {
	found := false
	uses := func(idx []tir.Expr) {
		for _, e := range idx {
			found = found || tir.UsesVar(e, pred)
		}
	}
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		if w, ok := st.(*tir.Store); ok && w.Buf == buf {
			uses(w.Indices)
		}
		return !found
	})
	tir.WalkStmtExprs(s, func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if l, ok := x.(*tir.Load); ok && l.Buf == buf {
				uses(l.Indices)
			}
			return !found
		})
	})
	return found
}

// splitVectors rewrites every vectorized loop into pieces the printer emits
// as vector code: n full chunks of the native width (a loop, unrolled when
// short) and then the remainder as descending powers of two (a 56-lane loop
// on 16 lanes is 3×16 + 8; 7 lanes are 4 + 2 + 1), each piece a vectorized
// loop of its own, in the original lane order. A lane count that is no power
// of two would otherwise fall back to a scalar loop, which the compiler then
// vectorizes itself, slowly and, under an unrolled outer loop, once per copy.
// The chunks of a loop of dyn are a loop of dyn too, whatever their number:
// its text is then the same at every value of the dimension with the same
// remainder.
func splitVectors(s tir.Stmt, lanes int, dyn map[*tir.Var]bool) tir.Stmt {
	if s == nil {
		return nil
	}
	return tir.MutateStmt(s, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		f, ok := st.(*tir.For)
		if !ok || f.Kind != tir.Vectorized || f.Var == nil || f.Extent <= 1 || f.Extent <= lanes && isPow2(f.Extent) {
			return st
		}
		// piece is the lanes [base+offset, base+offset+width) of f, base an
		// expression of the chunk variable (nil: none).
		piece := func(base tir.Expr, offset, width int, name string) tir.Stmt {
			start := tir.Expr(tir.Const(int64(offset)))
			if base != nil {
				start = tir.AddE(base, start)
			}
			if width == 1 {
				return substStmt(f.Body, map[*tir.Var]tir.Expr{f.Var: start})
			}
			inner := &tir.Var{Name: name, T: tir.Int}
			body := substStmt(f.Body, map[*tir.Var]tir.Expr{f.Var: tir.AddE(start, inner)})
			return &tir.For{Var: inner, Extent: width, Kind: tir.Vectorized, Body: body}
		}
		var parts []tir.Stmt
		n := f.Extent / lanes
		switch {
		case n == 1 && !dyn[f.Var]:
			parts = append(parts, piece(nil, 0, lanes, f.Var.Name))
		case n >= 1:
			outer := &tir.Var{Name: f.Var.Name + ".c", T: tir.Int}
			kind := tir.Unrolled
			if n > 8 || dyn[f.Var] {
				kind = tir.Serial
				dyn[outer] = dyn[f.Var]
			}
			chunk := piece(tir.MulE(outer, tir.Const(int64(lanes))), 0, lanes, f.Var.Name)
			parts = append(parts, &tir.For{Var: outer, Extent: n, Kind: kind, Body: chunk})
		}
		offset := n * lanes
		for w := lanes / 2; w >= 1; w /= 2 {
			if f.Extent-offset >= w {
				parts = append(parts, piece(nil, offset, w, f.Var.Name+".t"))
				offset += w
			}
		}
		return tir.SeqOf(parts...)
	}})
}

// unroll unrolls loops; auto is the auto_unroll_max_step in effect (0: none).
func unroll(s tir.Stmt, auto, lanes int, dyn map[*tir.Var]bool) tir.Stmt {
	switch s := s.(type) {
	case *tir.For:
		body := unroll(s.Body, auto, lanes, dyn)
		if s.Var == nil || s.Extent <= 0 || hasDynamic(s, dyn) {
			return &tir.For{Var: s.Var, Extent: s.Extent, Kind: s.Kind, Thread: s.Thread, Body: body}
		}
		inner := stepCount(body)
		if inner == 0 && (s.Kind == tir.Unrolled || s.Kind == tir.Serial && auto > 0) {
			return nil // nothing to run
		}
		steps := satMul(int64(s.Extent), inner)
		limit := int64(-1)
		switch s.Kind {
		case tir.Unrolled:
			limit = maxUnrollSteps
		case tir.Serial:
			if auto > 0 {
				limit = min(int64(auto), 4*maxUnrollSteps)
			}
		}
		copies := func() tir.Stmt {
			out := make([]tir.Stmt, s.Extent)
			for i := range out {
				out[i] = substStmt(body, map[*tir.Var]tir.Expr{s.Var: tir.Const(int64(i))})
			}
			return tir.SeqOf(out...)
		}
		if s.Kind == tir.Serial {
			steps = satMul(int64(s.Extent), productSteps(body))
		}
		if steps <= limit && !(s.Kind == tir.Serial && keepForVectors(s, lanes)) {
			return copies()
		}
		// An explicit unroll a little over the limit is taken when the
		// copies fold down to it: a reduction over a constant matrix
		// (the rule for constant tensors) drops most of its terms once
		// the matrix entries are literals.
		if s.Kind == tir.Unrolled && steps <= 4*maxUnrollSteps {
			if folded := dropNoopUpdates(foldFloats(copies())); stepCount(folded) <= 2*limit {
				return folded
			}
		}
		return &tir.For{Var: s.Var, Extent: s.Extent, Kind: s.Kind, Thread: s.Thread, Body: body}
	case *tir.Pragma:
		if s.Key == "auto_unroll_max_step" {
			return unroll(s.Body, s.Value, lanes, dyn)
		}
		return &tir.Pragma{Key: s.Key, Value: s.Value, Body: unroll(s.Body, auto, lanes, dyn)}
	case *tir.Seq:
		out := make([]tir.Stmt, 0, len(s.Stmts))
		for _, c := range s.Stmts {
			out = append(out, unroll(c, auto, lanes, dyn))
		}
		return tir.SeqOf(out...)
	case *tir.Let:
		return &tir.Let{Var: s.Var, Value: s.Value, Body: unroll(s.Body, auto, lanes, dyn)}
	case *tir.Allocate:
		return &tir.Allocate{Buf: s.Buf, Body: unroll(s.Body, auto, lanes, dyn)}
	case *tir.IfThenElse:
		return &tir.IfThenElse{Cond: s.Cond, Then: unroll(s.Then, auto, lanes, dyn), Else: unroll(s.Else, auto, lanes, dyn)}
	}
	return s
}

// stepCount is the number of steps s runs (saturating).
func stepCount(s tir.Stmt) int64 { return weightedSteps(s, nil) }

// productSteps is stepCount with each store counted as the number of
// 8-bit products its value sums (one at least).
func productSteps(s tir.Stmt) int64 { return weightedSteps(s, narrowProducts) }

// weightedSteps counts the steps s runs, a store (and a vectorized loop,
// its stores together) weighing weight of its value, at least 1; nil
// weighs every store 1.
func weightedSteps(s tir.Stmt, weight func(tir.Expr) int64) int64 {
	switch s := s.(type) {
	case *tir.Store:
		if weight == nil {
			return 1
		}
		return max(1, weight(s.Value))
	case *tir.Barrier:
		return 1
	case *tir.For:
		if s.Extent <= 0 {
			return 0
		}
		if s.Kind == tir.Vectorized {
			var n int64
			if weight != nil {
				tir.WalkStmt(s.Body, func(st tir.Stmt) bool {
					if st, ok := st.(*tir.Store); ok {
						n = satAdd(n, weight(st.Value))
					}
					return true
				})
			}
			return max(1, n)
		}
		return satMul(int64(s.Extent), weightedSteps(s.Body, weight))
	case *tir.Seq:
		var n int64
		for _, c := range s.Stmts {
			n = satAdd(n, weightedSteps(c, weight))
		}
		return n
	case *tir.IfThenElse:
		return satAdd(weightedSteps(s.Then, weight), weightedSteps(s.Else, weight))
	case *tir.Let:
		return weightedSteps(s.Body, weight)
	case *tir.Allocate:
		return weightedSteps(s.Body, weight)
	case *tir.Pragma:
		return weightedSteps(s.Body, weight)
	}
	return 0
}

// narrowProducts counts the products of two values widened from 8-bit
// integers in e: the terms of a dot-product group.
func narrowProducts(e tir.Expr) int64 {
	var n int64
	narrow := func(e tir.Expr) bool {
		c, ok := e.(*tir.Cast)
		if !ok || c.X == nil {
			return false
		}
		t := c.X.Type()
		return t == tir.Int8 || t == tir.Uint8
	}
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if b, ok := x.(*tir.Binary); ok && b.Op == tir.Mul && b.A != nil && b.B != nil && narrow(b.A) && narrow(b.B) {
			n++
		}
		return true
	})
	return n
}

const satMax = int64(1) << 40

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > satMax/b {
		return satMax
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a+b > satMax {
		return satMax
	}
	return a + b
}
