// Statements: SimplifyStmt and the simplification of loop nests.

package tir

import (
	"maps"
)

// ---- statements ----

// SimplifyStmt simplifies every expression in s. While descending into a
// For it adds the loop variable's range [0, Extent-1] to dom (and a Let's
// variable the bound of its value). A For with Extent 1 is removed and its
// variable replaced by 0; an IfThenElse whose condition is proven true/false
// is replaced by the right branch; Lets of constants are substituted.
// Statements left with nothing to do (a For with Extent ≤ 0 or an empty body,
// an IfThenElse with no branch left) are dropped; if the whole of s goes, the
// result is an empty *Seq. Loop kinds are not changed otherwise.
func SimplifyStmt(s Stmt, dom map[*Var]Interval) Stmt {
	if s == nil {
		return nil
	}
	env := stmtEnv{dom: maps.Clone(dom), subst: map[*Var]Expr{}}
	if env.dom == nil {
		env.dom = map[*Var]Interval{}
	}
	env.s = newSimplifier(env.dom, nil) // in scope 0, like env
	defer env.s.release()
	if out := env.stmt(s); out != nil {
		return out
	}
	return &Seq{}
}

// stmtEnv is what SimplifyStmt knows at a statement: variable ranges and
// variables replaced by constants. The two maps belong to the SimplifyStmt
// call: a statement that binds a variable adds its entry for the duration of
// its body, in a new scope, and then restores the previous entry. The
// simplifier is shared by the whole statement tree; it keeps its memo tables
// from one expression to the next while they are in the same scope.
type stmtEnv struct {
	dom   map[*Var]Interval
	subst map[*Var]Expr
	scope int
	s     *simplifier
}

func (env stmtEnv) expr(e Expr) Expr {
	if e == nil {
		return nil
	}
	s := env.s
	if s.scope != env.scope {
		s.reset()
		s.dom, s.subst, s.scope = env.dom, env.subst, env.scope
	}
	s.root = e
	r := s.simplify(e)
	if s.tied { // results in the memo tables may hold for e only
		s.reset()
	}
	return r
}

// inRange simplifies body with v ranging over iv.
func (env stmtEnv) inRange(v *Var, iv Interval, body Stmt) Stmt {
	old, had := env.dom[v]
	env.dom[v] = iv
	out := env.newScope().stmt(body)
	if had {
		env.dom[v] = old
	} else {
		delete(env.dom, v)
	}
	return out
}

// withValue simplifies body with v replaced by val.
func (env stmtEnv) withValue(v *Var, val Expr, body Stmt) Stmt {
	old, had := env.subst[v]
	env.subst[v] = val
	out := env.newScope().stmt(body)
	if had {
		env.subst[v] = old
	} else {
		delete(env.subst, v)
	}
	return out
}

func (env stmtEnv) newScope() stmtEnv {
	env.s.scopes++
	env.scope = env.s.scopes
	return env
}

// stmt simplifies st; nil means it does nothing.
func (env stmtEnv) stmt(st Stmt) Stmt {
	switch n := st.(type) {
	case nil:
		return nil
	case *For:
		switch {
		case n.Extent <= 0:
			return nil
		case n.Extent == 1:
			return env.withValue(n.Var, Const(0), n.Body)
		}
		body := env.inRange(n.Var, Interval{0, int64(n.Extent) - 1}, n.Body)
		if body == nil {
			return nil
		}
		return &For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: body}
	case *Store:
		idx := make([]Expr, len(n.Indices))
		for i, x := range n.Indices {
			idx[i] = env.expr(x)
		}
		return &Store{Buf: n.Buf, Indices: idx, Value: env.expr(n.Value)}
	case *Allocate:
		body := env.stmt(n.Body)
		if body == nil {
			return nil
		}
		return &Allocate{Buf: n.Buf, Body: body}
	case *IfThenElse:
		c := env.expr(n.Cond)
		switch {
		case IsTrue(c):
			return env.stmt(n.Then)
		case IsFalse(c):
			return env.stmt(n.Else)
		}
		then, els := env.stmt(n.Then), env.stmt(n.Else)
		switch {
		case then == nil && els == nil:
			return nil
		case then == nil:
			return &IfThenElse{Cond: env.expr(NotE(c)), Then: els}
		}
		return &IfThenElse{Cond: c, Then: then, Else: els}
	case *Seq:
		stmts := make([]Stmt, 0, len(n.Stmts))
		for _, c := range n.Stmts {
			stmts = append(stmts, env.stmt(c))
		}
		out := SeqOf(stmts...)
		if q, ok := out.(*Seq); ok && len(q.Stmts) == 0 {
			return nil
		}
		return out
	case *Let:
		v := env.expr(n.Value)
		switch v.(type) {
		case *IntImm, *FloatImm:
			return env.withValue(n.Var, v, n.Body)
		}
		if IsTrue(v) || IsFalse(v) {
			return env.withValue(n.Var, v, n.Body)
		}
		var body Stmt
		if n.Var.T == Int && v.Type() == Int {
			body = env.inRange(n.Var, ConstBound(v, env.dom), n.Body)
		} else {
			body = env.stmt(n.Body)
		}
		if body == nil {
			return nil
		}
		return &Let{Var: n.Var, Value: v, Body: body}
	case *Pragma:
		body := env.stmt(n.Body)
		if body == nil {
			return nil
		}
		return &Pragma{Key: n.Key, Value: n.Value, Body: body}
	case *Barrier:
		return n
	}
	return st
}
