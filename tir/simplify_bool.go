// Booleans: comparisons and logic folded by interval proofs.

package tir

// ---- booleans ----

func (s *simplifier) simplifyBool(e Expr) Expr {
	switch n := e.(type) {
	case *Compare:
		return s.compare(n)
	case *And:
		a := s.simplify(n.A)
		if IsFalse(a) {
			return False
		}
		b := s.simplify(n.B)
		switch {
		case IsFalse(b):
			return False
		case IsTrue(a):
			return b
		case IsTrue(b), identical(a, b):
			return a
		}
		if a == n.A && b == n.B {
			return n
		}
		return &And{a, b}
	case *Or:
		a := s.simplify(n.A)
		if IsTrue(a) {
			return True
		}
		b := s.simplify(n.B)
		switch {
		case IsTrue(b):
			return True
		case IsFalse(a):
			return b
		case IsFalse(b), identical(a, b):
			return a
		}
		if a == n.A && b == n.B {
			return n
		}
		return &Or{a, b}
	case *Not:
		a := s.simplify(n.A)
		if v, ok := boolConst(a); ok {
			return boolExpr(!v)
		}
		switch a := a.(type) {
		case *Not:
			return a.A
		case *Compare:
			if a.A.Type() == Int { // exact for integers only (floats have NaN)
				return &Compare{negateCmp(a.Op), a.A, a.B}
			}
		}
		if a == n.A {
			return n
		}
		return &Not{a}
	case *Select:
		return s.selectExpr(n)
	case *Cast:
		return s.castExpr(n)
	case *Load:
		return s.load(n)
	case *Var:
		if r, ok := s.subst[n]; ok {
			return s.simplify(r)
		}
	}
	return e
}

// compare decides integer comparisons by the bound of the difference of the
// sides, folds float constants, and otherwise keeps the simplified sides.
func (s *simplifier) compare(n *Compare) Expr {
	switch n.A.Type() {
	case Int:
		a, b := s.linear(n.A), s.linear(n.B)
		if d, ok := s.axpy(a, -1, b); ok {
			if v, ok := decide(n.Op, s.boundForm(d)); ok {
				return boolExpr(v)
			}
		} else if d, ok := s.axpy(b, -1, a); ok { // b - a op' 0, op' mirrored
			if v, ok := decide(mirrorCmp(n.Op), s.boundForm(d)); ok {
				return boolExpr(v)
			}
		}
		x, y := s.simplify(n.A), s.simplify(n.B)
		if x == n.A && y == n.B {
			return n
		}
		return &Compare{n.Op, x, y}
	case Float32:
		a, b := s.simplify(n.A), s.simplify(n.B)
		x, xok := a.(*FloatImm)
		y, yok := b.(*FloatImm)
		if xok && yok {
			return boolExpr(cmpFloat(n.Op, float32(x.V), float32(y.V)))
		}
		if a == n.A && b == n.B {
			return n
		}
		return &Compare{n.Op, a, b}
	}
	a, b := s.simplify(n.A), s.simplify(n.B)
	x, xok := boolConst(a)
	y, yok := boolConst(b)
	if xok && yok && (n.Op == EQ || n.Op == NE) {
		return boolExpr((x == y) == (n.Op == EQ))
	}
	if a == n.A && b == n.B {
		return n
	}
	return &Compare{n.Op, a, b}
}

// decide reports whether d op 0 holds for every d in iv (value true), for
// none (value false), or neither (ok false).
func decide(op CmpOp, iv Interval) (value, ok bool) {
	// Unbounded ends are MinInt64/MaxInt64, which never satisfy the finite
	// tests below in the wrong direction.
	pos, nonneg := iv.Lo > 0, iv.Lo >= 0
	neg, nonpos := iv.Hi < 0, iv.Hi <= 0
	switch op {
	case LT:
		return neg, neg || nonneg
	case LE:
		return nonpos, nonpos || pos
	case GT:
		return pos, pos || nonpos
	case GE:
		return nonneg, nonneg || neg
	case EQ:
		zero := iv.Lo == 0 && iv.Hi == 0
		return zero, zero || pos || neg
	}
	zero := iv.Lo == 0 && iv.Hi == 0
	return !zero, zero || pos || neg
}
