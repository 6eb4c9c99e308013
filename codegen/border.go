package codegen

import (
	"maps"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// Splitting loops where padding taps die.
//
// A convolution that reads its input in place guards every tap with "the
// row and the column are inside the image" (a select of the value or 0).
// Once the taps are unrolled, each guard is a bound on the output loops
// alone, and where a bound fails for a whole range of output rows (or
// column tiles), every product of that tap there is 0 × w. A dilated
// convolution on a small map (DeepLab's ASPP: a 3×3 of dilation 24 on
// 33×33) has most of its taps in that case: for rows 9 to 23 only the
// middle row of taps reads the image. splitBorders cuts such a loop at the
// points where a guard's truth changes for all the loops inside it, into
// at most maxBorderRegions loops, and in each drops the products whose
// guard fails there (0 × w is 0 for the finite weights of a model; te's
// convolution leaves out the taps that read only padding everywhere on
// the same ground). The stores X = X + 0 left behind go in
// drop-noop-updates; the guards that hold fold in the simplifier.

// maxBorderRegions bounds the loops one loop is cut into, and
// maxBorderCuts the loops cut in one root loop nest (each cut copies the
// body up to maxBorderRegions times).
const (
	maxBorderRegions = 5
	maxBorderCuts    = 1 + maxBorderRegions
)

// splitBorders cuts the serial and parallel loops of s where products of
// padding die (see above), outer loops first.
func splitBorders(s tir.Stmt) tir.Stmt {
	b := borderSplitter{}
	return b.stmt(s)
}

type borderSplitter struct {
	budget int
	inNest bool
}

func (b *borderSplitter) stmt(s tir.Stmt) tir.Stmt {
	n, ok := s.(*tir.For)
	if !ok {
		return rebuild(s, b.stmt)
	}
	if !b.inNest {
		b.budget, b.inNest = maxBorderCuts, true
		defer func() { b.inNest = false }()
	}
	if b.budget > 0 && (n.Kind == tir.Serial || n.Kind == tir.Parallel) && n.Var != nil && n.Extent >= minBorderExtent {
		if cuts := borderCuts(n); len(cuts) > 0 {
			b.budget--
			var parts []tir.Stmt
			bounds := append(append([]int{0}, cuts...), n.Extent)
			for r := 0; r+1 < len(bounds); r++ {
				// The products are dropped before the simplifier folds
				// their selects to a bare 0 (0 × w, which it keeps).
				region := dropDeadProducts(cutRange(n, bounds[r], bounds[r+1], "_b"+string(rune('0'+r))))
				if r > 0 {
					region = freshAllocations(region)
				}
				parts = append(parts, b.stmt(tir.SimplifyStmt(region, nil)))
			}
			return tir.SeqOf(parts...)
		}
	}
	return &tir.For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: b.stmt(n.Body)}
}

// borderCuts returns where to cut f: the iterations at which the truth of
// a padding guard (the condition of a select whose other branch is 0, a
// bound on f's variable and the loops inside f) changes for all the loops
// inside f, when a region between two of them has a guard failing
// throughout (products to drop); nil otherwise, or when f allocates other
// than local buffers, synchronizes or binds threads inside.
func borderCuts(f *tir.For) []int {
	dom := map[*tir.Var]tir.Interval{}
	points := map[int]bool{}
	// A guard keeps the ranges of the loops around it inside f, which
	// failsOn needs as walkExprsWithDom empties dom on its way out.
	type guard struct {
		c   tir.Expr
		dom map[*tir.Var]tir.Interval
	}
	var guards []guard
	if !safeToCopy(f.Body) {
		return nil
	}
	collect := func(e tir.Expr, dom map[*tir.Var]tir.Interval) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			sel, is := x.(*tir.Select)
			if !is || !isZero(sel.F) {
				return true
			}
			for _, c := range conjuncts(sel.Cond) {
				s, e := holdsWhere(c, f, dom)
				fs, fe := holdsWhere(negate(c), f, dom)
				added := false
				for _, p := range []int{s, e, fs, fe} {
					if p > 0 && p < f.Extent {
						points[p] = true
						added = true
					}
				}
				if added {
					guards = append(guards, guard{c, maps.Clone(dom)})
				}
			}
			return true
		})
	}
	walkExprsWithDom(f.Body, dom, collect)
	if len(points) == 0 || len(points) >= maxBorderRegions {
		return nil
	}
	cuts := make([]int, 0, len(points))
	for p := range points {
		cuts = append(cuts, p)
	}
	slices.Sort(cuts)
	// Worth it only where guards fail over whole regions that make at
	// least minDeadShare of the loop: a 3×3 convolution's padding of 1 on
	// a 56×56 map kills taps in 2 rows of 56, too few to pay for copies of
	// the body.
	bounds := append(append([]int{0}, cuts...), f.Extent)
	dead := 0
	for r := 0; r+1 < len(bounds); r++ {
		for _, g := range guards {
			if failsOn(g.c, f.Var, bounds[r], bounds[r+1], g.dom) {
				dead += bounds[r+1] - bounds[r]
				break
			}
		}
	}
	if dead*minDeadShare < f.Extent {
		return nil
	}
	return cuts
}

// minDeadShare: a loop is cut where its regions with dead products make at
// least 1/minDeadShare of its iterations; and only a loop of at least
// minBorderExtent iterations (the rows or column tiles of a feature map),
// whose copies pay for themselves.
const (
	minDeadShare    = 4
	minBorderExtent = 8
)

// failsOn reports whether c fails for v in [a, b) and every value of the
// loops in dom.
func failsOn(c tir.Expr, v *tir.Var, a, b int, dom map[*tir.Var]tir.Interval) bool {
	d := map[*tir.Var]tir.Interval{v: {Lo: int64(a), Hi: int64(b) - 1}}
	for k, x := range dom {
		d[k] = x
	}
	return tir.IsFalse(tir.Simplify(c, d))
}

// negate returns the comparison c holds exactly when c fails (for the
// bounds holdsWhere reads), or c itself where it is no comparison.
func negate(c tir.Expr) tir.Expr {
	cmp, ok := c.(*tir.Compare)
	if !ok {
		return c
	}
	op := map[tir.CmpOp]tir.CmpOp{tir.LT: tir.GE, tir.LE: tir.GT, tir.GT: tir.LE, tir.GE: tir.LT, tir.EQ: tir.NE, tir.NE: tir.EQ}[cmp.Op]
	return &tir.Compare{Op: op, A: cmp.A, B: cmp.B}
}

func isZero(e tir.Expr) bool {
	f, ok := e.(*tir.FloatImm)
	return ok && f.V == 0
}

// walkExprsWithDom calls f on every expression of s with the ranges of the
// loops around it inside s (dom, filled and emptied as it goes).
func walkExprsWithDom(s tir.Stmt, dom map[*tir.Var]tir.Interval, f func(tir.Expr, map[*tir.Var]tir.Interval)) {
	switch n := s.(type) {
	case *tir.For:
		if n.Var != nil {
			dom[n.Var] = tir.Interval{Lo: 0, Hi: int64(n.Extent) - 1}
			defer delete(dom, n.Var)
		}
		walkExprsWithDom(n.Body, dom, f)
	case *tir.Seq:
		for _, c := range n.Stmts {
			walkExprsWithDom(c, dom, f)
		}
	case *tir.Allocate:
		walkExprsWithDom(n.Body, dom, f)
	case *tir.Let:
		f(n.Value, dom)
		walkExprsWithDom(n.Body, dom, f)
	case *tir.Pragma:
		walkExprsWithDom(n.Body, dom, f)
	case *tir.IfThenElse:
		f(n.Cond, dom)
		walkExprsWithDom(n.Then, dom, f)
		if n.Else != nil {
			walkExprsWithDom(n.Else, dom, f)
		}
	case *tir.Store:
		for _, i := range n.Indices {
			f(i, dom)
		}
		f(n.Value, dom)
	}
}

// dropDeadProducts replaces, in a loop cut by splitBorders, every product
// of a padding select whose guard fails throughout by 0.
func dropDeadProducts(s tir.Stmt) tir.Stmt {
	return mutateWithDom(s, map[*tir.Var]tir.Interval{}, func(e tir.Expr, dom map[*tir.Var]tir.Interval) tir.Expr {
		return tir.MutateExpr(e, func(x tir.Expr) tir.Expr {
			m, ok := x.(*tir.Binary)
			if !ok || m.Op != tir.Mul {
				return x
			}
			for _, op := range []tir.Expr{m.A, m.B} {
				if sel, is := op.(*tir.Select); is && isZero(sel.F) && tir.IsFalse(tir.Simplify(sel.Cond, dom)) {
					return &tir.FloatImm{V: 0}
				}
			}
			return x
		})
	})
}

// mutateWithDom rebuilds s with f applied to its expressions, given the
// ranges of the loops around each (s's own loops included).
func mutateWithDom(s tir.Stmt, dom map[*tir.Var]tir.Interval, f func(tir.Expr, map[*tir.Var]tir.Interval) tir.Expr) tir.Stmt {
	switch n := s.(type) {
	case *tir.For:
		if n.Var != nil {
			dom[n.Var] = tir.Interval{Lo: 0, Hi: int64(n.Extent) - 1}
			defer delete(dom, n.Var)
		}
		return &tir.For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: mutateWithDom(n.Body, dom, f)}
	case *tir.Seq:
		out := make([]tir.Stmt, len(n.Stmts))
		for i, c := range n.Stmts {
			out[i] = mutateWithDom(c, dom, f)
		}
		return &tir.Seq{Stmts: out}
	case *tir.Allocate:
		return &tir.Allocate{Buf: n.Buf, Body: mutateWithDom(n.Body, dom, f)}
	case *tir.Let:
		return &tir.Let{Var: n.Var, Value: f(n.Value, dom), Body: mutateWithDom(n.Body, dom, f)}
	case *tir.Pragma:
		return &tir.Pragma{Key: n.Key, Value: n.Value, Body: mutateWithDom(n.Body, dom, f)}
	case *tir.IfThenElse:
		var els tir.Stmt
		if n.Else != nil {
			els = mutateWithDom(n.Else, dom, f)
		}
		return &tir.IfThenElse{Cond: f(n.Cond, dom), Then: mutateWithDom(n.Then, dom, f), Else: els}
	case *tir.Store:
		idx := make([]tir.Expr, len(n.Indices))
		for i, x := range n.Indices {
			idx[i] = f(x, dom)
		}
		return &tir.Store{Buf: n.Buf, Indices: idx, Value: f(n.Value, dom)}
	}
	return s
}

// safeToCopy reports whether a loop body may be copied into several loops:
// no thread-bound loop, no barrier, no allocation but of local buffers
// (which freshAllocations renews in each copy).
func safeToCopy(s tir.Stmt) bool {
	ok := true
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		switch n := st.(type) {
		case *tir.For:
			ok = ok && n.Kind != tir.ThreadBound && n.Var != nil
		case *tir.Barrier:
			ok = false
		case *tir.Allocate:
			ok = ok && n.Buf.Scope == tir.Local
		}
		return ok
	})
	return ok
}

// cutRange returns the iterations [a, b) of f as a loop of its own: from 0
// it keeps f's variable, else a new one (f's name and suffix) offset by a.
func cutRange(f *tir.For, a, b int, suffix string) tir.Stmt {
	if a == 0 {
		return &tir.For{Var: f.Var, Extent: b, Kind: f.Kind, Thread: f.Thread, Body: f.Body}
	}
	v := tir.NewVar(f.Var.Name + suffix)
	shift := map[*tir.Var]tir.Expr{f.Var: tir.AddE(v, tir.Const(int64(a)))}
	body := tir.MutateStmt(f.Body, tir.StmtFuncs{Expr: func(x tir.Expr) tir.Expr { return tir.Substitute(x, shift) }})
	return &tir.For{Var: v, Extent: b - a, Kind: f.Kind, Thread: f.Thread, Body: body}
}

// freshAllocations returns s with every buffer it allocates replaced by a
// new one of the same kind, so that two copies of a loop body never share
// a *tir.Buffer (passes and the C printer key buffers by pointer).
func freshAllocations(s tir.Stmt) tir.Stmt {
	fresh := map[*tir.Buffer]*tir.Buffer{}
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		if a, ok := st.(*tir.Allocate); ok {
			b := *a.Buf
			fresh[a.Buf] = &b
		}
		return true
	})
	if len(fresh) == 0 {
		return s
	}
	load := func(e tir.Expr) tir.Expr {
		return tir.MutateExpr(e, func(x tir.Expr) tir.Expr {
			if l, ok := x.(*tir.Load); ok && fresh[l.Buf] != nil {
				return &tir.Load{Buf: fresh[l.Buf], Indices: l.Indices}
			}
			return x
		})
	}
	return tir.MutateStmt(s, tir.StmtFuncs{Expr: load, Stmt: func(st tir.Stmt) tir.Stmt {
		switch n := st.(type) {
		case *tir.Allocate:
			if b := fresh[n.Buf]; b != nil {
				return &tir.Allocate{Buf: b, Body: n.Body}
			}
		case *tir.Store:
			if b := fresh[n.Buf]; b != nil {
				return &tir.Store{Buf: b, Indices: n.Indices, Value: n.Value}
			}
		}
		return st
	}})
}

// holdsWhere returns where c holds for every value of the loops in dom: for
// f's variable in [s, Extent) with s the smallest such (Extent when
// nowhere), and in [0, e) with e the largest such (0 when nowhere). c must
// be a bound (<, <=, >, >=) on integers over f's variable and the loops in
// dom alone; otherwise it holds nowhere for certain: (Extent, 0).
func holdsWhere(c tir.Expr, f *tir.For, dom map[*tir.Var]tir.Interval) (s, e int) {
	none := func() (int, int) { return f.Extent, 0 }
	cmp, ok := c.(*tir.Compare)
	if !ok || cmp.A.Type() != tir.Int {
		return none()
	}
	var diff tir.Expr // c holds iff diff <= limit
	limit := int64(0)
	switch cmp.Op {
	case tir.LT:
		diff, limit = tir.SubE(cmp.A, cmp.B), -1
	case tir.LE:
		diff = tir.SubE(cmp.A, cmp.B)
	case tir.GT:
		diff, limit = tir.SubE(cmp.B, cmp.A), -1
	case tir.GE:
		diff = tir.SubE(cmp.B, cmp.A)
	default:
		return none()
	}
	uses, foreign := false, false
	tir.WalkExpr(diff, func(x tir.Expr) bool {
		switch x := x.(type) {
		case *tir.Var:
			if x == f.Var {
				uses = true
			} else if _, in := dom[x]; !in {
				foreign = true
			}
		case *tir.Load, *tir.Call:
			foreign = true
		}
		return !foreign
	})
	if !uses || foreign {
		return none()
	}
	holds := func(a, b int) bool { // c holds for f.Var in [a, b)
		if a >= b {
			return true
		}
		dom[f.Var] = tir.Interval{Lo: int64(a), Hi: int64(b) - 1}
		defer delete(dom, f.Var)
		return tir.ConstBound(diff, dom).Hi <= limit
	}
	lo, hi := 0, f.Extent // the largest e with holds(0, e)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if holds(0, mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	e = lo
	lo, hi = 0, f.Extent // the smallest s with holds(s, Extent)
	for lo < hi {
		mid := (lo + hi) / 2
		if holds(mid, f.Extent) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, e
}
