// Tests of what the simplifier's shortcuts rely on: identical agrees with the
// ids that order atoms, formIs agrees with buildForm, and SimplifyStmt (one
// simplifier for the whole tree, memo tables kept within a scope) gives
// exactly what simplifying every expression on its own gives.

package tir

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// idOf is the id of e (see tieBreak) with ordinals taken from root.
func idOf(root, e Expr) string {
	var o ordinals
	o.build(root)
	var b strings.Builder
	o.writeID(&b, e)
	return b.String()
}

func TestIdenticalMatchesIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		vars, _ := propDomain(r)
		g := &propGen{r: r, vars: vars}
		a := g.intExpr(1 + r.IntN(4))
		b := g.intExpr(1 + r.IntN(4))
		if r.IntN(3) == 0 { // rebuild a copy: identical, not the same pointer
			b = MutateExpr(a, func(x Expr) Expr {
				if n, ok := x.(*Binary); ok {
					return &Binary{n.Op, n.A, n.B}
				}
				return x
			})
		}
		root := AddE(a, b)
		if got, want := identical(a, b), idOf(root, a) == idOf(root, b); got != want {
			t.Fatalf("identical(%s, %s) = %v, ids equal = %v", ExprString(a), ExprString(b), got, want)
		}
	}
}

func TestFormIs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 3000 {
		vars, dom := propDomain(r)
		g := &propGen{r: r, vars: vars}
		e := g.intExpr(1 + r.IntN(5))
		s := newSimplifier(dom, e)
		f := s.linear(e)
		built := buildForm(f)
		if !formIs(f, built) {
			t.Fatalf("formIs(form of %s, %s) = false", ExprString(e), ExprString(built))
		}
		if got, want := formIs(f, e), identical(built, e); got != want {
			t.Fatalf("formIs(form of %s) = %v, but buildForm gives %s", ExprString(e), got, ExprString(built))
		}
		s.release()
	}
}

// refSimplifyStmt is SimplifyStmt with a fresh simplifier for every
// expression and copied maps for every scope: the definition the shared
// simplifier must agree with.
func refSimplifyStmt(st Stmt, dom map[*Var]Interval, subst map[*Var]Expr) Stmt {
	expr := func(e Expr) Expr {
		if e == nil {
			return nil
		}
		s := newSimplifier(dom, e)
		defer s.release()
		s.subst = subst
		return s.simplify(e)
	}
	with := func(v *Var, iv *Interval, val Expr) (map[*Var]Interval, map[*Var]Expr) {
		d, m := map[*Var]Interval{}, map[*Var]Expr{}
		for k, x := range dom {
			d[k] = x
		}
		for k, x := range subst {
			m[k] = x
		}
		if iv != nil {
			d[v] = *iv
		} else {
			m[v] = val
		}
		return d, m
	}
	switch n := st.(type) {
	case nil:
		return nil
	case *For:
		switch {
		case n.Extent <= 0:
			return nil
		case n.Extent == 1:
			d, m := with(n.Var, nil, Const(0))
			return refSimplifyStmt(n.Body, d, m)
		}
		d, m := with(n.Var, &Interval{0, int64(n.Extent) - 1}, nil)
		body := refSimplifyStmt(n.Body, d, m)
		if body == nil {
			return nil
		}
		return &For{Var: n.Var, Extent: n.Extent, Kind: n.Kind, Thread: n.Thread, Body: body}
	case *Store:
		idx := make([]Expr, len(n.Indices))
		for i, x := range n.Indices {
			idx[i] = expr(x)
		}
		return &Store{Buf: n.Buf, Indices: idx, Value: expr(n.Value)}
	case *Allocate:
		body := refSimplifyStmt(n.Body, dom, subst)
		if body == nil {
			return nil
		}
		return &Allocate{Buf: n.Buf, Body: body}
	case *IfThenElse:
		c := expr(n.Cond)
		switch {
		case IsTrue(c):
			return refSimplifyStmt(n.Then, dom, subst)
		case IsFalse(c):
			return refSimplifyStmt(n.Else, dom, subst)
		}
		then, els := refSimplifyStmt(n.Then, dom, subst), refSimplifyStmt(n.Else, dom, subst)
		switch {
		case then == nil && els == nil:
			return nil
		case then == nil:
			return &IfThenElse{Cond: expr(NotE(c)), Then: els}
		}
		return &IfThenElse{Cond: c, Then: then, Else: els}
	case *Seq:
		var stmts []Stmt
		for _, c := range n.Stmts {
			stmts = append(stmts, refSimplifyStmt(c, dom, subst))
		}
		out := SeqOf(stmts...)
		if q, ok := out.(*Seq); ok && len(q.Stmts) == 0 {
			return nil
		}
		return out
	case *Let:
		v := expr(n.Value)
		_, isInt := v.(*IntImm)
		_, isFloat := v.(*FloatImm)
		if isInt || isFloat || IsTrue(v) || IsFalse(v) {
			d, m := with(n.Var, nil, v)
			return refSimplifyStmt(n.Body, d, m)
		}
		d, m := dom, subst
		if n.Var.T == Int && v.Type() == Int {
			iv := ConstBound(v, dom)
			d, m = with(n.Var, &iv, nil)
		}
		body := refSimplifyStmt(n.Body, d, m)
		if body == nil {
			return nil
		}
		return &Let{Var: n.Var, Value: v, Body: body}
	case *Pragma:
		body := refSimplifyStmt(n.Body, dom, subst)
		if body == nil {
			return nil
		}
		return &Pragma{Key: n.Key, Value: n.Value, Body: body}
	}
	return st
}

// stmtGen makes random statements over the variables of a propGen: loops
// whose variables often share names (so that atoms print alike) or shadow
// outer ones, lets, conditions, and stores whose expressions share subtrees.
type stmtGen struct {
	*propGen
	r   *rand.Rand
	out *Buffer
}

func (g *stmtGen) stmt(depth int) Stmt {
	if depth <= 0 || g.r.IntN(5) == 0 {
		shared := g.intExpr(2)
		return &Store{Buf: g.out, Indices: []Expr{AddE(shared, g.intExpr(2)), shared},
			Value: &Cast{To: Float32, X: AddE(shared, g.intExpr(3))}}
	}
	bind := func(v *Var, body func() Stmt) Stmt {
		old := g.vars
		g.vars = append(append([]*Var(nil), g.vars...), v, v)
		defer func() { g.vars = old }()
		return body()
	}
	switch g.r.IntN(7) {
	case 0, 1, 2:
		v := NewVar([]string{"i", "j", "x"}[g.r.IntN(3)])
		if g.r.IntN(4) == 0 {
			v = g.vars[g.r.IntN(len(g.vars))]
		}
		ext := []int{0, 1, 1, 2, 3, 5, 16}[g.r.IntN(7)]
		return bind(v, func() Stmt { return &For{Var: v, Extent: ext, Body: g.stmt(depth - 1)} })
	case 3:
		var els Stmt
		if g.r.IntN(2) == 0 {
			els = g.stmt(depth - 1)
		}
		return &IfThenElse{Cond: g.boolExpr(2), Then: g.stmt(depth - 1), Else: els}
	case 4:
		return &Seq{Stmts: []Stmt{g.stmt(depth - 1), g.stmt(depth - 1), g.stmt(depth - 1)}}
	case 5:
		v := NewVar("x")
		val := g.intExpr(2)
		if g.r.IntN(3) == 0 {
			val = Const(int64(g.r.IntN(4)))
		}
		return bind(v, func() Stmt { return &Let{Var: v, Value: val, Body: g.stmt(depth - 1)} })
	}
	return &Pragma{Key: "k", Value: 1, Body: g.stmt(depth - 1)}
}

// stmtIDString prints s with every variable named by its identity.
func stmtIDString(s Stmt) string {
	ids := map[*Var]string{}
	rename := func(e Expr) Expr {
		return MutateExpr(e, func(x Expr) Expr {
			if v, ok := x.(*Var); ok {
				if _, ok := ids[v]; !ok {
					ids[v] = fmt.Sprintf("%s#%d", v.Name, len(ids))
				}
				return &Var{Name: ids[v], T: v.T}
			}
			return x
		})
	}
	out := MutateStmt(s, StmtFuncs{Expr: rename, Stmt: func(st Stmt) Stmt {
		switch st := st.(type) {
		case *For:
			st.Var = rename(st.Var).(*Var)
		case *Let:
			st.Var = rename(st.Var).(*Var)
		}
		return st
	}})
	return StmtString(out)
}

func TestSimplifyStmtMatchesPerExpression(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	out := &Buffer{Name: "O", DType: Float32, Shape: []int{8, 8}}
	for n := range 3000 {
		vars, dom := propDomain(r)
		if n%4 == 0 {
			dom = nil
		}
		g := &stmtGen{propGen: &propGen{r: r, vars: vars}, r: r, out: out}
		st := g.stmt(1 + r.IntN(5))
		want := refSimplifyStmt(st, dom, nil)
		if want == nil {
			want = &Seq{}
		}
		got := SimplifyStmt(st, dom)
		if a, b := stmtIDString(got), stmtIDString(want); a != b {
			t.Fatalf("SimplifyStmt of\n%s\ngave\n%s\nsimplifying each expression alone gives\n%s", stmtIDString(st), a, b)
		}
	}
}
