package codegen

import "github.com/tessera-ml/tessera/tir"

// Loop versioning of tile guards.
//
// A split whose length does not divide its extent guards its body, and
// where the split loop is fused with others (a loop over heads × row
// tiles) the guard fails in the last tile of every head, so loop
// partitioning (loop_partition.go), which cuts off the last iterations of one
// loop, cannot take it out. The guard then sits in the innermost serial
// loop, a GEMM's reduction, once per row of the register tile: gcc keeps
// the tile in memory and tests every row at every step (a BERT attention
// schedule tuned at 160 tokens ran 14x slower at 162). Yet the guards
// hold for every tile but the last. So an innermost serial loop whose
// guards are upper bounds that do not depend on its variable is printed
// twice, under a test of those bounds at the extreme values of the loops
// inside it, hoisted out of it:
//
//	if (row0 + 7 < S) { the loop without the guards } else { the loop }
//
// A bound is hoisted only where it is provably monotone in each loop
// inside the loop, so that the test at the extremes implies it at every
// iteration. Where every store of the loop sits under such a bound, the
// copy with the guards runs only where one of them can hold: its test at
// the other extremes (row0 < S) skips the tiles wholly past the end, which
// a tile tuned at S=160 and run at 162 is for most of its second half.

// maxVersions bounds the loops versioned in one loop nest at the
// kernel's root: each copies its loop once.
const maxVersions = 8

// versionGuards versions the outermost serial loops of s whose guards
// can be hoisted (see above), at most maxVersions of them in each root
// loop nest; inside a versioned loop, those of its fast copy only.
func versionGuards(s tir.Stmt) tir.Stmt {
	v := versioner{dom: map[*tir.Var]tir.Interval{}}
	return v.stmt(s)
}

type versioner struct {
	budget int
	inNest bool                      // inside a root loop nest, whose budget it is
	dom    map[*tir.Var]tir.Interval // the loops around the statement
}

func (v *versioner) stmt(s tir.Stmt) tir.Stmt {
	switch n := s.(type) {
	case *tir.For:
		if n.Var == nil || n.Extent <= 0 {
			return s
		}
		if !v.inNest {
			v.budget = maxVersions // a root loop nest
			v.inNest = true
			defer func() { v.inNest = false }()
		}
		if v.budget > 0 && n.Kind == tir.Serial && n.Extent > 1 {
			if cond, fast, live, ok := v.hoist(n); ok {
				v.budget--
				var slow tir.Stmt = n
				if live != nil {
					slow = &tir.IfThenElse{Cond: live, Then: n}
				}
				// The guards left in the fast copy may be hoisted from the
				// loops inside it.
				return &tir.IfThenElse{Cond: cond, Then: v.stmt(fast), Else: slow}
			}
		}
		v.dom[n.Var] = tir.Interval{Lo: 0, Hi: int64(n.Extent) - 1}
		body := v.stmt(n.Body)
		delete(v.dom, n.Var)
		return &tir.For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: body}
	}
	return rebuild(s, v.stmt)
}

// hoist returns the test of f's hoistable guards at the extremes of the
// loops inside f, and f with those guards taken out; ok is false where it
// has none, or holds what versioning must not copy. live, where not nil,
// is a test that fails only where no store of f can run (see liveTest).
func (v *versioner) hoist(f *tir.For) (cond tir.Expr, fast tir.Stmt, live tir.Expr, ok bool) {
	inner := map[*tir.Var]tir.Interval{} // the loops inside f around a guard
	hoisted := map[tir.Expr]tir.Expr{}   // a guard's conjunct → its test at the extremes
	var order []tir.Expr
	safe := walkGuards(f.Body, inner, func(n *tir.IfThenElse) {
		if n.Else != nil {
			return
		}
		for _, c := range conjuncts(n.Cond) {
			if _, seen := hoisted[c]; seen {
				continue
			}
			// A guard that fails even at its hardest extreme everywhere
			// (a reduction's tail, which partitioning left in the loop)
			// stays where it is: hoisted, it would make the fast copy dead.
			if t, ok := v.extremeTest(c, f.Var, inner, true); ok && !tir.IsFalse(t) {
				hoisted[c] = t
				order = append(order, c)
			}
		}
	})
	if !safe || len(order) == 0 {
		return nil, nil, nil, false
	}
	for _, c := range order {
		if cond == nil {
			cond = hoisted[c]
		} else {
			cond = &tir.And{A: cond, B: hoisted[c]}
		}
	}
	body := tir.MutateStmt(f.Body, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		n, ok := st.(*tir.IfThenElse)
		if !ok || n.Else != nil {
			return st
		}
		var keep tir.Expr
		for _, c := range conjuncts(n.Cond) {
			if _, gone := hoisted[c]; gone {
				continue
			}
			if keep == nil {
				keep = c
			} else {
				keep = &tir.And{A: keep, B: c}
			}
		}
		if keep == nil {
			return n.Then
		}
		return &tir.IfThenElse{Cond: keep, Then: n.Then}
	}})
	fast = &tir.For{Var: f.Var, Extent: f.Extent, Kind: f.Kind, Thread: f.Thread, Body: body}
	return cond, fast, v.liveTest(f, hoisted), true
}

// liveTest returns a test that holds wherever a store of f's body may
// run: every store sits under a hoisted guard, and a store can run only
// where one of its guards holds at the extremes of the loops inside f
// where it is easiest to meet. Nil where some store has no such guard
// (or sits in an else).
func (v *versioner) liveTest(f *tir.For, hoisted map[tir.Expr]tir.Expr) tir.Expr {
	inner := map[*tir.Var]tir.Interval{}
	var guards []tir.Expr // the easiest tests of the hoisted conjuncts around the statement
	var runs []tir.Expr   // per store: a test that holds wherever it may run
	seen := map[string]bool{}
	ok := true
	var walk func(s tir.Stmt)
	walk = func(s tir.Stmt) {
		if !ok {
			return
		}
		switch n := s.(type) {
		case *tir.For:
			inner[n.Var] = tir.Interval{Lo: 0, Hi: int64(n.Extent) - 1}
			walk(n.Body)
			delete(inner, n.Var)
		case *tir.Seq:
			for _, c := range n.Stmts {
				walk(c)
			}
		case *tir.Let:
			walk(n.Body)
		case *tir.Pragma:
			walk(n.Body)
		case *tir.IfThenElse:
			if n.Else != nil {
				ok = false
				return
			}
			mark := len(guards)
			for _, c := range conjuncts(n.Cond) {
				if _, h := hoisted[c]; !h {
					continue
				}
				easy, fine := v.extremeTest(c, f.Var, inner, false)
				if !fine {
					continue
				}
				guards = append(guards, easy)
			}
			walk(n.Then)
			guards = guards[:mark]
		case *tir.Store:
			if len(guards) == 0 {
				ok = false
				return
			}
			var can tir.Expr
			for _, g := range guards {
				can = orOf(can, g)
			}
			if key := tir.ExprString(can); !seen[key] {
				seen[key] = true
				runs = append(runs, can)
			}
		default:
			ok = false
		}
	}
	walk(f.Body)
	if !ok || len(runs) == 0 {
		return nil
	}
	var live tir.Expr
	for _, r := range runs {
		live = orOf(live, r)
	}
	return tir.Simplify(live, nil)
}

// orOf is a || b, where a nil operand is false.
func orOf(a, b tir.Expr) tir.Expr {
	if a == nil {
		return b
	}
	return tir.OrE(a, b)
}

// extremeTest returns, for a guard's conjunct c (a < b or a <= b on
// integers) that does not use the loop variable lv, loads or calls, the
// test of c with each variable of the loops in inner set to the end of
// its range where c is hardest to meet: a test that implies c at every
// iteration of those loops. With hardest false, the end where c is
// easiest to meet: a test that fails only where c fails at every
// iteration. ok is false where c is no such bound, or is not provably
// monotone in one of those variables.
func (v *versioner) extremeTest(c tir.Expr, lv *tir.Var, inner map[*tir.Var]tir.Interval, hardest bool) (tir.Expr, bool) {
	cmp, ok := c.(*tir.Compare)
	if !ok || (cmp.Op != tir.LT && cmp.Op != tir.LE) || cmp.A.Type() != tir.Int {
		return nil, false
	}
	diff := tir.SubE(cmp.A, cmp.B) // c holds iff diff < 0 (LT), diff <= 0 (LE)
	used := map[*tir.Var]bool{}
	bad := false
	tir.WalkExpr(diff, func(x tir.Expr) bool {
		switch x := x.(type) {
		case *tir.Var:
			if x == lv {
				bad = true
			}
			if _, in := inner[x]; in {
				used[x] = true
			} else if _, out := v.dom[x]; !out {
				bad = true // a variable bound by a Let, or unknown
			}
		case *tir.Load, *tir.Call:
			bad = true
		}
		return !bad
	})
	if bad {
		return nil, false
	}
	dom := map[*tir.Var]tir.Interval{}
	for x, iv := range v.dom {
		dom[x] = iv
	}
	for x, iv := range inner {
		dom[x] = iv
	}
	at := map[*tir.Var]tir.Expr{}
	for x := range used {
		// diff(x+1) − diff(x) over every point of the loops: ≥ 0, diff
		// is largest at x's last value; ≤ 0, at its first.
		delta := tir.Simplify(tir.SubE(tir.Substitute(diff, map[*tir.Var]tir.Expr{x: tir.AddE(x, tir.Const(1))}), diff), nil)
		d := dom
		d[x] = tir.Interval{Lo: inner[x].Lo, Hi: inner[x].Hi - 1}
		b := tir.ConstBound(delta, d)
		d[x] = inner[x]
		lo, hi := tir.Const(inner[x].Lo), tir.Const(inner[x].Hi)
		if !hardest {
			lo, hi = hi, lo
		}
		switch {
		case inner[x].Hi == inner[x].Lo || b.Lo >= 0:
			at[x] = hi
		case b.Hi <= 0:
			at[x] = lo
		default:
			return nil, false
		}
	}
	test := tir.Simplify(&tir.Compare{Op: cmp.Op, A: tir.Substitute(cmp.A, at), B: tir.Substitute(cmp.B, at)}, nil)
	return test, true
}
