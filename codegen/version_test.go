package codegen

import (
	"testing"

	"tessera/tir"
)

// TestVersionGuards: a reduction loop whose guard, the row tile's bound,
// fails in the last tile of every head is printed twice, the fast copy
// free of the guard under its test at the tile's last row; a guard on the
// loop's own variable stays.
// hrVar finds the variable hr that the versioned loop's guard used, from
// the store's index in the fast copy.
func hrVar(s tir.Stmt) *tir.Var {
	var hr *tir.Var
	tir.WalkStmtExprs(s, func(e tir.Expr) {
		tir.WalkExpr(e, func(x tir.Expr) bool {
			if v, ok := x.(*tir.Var); ok && v.Name == "hr" {
				hr = v
			}
			return true
		})
	})
	return hr
}

func TestVersionGuards(t *testing.T) {
	buf := &tir.Buffer{Name: "A", DType: tir.Float32, Shape: []int{64}, Scope: tir.Global}
	nest := func(guardOnR bool) tir.Stmt {
		hr, r, j := tir.NewVar("hr"), tir.NewVar("r"), tir.NewVar("j")
		row := tir.AddE(tir.MulE(tir.FloorModE(hr, tir.Const(5)), tir.Const(4)), j) // 5 tiles of 4 rows
		bound := tir.Expr(&tir.Compare{Op: tir.LT, A: row, B: tir.Const(10)})
		if guardOnR {
			bound = &tir.Compare{Op: tir.LT, A: tir.AddE(row, r), B: tir.Const(10)}
		}
		store := &tir.Store{Buf: buf, Indices: []tir.Expr{row}, Value: tir.F32(1)}
		return &tir.For{Var: hr, Extent: 10, Kind: tir.Parallel, Body: &tir.For{Var: r, Extent: 8, Kind: tir.Serial,
			Body: &tir.For{Var: j, Extent: 4, Kind: tir.Unrolled, Body: &tir.IfThenElse{Cond: bound, Then: store}}}}
	}
	guards := func(s tir.Stmt) int {
		n := 0
		tir.WalkStmt(s, func(st tir.Stmt) bool {
			if _, ok := st.(*tir.IfThenElse); ok {
				n++
			}
			return true
		})
		return n
	}
	out := versionGuards(nest(false))
	ite, ok := out.(*tir.For).Body.(*tir.IfThenElse)
	if !ok {
		t.Fatalf("the reduction loop is not versioned:\n%v", out)
	}
	// The test is the guard at the tile's last row (j = 3): hr's alone.
	vars := map[string]bool{}
	tir.WalkExpr(ite.Cond, func(x tir.Expr) bool {
		if v, ok := x.(*tir.Var); ok {
			vars[v.Name] = true
		}
		return true
	})
	if len(vars) != 1 || !vars["hr"] {
		t.Errorf("the test reads %v, want hr only", vars)
	}
	for hr := range int64(10) {
		want := hr%5*4+3 < 10
		dom := map[*tir.Var]tir.Interval{}
		got := tir.Simplify(tir.Substitute(ite.Cond, map[*tir.Var]tir.Expr{hrVar(ite.Then): tir.Const(hr)}), dom)
		if holds, ok := constTruth(got); !ok || holds != want {
			t.Errorf("hr=%d: the test is %v, want %v", hr, got, want)
		}
	}
	if guards(ite.Then) != 0 || guards(ite.Else) != 2 {
		t.Errorf("%d guards in the fast copy, %d in the other; want 0 and 2 (the live test, the guard)", guards(ite.Then), guards(ite.Else))
	}
	// The other copy runs where the tile's first row (j = 0) is in range:
	// tile 2 (rows 8..11) runs, tiles 3 and 4 lie wholly past the end.
	live, ok := ite.Else.(*tir.IfThenElse)
	if !ok {
		t.Fatalf("the copy with the guards is not under a live test:\n%v", ite.Else)
	}
	for hr := range int64(10) {
		want := hr%5*4 < 10
		got := tir.Simplify(tir.Substitute(live.Cond, map[*tir.Var]tir.Expr{hrVar(ite.Then): tir.Const(hr)}), nil)
		if holds, ok := constTruth(got); !ok || holds != want {
			t.Errorf("hr=%d: the live test is %v, want %v", hr, got, want)
		}
	}
	if out := versionGuards(nest(true)); guards(out) != 1 {
		t.Errorf("a guard on the loop's own variable was hoisted:\n%v", out)
	}
}

// constTruth is the value of a condition the simplifier folded to a
// comparison of constants.
func constTruth(e tir.Expr) (holds, ok bool) {
	c, isCmp := e.(*tir.Compare)
	if !isCmp {
		return false, false
	}
	a, okA := c.A.(*tir.IntImm)
	b, okB := c.B.(*tir.IntImm)
	if !okA || !okB {
		return false, false
	}
	switch c.Op {
	case tir.EQ:
		return a.V == b.V, true
	case tir.NE:
		return a.V != b.V, true
	case tir.LT:
		return a.V < b.V, true
	case tir.LE:
		return a.V <= b.V, true
	}
	return false, false
}
