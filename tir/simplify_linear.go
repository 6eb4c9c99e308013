// Linear forms and products: the canonical affine form of integer
// expressions (linearForm) and the folding of products.

package tir

import (
	"math"
	"slices"
)

// ---- linear forms ----

// term is coef × atom; text is the atom's printed form.
type term struct {
	atom Expr
	text string
	coef int64
}

// linearForm is Σ coef×atom + c with terms sorted by compareAtoms, no two
// terms on the same atom and no zero coefficient. Forms are values:
// operations build new term slices and never modify their inputs.
type linearForm struct {
	terms []term
	c     int64
}

func constForm(c int64) linearForm { return linearForm{c: c} }

func (f linearForm) isConst() (int64, bool) { return f.c, len(f.terms) == 0 }

// newTerms returns an empty term slice of capacity n. Forms are many and
// small, so their slices are cut from larger chunks; the capacity is capped,
// so that appending to one never writes into the next.
func (s *simplifier) newTerms(n int) []term {
	if n > len(s.free) {
		s.chunk = make([]term, max(n, 256))
		s.free = s.chunk
	}
	t := s.free[:0:n]
	s.free = s.free[n:]
	return t
}

func (s *simplifier) atomForm(atom Expr) linearForm {
	return linearForm{terms: append(s.newTerms(1), term{atom, atomText(atom), 1})}
}

// axpy returns a + k*b; ok is false on int64 overflow.
func (s *simplifier) axpy(a linearForm, k int64, b linearForm) (linearForm, bool) {
	kc, ok1 := mul64(k, b.c)
	c, ok2 := add64(a.c, kc)
	if !ok1 || !ok2 {
		return linearForm{}, false
	}
	switch { // forms never modify their terms, so they may share them
	case len(b.terms) == 0:
		return linearForm{a.terms, c}, true
	case len(a.terms) == 0 && k == 1:
		return linearForm{b.terms, c}, true
	}
	out := s.newTerms(len(a.terms) + len(b.terms))
	i, j := 0, 0
	for i < len(a.terms) || j < len(b.terms) {
		cmp := 0
		switch {
		case j == len(b.terms):
			cmp = -1
		case i == len(a.terms):
			cmp = 1
		default:
			cmp = s.compareAtoms(a.terms[i].atom, a.terms[i].text, b.terms[j].atom, b.terms[j].text)
		}
		if cmp < 0 {
			out = append(out, a.terms[i])
			i++
			continue
		}
		kb, ok := mul64(k, b.terms[j].coef)
		if !ok {
			return linearForm{}, false
		}
		t := b.terms[j]
		t.coef = kb
		j++
		if cmp == 0 {
			if t.coef, ok = add64(a.terms[i].coef, kb); !ok {
				return linearForm{}, false
			}
			i++
		}
		if t.coef != 0 {
			out = append(out, t)
		}
	}
	return linearForm{out, c}, true
}

// scale returns k*f; ok is false on overflow.
func (s *simplifier) scale(f linearForm, k int64) (linearForm, bool) {
	return s.axpy(constForm(0), k, f)
}

// buildForm turns a form into an expression: terms in key order, the first
// as atom or atom*coef, the others added or (for negative coefficients)
// subtracted, the constant last.
func buildForm(f linearForm) Expr {
	var e Expr
	for _, t := range f.terms {
		switch {
		case e == nil:
			e = termExpr(t.atom, t.coef)
		case t.coef < 0 && t.coef != math.MinInt64:
			e = SubE(e, termExpr(t.atom, -t.coef))
		default:
			e = AddE(e, termExpr(t.atom, t.coef))
		}
	}
	switch {
	case e == nil:
		return Const(f.c)
	case f.c < 0 && f.c != math.MinInt64:
		return SubE(e, Const(-f.c))
	case f.c != 0:
		return AddE(e, Const(f.c))
	}
	return e
}

func termExpr(atom Expr, coef int64) Expr {
	if coef == 1 {
		return atom
	}
	return MulE(atom, Const(coef))
}

// formIs reports whether e is identical to buildForm(f), without building
// it: then e can stand for the form.
func formIs(f linearForm, e Expr) bool {
	if len(f.terms) == 0 {
		c, ok := IsConst(e)
		return ok && c == f.c
	}
	// buildForm, undone from the outside in: the constant, then the terms.
	switch {
	case f.c < 0 && f.c != math.MinInt64:
		e = leftOf(e, Sub, func(x Expr) bool { c, ok := IsConst(x); return ok && c == -f.c })
	case f.c != 0:
		e = leftOf(e, Add, func(x Expr) bool { c, ok := IsConst(x); return ok && c == f.c })
	}
	for i := len(f.terms) - 1; i > 0 && e != nil; i-- {
		t := f.terms[i]
		if t.coef < 0 && t.coef != math.MinInt64 {
			e = leftOf(e, Sub, func(x Expr) bool { return termIs(x, t.atom, -t.coef) })
		} else {
			e = leftOf(e, Add, func(x Expr) bool { return termIs(x, t.atom, t.coef) })
		}
	}
	return e != nil && termIs(e, f.terms[0].atom, f.terms[0].coef)
}

// leftOf returns the left operand of e when e is op(x, y) and right(y);
// else nil.
func leftOf(e Expr, op BinOp, right func(Expr) bool) Expr {
	if b, ok := e.(*Binary); ok && b.Op == op && right(b.B) {
		return b.A
	}
	return nil
}

// termIs reports whether e is identical to termExpr(atom, coef).
func termIs(e, atom Expr, coef int64) bool {
	if coef == 1 {
		return identical(e, atom)
	}
	m, ok := e.(*Binary)
	if !ok || m.Op != Mul {
		return false
	}
	c, ok := IsConst(m.B)
	return ok && c == coef && identical(m.A, atom)
}

// linear returns the canonical form of an integer expression.
func (s *simplifier) linear(e Expr) linearForm {
	// Leaves, and operations on two leaves, are cheaper to redo than to
	// look up; every other node is memoized, so the work stays linear in
	// the number of distinct nodes.
	switch n := e.(type) {
	case *IntImm:
		return constForm(n.V)
	case *Var:
		return s.variable(n)
	case *Binary:
		if isLeaf(n.A) && isLeaf(n.B) {
			return s.binaryInt(n)
		}
	}
	if f, ok := s.forms[e]; ok {
		return f
	}
	var f linearForm
	switch n := e.(type) {
	case *Binary:
		f = s.binaryInt(n)
	case *Select:
		f = s.selectInt(n)
	case *Cast:
		f = s.castInt(n)
	case *Load:
		f = s.atomForm(s.load(n))
	default: // not an integer node; keep it whole
		f = s.atomForm(s.simplify(e))
	}
	memoize(&s.forms, e, f)
	return f
}

func isLeaf(e Expr) bool {
	switch e.(type) {
	case *IntImm, *Var:
		return true
	}
	return false
}

// variable is a substituted value, the constant of a point domain
// (x ∈ [k, k] is k), or the variable itself.
func (s *simplifier) variable(v *Var) linearForm {
	if r, ok := s.subst[v]; ok {
		return s.linear(r)
	}
	if iv, ok := s.dom[v]; ok && iv.Lo == iv.Hi && iv.Lo != math.MinInt64 && iv.Hi != math.MaxInt64 {
		return constForm(iv.Lo)
	}
	return s.atomForm(v)
}

// opaque keeps op(a, b) as an atom with simplified operands: for what no
// rule handles and for anything that would overflow.
func (s *simplifier) opaque(n *Binary, a, b linearForm) linearForm {
	if formIs(a, n.A) && formIs(b, n.B) {
		return s.atomForm(n)
	}
	return s.atomForm(&Binary{n.Op, buildForm(a), buildForm(b)})
}

func (s *simplifier) binaryInt(n *Binary) linearForm {
	a, b := s.linear(n.A), s.linear(n.B)
	var (
		f  linearForm
		ok bool
	)
	switch n.Op {
	case Add:
		f, ok = s.axpy(a, 1, b)
		f = s.normalize(f)
	case Sub:
		f, ok = s.axpy(a, -1, b)
		f = s.normalize(f)
	case Mul:
		f, ok = s.mul(a, b)
	case FloorDiv:
		f, ok = s.floorDiv(a, b, n)
	case FloorMod:
		f, ok = s.floorMod(a, b, n)
	case Min, Max:
		f, ok = s.minMax(n.Op, a, b), true
	}
	if !ok { // Div (not an integer operator), or overflow
		return s.opaque(n, a, b)
	}
	return f
}

// ---- products ----

// mul multiplies two forms. A constant side scales the other (x*0 = 0 for
// integers). Otherwise the result is coef × product, the product being the
// sorted factors of both sides, each factor an atom or a non-monomial sum;
// sums are not expanded.
func (s *simplifier) mul(a, b linearForm) (linearForm, bool) {
	if c, ok := b.isConst(); ok {
		return s.scale(a, c)
	}
	if c, ok := a.isConst(); ok {
		return s.scale(b, c)
	}
	ca, fa := factorOut(a)
	cb, fb := factorOut(b)
	coef, ok := mul64(ca, cb)
	if !ok {
		return linearForm{}, false
	}
	factors := flattenChain(Mul, fa, nil)
	factors = flattenChain(Mul, fb, factors)
	s.sortByKey(factors)
	prod := factors[0]
	for _, x := range factors[1:] {
		prod = MulE(prod, x)
	}
	return linearForm{terms: append(s.newTerms(1), term{prod, atomText(prod), coef})}, true
}

// factorOut splits a non-constant form into coef × factor.
func factorOut(f linearForm) (int64, Expr) {
	if len(f.terms) == 1 && f.c == 0 {
		return f.terms[0].coef, f.terms[0].atom
	}
	return 1, buildForm(f)
}

// flattenChain appends to out the operands of the op-chain e (nested
// Binary{op} nodes); for Mul, a node with a constant operand is a scaled
// term, not a product, and stays whole.
func flattenChain(op BinOp, e Expr, out []Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == op {
		_, ca := IsConst(b.A)
		_, cb := IsConst(b.B)
		if op != Mul || (!ca && !cb) {
			out = flattenChain(op, b.A, out)
			return flattenChain(op, b.B, out)
		}
	}
	return append(out, e)
}

func (s *simplifier) sortByKey(es []Expr) {
	ts := make([]term, len(es))
	for i, e := range es {
		ts[i] = term{atom: e, text: atomText(e)}
	}
	slices.SortStableFunc(ts, func(a, b term) int { return s.compareAtoms(a.atom, a.text, b.atom, b.text) })
	for i, t := range ts {
		es[i] = t.atom
	}
}
