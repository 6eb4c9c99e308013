// min and max by interval proofs; select, cast and load.

package tir

import (
	"math"
)

// ---- min and max ----

// minMax flattens nested chains of the same operator, drops every operand
// that another provably dominates (bound of their difference), and sorts the
// rest; a single survivor is the result.
func (s *simplifier) minMax(op BinOp, a, b linearForm) linearForm {
	ops := append(s.chainOperands(op, a), s.chainOperands(op, b)...)
	alive := make([]bool, len(ops))
	for i := range alive {
		alive[i] = true
	}
	for i := range ops {
		for j := i + 1; j < len(ops) && alive[i]; j++ {
			if !alive[j] {
				continue
			}
			le, ge := s.order(ops[i], ops[j]) // ops[i] ≤ ops[j], ops[i] ≥ ops[j]
			if op == Max {
				le, ge = ge, le
			}
			// now le means "ops[i] wins", ge means "ops[j] wins"
			switch {
			case le:
				alive[j] = false
			case ge:
				alive[i] = false
			}
		}
	}
	var exprs []Expr
	var last linearForm
	for i, f := range ops {
		if alive[i] {
			exprs = append(exprs, buildForm(f))
			last = f
		}
	}
	if len(exprs) == 1 {
		return last
	}
	s.sortByKey(exprs)
	chain := exprs[0]
	for _, x := range exprs[1:] {
		chain = &Binary{op, chain, x}
	}
	return s.atomForm(chain)
}

// order reports whether a ≤ b and whether a ≥ b provably hold, from the
// bound of a - b (or of b - a when only that one fits in an int64).
func (s *simplifier) order(a, b linearForm) (le, ge bool) {
	if d, ok := s.axpy(a, -1, b); ok {
		iv := s.boundForm(d)
		return iv.Hi <= 0, iv.Lo >= 0
	}
	if d, ok := s.axpy(b, -1, a); ok {
		iv := s.boundForm(d)
		return iv.Lo >= 0, iv.Hi <= 0
	}
	return false, false
}

// chainOperands returns the operands of f when f is a single op-chain atom,
// else f itself.
func (s *simplifier) chainOperands(op BinOp, f linearForm) []linearForm {
	if len(f.terms) != 1 || f.terms[0].coef != 1 || f.c != 0 {
		return []linearForm{f}
	}
	if b, ok := f.terms[0].atom.(*Binary); !ok || b.Op != op {
		return []linearForm{f}
	}
	var out []linearForm
	for _, x := range flattenChain(op, f.terms[0].atom, nil) {
		out = append(out, s.linear(x))
	}
	return out
}

// ---- select, cast, load ----

func (s *simplifier) selectInt(n *Select) linearForm {
	c := s.simplify(n.Cond)
	switch {
	case IsTrue(c):
		return s.linear(n.T)
	case IsFalse(c):
		return s.linear(n.F)
	}
	t, f := s.simplify(n.T), s.simplify(n.F)
	if identical(t, f) {
		return s.linear(n.T)
	}
	if c == n.Cond && t == n.T && f == n.F {
		return s.atomForm(n)
	}
	return s.atomForm(&Select{c, t, f})
}

// selectExpr simplifies a float or boolean select.
func (s *simplifier) selectExpr(n *Select) Expr {
	c := s.simplify(n.Cond)
	switch {
	case IsTrue(c):
		return s.simplify(n.T)
	case IsFalse(c):
		return s.simplify(n.F)
	}
	t, f := s.simplify(n.T), s.simplify(n.F)
	if identical(t, f) {
		return t
	}
	if c == n.Cond && t == n.T && f == n.F {
		return n
	}
	return &Select{c, t, f}
}

func (s *simplifier) load(n *Load) *Load {
	if idx, changed := s.simplifyAll(n.Indices); changed {
		return &Load{n.Buf, idx}
	}
	return n
}

// simplifyAll simplifies each of es; changed is false, and the slice es
// itself, when every one was already simplified.
func (s *simplifier) simplifyAll(es []Expr) (out []Expr, changed bool) {
	for i, x := range es {
		y := s.simplify(x)
		if y != x && out == nil {
			out = make([]Expr, len(es))
			copy(out, es[:i])
		}
		if out != nil {
			out[i] = y
		}
	}
	if out == nil {
		return es, false
	}
	return out, true
}

// castInt simplifies a cast to Int: int→int is dropped; bool and float
// constants fold (floats truncate toward zero, as in C, when in range).
func (s *simplifier) castInt(n *Cast) linearForm {
	if n.X.Type() == Int {
		return s.linear(n.X)
	}
	x := s.simplify(n.X)
	switch {
	case IsTrue(x):
		return constForm(1)
	case IsFalse(x):
		return constForm(0)
	}
	if f, ok := x.(*FloatImm); ok {
		t := math.Trunc(float64(float32(f.V)))
		if t >= -(1<<63) && t < 1<<63 { // false for NaN and ±Inf
			return constForm(int64(t))
		}
	}
	if x == n.X {
		return s.atomForm(n)
	}
	return s.atomForm(&Cast{Int, x})
}

// castExpr simplifies a cast to Float32 or Bool.
func (s *simplifier) castExpr(n *Cast) Expr {
	x := s.simplify(n.X)
	if x.Type() == n.To {
		return x
	}
	switch n.To {
	case Float32:
		if v, ok := IsConst(x); ok {
			return &FloatImm{V: float64(float32(v))} // one rounding, as in C
		}
		if in, ok := x.(*Cast); ok && roundTripHolds(in.X, in.To) {
			return in.X // float32(uint8(q)) of a q uint8 holds exactly (simplify_facts.go)
		}
		if b, ok := boolConst(x); ok {
			if b {
				return F32(1)
			}
			return F32(0)
		}
	case Bool:
		if v, ok := IsConst(x); ok {
			return boolExpr(v != 0)
		}
		if f, ok := x.(*FloatImm); ok {
			return boolExpr(float32(f.V) != 0)
		}
	}
	if x == n.X {
		return n
	}
	return &Cast{n.To, x}
}
