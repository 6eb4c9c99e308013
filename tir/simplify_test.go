// Table-driven tests of Simplify's rules, the boolean constants, Prove,
// LinearIn and SimplifyStmt.

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

func TestFloorSemanticsFolding(t *testing.T) {
	cases := []struct{ a, b, div, mod int64 }{
		{7, 2, 3, 1},
		{-7, 2, -4, 1},
		{7, -2, -4, -1},
		{-7, -2, 3, -1},
		{6, 3, 2, 0},
		{-6, 3, -2, 0},
		{0, 5, 0, 0},
		{-1, 5, -1, 4},
		{math.MinInt64, 1, math.MinInt64, 0},
		{math.MinInt64, 2, math.MinInt64 / 2, 0},
		{math.MaxInt64, -1, -math.MaxInt64, 0},
		{math.MinInt64 + 1, math.MaxInt64, -1, 0},
		{math.MinInt64, math.MaxInt64, -2, math.MaxInt64 - 1},
	}
	for _, tc := range cases {
		d := Simplify(FloorDivE(ic(tc.a), ic(tc.b)), nil)
		m := Simplify(FloorModE(ic(tc.a), ic(tc.b)), nil)
		if v, ok := IsConst(d); !ok || v != tc.div {
			t.Errorf("floordiv(%d, %d) = %s, want %d", tc.a, tc.b, ExprString(d), tc.div)
		}
		if v, ok := IsConst(m); !ok || v != tc.mod {
			t.Errorf("floormod(%d, %d) = %s, want %d", tc.a, tc.b, ExprString(m), tc.mod)
		}
	}
	// Not foldable: division by zero and the one overflowing quotient.
	for _, e := range []Expr{
		FloorDivE(ic(5), ic(0)), FloorModE(ic(5), ic(0)), FloorDivE(ic(math.MinInt64), ic(-1)),
	} {
		if _, ok := IsConst(Simplify(e, nil)); ok {
			t.Errorf("%s folded to %s", ExprString(e), ExprString(Simplify(e, nil)))
		}
	}
	if v, ok := IsConst(Simplify(FloorModE(ic(math.MinInt64), ic(-1)), nil)); !ok || v != 0 {
		t.Errorf("floormod(MinInt64, -1) should fold to 0")
	}
}

type simplifyCase struct {
	name string
	e    Expr
	dom  map[*Var]Interval
	want string
}

func runSimplifyCases(t *testing.T, cases []simplifyCase) {
	t.Helper()
	for _, tc := range cases {
		got := ExprString(Simplify(tc.e, tc.dom))
		if got != tc.want {
			t.Errorf("%s: Simplify(%s) = %s, want %s", tc.name, ExprString(tc.e), got, tc.want)
		}
	}
}

func TestSimplifyAffine(t *testing.T) {
	runSimplifyCases(t, []simplifyCase{
		{"fold", AddE(ic(2), MulE(ic(3), ic(4))), nil, "14"},
		{"x+0", AddE(sx, ic(0)), nil, "x"},
		{"0+x", AddE(ic(0), sx), nil, "x"},
		{"x*1", MulE(sx, ic(1)), nil, "x"},
		{"x*0", MulE(sx, ic(0)), nil, "0"},
		{"0*load", MulE(ic(0), &Load{Buf: propBuf, Indices: []Expr{sx}}), nil, "0"},
		{"x-x", SubE(sx, sx), nil, "0"},
		{"collect", AddE(AddE(sx, sy), SubE(MulE(ic(2), sx), sy)), nil, "(x * 3)"},
		{"order", AddE(AddE(ic(5), sz), AddE(sy, sx)), nil, "(((x + y) + z) + 5)"},
		{"negative", SubE(ic(3), AddE(sx, MulE(sy, ic(2)))), nil, "(((x * -1) - (y * 2)) + 3)"},
		{"negative const", SubE(sx, ic(4)), nil, "(x - 4)"},
		{"neg first", SubE(ic(0), sx), nil, "(x * -1)"},
		{"distribute const", MulE(AddE(sx, ic(2)), ic(3)), nil, "((x * 3) + 6)"},
		{"nested", SubE(MulE(SubE(sx, sy), ic(2)), MulE(ic(-2), sy)), nil, "(x * 2)"},
		{"int cast dropped", &Cast{To: Int, X: AddE(sx, ic(1))}, nil, "(x + 1)"},
		{"bool cast", &Cast{To: Int, X: Cmp(LT, ic(1), ic(2))}, nil, "1"},
		{"float cast truncates", &Cast{To: Int, X: F32(-2.75)}, nil, "-2"},
		{"row-major index", AddE(MulE(AddE(MulE(si, ic(8)), sj), ic(4)), sk), nil, "(((i * 32) + (j * 4)) + k)"},
	})
}

func TestSimplifyProducts(t *testing.T) {
	runSimplifyCases(t, []simplifyCase{
		{"coef out", MulE(MulE(sx, ic(2)), MulE(sy, ic(3))), nil, "((x * y) * 6)"},
		{"commute", MulE(sy, sx), nil, "(x * y)"},
		{"assoc", MulE(sz, MulE(sy, sx)), nil, "((x * y) * z)"},
		{"sum factor kept", MulE(AddE(sx, ic(1)), sy), nil, "((x + 1) * y)"},
		{"like products", AddE(MulE(sx, sy), MulE(sy, sx)), nil, "((x * y) * 2)"},
	})
}

func TestSimplifyDivMod(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}, sk: {-4, -1}}
	runSimplifyCases(t, []simplifyCase{
		{"div by 1", FloorDivE(sx, ic(1)), nil, "x"},
		{"mod by 1", FloorModE(sx, ic(1)), nil, "0"},
		{"div by -1", FloorDivE(sx, ic(-1)), nil, "(x * -1)"},
		{"mod by -1", FloorModE(sx, ic(-1)), nil, "0"},
		{"negative divisor kept", FloorDivE(sx, ic(-2)), nil, "floordiv(x, -2)"},
		{"div by 0 kept", FloorDivE(AddE(sx, ic(0)), ic(0)), nil, "floordiv(x, 0)"},
		{"symbolic divisor kept", FloorModE(sx, AddE(sy, ic(0))), nil, "floormod(x, y)"},
		{"multiple", FloorDivE(MulE(sx, ic(8)), ic(4)), nil, "(x * 2)"},
		{"mod multiple", FloorModE(MulE(sx, ic(8)), ic(4)), nil, "0"},
		{"split q+r", FloorDivE(AddE(MulE(sx, ic(4)), sy), ic(4)), nil, "(floordiv(y, 4) + x)"},
		{"split mod", FloorModE(AddE(MulE(sx, ic(4)), sy), ic(4)), nil, "floormod(y, 4)"},
		{"split const", FloorDivE(AddE(sx, ic(9)), ic(4)), nil, "(floordiv((x + 1), 4) + 2)"},
		{"split negative const", FloorDivE(SubE(sx, ic(1)), ic(4)), nil, "(floordiv((x + 3), 4) - 1)"},
		{"mod negative const", FloorModE(SubE(sx, ic(1)), ic(4)), nil, "floormod((x + 3), 4)"},
		{"negative coef split", FloorDivE(SubE(sy, MulE(sx, ic(8))), ic(4)), nil, "(floordiv(y, 4) - (x * 2))"},
		{"fits [0,c)", FloorDivE(AddE(MulE(si, ic(4)), sj), ic(4)), d, "i"},
		{"fits mod", FloorModE(AddE(MulE(si, ic(4)), sj), ic(4)), d, "j"},
		{"fits shifted", FloorDivE(AddE(sj, ic(4)), ic(4)), d, "1"},
		{"fits shifted mod", FloorModE(AddE(sj, ic(4)), ic(4)), d, "j"},
		{"straddles", FloorDivE(AddE(sj, ic(5)), ic(4)), d, "(floordiv((j + 1), 4) + 1)"},
		{"fits after shift", FloorModE(SubE(sj, ic(8)), ic(4)), d, "j"},
		{"fits negative", FloorDivE(sk, ic(4)), d, "-1"},
		{"fits negative mod", FloorModE(sk, ic(4)), d, "(k + 4)"},
		{"fits negative coef", FloorDivE(SubE(ic(3), sj), ic(4)), d, "0"},
		{"no fit", FloorDivE(si, ic(4)), d, "floordiv(i, 4)"},
		{"whole range", FloorDivE(si, ic(16)), d, "0"},
		{"gcd div", FloorDivE(AddE(MulE(sx, ic(4)), ic(2)), ic(8)), nil, "floordiv(x, 2)"},
		{"gcd mod", FloorModE(AddE(MulE(sx, ic(4)), ic(2)), ic(8)), nil, "((floormod(x, 2) * 4) + 2)"},
		{"gcd two terms", FloorDivE(AddE(MulE(sx, ic(6)), MulE(sy, ic(4))), ic(8)), nil, "floordiv(((x * 3) + (y * 2)), 4)"},
		{"nested div", FloorDivE(FloorDivE(sx, ic(4)), ic(8)), nil, "floordiv(x, 32)"},
		{"nested div const", FloorDivE(AddE(FloorDivE(sx, ic(4)), ic(1)), ic(8)), nil, "floordiv((x + 4), 32)"},
		{"nested mod", FloorModE(FloorModE(sx, ic(16)), ic(4)), nil, "floormod(x, 4)"},
		{"nested mod const", FloorModE(AddE(FloorModE(sx, ic(16)), ic(3)), ic(4)), nil, "floormod((x + 3), 4)"},
		{"nested mod not dividing", FloorModE(FloorModE(sx, ic(6)), ic(4)), nil, "floormod(floormod(x, 6), 4)"},
		{"nested mod fits", FloorModE(FloorModE(sx, ic(4)), ic(8)), nil, "floormod(x, 4)"},
		{"div of mod fits", FloorDivE(FloorModE(sx, ic(4)), ic(4)), nil, "0"},
		{"recombine", AddE(MulE(FloorDivE(sx, ic(4)), ic(4)), FloorModE(sx, ic(4))), nil, "x"},
		{"recombine scaled", AddE(MulE(FloorDivE(sx, ic(4)), ic(12)), MulE(FloorModE(sx, ic(4)), ic(3))), nil, "(x * 3)"},
		{"recombine expr", AddE(MulE(FloorDivE(AddE(sx, sy), ic(5)), ic(5)), FloorModE(AddE(sy, sx), ic(5))), nil, "(x + y)"},
		{"no recombine", AddE(MulE(FloorDivE(sx, ic(4)), ic(3)), FloorModE(sx, ic(4))), nil, "((floordiv(x, 4) * 3) + floormod(x, 4))"},
		{"fused index", AddE(MulE(FloorDivE(si, ic(4)), ic(4)), FloorModE(si, ic(4))), d, "i"},
		{"mod chain", AddE(MulE(FloorModE(FloorDivE(sx, ic(3)), ic(3)), ic(3)), FloorModE(sx, ic(3))), nil, "floormod(x, 9)"},
		{"mod chain shifted", AddE(MulE(FloorModE(FloorDivE(AddE(sx, ic(8)), ic(3)), ic(3)), ic(3)), FloorModE(AddE(sx, ic(8)), ic(3))), nil, "floormod((x + 8), 9)"},
		{"mod chain scaled", AddE(MulE(FloorModE(FloorDivE(sx, ic(4)), ic(2)), ic(8)), MulE(FloorModE(sx, ic(4)), ic(2))), nil, "(floormod(x, 8) * 2)"},
		{"mod chain to index", AddE(AddE(MulE(FloorDivE(sx, ic(72)), ic(72)), MulE(FloorModE(FloorDivE(sx, ic(9)), ic(8)), ic(9))),
			AddE(MulE(FloorModE(FloorDivE(sx, ic(3)), ic(3)), ic(3)), FloorModE(sx, ic(3)))), nil, "x"},
		{"no mod chain", AddE(MulE(FloorModE(FloorDivE(sx, ic(3)), ic(3)), ic(2)), FloorModE(sx, ic(3))), nil, "((floormod(floordiv(x, 3), 3) * 2) + floormod(x, 3))"},
	})
}

func TestSimplifyMinMax(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}}
	runSimplifyCases(t, []simplifyCase{
		{"fold min", MinE(ic(3), ic(-2)), nil, "-2"},
		{"fold max", MaxE(ic(3), ic(-2)), nil, "3"},
		{"x vs x+1", MinE(AddE(sx, ic(1)), sx), nil, "x"},
		{"max x vs x+1", MaxE(AddE(sx, ic(1)), sx), nil, "(x + 1)"},
		{"same", MaxE(sx, AddE(sx, ic(0))), nil, "x"},
		{"sorted", MinE(sy, sx), nil, "min(x, y)"},
		{"flatten", MinE(MinE(sz, sx), MinE(sy, sx)), nil, "min(min(x, y), z)"},
		{"by dom", MinE(si, ic(20)), d, "i"},
		{"by dom max", MaxE(sj, ic(3)), d, "3"},
		{"dominated in chain", MinE(MinE(si, sx), AddE(si, ic(1))), nil, "min(i, x)"},
		{"undecided", MinE(si, ic(10)), d, "min(10, i)"},
		{"min in affine", AddE(MinE(sx, sy), MinE(sy, sx)), nil, "(min(x, y) * 2)"},
	})
}

func TestSimplifySelectAndBool(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}}
	runSimplifyCases(t, []simplifyCase{
		{"select true", SelectE(Cmp(LT, ic(1), ic(2)), sx, sy), nil, "x"},
		{"select false", SelectE(Cmp(GT, ic(1), ic(2)), sx, sy), nil, "y"},
		{"select by dom", SelectE(Cmp(LT, si, ic(16)), sx, sy), d, "x"},
		{"select same branches", SelectE(Cmp(LT, sx, sy), AddE(sz, ic(1)), AddE(ic(1), sz)), nil, "(z + 1)"},
		{"select kept", SelectE(Cmp(LT, si, ic(8)), sx, sy), d, "select((i < 8), x, y)"},
		{"cmp fold", Cmp(LE, ic(-3), ic(-3)), nil, "(0 == 0)"},
		{"cmp diff", Cmp(LT, sx, AddE(sx, ic(1))), nil, "(0 == 0)"},
		{"cmp diff false", Cmp(GE, sx, AddE(sx, ic(1))), nil, "(0 != 0)"},
		{"cmp eq", Cmp(EQ, AddE(sx, sy), AddE(sy, sx)), nil, "(0 == 0)"},
		{"cmp ne by dom", Cmp(NE, sj, ic(7)), d, "(0 == 0)"},
		{"cmp eq by dom", Cmp(EQ, sj, ic(7)), d, "(0 != 0)"},
		{"cmp affine dom", Cmp(LT, AddE(MulE(si, ic(4)), sj), ic(64)), d, "(0 == 0)"},
		{"cmp dom edge", Cmp(LT, AddE(MulE(si, ic(4)), sj), ic(63)), d, "(((i * 4) + j) < 63)"},
		{"cmp kept", Cmp(GT, si, sj), d, "(i > j)"},
		{"and true", AndE(Cmp(GE, si, ic(0)), Cmp(LT, sx, ic(3))), d, "(x < 3)"},
		{"and false", AndE(Cmp(LT, sx, ic(3)), Cmp(LT, si, ic(0))), d, "(0 != 0)"},
		{"or true", OrE(Cmp(LT, sx, ic(3)), Cmp(LT, si, ic(16))), d, "(0 == 0)"},
		{"or false", OrE(Cmp(LT, si, ic(0)), Cmp(LT, sx, ic(3))), d, "(x < 3)"},
		{"and same", AndE(Cmp(LT, sx, ic(3)), Cmp(LT, sx, ic(3))), nil, "(x < 3)"},
		{"not const", NotE(Cmp(LT, ic(1), ic(2))), nil, "(0 != 0)"},
		{"not not", NotE(NotE(sbp)), nil, "p"},
		{"not int cmp", NotE(Cmp(LT, sx, ic(3))), nil, "(x >= 3)"},
		{"not float cmp kept", NotE(Cmp(LT, sfa, F32(3))), nil, "!(a < 3.0)"},
		{"bool eq", Cmp(EQ, True, False), nil, "(0 != 0)"},
		{"bool select", SelectE(sbp, Cmp(LT, ic(1), ic(2)), Cmp(LT, ic(1), ic(2))), nil, "(0 == 0)"},
		{"cast to bool", &Cast{To: Bool, X: ic(3)}, nil, "(0 == 0)"},
	})
}

func TestSimplifyFloat(t *testing.T) {
	negZero := &FloatImm{V: math.Copysign(0, -1)}
	runSimplifyCases(t, []simplifyCase{
		{"add", AddE(F32(1.5), F32(2.25)), nil, "3.75"},
		{"float32 rounding", AddE(F32(16777216), F32(1)), nil, "1.6777216e+07"},
		{"div", DivE(F32(1), F32(3)), nil, "0.33333334"},
		{"min", MinE(F32(1), F32(-2)), nil, "-2.0"},
		{"max", MaxE(F32(1), F32(-2)), nil, "1.0"},
		{"min of zeros kept", MinE(F32(0), negZero), nil, "min(0.0, -0.0)"},
		{"div by zero kept", DivE(F32(1), F32(0)), nil, "(1.0 / 0.0)"},
		{"overflow kept", MulE(F32(3e38), F32(10)), nil, "(3e+38 * 10.0)"},
		{"x*1", MulE(sfa, F32(1)), nil, "a"},
		{"1*x", MulE(F32(1), sfa), nil, "a"},
		{"x/1", DivE(sfa, F32(1)), nil, "a"},
		{"x-0", SubE(sfa, F32(0)), nil, "a"},
		{"x+(-0)", AddE(sfa, negZero), nil, "a"},
		{"x+0 kept (-0 + 0 is +0)", AddE(sfa, F32(0)), nil, "(a + 0.0)"},
		{"x*0 kept (NaN, -0)", MulE(sfa, F32(0)), nil, "(a * 0.0)"},
		{"no reassociation", AddE(AddE(sfa, F32(1)), F32(2)), nil, "((a + 1.0) + 2.0)"},
		{"inner fold", MulE(sfa, AddE(F32(1), F32(1))), nil, "(a * 2.0)"},
		{"cmp", Cmp(LT, F32(1), F32(2)), nil, "(0 == 0)"},
		{"select", SelectE(Cmp(LT, ic(2), ic(1)), sfa, F32(0)), nil, "0.0"},
		{"cast int", &Cast{To: Float32, X: AddE(ic(16777217), ic(0))}, nil, "1.6777216e+07"},
		{"cast float noop", &Cast{To: Float32, X: sfa}, nil, "a"},
		{"call fabs", CallE("fabs", F32(-2)), nil, "2.0"},
		{"call sqrt", CallE("sqrt", F32(2)), nil, "1.4142135"},
		{"call sqrt nan kept", CallE("sqrt", F32(-1)), nil, "sqrt(-1.0)"},
		{"call exp kept", CallE("exp", F32(1)), nil, "exp(1.0)"},
		{"load index", &Load{Buf: &Buffer{Name: "A", DType: Float32}, Indices: []Expr{AddE(sx, SubE(sy, sy))}}, nil, "A[x]"},
	})
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

func TestBoolConstants(t *testing.T) {
	if !IsTrue(True) || IsFalse(True) || !IsFalse(False) || IsTrue(False) {
		t.Fatal("True/False not recognised")
	}
	if ExprString(True) != "(0 == 0)" || ExprString(False) != "(0 != 0)" {
		t.Fatal("unexpected printing of True/False")
	}
	if !IsTrue(Cmp(LT, ic(1), ic(2))) || !IsFalse(Cmp(EQ, ic(1), ic(2))) {
		t.Error("comparisons of constants")
	}
	if IsTrue(Cmp(EQ, sx, sx)) || IsFalse(sbp) || IsTrue(F32(1)) {
		t.Error("non-constants recognised as constants")
	}
	if Simplify(True, nil) != True || Simplify(Cmp(LT, sx, AddE(sx, ic(1))), nil) != True {
		t.Error("Simplify should return the canonical True")
	}
}

func TestProve(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}, sk: {-4, -1}}
	cases := []struct {
		cond          Expr
		value, proven bool
	}{
		{Cmp(LT, si, ic(16)), true, true},
		{Cmp(LT, si, ic(15)), false, false},
		{Cmp(LE, si, ic(15)), true, true},
		{Cmp(GT, sk, ic(-1)), false, true},
		{Cmp(GE, sk, ic(-4)), true, true},
		{Cmp(EQ, sk, ic(0)), false, true},
		{Cmp(NE, sk, ic(0)), true, true},
		{Cmp(LT, AddE(MulE(si, ic(4)), sj), ic(64)), true, true},
		{Cmp(LT, AddE(MulE(si, ic(4)), sj), MulE(AddE(si, ic(1)), ic(4))), true, true},
		{Cmp(LT, sx, sx), false, true},
		{Cmp(LT, sx, sy), false, false},
		{AndE(Cmp(GE, si, ic(0)), Cmp(LT, sj, ic(4))), true, true},
		{AndE(Cmp(GE, si, ic(0)), Cmp(LT, sx, ic(4))), false, false},
		{OrE(Cmp(LT, sx, ic(0)), Cmp(LT, sj, ic(4))), true, true},
		{NotE(Cmp(LT, si, ic(16))), false, true},
		{Cmp(LT, FloorModE(sx, ic(8)), ic(8)), true, true},
		{Cmp(GE, FloorDivE(si, ic(4)), ic(0)), true, true},
		{Cmp(LE, MinE(sx, ic(3)), ic(3)), true, true},
		{Cmp(LT, SelectE(Cmp(LT, sx, ic(0)), ic(1), ic(2)), ic(3)), true, true},
	}
	for _, tc := range cases {
		v, p := Prove(tc.cond, d)
		if v != tc.value || p != tc.proven {
			t.Errorf("Prove(%s) = %v, %v; want %v, %v", ExprString(tc.cond), v, p, tc.value, tc.proven)
		}
	}
}

func TestLinearIn(t *testing.T) {
	cases := []struct {
		e    Expr
		v    *Var
		coef int64
		rest string
		ok   bool
	}{
		{AddE(MulE(sx, ic(4)), sy), sx, 4, "y", true},
		{AddE(MulE(sx, ic(4)), sy), sy, 1, "(x * 4)", true},
		{AddE(MulE(sx, ic(4)), sy), sz, 0, "((x * 4) + y)", true},
		{SubE(AddE(sx, ic(3)), MulE(ic(2), sx)), sx, -1, "3", true},
		{SubE(sx, sx), sx, 0, "0", true},
		{AddE(MulE(AddE(sx, sy), ic(2)), FloorDivE(sy, ic(3))), sx, 2, "(floordiv(y, 3) + (y * 2))", true},
		{AddE(sx, FloorDivE(sx, ic(2))), sx, 0, "", false},
		{MinE(sx, ic(3)), sx, 0, "", false},
		{MulE(sx, sy), sx, 0, "", false},
		{&Load{Buf: propBuf, Indices: []Expr{sx}}, sx, 0, "", false},
		{AddE(MulE(FloorDivE(sx, ic(4)), ic(4)), FloorModE(sx, ic(4))), sx, 1, "0", true},
		{Cmp(LT, sx, ic(1)), sx, 0, "", false},
	}
	for _, tc := range cases {
		coef, rest, ok := LinearIn(tc.e, tc.v)
		if ok != tc.ok || coef != tc.coef || (ok && ExprString(rest) != tc.rest) {
			r := "<nil>"
			if rest != nil {
				r = ExprString(rest)
			}
			t.Errorf("LinearIn(%s, %s) = %d, %s, %v; want %d, %s, %v",
				ExprString(tc.e), tc.v.Name, coef, r, ok, tc.coef, tc.rest, tc.ok)
		}
	}
}

func TestSimplifyStmt(t *testing.T) {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{64}}
	Bb := &Buffer{Name: "Bb", DType: Float32, Shape: []int{64}, Scope: Local}
	io, ii, o := NewVar("io"), NewVar("ii"), NewVar("o")
	idx := AddE(MulE(io, ic(4)), ii)
	store := func(e Expr) Stmt { return &Store{Buf: A, Indices: []Expr{e}, Value: F32(1)} }

	cases := []struct {
		name string
		s    Stmt
		dom  map[*Var]Interval
		want string
	}{
		{"loop range used", &For{Var: io, Extent: 16, Body: &For{Var: ii, Extent: 4, Kind: Vectorized,
			Body: store(FloorModE(idx, ic(4)))}}, nil,
			"for io in 0..16 {\n  for ii in 0..4 vectorized {\n    A[ii] = 1.0\n  }\n}\n"},
		{"extent 1 removed", &For{Var: io, Extent: 16, Kind: Parallel, Body: &For{Var: o, Extent: 1,
			Body: store(AddE(io, MulE(o, ic(16))))}}, nil,
			"for io in 0..16 parallel {\n  A[io] = 1.0\n}\n"},
		{"extent 0 removed", SeqOf(&For{Var: io, Extent: 0, Body: store(io)}, store(ic(3))), nil,
			"A[3] = 1.0\n"},
		{"guard proven true", &For{Var: io, Extent: 16, Body: &IfThenElse{
			Cond: Cmp(LT, io, ic(16)), Then: store(io), Else: store(ic(0))}}, nil,
			"for io in 0..16 {\n  A[io] = 1.0\n}\n"},
		{"guard proven false", &For{Var: io, Extent: 16, Body: &IfThenElse{
			Cond: Cmp(GE, io, ic(16)), Then: store(io), Else: store(ic(0))}}, nil,
			"for io in 0..16 {\n  A[0] = 1.0\n}\n"},
		{"guard kept", &For{Var: io, Extent: 16, Body: &IfThenElse{
			Cond: Cmp(LT, AddE(io, ic(1)), ic(16)), Then: store(io)}}, nil,
			"for io in 0..16 {\n  if ((io + 1) < 16) {\n    A[io] = 1.0\n  }\n}\n"},
		{"false guard without else", SeqOf(&IfThenElse{Cond: Cmp(LT, si, ic(0)), Then: store(ic(1))}, store(ic(2))),
			map[*Var]Interval{si: {0, 3}}, "A[2] = 1.0\n"},
		{"empty then", &IfThenElse{Cond: Cmp(LT, sx, ic(0)), Then: &IfThenElse{Cond: Cmp(LT, ic(1), ic(0)), Then: store(ic(1))},
			Else: store(ic(2))}, nil,
			"if (x >= 0) {\n  A[2] = 1.0\n}\n"},
		{"let const", &Let{Var: sx, Value: AddE(ic(2), ic(3)), Body: store(MulE(sx, ic(2)))}, nil,
			"A[10] = 1.0\n"},
		{"let range", &For{Var: io, Extent: 4, Body: &Let{Var: sx, Value: MulE(io, ic(2)),
			Body: store(FloorDivE(sx, ic(8)))}}, nil,
			"for io in 0..4 {\n  let x = (io * 2)\n  A[0] = 1.0\n}\n"},
		{"nested kinds kept", &Pragma{Key: "auto_unroll_max_step", Value: 16, Body: &Allocate{Buf: Bb,
			Body: &For{Var: io, Extent: 2, Kind: Unrolled, Body: &Store{Buf: Bb, Indices: []Expr{io},
				Value: MulE(&Load{Buf: A, Indices: []Expr{AddE(io, ic(0))}}, F32(1))}}}}, nil,
			"pragma auto_unroll_max_step=16\nalloc Bb[64] local\nfor io in 0..2 unrolled {\n  Bb[io] = A[io]\n}\n"},
		{"everything removed", &For{Var: io, Extent: 0, Body: store(io)}, nil, ""},
		{"caller dom", store(FloorDivE(si, ic(4))), map[*Var]Interval{si: {0, 3}}, "A[0] = 1.0\n"},
	}
	for _, tc := range cases {
		got := SimplifyStmt(tc.s, tc.dom)
		if got == nil {
			t.Errorf("%s: nil statement", tc.name)
			continue
		}
		if s := StmtString(got); s != tc.want {
			t.Errorf("%s:\n got:\n%s want:\n%s", tc.name, s, tc.want)
		}
	}
	// The caller's dom is not modified.
	dom := map[*Var]Interval{}
	SimplifyStmt(&For{Var: io, Extent: 4, Body: store(io)}, dom)
	if len(dom) != 0 {
		t.Error("SimplifyStmt modified dom")
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

func TestSimplifyStmtFloatLet(t *testing.T) {
	A := &Buffer{Name: "A", DType: Float32, Shape: []int{4}}
	p := &Var{Name: "p", T: Bool}
	s := &Let{Var: sfa, Value: AddE(F32(1), F32(1)), Body: &Let{Var: p, Value: Cmp(LT, ic(1), ic(2)),
		Body: &Store{Buf: A, Indices: []Expr{ic(0)}, Value: SelectE(p, MulE(sfa, F32(3)), F32(0))}}}
	if got := StmtString(SimplifyStmt(s, nil)); got != "A[0] = 6.0\n" {
		t.Errorf("got %s", got)
	}
}
