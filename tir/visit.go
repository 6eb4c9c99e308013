package tir

// WalkExpr calls f on e and, while f returns true, on its operands, pre-order.
func WalkExpr(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch e := e.(type) {
	case *Binary:
		WalkExpr(e.A, f)
		WalkExpr(e.B, f)
	case *Compare:
		WalkExpr(e.A, f)
		WalkExpr(e.B, f)
	case *And:
		WalkExpr(e.A, f)
		WalkExpr(e.B, f)
	case *Or:
		WalkExpr(e.A, f)
		WalkExpr(e.B, f)
	case *Not:
		WalkExpr(e.A, f)
	case *Select:
		WalkExpr(e.Cond, f)
		WalkExpr(e.T, f)
		WalkExpr(e.F, f)
	case *Cast:
		WalkExpr(e.X, f)
	case *Load:
		for _, i := range e.Indices {
			WalkExpr(i, f)
		}
	case *Call:
		for _, a := range e.Args {
			WalkExpr(a, f)
		}
	}
}

// MutateExpr rebuilds e bottom-up: operands first, then f on the node with
// its new operands. f returns the node unchanged to keep it. Subtrees that
// do not change are shared, not copied.
func MutateExpr(e Expr, f func(Expr) Expr) Expr {
	switch n := e.(type) {
	case *Binary:
		a, b := MutateExpr(n.A, f), MutateExpr(n.B, f)
		if a != n.A || b != n.B {
			e = &Binary{n.Op, a, b}
		}
	case *Compare:
		a, b := MutateExpr(n.A, f), MutateExpr(n.B, f)
		if a != n.A || b != n.B {
			e = &Compare{n.Op, a, b}
		}
	case *And:
		a, b := MutateExpr(n.A, f), MutateExpr(n.B, f)
		if a != n.A || b != n.B {
			e = &And{a, b}
		}
	case *Or:
		a, b := MutateExpr(n.A, f), MutateExpr(n.B, f)
		if a != n.A || b != n.B {
			e = &Or{a, b}
		}
	case *Not:
		if a := MutateExpr(n.A, f); a != n.A {
			e = &Not{a}
		}
	case *Select:
		c, t, fl := MutateExpr(n.Cond, f), MutateExpr(n.T, f), MutateExpr(n.F, f)
		if c != n.Cond || t != n.T || fl != n.F {
			e = &Select{c, t, fl}
		}
	case *Cast:
		if x := MutateExpr(n.X, f); x != n.X {
			e = &Cast{n.To, x}
		}
	case *Load:
		if idx, changed := mutateList(n.Indices, f); changed {
			e = &Load{n.Buf, idx}
		}
	case *Call:
		if args, changed := mutateList(n.Args, f); changed {
			e = &Call{n.Fn, args}
		}
	}
	return f(e)
}

func mutateList(es []Expr, f func(Expr) Expr) ([]Expr, bool) {
	var out []Expr
	for i, x := range es {
		y := MutateExpr(x, f)
		if y != x && out == nil {
			out = append(make([]Expr, 0, len(es)), es[:i]...)
		}
		if out != nil {
			out = append(out, y)
		}
	}
	if out == nil {
		return es, false
	}
	return out, true
}

// Substitute replaces variables by expressions.
func Substitute(e Expr, m map[*Var]Expr) Expr {
	if len(m) == 0 {
		return e
	}
	return MutateExpr(e, func(x Expr) Expr {
		if v, ok := x.(*Var); ok {
			if r, ok := m[v]; ok {
				return r
			}
		}
		return x
	})
}

// UsesVar reports whether e mentions any variable for which pred is true.
func UsesVar(e Expr, pred func(*Var) bool) bool {
	found := false
	WalkExpr(e, func(x Expr) bool {
		if v, ok := x.(*Var); ok && pred(v) {
			found = true
		}
		return !found
	})
	return found
}

// Reads reports whether e loads from buffer b.
func Reads(e Expr, b *Buffer) bool {
	found := false
	WalkExpr(e, func(x Expr) bool {
		if l, ok := x.(*Load); ok && l.Buf == b {
			found = true
		}
		return !found
	})
	return found
}

// StmtFuncs are the callbacks of MutateStmt. Expr, if set, rewrites every
// expression (indices, values, conditions, let values); Stmt, if set, is
// called bottom-up on every statement after its children were rebuilt.
type StmtFuncs struct {
	Expr func(Expr) Expr
	Stmt func(Stmt) Stmt
}

// MutateStmt rebuilds s bottom-up with the given callbacks.
func MutateStmt(s Stmt, fs StmtFuncs) Stmt {
	ex := func(e Expr) Expr {
		if fs.Expr == nil || e == nil {
			return e
		}
		return fs.Expr(e)
	}
	var out Stmt
	switch s := s.(type) {
	case nil:
		return nil
	case *For:
		out = &For{Var: s.Var, Extent: s.Extent, Kind: s.Kind, Thread: s.Thread, Body: MutateStmt(s.Body, fs)}
	case *Store:
		idx := make([]Expr, len(s.Indices))
		for i, x := range s.Indices {
			idx[i] = ex(x)
		}
		out = &Store{Buf: s.Buf, Indices: idx, Value: ex(s.Value)}
	case *Allocate:
		out = &Allocate{Buf: s.Buf, Body: MutateStmt(s.Body, fs)}
	case *IfThenElse:
		out = &IfThenElse{Cond: ex(s.Cond), Then: MutateStmt(s.Then, fs), Else: MutateStmt(s.Else, fs)}
	case *Seq:
		stmts := make([]Stmt, 0, len(s.Stmts))
		for _, c := range s.Stmts {
			if c2 := MutateStmt(c, fs); c2 != nil {
				stmts = append(stmts, c2)
			}
		}
		out = &Seq{Stmts: stmts}
	case *Let:
		out = &Let{Var: s.Var, Value: ex(s.Value), Body: MutateStmt(s.Body, fs)}
	case *Pragma:
		out = &Pragma{Key: s.Key, Value: s.Value, Body: MutateStmt(s.Body, fs)}
	case *Barrier:
		out = &Barrier{}
	default:
		panic("tir: unknown statement")
	}
	if fs.Stmt != nil {
		out = fs.Stmt(out)
	}
	return out
}

// WalkStmt calls f on s and, while f returns true, on its children, pre-order.
// Expressions are not visited; use WalkStmtExprs for those.
func WalkStmt(s Stmt, f func(Stmt) bool) {
	if s == nil || !f(s) {
		return
	}
	switch s := s.(type) {
	case *For:
		WalkStmt(s.Body, f)
	case *Allocate:
		WalkStmt(s.Body, f)
	case *IfThenElse:
		WalkStmt(s.Then, f)
		WalkStmt(s.Else, f)
	case *Seq:
		for _, c := range s.Stmts {
			WalkStmt(c, f)
		}
	case *Let:
		WalkStmt(s.Body, f)
	case *Pragma:
		WalkStmt(s.Body, f)
	}
}

// WalkStmtExprs calls f on every top-level expression held by s or its
// descendants (store indices and values, conditions, let values).
func WalkStmtExprs(s Stmt, f func(Expr)) {
	WalkStmt(s, func(s Stmt) bool {
		switch s := s.(type) {
		case *Store:
			for _, i := range s.Indices {
				f(i)
			}
			f(s.Value)
		case *IfThenElse:
			f(s.Cond)
		case *Let:
			f(s.Value)
		}
		return true
	})
}
