// Tests of the floordiv and floormod rules (simplify_divmod.go).

package tir

import (
	"math"
	"testing"
)

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
