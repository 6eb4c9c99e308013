// floordiv and floormod: the normalization c*floordiv(x, c) + floormod(x,
// c) = x (and the digits of a fused index put back together), and the
// division rules proved by intervals.

package tir

import (
	"math"
)

// ---- normalization: c*floordiv(x, c) + floormod(x, c) = x ----

// normalize merges every pair k*c*floordiv(x, c) + k*floormod(x, c) of a form
// into k*x (exact for any non-zero c under floor semantics), and every pair
// k*c1*floormod(floordiv(x, c1) + r0, c2) + k*floormod(x, c1) into
// k*floormod(x + c1*r0, c1*c2) (c1, c2 > 0): the index of a fused loop
// split into its digits, put back together (a cooperative fetch's
// (t/3 % 3)*3 + t%3 is t % 9).
func (s *simplifier) normalize(f linearForm) linearForm {
	for range 64 { // each merge removes an atom; the bound only guards
		g, ok := s.mergeDivMod(f)
		if !ok {
			break
		}
		f = g
	}
	return f
}

// mergeDivMod merges one pair of f's terms k*floormod(x, c) and k*c*a,
// where a is the quotient's part of x: a = floordiv(x, c) makes k*x,
// a = floormod(floordiv(x, c) + r0, c2) makes k*floormod(x + c*r0, c*c2)
// (modChain).
func (s *simplifier) mergeDivMod(f linearForm) (linearForm, bool) {
	for _, t := range f.terms {
		m, ok := t.atom.(*Binary)
		if !ok || m.Op != FloorMod {
			continue
		}
		c, ok := IsConst(m.B)
		if !ok || c == 0 {
			continue
		}
		want, ok := mul64(t.coef, c)
		if !ok {
			continue
		}
		for _, u := range f.terms {
			d, ok := u.atom.(*Binary)
			if u.coef != want || !ok {
				continue
			}
			var by linearForm
			switch {
			case d.Op == FloorDiv && identical(d.A, m.A) && identical(d.B, m.B):
				by = s.linear(m.A)
			case d.Op == FloorMod && c > 0:
				if by, ok = s.modChain(m, d, c); !ok {
					continue
				}
			default:
				continue
			}
			g, ok1 := s.axpy(f, -t.coef, linearForm{terms: []term{{t.atom, t.text, 1}}})
			g, ok2 := s.axpy(g, -u.coef, linearForm{terms: []term{{u.atom, u.text, 1}}})
			g, ok3 := s.axpy(g, t.coef, by)
			if ok1 && ok2 && ok3 {
				return g, true
			}
		}
	}
	return f, false
}

// modChain returns floormod(x + c1*r0, c1*c2) for mod = floormod(x, c1)
// and outer = floormod(floordiv(x, c1) + r0, c2), c1, c2 > 0: the sum
// c1*outer + mod. With q = floordiv(x, c1): x = c1*q + floormod(x, c1), and
// floordiv(x + c1*r0, c1*c2) = floordiv(q + r0, c2), so both sides are
// x + c1*r0 - c1*c2*floordiv(q + r0, c2).
func (s *simplifier) modChain(mod, outer *Binary, c1 int64) (linearForm, bool) {
	c2, ok := IsConst(outer.B)
	if !ok || c2 <= 0 {
		return linearForm{}, false
	}
	y := s.linear(outer.A)
	if len(y.terms) != 1 || y.terms[0].coef != 1 {
		return linearForm{}, false
	}
	d, ok := y.terms[0].atom.(*Binary)
	if !ok || d.Op != FloorDiv || !identical(d.A, mod.A) || !identical(d.B, mod.B) {
		return linearForm{}, false
	}
	shift, ok1 := mul64(c1, y.c)
	c12, ok2 := mul64(c1, c2)
	x, ok3 := s.axpy(s.linear(mod.A), 1, constForm(shift))
	if !ok1 || !ok2 || !ok3 {
		return linearForm{}, false
	}
	return s.floorModPos(x, c12, nil)
}

// ---- floordiv and floormod ----

// floorDiv folds constants and applies the rules for positive constant
// divisors; other divisors keep the division whole. orig, if not nil, is
// the expression being simplified (see divModAtom).
func (s *simplifier) floorDiv(a, b linearForm, orig *Binary) (linearForm, bool) {
	c, ok := b.isConst()
	if !ok || c == 0 {
		return linearForm{}, false
	}
	if v, ok := a.isConst(); ok {
		q, ok := floorDiv64(v, c)
		return constForm(q), ok
	}
	switch {
	case c == -1:
		return s.scale(a, -1)
	case c < 0:
		return linearForm{}, false
	}
	return s.floorDivPos(a, c, orig)
}

func (s *simplifier) floorMod(a, b linearForm, orig *Binary) (linearForm, bool) {
	c, ok := b.isConst()
	if !ok || c == 0 {
		return linearForm{}, false
	}
	if v, ok := a.isConst(); ok {
		return constForm(floorMod64(v, c)), true
	}
	switch {
	case c == 1 || c == -1:
		return constForm(0), true
	case c < 0:
		return linearForm{}, false
	}
	return s.floorModPos(a, c, orig)
}

// splitMultiples writes a as c*q + r, where q takes the terms whose
// coefficient c divides and floordiv(a.c, c), and r keeps the other terms and
// floormod(a.c, c) ∈ [0, c). c > 0.
func (s *simplifier) splitMultiples(a linearForm, c int64) (q, r linearForm) {
	qc, _ := floorDiv64(a.c, c)
	q.c, r.c = qc, floorMod64(a.c, c)
	n := 0
	for _, t := range a.terms {
		if t.coef%c == 0 {
			n++
		}
	}
	if n == 0 {
		r.terms = a.terms
		return q, r
	}
	q.terms = s.newTerms(n)
	if n < len(a.terms) {
		r.terms = s.newTerms(len(a.terms) - n)
	}
	for _, t := range a.terms {
		if t.coef%c == 0 {
			q.terms = append(q.terms, term{t.atom, t.text, t.coef / c})
		} else {
			r.terms = append(r.terms, t)
		}
	}
	return q, r
}

// samePeriod reports whether r's bound lies within one period
// [k*c, k*c + c-1], and k.
func (s *simplifier) samePeriod(r linearForm, c int64) (int64, bool) {
	iv := s.boundForm(r)
	if iv.Lo == math.MinInt64 || iv.Hi == math.MaxInt64 {
		return 0, false
	}
	k1, _ := floorDiv64(iv.Lo, c)
	k2, _ := floorDiv64(iv.Hi, c)
	return k1, k1 == k2
}

// commonFactor returns gcd(c, coefficients of r's terms) and, when it is
// g > 1, r = g*y + r0 with r0 = floormod(r.c, g).
func (s *simplifier) commonFactor(r linearForm, c int64) (g int64, y linearForm, r0 int64) {
	gu := uint64(c)
	for _, t := range r.terms {
		gu = gcdU(gu, absU(t.coef))
	}
	g = int64(gu)
	if g <= 1 {
		return g, y, 0
	}
	r0 = floorMod64(r.c, g)
	y.c = (r.c - r0) / g
	y.terms = s.newTerms(len(r.terms))
	for _, t := range r.terms {
		y.terms = append(y.terms, term{t.atom, t.text, t.coef / g})
	}
	return g, y, r0
}

// nestedOp reports whether r is exactly 1*op(x, a) + r.c for a constant
// a > 0, and returns x and a.
func nestedOp(r linearForm, op BinOp) (Expr, int64, bool) {
	if len(r.terms) != 1 || r.terms[0].coef != 1 {
		return nil, 0, false
	}
	b, ok := r.terms[0].atom.(*Binary)
	if !ok || b.Op != op {
		return nil, 0, false
	}
	a, ok := IsConst(b.B)
	if !ok || a <= 0 {
		return nil, 0, false
	}
	return b.A, a, true
}

// floorDivPos simplifies floordiv(a, c) for c > 0:
//
//	floordiv(c*q + r, c)           = q + floordiv(r, c)
//	floordiv(r, c)                 = k        when bound(r) ⊆ [k*c, k*c+c-1]
//	floordiv(g*y + r0, g*c')       = floordiv(y, c')       0 ≤ r0 < g
//	floordiv(floordiv(x, a) + r0, c) = floordiv(x + a*r0, a*c)   a > 0
func (s *simplifier) floorDivPos(a linearForm, c int64, orig *Binary) (linearForm, bool) {
	if c == 1 {
		return a, true
	}
	q, r := s.splitMultiples(a, c)
	d, ok := s.divRemainder(r, c, orig)
	if !ok {
		return linearForm{}, false
	}
	f, ok := s.axpy(q, 1, d)
	return s.normalize(f), ok
}

// divRemainder is floordiv(r, c) for r as left by splitMultiples.
func (s *simplifier) divRemainder(r linearForm, c int64, orig *Binary) (linearForm, bool) {
	if v, ok := r.isConst(); ok {
		q, _ := floorDiv64(v, c)
		return constForm(q), true
	}
	if k, ok := s.samePeriod(r, c); ok {
		return constForm(k), true
	}
	if g, y, _ := s.commonFactor(r, c); g > 1 {
		return s.floorDivPos(y, c/g, orig)
	}
	if x, a, ok := nestedOp(r, FloorDiv); ok {
		ar0, ok1 := mul64(a, r.c)
		ac, ok2 := mul64(a, c)
		inner, ok3 := s.axpy(s.linear(x), 1, constForm(ar0))
		if ok1 && ok2 && ok3 {
			return s.floorDivPos(inner, ac, orig)
		}
	}
	return s.atomForm(divModAtom(FloorDiv, r, c, orig)), true
}

// floorModPos simplifies floormod(a, c) for c > 0:
//
//	floormod(c*q + r, c)     = floormod(r, c)
//	floormod(r, c)           = r - k*c   when bound(r) ⊆ [k*c, k*c+c-1]
//	floormod(g*y + r0, g*c') = g*floormod(y, c') + r0     0 ≤ r0 < g
//	floormod(floormod(x, a) + r0, c) = floormod(x + r0, c)  when c divides a
func (s *simplifier) floorModPos(a linearForm, c int64, orig *Binary) (linearForm, bool) {
	if c == 1 {
		return constForm(0), true
	}
	_, r := s.splitMultiples(a, c)
	if v, ok := r.isConst(); ok {
		return constForm(v), true
	}
	if k, ok := s.samePeriod(r, c); ok {
		kc, ok1 := mul64(k, c)
		f, ok2 := s.axpy(r, -1, constForm(kc))
		return f, ok1 && ok2
	}
	if g, y, r0 := s.commonFactor(r, c); g > 1 {
		m, ok := s.floorModPos(y, c/g, orig)
		if !ok {
			return linearForm{}, false
		}
		f, ok1 := s.scale(m, g)
		f, ok2 := s.axpy(f, 1, constForm(r0))
		return f, ok1 && ok2
	}
	if x, a, ok := nestedOp(r, FloorMod); ok && a%c == 0 {
		if inner, ok := s.axpy(s.linear(x), 1, constForm(r.c)); ok {
			return s.floorModPos(inner, c, orig)
		}
	}
	return s.atomForm(divModAtom(FloorMod, r, c, orig)), true
}

// divModAtom returns op(r, c) as an atom: orig itself when it is exactly
// that expression (simplified input is kept, not rebuilt), else a new node.
func divModAtom(op BinOp, r linearForm, c int64, orig *Binary) Expr {
	if orig != nil && orig.Op == op {
		if k, ok := IsConst(orig.B); ok && k == c && formIs(r, orig.A) {
			return orig
		}
	}
	return &Binary{op, buildForm(r), Const(c)}
}
