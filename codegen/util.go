package codegen

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// domain maps the variables in scope to their value ranges.
type domain = map[*tir.Var]tir.Interval

func copyDom(d domain) domain {
	out := make(domain, len(d)+4)
	for k, v := range d {
		out[k] = v
	}
	return out
}

func dependsOn(e tir.Expr, v *tir.Var) bool {
	return tir.UsesVar(e, func(x *tir.Var) bool { return x == v })
}

func stmtDependsOn(s tir.Stmt, v *tir.Var) bool {
	found := false
	tir.WalkStmtExprs(s, func(e tir.Expr) {
		if !found && dependsOn(e, v) {
			found = true
		}
	})
	return found
}

// substStmt replaces variables by expressions throughout s.
func substStmt(s tir.Stmt, m map[*tir.Var]tir.Expr) tir.Stmt {
	return tir.MutateStmt(s, tir.StmtFuncs{Expr: func(e tir.Expr) tir.Expr { return tir.Substitute(e, m) }})
}

// flatIndex returns the row-major element offset of an access to buf. A
// single index into a multi-dimensional buffer is taken as already flat.
func flatIndex(buf *tir.Buffer, idx []tir.Expr) (tir.Expr, error) {
	if len(idx) == 1 && len(buf.Shape) != 1 {
		return idx[0], nil
	}
	if len(idx) != len(buf.Shape) {
		return nil, fmt.Errorf("access to %s with %d indices, buffer has %d dimensions", buf.Name, len(idx), len(buf.Shape))
	}
	if len(idx) == 0 {
		return tir.Const(0), nil
	}
	strides := buf.Strides()
	var flat tir.Expr
	for i, x := range idx {
		if x == nil {
			return nil, fmt.Errorf("access to %s with a nil index", buf.Name)
		}
		if x.Type() != tir.Int {
			return nil, fmt.Errorf("access to %s with a %v index", buf.Name, x.Type())
		}
		var term tir.Expr = x
		if strides[i] != 1 {
			term = tir.MulE(x, tir.Const(int64(strides[i])))
		}
		if flat == nil {
			flat = term
		} else {
			flat = tir.AddE(flat, term)
		}
	}
	return flat, nil
}

// simplifiedIndex flattens and simplifies an access index over dom.
func simplifiedIndex(buf *tir.Buffer, idx []tir.Expr, dom domain) (tir.Expr, error) {
	flat, err := flatIndex(buf, idx)
	if err != nil {
		return nil, err
	}
	return tir.Simplify(flat, dom), nil
}

// hasFloat reports whether e contains a float32-typed node.
func hasFloat(e tir.Expr) bool {
	found := false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if x.Type() == tir.Float32 {
			found = true
		}
		return !found
	})
	return found
}

// simplifyCond simplifies a boolean condition without touching float
// arithmetic: integer comparisons are handed to tir.Simplify, logic is
// folded around constant operands.
func simplifyCond(e tir.Expr, dom domain) tir.Expr {
	switch c := e.(type) {
	case *tir.And:
		a, b := simplifyCond(c.A, dom), simplifyCond(c.B, dom)
		switch {
		case tir.IsFalse(a):
			return a
		case tir.IsTrue(a):
			return b
		case tir.IsTrue(b):
			return a
		case tir.IsFalse(b):
			return b
		}
		if a == c.A && b == c.B {
			return e
		}
		return tir.AndE(a, b)
	case *tir.Or:
		a, b := simplifyCond(c.A, dom), simplifyCond(c.B, dom)
		switch {
		case tir.IsTrue(a):
			return a
		case tir.IsFalse(a):
			return b
		case tir.IsFalse(b):
			return a
		case tir.IsTrue(b):
			return b
		}
		if a == c.A && b == c.B {
			return e
		}
		return tir.OrE(a, b)
	case *tir.Not:
		a := simplifyCond(c.A, dom)
		switch {
		case tir.IsTrue(a):
			return tir.False
		case tir.IsFalse(a):
			return tir.True
		}
		if a == c.A {
			return e
		}
		return tir.NotE(a)
	}
	if e.Type() == tir.Bool && !hasFloat(e) {
		return tir.Simplify(e, dom)
	}
	return e
}

func hasLoad(e tir.Expr) bool {
	found := false
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if _, ok := x.(*tir.Load); ok {
			found = true
		}
		return !found
	})
	return found
}

// exprEqual reports structural equality (variables and buffers by pointer).
func exprEqual(a, b tir.Expr) bool {
	if a == b {
		return true
	}
	switch x := a.(type) {
	case *tir.Var:
		return false
	case *tir.IntImm:
		y, ok := b.(*tir.IntImm)
		return ok && x.V == y.V
	case *tir.FloatImm:
		y, ok := b.(*tir.FloatImm)
		return ok && math.Float64bits(x.V) == math.Float64bits(y.V)
	case *tir.Binary:
		y, ok := b.(*tir.Binary)
		return ok && x.Op == y.Op && exprEqual(x.A, y.A) && exprEqual(x.B, y.B)
	case *tir.Compare:
		y, ok := b.(*tir.Compare)
		return ok && x.Op == y.Op && exprEqual(x.A, y.A) && exprEqual(x.B, y.B)
	case *tir.And:
		y, ok := b.(*tir.And)
		return ok && exprEqual(x.A, y.A) && exprEqual(x.B, y.B)
	case *tir.Or:
		y, ok := b.(*tir.Or)
		return ok && exprEqual(x.A, y.A) && exprEqual(x.B, y.B)
	case *tir.Not:
		y, ok := b.(*tir.Not)
		return ok && exprEqual(x.A, y.A)
	case *tir.Select:
		y, ok := b.(*tir.Select)
		return ok && exprEqual(x.Cond, y.Cond) && exprEqual(x.T, y.T) && exprEqual(x.F, y.F)
	case *tir.Cast:
		y, ok := b.(*tir.Cast)
		return ok && x.To == y.To && exprEqual(x.X, y.X)
	case *tir.Load:
		y, ok := b.(*tir.Load)
		return ok && x.Buf == y.Buf && exprListEqual(x.Indices, y.Indices)
	case *tir.Call:
		y, ok := b.(*tir.Call)
		return ok && x.Fn == y.Fn && exprListEqual(x.Args, y.Args)
	}
	return false
}

func exprListEqual(a, b []tir.Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !exprEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// inBounds reports whether every load in e provably reads inside its
// buffer, so that e may be evaluated speculatively.
func inBounds(e tir.Expr, dom domain) bool {
	ok := true
	tir.WalkExpr(e, func(x tir.Expr) bool {
		if l, isLoad := x.(*tir.Load); isLoad && ok {
			flat, err := simplifiedIndex(l.Buf, l.Indices, dom)
			if err != nil {
				ok = false
				return false
			}
			iv := tir.ConstBound(flat, dom)
			if iv.Lo < 0 || iv.Hi >= int64(l.Buf.Size()) || iv.Lo > iv.Hi {
				ok = false
			}
		}
		return ok
	})
	return ok
}
