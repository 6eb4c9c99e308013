// Floats: constant folding of float32 arithmetic, as the C code computes it.

package tir

import (
	"math"
)

// ---- floats ----

func (s *simplifier) simplifyFloat(e Expr) Expr {
	switch n := e.(type) {
	case *Binary:
		return floatBinary(n, s.simplify(n.A), s.simplify(n.B))
	case *Select:
		return s.selectExpr(n)
	case *Cast:
		return s.castExpr(n)
	case *Load:
		return s.load(n)
	case *Call:
		args, changed := s.simplifyAll(n.Args)
		return foldCall(n, args, changed)
	case *Var:
		if r, ok := s.subst[n]; ok {
			return s.simplify(r)
		}
	}
	return e
}

// floatBinary folds n, with operands simplified to a and b: two float
// constants when the float32 result is finite, and the operations that are
// the identity for every float.
func floatBinary(n *Binary, a, b Expr) Expr {
	op := n.Op
	x, xok := a.(*FloatImm)
	y, yok := b.(*FloatImm)
	if xok && yok {
		if r, ok := foldFloat(op, float32(x.V), float32(y.V)); ok {
			return &FloatImm{V: float64(r)}
		}
	}
	is := func(f *FloatImm, ok bool, bits uint32) bool {
		return ok && math.Float32bits(float32(f.V)) == bits
	}
	const one, posZero, negZero = 0x3f800000, 0, 0x80000000
	switch {
	case op == Mul && is(y, yok, one), op == Div && is(y, yok, one),
		op == Sub && is(y, yok, posZero), op == Add && is(y, yok, negZero):
		return a
	case op == Mul && is(x, xok, one), op == Add && is(x, xok, negZero):
		return b
	case (op == Max || op == Min) && yok && clampHolds(op, a, y):
		return a // a clamp that holds already (simplify_facts.go)
	case (op == Max || op == Min) && xok && clampHolds(op, b, x):
		return b
	}
	if a == n.A && b == n.B {
		return n
	}
	return &Binary{op, a, b}
}

func foldFloat(op BinOp, x, y float32) (float32, bool) {
	var r float32
	switch op {
	case Add:
		r = x + y
	case Sub:
		r = x - y
	case Mul:
		r = x * y
	case Div:
		r = x / y
	case Min, Max:
		// Not for -0 against +0: which one comes back differs by target.
		if x == y && math.Float32bits(x) != math.Float32bits(y) {
			return 0, false
		}
		if (op == Min) == (x < y) {
			r = x
		} else {
			r = y
		}
	default:
		return 0, false
	}
	return r, !math.IsInf(float64(r), 0) && !math.IsNaN(float64(r))
}

// foldCall folds the math functions whose float32 result is exact (fabs,
// floor, ceil) or correctly rounded in both Go and C (sqrt); the others
// (exp, log, ...) may differ by an ulp between libraries and are kept.
// args are n's arguments simplified; changed is false when they are n's.
func foldCall(n *Call, args []Expr, changed bool) Expr {
	fn := n.Fn
	if fn == "nan0" && len(args) == 1 && !floatFacts(args[0]).nan {
		return args[0]
	}
	if len(args) == 1 {
		if x, ok := args[0].(*FloatImm); ok {
			v := float64(float32(x.V))
			var r float64
			switch fn {
			case "fabs":
				r = math.Abs(v)
			case "floor":
				r = math.Floor(v)
			case "ceil":
				r = math.Ceil(v)
			case "sqrt":
				r = math.Sqrt(v)
			default:
				return newCall(n, args, changed)
			}
			r = float64(float32(r))
			if !math.IsInf(r, 0) && !math.IsNaN(r) {
				return &FloatImm{V: r}
			}
		}
	}
	return newCall(n, args, changed)
}

func newCall(n *Call, args []Expr, changed bool) Expr {
	if !changed {
		return n
	}
	return &Call{n.Fn, args}
}
