// The simplifier: constant folding for every type, the canonical affine form
// of integer expressions, the floordiv/floormod and min/max rules, boolean
// folding by interval proofs, and the entry points Simplify, SimplifyStmt,
// LinearIn and Prove, with the boolean constants True/False. Its rules live
// in the files beside this one, one family each: simplify_order.go (the
// order of atoms), simplify_linear.go (linear forms and products),
// simplify_divmod.go (floordiv and floormod), simplify_minmax.go (min, max,
// select, cast, load), simplify_bool.go, simplify_float.go and
// simplify_stmt.go (statements).

package tir

import (
	"sync"
)

// True and False are the canonical boolean constants (0 == 0 and 0 != 0).
// Simplify returns one of them for every condition it decides.
var (
	True  Expr = &Compare{Op: EQ, A: Const(0), B: Const(0)}
	False Expr = &Compare{Op: NE, A: Const(0), B: Const(0)}
)

// IsTrue reports whether e is a constant true condition: True, or any
// comparison of two integer constants that holds.
func IsTrue(e Expr) bool {
	v, ok := boolConst(e)
	return ok && v
}

// IsFalse reports whether e is a constant false condition: False, or any
// comparison of two integer constants that fails.
func IsFalse(e Expr) bool {
	v, ok := boolConst(e)
	return ok && !v
}

func boolConst(e Expr) (value, ok bool) {
	c, isCmp := e.(*Compare)
	if !isCmp {
		return false, false
	}
	a, aok := c.A.(*IntImm)
	b, bok := c.B.(*IntImm)
	if !aok || !bok {
		return false, false
	}
	return cmpInt(c.Op, a.V, b.V), true
}

func boolExpr(b bool) Expr {
	if b {
		return True
	}
	return False
}

func cmpInt(op CmpOp, a, b int64) bool {
	switch op {
	case EQ:
		return a == b
	case NE:
		return a != b
	case LT:
		return a < b
	case LE:
		return a <= b
	case GT:
		return a > b
	}
	return a >= b
}

func cmpFloat(op CmpOp, a, b float32) bool {
	switch op {
	case EQ:
		return a == b
	case NE:
		return a != b
	case LT:
		return a < b
	case LE:
		return a <= b
	case GT:
		return a > b
	}
	return a >= b
}

// mirrorCmp returns the operator of b op' a when a op b: swapped sides.
func mirrorCmp(op CmpOp) CmpOp {
	return [...]CmpOp{EQ: EQ, NE: NE, LT: GT, LE: GE, GT: LT, GE: LE}[op]
}

// negateCmp returns the operator of !(a op b), exact for integers.
func negateCmp(op CmpOp) CmpOp {
	return [...]CmpOp{EQ: NE, NE: EQ, LT: GE, LE: GT, GT: LE, GE: LT}[op]
}

// Simplify returns an expression equal to e wherever the variables lie in dom
// (nil: unbounded; a variable missing from dom is unbounded).
//
// Integers are mathematical integers: the result equals e at every point of
// dom where e is defined (divides by no zero) and its evaluation fits in
// int64. Constant folding never wraps: an operation whose result would not
// fit is kept as written. Subterms whose value cannot matter may be dropped
// (x*0 = 0 even if x divides by zero).
//
// Every integer expression is put in canonical affine form: a sum of
// coef × atom plus a constant, an atom being a variable or a non-affine
// subterm (floordiv, floormod, min, max, select, load, cast, a product of
// non-constants), itself simplified. Terms are ordered by the atom's printed
// form (ExprString), so equal affine expressions print identically; atoms
// that print alike (distinct variables or buffers of equal names) are ordered
// by where their variables and buffers first appear in e, in pre-order. The
// result is built as ((t1 + t2) - t3) + c, a term being atom or atom*coef,
// the constant last. Min/max chains are flattened and their operands, like
// the factors of products, sorted the same way. Sums are not multiplied out.
//
// Rules, beyond folding and collecting terms (c > 0 a constant):
//
//	floordiv(c*q + r, c) = q + floordiv(r, c),  floormod(c*q + r, c) = floormod(r, c)
//	floordiv(r, c) = k, floormod(r, c) = r - k*c      when bound(r) ⊆ [k*c, k*c+c-1]
//	floordiv(g*y + r0, g*c) = floordiv(y, c)          0 ≤ r0 < g
//	floormod(g*y + r0, g*c) = g*floormod(y, c) + r0   0 ≤ r0 < g
//	floordiv(floordiv(x, a) + r0, c) = floordiv(x + a*r0, a*c)   a > 0
//	floormod(floormod(x, a) + r0, c) = floormod(x + r0, c)       a > 0, c divides a
//	k*c*floordiv(x, c) + k*floormod(x, c) = k*x
//	floordiv(x, 1) = x, floordiv(x, -1) = -x, floormod(x, ±1) = 0
//	min/max: operands another provably dominates are dropped
//	x = k when dom gives x the interval [k, k]
//
// Integer comparisons that the bound of the difference of their sides
// decides become True or False; And/Or/Not/Select with constant conditions
// fold; !(a < b) becomes a >= b for integers.
//
// Floats are folded only where the float32 result is finite, never
// reassociated, and only the identities that hold for every float including
// -0 and NaN are used: x*1, x/1, x-0.0, x+(-0.0). x+0.0 (-0 + 0 is +0) and
// x*0.0 (NaN, -0) are kept; min/max of -0 and +0 are kept; only fabs, floor,
// ceil and sqrt of constants are folded (exp, log, ... may differ by an ulp
// between Go and C libraries).
func Simplify(e Expr, dom map[*Var]Interval) Expr {
	if e == nil {
		return nil
	}
	s := newSimplifier(dom, e)
	defer s.release()
	return s.simplify(e)
}

// Prove reports whether cond is provably always true (value=true,
// proven=true) or always false (value=false, proven=true) under dom. Integer
// comparisons are decided by ConstBound of the difference of their sides;
// And, Or and Not combine the results.
func Prove(cond Expr, dom map[*Var]Interval) (value bool, proven bool) {
	c := Simplify(cond, dom)
	switch {
	case IsTrue(c):
		return true, true
	case IsFalse(c):
		return false, true
	}
	return false, false
}

// LinearIn decomposes the integer expression e as coef*v + rest where rest
// does not mention v. ok is false when e is not affine in v (v appears inside
// a floordiv, min, load index, product with another variable, ...). e is
// simplified first (with no domain); rest is simplified.
func LinearIn(e Expr, v *Var) (coef int64, rest Expr, ok bool) {
	if e == nil || e.Type() != Int {
		return 0, nil, false
	}
	s := newSimplifier(nil, e)
	defer s.release()
	f := s.linear(e)
	r := linearForm{c: f.c}
	memo := map[Expr]bool{}
	for _, t := range f.terms {
		if t.atom == Expr(v) {
			coef = t.coef
			continue
		}
		if mentions(t.atom, func(x *Var) bool { return x == v }, memo) {
			return 0, nil, false
		}
		r.terms = append(r.terms, t)
	}
	return coef, buildForm(r), true
}

// ---- the simplifier ----

// simplifier holds the state of one simplification: the domain, memo tables
// keyed by node (nodes are immutable, so a node's result never changes).
//
// SimplifyStmt uses one simplifier for a whole statement tree. The memo
// tables depend on the domain and the substitution, so they are cleared
// whenever those change (reset). Atoms that print alike but differ are
// ordered by the first appearance of their variables and buffers in the
// expression being simplified (root); a result that depended on that order
// holds only for that root, so the memo tables are cleared after such an
// expression too.
type simplifier struct {
	dom    map[*Var]Interval
	subst  map[*Var]Expr // variables replaced while simplifying (SimplifyStmt)
	root   Expr          // the expression being simplified
	ord    ordinals      // of root, built on the first tie (see tieBreak)
	tied   bool          // a result depended on ord
	scope  int           // SimplifyStmt: the scope dom and subst belong to
	scopes int           // SimplifyStmt: scope numbers handed out
	forms  map[Expr]linearForm
	simple map[Expr]Expr
	bounds map[Expr]Interval
	chunk  []term // the chunk newTerms cuts term slices from
	free   []term // the part of chunk not yet cut
}

// simplifiers recycles simplifiers: the memo tables keep their capacity,
// and making and growing them is most of what a small simplification costs.
var simplifiers = sync.Pool{New: func() any { return new(simplifier) }}

// newSimplifier returns a simplifier of root under dom, which the caller
// releases when done with it and with every form it returned.
func newSimplifier(dom map[*Var]Interval, root Expr) *simplifier {
	s := simplifiers.Get().(*simplifier)
	s.dom, s.root = dom, root
	return s
}

// release clears s and returns it to the pool. The last chunk of terms is
// used again: nothing a simplification returns refers to a form.
func (s *simplifier) release() {
	clear(s.forms)
	clear(s.simple)
	clear(s.bounds)
	s.ord.clear()
	clear(s.chunk[:len(s.chunk)-len(s.free)]) // drop the atoms it refers to
	*s = simplifier{ord: s.ord, forms: s.forms, simple: s.simple, bounds: s.bounds, chunk: s.chunk, free: s.chunk}
	simplifiers.Put(s)
}

// memoize stores (*m)[e] = v, making the map on first use: many
// simplifications need few of the tables.
func memoize[V any](m *map[Expr]V, e Expr, v V) {
	if *m == nil {
		*m = map[Expr]V{}
	}
	(*m)[e] = v
}

// reset forgets every result that depends on the domain, the substitution
// or the root's ordinals.
func (s *simplifier) reset() {
	clear(s.forms)
	clear(s.simple)
	clear(s.bounds)
	s.tied = false
}

// mentions reports whether e mentions a variable for which pred holds,
// visiting each shared node once; memo belongs to one pred.
func mentions(e Expr, pred func(*Var) bool, memo map[Expr]bool) bool {
	if r, ok := memo[e]; ok {
		return r
	}
	found := false
	if v, ok := e.(*Var); ok {
		found = pred(v)
	} else {
		WalkExpr(e, func(x Expr) bool {
			if x == e {
				return true
			}
			found = found || mentions(x, pred, memo)
			return false // children only; they recurse themselves
		})
	}
	memo[e] = found
	return found
}

// simplify dispatches on the type of e.
func (s *simplifier) simplify(e Expr) Expr {
	switch n := e.(type) { // leaves are cheaper to redo than to look up
	case nil:
		return nil
	case *IntImm:
		return n
	case *Var:
		if n.T == Int {
			return buildForm(s.variable(n))
		}
	}
	if r, ok := s.simple[e]; ok {
		return r
	}
	var r Expr
	switch e.Type() {
	case Int:
		if f := s.linear(e); formIs(f, e) {
			r = e // already in canonical form
		} else {
			r = buildForm(f)
		}
	case Bool:
		r = s.simplifyBool(e)
	default:
		r = s.simplifyFloat(e)
	}
	memoize(&s.simple, e, r)
	return r
}
