package codegen

import (
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// Constant folding after unrolling.
//
// Unrolling substitutes constants for loop variables, and a body that reads
// a constant matrix (te.ConstMatrix: entries chosen by comparing indices
// with constants, weighted through te.ScaleByConst's select(c ≠ 0, x·c, 0))
// then holds comparisons of constants and products of literals. foldFloats
// folds them exactly as the C compiler would evaluate them at run time
// (float32 arithmetic, IEEE comparisons): a select with a constant
// condition becomes its branch, an operation on two literals becomes a
// literal, and x·1 becomes x. No other float expression is rewritten, so
// the generated code computes what the reference evaluator does.
//
// dropNoopUpdates then removes the stores X[i] = X[i] + 0 that the zero
// terms leave. They change nothing: a sum accumulator starts at +0, and
// adding +0 to any value but -0 returns it unchanged (to -0 it returns +0,
// which compares equal).

// foldFloats folds the constant parts of every expression of s.
func foldFloats(s tir.Stmt) tir.Stmt {
	return tir.MutateStmt(s, tir.StmtFuncs{
		Expr: func(e tir.Expr) tir.Expr { return tir.MutateExpr(e, foldNode) },
	})
}

// foldNode folds one node whose operands are folded already.
func foldNode(e tir.Expr) tir.Expr {
	switch n := e.(type) {
	case *tir.Select:
		if v, ok := boolConst(n.Cond); ok {
			if v {
				return n.T
			}
			return n.F
		}
	case *tir.Compare:
		if a, ok := n.A.(*tir.IntImm); ok {
			if b, ok := n.B.(*tir.IntImm); ok {
				return boolImm(compare(n.Op, a.V, b.V))
			}
		}
		if a, ok := n.A.(*tir.FloatImm); ok {
			if b, ok := n.B.(*tir.FloatImm); ok {
				return boolImm(compare(n.Op, float32(a.V), float32(b.V)))
			}
		}
	case *tir.And, *tir.Or, *tir.Not:
		return simplifyCond(e, nil)
	case *tir.Binary:
		a, aok := n.A.(*tir.FloatImm)
		b, bok := n.B.(*tir.FloatImm)
		if aok && bok {
			if v, ok := floatOp(n.Op, float32(a.V), float32(b.V)); ok {
				return &tir.FloatImm{V: float64(v)}
			}
		}
		if n.Op == tir.Mul && bok && b.V == 1 {
			return n.A
		}
		if n.Op == tir.Mul && aok && a.V == 1 {
			return n.B
		}
	}
	return e
}

func boolConst(e tir.Expr) (value, ok bool) {
	switch {
	case tir.IsTrue(e):
		return true, true
	case tir.IsFalse(e):
		return false, true
	}
	return false, false
}

func boolImm(v bool) tir.Expr {
	if v {
		return tir.True
	}
	return tir.False
}

// compare applies op as C does (a NaN compares false but for !=).
func compare[T int64 | float32](op tir.CmpOp, a, b T) bool {
	switch op {
	case tir.EQ:
		return a == b
	case tir.NE:
		return a != b
	case tir.LT:
		return a < b
	case tir.LE:
		return a <= b
	case tir.GT:
		return a > b
	}
	return a >= b
}

// floatOp evaluates a float32 operation on two literals as C does; min and
// max are left alone (their NaN handling is the helper's).
func floatOp(op tir.BinOp, a, b float32) (float32, bool) {
	switch op {
	case tir.Add:
		return a + b, true
	case tir.Sub:
		return a - b, true
	case tir.Mul:
		return a * b, true
	case tir.Div:
		if b == 0 || math.IsNaN(float64(a)) || math.IsNaN(float64(b)) {
			return 0, false
		}
		return a / b, true
	}
	return 0, false
}

// dropNoopUpdates removes the stores X[i] = X[i] + 0.
func dropNoopUpdates(s tir.Stmt) tir.Stmt {
	return tir.MutateStmt(s, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		if isNoopUpdate(st) {
			return nil
		}
		if f, ok := st.(*tir.For); ok && isEmpty(f.Body) {
			return nil // a loop left with nothing to run
		}
		return st
	}})
}

func isNoopUpdate(st tir.Stmt) bool {
	s, ok := st.(*tir.Store)
	if !ok {
		return false
	}
	add, ok := s.Value.(*tir.Binary)
	if !ok || add.Op != tir.Add {
		return false
	}
	zero, ok := add.B.(*tir.FloatImm)
	if !ok || zero.V != 0 || math.Signbit(zero.V) {
		return false
	}
	l, ok := add.A.(*tir.Load)
	if !ok || l.Buf != s.Buf || len(l.Indices) != len(s.Indices) {
		return false
	}
	for i := range l.Indices {
		if tir.ExprString(l.Indices[i]) != tir.ExprString(s.Indices[i]) {
			return false
		}
	}
	return true
}

// isEmpty reports whether s runs nothing.
func isEmpty(s tir.Stmt) bool {
	switch s := s.(type) {
	case nil:
		return true
	case *tir.Seq:
		for _, c := range s.Stmts {
			if !isEmpty(c) {
				return false
			}
		}
		return true
	}
	return false
}
