// Table-driven tests of Simplify: the shared fixtures, and what no one rule
// family owns (overflow, names, shared subtrees, point domains); each rule
// family's tests are beside it (simplify_*_test.go).

package tir

import (
	"math"
	"strings"
	"testing"
)

var (
	sx, sy, sz = NewVar("x"), NewVar("y"), NewVar("z")
	si, sj, sk = NewVar("i"), NewVar("j"), NewVar("k")
	sfa        = &Var{Name: "a", T: Float32}
	sbp        = &Var{Name: "p", T: Bool}
)

func ic(v int64) Expr { return Const(v) }

func runSimplifyCases(t *testing.T, cases []simplifyCase) {
	t.Helper()
	for _, tc := range cases {
		got := ExprString(Simplify(tc.e, tc.dom))
		if got != tc.want {
			t.Errorf("%s: Simplify(%s) = %s, want %s", tc.name, ExprString(tc.e), got, tc.want)
		}
	}
}

func TestSimplifyOverflowNotFolded(t *testing.T) {
	cases := []Expr{
		AddE(ic(math.MaxInt64), ic(1)),
		MulE(ic(math.MinInt64), ic(-1)),
		SubE(ic(math.MinInt64), ic(1)),
		MulE(MulE(sx, ic(math.MaxInt64)), ic(2)),
		AddE(MulE(sx, ic(math.MaxInt64)), MulE(sx, ic(math.MaxInt64))),
	}
	for _, e := range cases {
		s := Simplify(e, nil)
		// The kept expression must still hold the operation as written.
		if !strings.Contains(ExprString(s), "922337203685477") {
			t.Errorf("Simplify(%s) = %s: folded with overflow", ExprString(e), ExprString(s))
		}
	}
	if got := ExprString(Simplify(SubE(AddE(sx, ic(math.MaxInt64)), ic(math.MaxInt64)), nil)); got != "x" {
		t.Errorf("(x + MaxInt64) - MaxInt64 = %s, want x", got)
	}
}

// Variables of equal names are distinct atoms, ordered by first appearance
// in the expression.
func TestSimplifySameNames(t *testing.T) {
	a1, a2 := NewVar("a"), NewVar("a")
	e := Simplify(AddE(AddE(a2, a1), a2), nil) // a2 appears first
	b, ok := e.(*Binary)
	if !ok || b.Op != Add {
		t.Fatalf("got %s", ExprString(e))
	}
	m, ok := b.A.(*Binary)
	if !ok || m.A != Expr(a2) || b.B != Expr(a1) {
		t.Fatalf("want (a2*2) + a1, got %s", ExprString(e))
	}
	if s := Simplify(SubE(a1, a2), nil); ExprString(s) != "(a - a)" {
		t.Errorf("a1 - a2 = %s", ExprString(s))
	}
	if s := Simplify(SubE(a1, a1), nil); ExprString(s) != "0" {
		t.Errorf("a1 - a1 = %s", ExprString(s))
	}
	buf2 := &Buffer{Name: "B", DType: Int}
	l1, l2 := &Load{Buf: propBuf, Indices: []Expr{sx}}, &Load{Buf: buf2, Indices: []Expr{sx}}
	if s := Simplify(SubE(l1, l2), nil); ExprString(s) != "(B[x] - B[x])" {
		t.Errorf("loads of two buffers named B: %s", ExprString(s))
	}
	if s := Simplify(SubE(l1, &Load{Buf: propBuf, Indices: []Expr{AddE(sx, ic(0))}}), nil); ExprString(s) != "0" {
		t.Errorf("equal loads: %s", ExprString(s))
	}
}

// Shared subtrees (a DAG much smaller than its tree) are simplified once.
func TestSimplifySharedSubtrees(t *testing.T) {
	var dbl Expr = sx
	for range 62 { // a tree of 2^62 leaves
		dbl = AddE(dbl, dbl)
	}
	if got := ExprString(Simplify(dbl, nil)); got != "(x * 4611686018427387904)" {
		t.Errorf("doubling: %s", got)
	}
	var idx Expr = sx
	for k := range 40 {
		d := ic(int64(2 + k%3))
		idx = AddE(MulE(FloorDivE(idx, d), d), FloorModE(idx, d))
	}
	if got := ExprString(Simplify(idx, nil)); got != "x" {
		t.Errorf("split/fuse chain: %s", got)
	}
	if coef, rest, ok := LinearIn(idx, sx); !ok || coef != 1 || ExprString(rest) != "0" {
		t.Errorf("LinearIn on a DAG: %d %v %v", coef, rest, ok)
	}
	lo, hi := EvalRange(AddE(idx, sy), map[*Var]Interval{sx: {0, 3}}, nil)
	if ExprString(lo) != "y" || ExprString(hi) != "(y + 3)" {
		t.Errorf("EvalRange on a DAG: [%s, %s]", ExprString(lo), ExprString(hi))
	}
	st := SimplifyStmt(&For{Var: sx, Extent: 1, Body: &Store{Buf: propBuf, Indices: []Expr{idx}, Value: idx}}, nil)
	if got := StmtString(st); got != "B[0] = 0\n" {
		t.Errorf("SimplifyStmt on a DAG: %s", got)
	}
}

func TestSimplifyPointDomain(t *testing.T) {
	runSimplifyCases(t, []simplifyCase{
		{"point", AddE(sx, sy), map[*Var]Interval{sx: {3, 3}}, "(y + 3)"},
		{"saturated is not a point", AddE(sx, sy), map[*Var]Interval{sx: {maxI64, maxI64}}, "(x + y)"},
		{"point in load", &Load{Buf: propBuf, Indices: []Expr{sx}}, map[*Var]Interval{sx: {0, 0}}, "B[0]"},
	})
}
