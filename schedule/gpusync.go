package schedule

import "github.com/tessera-ml/tessera/tir"

// syncer inserts the barriers of one normalized kernel body. It tracks,
// along the statements in program order, the shared buffers read and
// written since the last barrier (pending); a statement that reads a
// buffer written since, or writes one read or written since, gets a
// barrier before it. The check is per buffer, not per element: a barrier
// may be inserted where the threads touch disjoint elements, never left
// out where they may not. Loops are visited twice, the second time with
// what the end of the body leaves pending, so that a conflict between one
// iteration and the next (a shared tile reloaded while other threads still
// read the previous one) gets its barrier too.
//
// Barriers go only where every thread of the block passes: statements
// under control flow that depends on the thread (an if on a thread index
// or on loaded data; a store the lowering guarded) are taken whole, with
// the barrier before them.
type syncer struct {
	threads map[*tir.Var]bool // the kernel's thread index variables
}

// sharedAccess is the shared buffers a statement reads and writes.
type sharedAccess struct {
	r, w    map[*tir.Buffer]bool
	barrier bool // the statement contains a barrier
}

func (a sharedAccess) empty() bool { return len(a.r) == 0 && len(a.w) == 0 && !a.barrier }

// mixed reports whether some buffer is both read and written.
func (a sharedAccess) mixed() bool {
	for b := range a.w {
		if a.r[b] {
			return true
		}
	}
	return false
}

// conflicts reports whether a statement with accesses a must not run in
// the phase of pending.
func (a sharedAccess) conflicts(pending sharedAccess) bool {
	for b := range a.r {
		if pending.w[b] {
			return true
		}
	}
	for b := range a.w {
		if pending.r[b] || pending.w[b] {
			return true
		}
	}
	return false
}

func union(a, b sharedAccess) sharedAccess {
	out := sharedAccess{r: map[*tir.Buffer]bool{}, w: map[*tir.Buffer]bool{}}
	for _, x := range []sharedAccess{a, b} {
		for k := range x.r {
			out.r[k] = true
		}
		for k := range x.w {
			out.w[k] = true
		}
	}
	return out
}

// subset reports whether every access of a is in b.
func subset(a, b sharedAccess) bool {
	for k := range a.r {
		if !b.r[k] {
			return false
		}
	}
	for k := range a.w {
		if !b.w[k] {
			return false
		}
	}
	return true
}

// accesses collects the shared accesses of s.
func accesses(s tir.Stmt) sharedAccess {
	a := sharedAccess{r: map[*tir.Buffer]bool{}, w: map[*tir.Buffer]bool{}}
	loads := func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if l, ok := x.(*tir.Load); ok && l.Buf.Scope == tir.Shared {
				a.r[l.Buf] = true
			}
			return true
		})
	}
	tir.WalkStmt(s, func(s tir.Stmt) bool {
		switch s := s.(type) {
		case *tir.Store:
			if s.Buf.Scope == tir.Shared {
				a.w[s.Buf] = true
			}
		case *tir.Barrier:
			a.barrier = true
		}
		return true
	})
	tir.WalkStmtExprs(s, loads)
	return a
}

// divergent reports whether the condition may differ between the threads
// of a block.
func (y *syncer) divergent(c tir.Expr) bool {
	found := false
	tir.WalkExpr(c, func(x tir.Expr) bool {
		switch x := x.(type) {
		case *tir.Var:
			found = found || y.threads[x]
		case *tir.Load:
			found = true
		}
		return !found
	})
	return found
}

// insert returns the kernel body with its barriers.
func (y *syncer) insert(body tir.Stmt) tir.Stmt {
	out, _ := y.sync(body, sharedAccess{})
	return out
}

// sync returns s with barriers and what is pending after it.
func (y *syncer) sync(s tir.Stmt, pending sharedAccess) (tir.Stmt, sharedAccess) {
	switch n := s.(type) {
	case nil:
		return nil, pending
	case *tir.Barrier:
		return n, sharedAccess{}
	case *tir.Seq:
		out := make([]tir.Stmt, 0, len(n.Stmts))
		for _, c := range n.Stmts {
			var c2 tir.Stmt
			c2, pending = y.sync(c, pending)
			out = append(out, c2)
		}
		return tir.SeqOf(out...), pending
	}
	a := accesses(s)
	if a.empty() {
		return s, pending
	}
	leaf := !a.barrier && !a.mixed()
	switch n := s.(type) {
	case *tir.Store:
		leaf = true
	case *tir.IfThenElse:
		leaf = leaf || y.divergent(n.Cond)
	}
	if leaf {
		if a.conflicts(pending) {
			return tir.SeqOf(&tir.Barrier{}, s), a
		}
		return s, union(pending, a)
	}
	switch n := s.(type) {
	case *tir.For:
		body, after := y.sync(n.Body, pending)
		if n.Extent > 1 {
			if !subset(after, pending) {
				body, after = y.sync(n.Body, union(pending, after))
			}
		}
		kind := n.Kind
		if kind == tir.Vectorized && accesses(body).barrier {
			kind = tir.Serial // a barrier splits the lanes' statements
		}
		return &tir.For{Var: n.Var, Extent: n.Extent, Kind: kind, Thread: n.Thread, Body: body}, after
	case *tir.IfThenElse:
		then, p1 := y.sync(n.Then, pending)
		els, p2 := y.sync(n.Else, pending)
		return &tir.IfThenElse{Cond: n.Cond, Then: then, Else: els}, union(p1, p2)
	case *tir.Allocate:
		body, after := y.sync(n.Body, pending)
		return &tir.Allocate{Buf: n.Buf, Body: body}, after
	case *tir.Let:
		body, after := y.sync(n.Body, pending)
		return &tir.Let{Var: n.Var, Value: n.Value, Body: body}, after
	case *tir.Pragma:
		body, after := y.sync(n.Body, pending)
		return &tir.Pragma{Key: n.Key, Value: n.Value, Body: body}, after
	}
	if a.conflicts(pending) {
		return tir.SeqOf(&tir.Barrier{}, s), a
	}
	return s, union(pending, a)
}
