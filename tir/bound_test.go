// Tests of ConstBound, the saturating interval arithmetic and EvalRange.

package tir

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

const (
	minI64 = math.MinInt64
	maxI64 = math.MaxInt64
)

func TestConstBound(t *testing.T) {
	d := map[*Var]Interval{si: {0, 15}, sj: {0, 3}, sk: {-4, -1}, sx: {-7, 7}, sy: {2, 5}}
	cases := []struct {
		name string
		e    Expr
		want Interval
	}{
		{"const", ic(5), Point(5)},
		{"var", si, Interval{0, 15}},
		{"unbounded var", sz, Everything()},
		{"affine", AddE(MulE(si, ic(4)), sj), Interval{0, 63}},
		{"negative coef", SubE(ic(10), MulE(si, ic(2))), Interval{-20, 10}},
		{"x - x", SubE(sx, sx), Point(0)},
		{"correlated", SubE(AddE(si, sj), si), Interval{0, 3}},
		{"half unbounded", AddE(sz, MulE(ic(0), sz)), Everything()},
		{"unbounded plus bounded", AddE(sz, si), Everything()},
		{"max with unbounded", MaxE(sz, ic(3)), Interval{3, maxI64}},
		{"min with unbounded", MinE(sz, ic(3)), Interval{minI64, 3}},
		{"floordiv", FloorDivE(sx, ic(2)), Interval{-4, 3}},
		{"floordiv neg", FloorDivE(sk, ic(3)), Interval{-2, -1}},
		{"floordiv by neg const", FloorDivE(sx, ic(-2)), Interval{-4, 3}},
		{"floordiv by interval", FloorDivE(ic(20), sy), Interval{4, 10}},
		{"floordiv neg by interval", FloorDivE(ic(-20), sy), Interval{-10, -4}},
		{"floordiv by zero range", FloorDivE(si, sx), Everything()},
		{"floormod", FloorModE(sx, ic(4)), Interval{0, 3}},
		{"floormod one period", FloorModE(AddE(sj, ic(4)), ic(8)), Interval{4, 7}},
		{"floormod neg one period", FloorModE(sk, ic(8)), Interval{4, 7}},
		{"floormod small x", FloorModE(sj, ic(8)), Interval{0, 3}},
		{"floormod by neg", FloorModE(sx, ic(-4)), Interval{-3, 0}},
		{"floormod by interval", FloorModE(si, sy), Interval{0, 4}},
		{"floormod unbounded", FloorModE(sz, ic(6)), Interval{0, 5}},
		{"min", MinE(si, sx), Interval{-7, 7}},
		{"max", MaxE(sk, sj), Interval{0, 3}},
		{"select", SelectE(Cmp(LT, sz, ic(0)), sk, AddE(sj, ic(10))), Interval{-4, 13}},
		{"select decided", SelectE(Cmp(LT, si, ic(20)), sk, sz), Interval{-4, -1}},
		{"product", MulE(sx, sk), Interval{-28, 28}},
		{"product pos", MulE(sy, sj), Interval{0, 15}},
		{"product const", MulE(sk, ic(-3)), Interval{3, 12}},
		{"load", &Load{Buf: propBuf, Indices: []Expr{si}}, Everything()},
		{"bool cast", &Cast{To: Int, X: Cmp(LT, sz, ic(0))}, Interval{0, 1}},
		{"saturate hi", MulE(si, ic(maxI64)), Interval{0, maxI64}},
		{"saturate lo", MulE(si, ic(minI64)), Interval{minI64, 0}},
		{"saturate sum", AddE(MulE(si, ic(1<<62)), MulE(sj, ic(1<<62))), Interval{0, maxI64}},
		{"saturate neg", SubE(ic(-(1 << 62)), MulE(si, ic(1<<62))), Interval{minI64, -(1 << 62)}},
		{"max const", ic(maxI64), Point(maxI64)},
		{"neg max const", SubE(ic(0), ic(maxI64)), Point(-maxI64)},
		{"non-int", F32(1), Everything()},
	}
	for _, tc := range cases {
		if got := ConstBound(tc.e, d); got != tc.want {
			t.Errorf("%s: ConstBound(%s) = %v, want %v", tc.name, ExprString(tc.e), got, tc.want)
		}
	}
}

// The interval operations against brute force over small intervals and
// divisor ranges: always sound, exact where promised.
func TestIntervalOpsBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rnd := func() Interval {
		lo := int64(r.IntN(25)) - 12
		return Interval{lo, lo + int64(r.IntN(9))}
	}
	for range 20000 {
		a, b := rnd(), rnd()
		if r.IntN(3) == 0 {
			b = Point(b.Lo)
		}
		type op struct {
			name string
			iv   Interval
			f    func(x, y int64) (int64, bool)
		}
		ops := []op{
			{"add", ivAdd(a, b), func(x, y int64) (int64, bool) { return x + y, true }},
			{"mul", ivMul(a, b), func(x, y int64) (int64, bool) { return x * y, true }},
			{"floordiv", ivFloorDiv(a, b), func(x, y int64) (int64, bool) { return floorDiv64(x, y) }},
			{"floormod", ivFloorMod(a, b), func(x, y int64) (int64, bool) {
				if y == 0 {
					return 0, false
				}
				return floorMod64(x, y), true
			}},
		}
		for _, o := range ops {
			lo, hi := int64(maxI64), int64(minI64)
			for x := a.Lo; x <= a.Hi; x++ {
				for y := b.Lo; y <= b.Hi; y++ {
					v, ok := o.f(x, y)
					if !ok {
						continue
					}
					if v < o.iv.Lo || v > o.iv.Hi {
						t.Fatalf("%s(%v, %v) = %v misses %d at %d, %d", o.name, a, b, o.iv, v, x, y)
					}
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			// Exact: sums, products, and division by a non-zero-straddling range.
			exact := o.name == "add" || o.name == "mul" ||
				(o.name == "floordiv" && (b.Lo > 0 || b.Hi < 0))
			if o.name == "floormod" && b.Lo == b.Hi && b.Lo != 0 {
				exact = true
			}
			if exact && lo <= hi && (o.iv.Lo != lo || o.iv.Hi != hi) {
				t.Fatalf("%s(%v, %v) = %v, exact is [%d, %d]", o.name, a, b, o.iv, lo, hi)
			}
		}
	}
}

// Soundness of the interval operations near the int64 extremes, against
// exact results in math/big (an end at MinInt64/MaxInt64 reads as unbounded).
func TestIntervalOpsExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	bases := []int64{0, 1, -1, 7, -7, 1 << 31, -(1 << 31), 1 << 62, -(1 << 62), maxI64, minI64, maxI64 / 3, minI64 / 3}
	rnd := func() Interval {
		lo := bases[r.IntN(len(bases))]
		w := int64(r.IntN(4))
		if lo > maxI64-w {
			lo = maxI64 - w
		}
		if r.IntN(4) == 0 {
			return Interval{lo, lo + w}
		}
		lo += int64(r.IntN(5)) - 2
		if lo > maxI64-w {
			lo = maxI64 - w
		}
		return Interval{lo, lo + w}
	}
	for range 20000 {
		a, b := rnd(), rnd()
		ops := []struct {
			name string
			iv   Interval
		}{{"add", ivAdd(a, b)}, {"mul", ivMul(a, b)}, {"floordiv", ivFloorDiv(a, b)}, {"floormod", ivFloorMod(a, b)}, {"scale", ivScale(a, b.Lo)}}
		for x := a.Lo; ; x++ {
			for y := b.Lo; ; y++ {
				bx, by := big.NewInt(x), big.NewInt(y)
				for _, o := range ops {
					var v *big.Int
					switch o.name {
					case "add":
						v = new(big.Int).Add(bx, by)
					case "mul":
						v = new(big.Int).Mul(bx, by)
					case "scale":
						v = new(big.Int).Mul(bx, big.NewInt(b.Lo))
					default:
						if y == 0 {
							continue
						}
						q, m := bigFloorDivMod(bx, by)
						v = q
						if o.name == "floormod" {
							v = m
						}
					}
					if !inBound(v, o.iv) {
						t.Fatalf("%s(%v, %v) = %v misses %v at %d, %d", o.name, a, b, o.iv, v, x, y)
					}
				}
				if y == b.Hi {
					break
				}
			}
			if x == a.Hi {
				break
			}
		}
	}
}

func TestIntervalSaturation(t *testing.T) {
	cases := []struct {
		name      string
		got, want Interval
	}{
		{"add unbounded", ivAdd(Interval{minI64, 3}, Point(5)), Interval{minI64, 8}},
		{"add overflow", ivAdd(Point(maxI64-1), Point(5)), Interval{maxI64, maxI64}},
		{"add underflow", ivAdd(Interval{minI64 + 1, 0}, Point(-5)), Interval{minI64, -5}},
		{"scale unbounded neg", ivScale(Interval{0, maxI64}, -2), Interval{minI64, 0}},
		{"scale zero", ivScale(Everything(), 0), Point(0)},
		{"mul unbounded by zero range", ivMul(Everything(), Point(0)), Point(0)},
		{"mul unbounded", ivMul(Interval{minI64, 5}, Interval{0, 3}), Interval{minI64, 15}},
		{"neg of MinInt64 hi", ivScale(Interval{minI64, minI64 + 5}, -1), Interval{-minI64 - 5, maxI64}},
		{"floordiv unbounded", ivFloorDiv(Interval{minI64, 10}, Interval{3, maxI64}), Interval{minI64, 3}},
		{"floordiv unbounded divisor", ivFloorDiv(Interval{-10, 10}, Interval{3, maxI64}), Interval{-4, 3}},
		{"floordiv unbounded divisor neg x", ivFloorDiv(Interval{-10, -5}, Interval{3, maxI64}), Interval{-4, -1}},
		{"floordiv neg unbounded divisor", ivFloorDiv(Interval{5, 10}, Interval{minI64, -3}), Interval{-4, -1}},
		{"floormod unbounded divisor", ivFloorMod(Interval{-10, 10}, Interval{3, maxI64}), Interval{0, maxI64}},
		{"floormod nonneg unbounded divisor", ivFloorMod(Interval{0, 10}, Interval{3, maxI64}), Interval{0, 10}},
		{"floormod neg unbounded divisor", ivFloorMod(Interval{0, 10}, Interval{minI64, -3}), Interval{minI64, 0}},
		{"floormod saturated divisor", ivFloorMod(Interval{-4, -3}, Interval{maxI64, maxI64}), Interval{0, maxI64}},
		{"floormod saturated neg divisor", ivFloorMod(Interval{3, 4}, Interval{minI64, minI64}), Interval{minI64, 0}},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestEvalRange(t *testing.T) {
	f, g := NewVar("f"), NewVar("g")
	fixedF := map[*Var]Interval{f: {0, 100}}
	cases := []struct {
		name    string
		e       Expr
		ranging map[*Var]Interval
		fixed   map[*Var]Interval
		lo, hi  string
		width   string // Simplify(hi - lo), "" to skip
	}{
		{"affine", AddE(MulE(f, ic(8)), sk), map[*Var]Interval{sk: {0, 7}}, nil,
			"(f * 8)", "((f * 8) + 7)", "7"},
		{"negative coef", SubE(MulE(f, ic(8)), MulE(sk, ic(2))), map[*Var]Interval{sk: {0, 7}}, nil,
			"((f * 8) - 14)", "(f * 8)", "14"},
		{"two ranging", AddE(AddE(MulE(si, ic(16)), MulE(sj, ic(4))), g), map[*Var]Interval{si: {0, 3}, sj: {1, 2}}, nil,
			"(g + 4)", "(g + 56)", "52"},
		{"constant only", MulE(sk, ic(3)), map[*Var]Interval{sk: {-2, 5}}, nil, "-6", "15", "21"},
		{"floordiv monotone", FloorDivE(AddE(MulE(f, ic(4)), sj), ic(8)), map[*Var]Interval{sj: {0, 3}}, nil,
			"floordiv(f, 2)", "floordiv(f, 2)", "0"},
		{"floordiv of ranging", AddE(MulE(f, ic(4)), FloorDivE(sk, ic(4))), map[*Var]Interval{sk: {0, 15}}, nil,
			"(f * 4)", "((f * 4) + 3)", "3"},
		{"floordiv mixed", FloorDivE(AddE(f, sk), ic(4)), map[*Var]Interval{sk: {0, 7}}, nil,
			"floordiv(f, 4)", "(floordiv((f + 3), 4) + 1)", ""},
		{"floormod no wrap", FloorModE(AddE(MulE(f, ic(4)), sj), ic(8)), map[*Var]Interval{sj: {0, 3}}, nil,
			"(floormod(f, 2) * 4)", "((floormod(f, 2) * 4) + 3)", "3"},
		{"floormod wraps", FloorModE(AddE(f, sj), ic(8)), map[*Var]Interval{sj: {0, 3}}, nil, "0", "7", "7"},
		{"floormod of ranging", AddE(f, FloorModE(sk, ic(4))), map[*Var]Interval{sk: {0, 15}}, nil,
			"f", "(f + 3)", "3"},
		{"floormod by fixed dom", FloorModE(AddE(f, sj), ic(128)), map[*Var]Interval{sj: {0, 3}}, map[*Var]Interval{f: {0, 100}},
			"f", "(f + 3)", "3"},
		{"min", MinE(AddE(f, sk), ic(50)), map[*Var]Interval{sk: {0, 7}}, nil,
			"min(50, f)", "min((f + 7), 50)", ""},
		{"max const", MaxE(sk, ic(2)), map[*Var]Interval{sk: {0, 7}}, nil, "2", "7", "5"},
		{"select falls back", SelectE(Cmp(LT, sk, ic(3)), sk, ic(20)), map[*Var]Interval{sk: {0, 7}}, nil, "0", "20", "20"},
		{"select fixed part", AddE(f, SelectE(Cmp(LT, sk, ic(3)), sk, ic(20))), map[*Var]Interval{sk: {0, 7}}, nil,
			"f", "(f + 20)", "20"},
		{"load falls back to fixed dom", &Load{Buf: propBuf, Indices: []Expr{sk}}, map[*Var]Interval{sk: {0, 7}}, fixedF,
			"-9223372036854775808", "9223372036854775807", ""},
		{"product falls back", MulE(f, sk), map[*Var]Interval{sk: {0, 3}}, fixedF, "0", "300", "300"},
		{"unbounded ranging", AddE(f, sz), map[*Var]Interval{sz: Everything()}, nil,
			"-9223372036854775808", "9223372036854775807", ""},
		{"half-unbounded ranging", SubE(f, sz), map[*Var]Interval{sz: {0, maxI64}}, nil,
			"-9223372036854775808", "f", ""},
		{"no ranging var", AddE(f, ic(1)), map[*Var]Interval{sk: {0, 3}}, nil, "(f + 1)", "(f + 1)", "0"},
	}
	for _, tc := range cases {
		lo, hi := EvalRange(tc.e, tc.ranging, tc.fixed)
		if ExprString(lo) != tc.lo || ExprString(hi) != tc.hi {
			t.Errorf("%s: EvalRange(%s) = [%s, %s], want [%s, %s]", tc.name, ExprString(tc.e),
				ExprString(lo), ExprString(hi), tc.lo, tc.hi)
			continue
		}
		if tc.width != "" {
			if w := ExprString(Simplify(SubE(hi, lo), tc.fixed)); w != tc.width {
				t.Errorf("%s: hi - lo = %s, want %s", tc.name, w, tc.width)
			}
		}
	}
}

// A tile: the bound inference pattern. Over the inner loops of a split
// i = io*8 + ii*2 + iii, the region's start is symbolic in io and its extent
// constant.
func TestEvalRangeTile(t *testing.T) {
	io, ii, iii := NewVar("io"), NewVar("ii"), NewVar("iii")
	idx := AddE(AddE(MulE(io, ic(8)), MulE(ii, ic(2))), iii)
	// A consumer reading idx-1 .. idx+1 (a 3-point stencil), row stride 64.
	for shift := int64(-1); shift <= 1; shift++ {
		e := AddE(MulE(AddE(idx, ic(shift)), ic(64)), sk)
		lo, hi := EvalRange(e, map[*Var]Interval{ii: {0, 3}, iii: {0, 1}, sk: {0, 63}}, map[*Var]Interval{io: {0, 15}})
		w := Simplify(SubE(hi, lo), nil)
		if v, ok := IsConst(w); !ok || v != 7*64+63 {
			t.Errorf("shift %d: [%s, %s], width %s", shift, ExprString(lo), ExprString(hi), ExprString(w))
		}
		if coef, _, ok := LinearIn(lo, io); !ok || coef != 512 {
			t.Errorf("shift %d: lo %s not affine in io with stride 512", shift, ExprString(lo))
		}
	}
	// Through a fused-then-split loop: f = io*8 + ii, row = floordiv(f, 16).
	f := AddE(MulE(io, ic(8)), ii)
	lo, hi := EvalRange(FloorDivE(f, ic(16)), map[*Var]Interval{ii: {0, 7}}, map[*Var]Interval{io: {0, 15}})
	if w := ExprString(Simplify(SubE(hi, lo), nil)); w != "0" {
		t.Errorf("floordiv(io*8 + ii, 16): [%s, %s], width %s", ExprString(lo), ExprString(hi), w)
	}
	lo, hi = EvalRange(FloorModE(f, ic(16)), map[*Var]Interval{ii: {0, 7}}, map[*Var]Interval{io: {0, 15}})
	if w := ExprString(Simplify(SubE(hi, lo), nil)); w != "7" {
		t.Errorf("floormod(io*8 + ii, 16): [%s, %s], width %s", ExprString(lo), ExprString(hi), w)
	}
}
