package codegen

import "github.com/tessera-ml/tessera/tir"

// Loop partitioning (TVM's LoopPartition, Halide's GuardWithIf tail).
//
// A split whose length does not divide its extent guards its body with
// "index < extent". Under that guard the compiler can neither keep a
// register tile's accumulators in registers nor vectorize across its rows:
// a 6-row GEMM tile of 1024 rows, guarded, ran at 0.38 of OpenBLAS. Yet
// the guard only ever fails in the last iterations of one loop. So a
// serial loop whose body holds such a guard is cut in two: a main loop
// over the iterations where the guard provably holds, printed without it,
// and a tail loop over the rest, which keeps it. The tail of a tile split
// is usually one iteration, whose guards the unrolled register tile folds
// to constants.

// maxPartitions bounds the loops cut in one loop nest at the kernel's
// root (a stage and what is computed at it): each cut copies the loop's
// body once. The bound is per nest, not per kernel, so that a stage
// printed before another (a transpose computed at the root) does not use
// up the cuts of the GEMM after it.
const maxPartitions = 4

// partitionLoops cuts the serial loops of s whose bodies are guarded by a
// condition that holds for all their iterations but the last (outer loops
// first), at most maxPartitions of them in each root loop nest.
func partitionLoops(s tir.Stmt) tir.Stmt {
	p := partitioner{}
	return p.stmt(s)
}

type partitioner struct {
	budget int
	inNest bool // inside a root loop nest, whose budget it is
}

func (p *partitioner) stmt(s tir.Stmt) tir.Stmt {
	switch n := s.(type) {
	case *tir.For:
		if !p.inNest {
			p.budget = maxPartitions // a root loop nest
			p.inNest = true
			defer func() { p.inNest = false }()
		}
		if p.budget > 0 && n.Kind == tir.Serial && n.Var != nil && n.Extent > 1 {
			if e := guardedPrefix(n); e == n.Extent-1 {
				p.budget--
				main := tir.SimplifyStmt(&tir.For{Var: n.Var, Extent: e, Kind: n.Kind, Body: n.Body}, nil)
				tv := tir.NewVar(n.Var.Name + "_tail")
				shift := map[*tir.Var]tir.Expr{n.Var: tir.AddE(tv, tir.Const(int64(e)))}
				tailBody := tir.MutateStmt(n.Body, tir.StmtFuncs{Expr: func(x tir.Expr) tir.Expr { return tir.Substitute(x, shift) }})
				tail := tir.SimplifyStmt(&tir.For{Var: tv, Extent: n.Extent - e, Kind: n.Kind, Body: tailBody}, nil)
				return tir.SeqOf(p.stmt(main), p.stmt(tail))
			}
		}
		return &tir.For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: p.stmt(n.Body)}
	}
	return rebuild(s, p.stmt)
}

// rebuild returns s with f applied to each statement directly inside it
// (of a Seq, Allocate, IfThenElse, Let or Pragma; a For's body is left to
// the caller, which keeps its own state per loop), or s itself.
func rebuild(s tir.Stmt, f func(tir.Stmt) tir.Stmt) tir.Stmt {
	switch n := s.(type) {
	case *tir.Seq:
		out := make([]tir.Stmt, 0, len(n.Stmts))
		for _, c := range n.Stmts {
			out = append(out, f(c))
		}
		return &tir.Seq{Stmts: out}
	case *tir.Allocate:
		return &tir.Allocate{Buf: n.Buf, Body: f(n.Body)}
	case *tir.IfThenElse:
		var els tir.Stmt
		if n.Else != nil {
			els = f(n.Else)
		}
		return &tir.IfThenElse{Cond: n.Cond, Then: f(n.Then), Else: els}
	case *tir.Let:
		return &tir.Let{Var: n.Var, Value: n.Value, Body: f(n.Body)}
	case *tir.Pragma:
		return &tir.Pragma{Key: n.Key, Value: n.Value, Body: f(n.Body)}
	}
	return s
}

// guardedPrefix returns the number of leading iterations of f for which
// some guard in its body provably holds, when that guard is an upper bound
// (a < b, a <= b) on an expression of f's variable and of the variables of
// loops inside f only, and does not hold for all of them; otherwise 0.
// Loops that allocate, synchronize or bind threads inside are left whole.
// The caller cuts only where all but the last iteration are free of the
// guard, as a split's overshoot is: a guard that fails here and there
// (a periodic one, i % 2 < 1) would copy the body for little.
func guardedPrefix(f *tir.For) int {
	best := 0
	dom := map[*tir.Var]tir.Interval{}
	ok := walkGuards(f.Body, dom, func(n *tir.IfThenElse) {
		for _, c := range conjuncts(n.Cond) {
			if e := prefixWhere(c, f, dom); e > best && e < f.Extent {
				best = e
			}
		}
	})
	if !ok {
		return 0
	}
	return best
}

// walkGuards calls guard on every IfThenElse in s, with dom holding the
// ranges of the loops inside s around it (walkGuards fills and empties
// it as it goes). It reports false where s holds what a pass that copies
// or cuts a loop around it must leave whole: an allocation, a barrier, a
// thread-bound loop.
func walkGuards(s tir.Stmt, dom map[*tir.Var]tir.Interval, guard func(*tir.IfThenElse)) bool {
	ok := true
	var walk func(s tir.Stmt)
	walk = func(s tir.Stmt) {
		switch n := s.(type) {
		case *tir.For:
			if n.Kind == tir.ThreadBound || n.Var == nil {
				ok = false
				return
			}
			dom[n.Var] = tir.Interval{Lo: 0, Hi: int64(n.Extent) - 1}
			walk(n.Body)
			delete(dom, n.Var)
		case *tir.Seq:
			for _, c := range n.Stmts {
				walk(c)
			}
		case *tir.Allocate, *tir.Barrier:
			ok = false
		case *tir.Let:
			walk(n.Body)
		case *tir.Pragma:
			walk(n.Body)
		case *tir.IfThenElse:
			guard(n)
			walk(n.Then)
			if n.Else != nil {
				walk(n.Else)
			}
		}
	}
	walk(s)
	return ok
}

func conjuncts(e tir.Expr) []tir.Expr {
	if a, ok := e.(*tir.And); ok {
		return append(conjuncts(a.A), conjuncts(a.B)...)
	}
	return []tir.Expr{e}
}

// prefixWhere returns the largest e such that c holds for every iteration
// of f's variable in [0, e) and every value of the loops in dom, or 0 when
// c is not an upper bound (<, <=) over those variables alone (holdsWhere).
func prefixWhere(c tir.Expr, f *tir.For, dom map[*tir.Var]tir.Interval) int {
	cmp, ok := c.(*tir.Compare)
	if !ok || (cmp.Op != tir.LT && cmp.Op != tir.LE) {
		return 0
	}
	_, e := holdsWhere(c, f, dom)
	return e
}
