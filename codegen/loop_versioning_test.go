package codegen

import (
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

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

// rowTileNest is a parallel loop over 2 heads × 5 tiles of 4 rows (10
// rows a head) around a serial reduction loop r (8 steps) and the tile's
// unrolled rows j, whose store is guarded by the row bound; with guardOnR,
// by a bound on the row plus r instead.
func rowTileNest(guardOnR bool) tir.Stmt {
	buf := &tir.Buffer{Name: "A", DType: tir.Float32, Shape: []int{64}, Scope: tir.Global}
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

// guards counts the if statements of s.
func guards(s tir.Stmt) int {
	n := 0
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		if _, ok := st.(*tir.IfThenElse); ok {
			n++
		}
		return true
	})
	return n
}

// TestVersionGuards: a reduction loop whose guard, the row tile's bound,
// fails in the last tile of every head is printed twice, the fast copy
// free of the guard under its test at the tile's last row; a guard on the
// loop's own variable stays.
func TestVersionGuards(t *testing.T) {
	nest := rowTileNest
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

// TestVersionBudgetPerNest: the loops versioned are bounded per loop nest
// at the kernel's root, so that the nests printed first do not use up the
// versions of those after them (a transpose computed at the root before
// the attention's GEMMs).
func TestVersionBudgetPerNest(t *testing.T) {
	var nests []tir.Stmt
	for range maxVersions + 2 {
		nests = append(nests, rowTileNest(false))
	}
	out := versionGuards(tir.SeqOf(nests...))
	seq, ok := out.(*tir.Seq)
	if !ok || len(seq.Stmts) != len(nests) {
		t.Fatalf("not %d nests:\n%v", len(nests), out)
	}
	for i, n := range seq.Stmts {
		if _, ok := n.(*tir.For).Body.(*tir.IfThenElse); !ok {
			t.Errorf("nest %d of %d is not versioned", i, len(nests))
		}
	}
}

// TestVersionKeepsFalseGuard: a guard that fails at the hardest extreme
// of the loops inside the versioned one wherever it is (the last step of
// a reduction split 2 ways over an odd extent, where partitioning left
// it) is not hoisted, which would make the fast copy dead: the row bound
// is, and the reduction's guard stays in the fast copy.
func TestVersionKeepsFalseGuard(t *testing.T) {
	buf := &tir.Buffer{Name: "A", DType: tir.Float32, Shape: []int{64}, Scope: tir.Global}
	hr, r, k, j := tir.NewVar("hr"), tir.NewVar("r"), tir.NewVar("k"), tir.NewVar("j")
	row := tir.AddE(tir.MulE(tir.FloorModE(hr, tir.Const(5)), tir.Const(4)), j)
	rowBound := &tir.Compare{Op: tir.LT, A: row, B: tir.Const(10)}
	tail := &tir.Compare{Op: tir.LT, A: tir.AddE(k, tir.Const(6)), B: tir.Const(7)} // k + 6 < 7: k = 0 only
	store := &tir.Store{Buf: buf, Indices: []tir.Expr{row}, Value: tir.F32(1)}
	nest := &tir.For{Var: hr, Extent: 10, Kind: tir.Parallel, Body: &tir.For{Var: r, Extent: 8, Kind: tir.Serial,
		Body: &tir.For{Var: k, Extent: 2, Kind: tir.Serial, Body: &tir.IfThenElse{Cond: tail,
			Then: &tir.For{Var: j, Extent: 4, Kind: tir.Unrolled, Body: &tir.IfThenElse{Cond: rowBound, Then: store}}}}}}
	out := versionGuards(nest)
	ite, ok := out.(*tir.For).Body.(*tir.IfThenElse)
	if !ok {
		t.Fatalf("the reduction loop is not versioned:\n%v", out)
	}
	if tir.IsFalse(tir.Simplify(ite.Cond, nil)) {
		t.Fatalf("the fast copy's test is false: %v", ite.Cond)
	}
	if guards(ite.Then) != 1 {
		t.Errorf("%d guards in the fast copy, want 1 (the reduction's):\n%v", guards(ite.Then), ite.Then)
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

// TestPartitionBudgetPerNest: the loops cut in two (main and tail) are
// bounded per loop nest at the kernel's root, as the versioned ones.
func TestPartitionBudgetPerNest(t *testing.T) {
	buf := &tir.Buffer{Name: "A", DType: tir.Float32, Shape: []int{32}, Scope: tir.Global}
	var nests []tir.Stmt
	for range maxPartitions + 2 {
		i, j := tir.NewVar("i"), tir.NewVar("j")
		x := tir.AddE(tir.MulE(i, tir.Const(4)), j) // 5 tiles of 4 over 17 elements
		store := &tir.Store{Buf: buf, Indices: []tir.Expr{x}, Value: tir.F32(1)}
		nests = append(nests, &tir.For{Var: i, Extent: 5, Kind: tir.Serial, Body: &tir.For{Var: j, Extent: 4, Kind: tir.Unrolled,
			Body: &tir.IfThenElse{Cond: &tir.Compare{Op: tir.LT, A: x, B: tir.Const(17)}, Then: store}}})
	}
	out := partitionLoops(tir.SeqOf(nests...))
	loops := 0
	tir.WalkStmt(out, func(s tir.Stmt) bool {
		if f, ok := s.(*tir.For); ok && f.Extent == 4 && f.Kind == tir.Serial {
			loops++ // a main loop: the first 4 tiles, unguarded
		}
		return true
	})
	if loops != len(nests) {
		t.Errorf("%d of %d nests cut:\n%v", loops, len(nests), out)
	}
}
