package codegen

import (
	"math"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestMagnitude: the bound noNaN relies on is finite exactly for values
// built from integers and finite constants.
func TestMagnitude(t *testing.T) {
	i32 := &tir.Buffer{Name: "A", DType: tir.Int32, Shape: []int{4}, Scope: tir.Global}
	u8 := &tir.Buffer{Name: "Q", DType: tir.Uint8, Shape: []int{4}, Scope: tir.Global}
	f := gbuf("F", 4)
	acc := &tir.Cast{To: tir.Float32, X: ld(i32, c(0))}
	for _, tc := range []struct {
		name string
		e    tir.Expr
		want float64 // +Inf: unbounded
	}{
		{"int32 accumulator", acc, 1 << 31},
		{"uint8 dequantized", mul(tir.SubE(&tir.Cast{To: tir.Float32, X: ld(u8, c(0))}, fc(3)), fc(0.5)), 129},
		{"requantized", add(fn("rint", tir.DivE(acc, fc(0.25))), fc(7)), 1<<33 + 8},
		{"clamped", tir.MinE(tir.MaxE(acc, fc(0)), fc(255)), 1 << 31},
		{"float load", ld(f, c(0)), math.Inf(1)},
		{"scaled by a float load", mul(acc, ld(f, c(0))), math.Inf(1)},
		{"divided by a float load", tir.DivE(acc, ld(f, c(1))), math.Inf(1)},
		{"NaN constant", add(acc, fc(math.NaN())), math.Inf(1)},
		{"infinite constant", tir.MaxE(acc, fc(math.Inf(-1))), math.Inf(1)},
		{"sigmoid of a bounded value", fn("sigmoid", acc), 1},
		{"sqrt", fn("sqrt", acc), math.Inf(1)},
	} {
		if got := magnitude(tc.e); got != tc.want {
			t.Errorf("%s: magnitude %v, want %v", tc.name, got, tc.want)
		}
	}
	if noNaN(mul(acc, fc(1e30))) {
		t.Errorf("2^31 × 1e30 overflows float32, and an infinity can make NaN: not noNaN")
	}
}

// TestNaNFreeClamps: a clamp of a value that cannot be NaN (an integer
// scaled by a constant), or of one converted to an integer right after
// (a requantization by a buffer of multipliers: a NaN there is a fault),
// is vmaxps/vminps (tsr_maxn_vLf), and a nan0 of the former nothing; a
// clamp of a float load keeps NaN, and a nan0 of it sends NaN to zero.
// Each is checked against the interpreter, with NaN in the float input.
func TestNaNFreeClamps(t *testing.T) {
	const n = 32
	i, v := tir.NewVar("i"), tir.NewVar("v")
	idx := add(mul(i, c(16)), v)
	X := &tir.Buffer{Name: "X", DType: tir.Int32, Shape: []int{n}, Scope: tir.Global}
	M := gbuf("M", n)
	F := gbuf("F", n)
	vec := func(body tir.Stmt) tir.Stmt { return loop(i, n/16, tir.Serial, loop(v, 16, tir.Vectorized, body)) }
	clamp := func(e tir.Expr, lo, hi float64) tir.Expr { return tir.MinE(tir.MaxE(e, fc(lo)), fc(hi)) }
	acc := &tir.Cast{To: tir.Float32, X: ld(X, idx)}
	// f: F with NaN in lanes 3 and 21.
	f := sel(tir.OrE(tir.Cmp(tir.EQ, idx, c(3)), tir.Cmp(tir.EQ, idx, c(21))), fc(math.NaN()), mul(ld(F, idx), fc(300)))
	// The clamps as printed: NaN-free, and keeping NaN.
	nf, cf := "tsr_minn_v16f(tsr_maxn_v16f(", "tsr_minc_v16f(tsr_maxc_v16f("
	var cases []ccase
	{
		O := gbuf("O", n)
		body := vec(st(O, fn("nan0", clamp(add(mul(acc, fc(1e-5)), fc(3)), 0, 6)), idx))
		cases = append(cases, ccase{name: "clamp_of_int", f: fnc("clamp_of_int", []*tir.Buffer{X, O}, body),
			src: []string{nf}, notSrc: []string{cf, "tsr_nan0_v16f(tsr_m"}})
	}
	{
		O := &tir.Buffer{Name: "O", DType: tir.Uint8, Shape: []int{n}, Scope: tir.Global}
		q := &tir.Cast{To: tir.Uint8, X: clamp(add(fn("rint", mul(acc, mul(ld(M, idx), fc(1e-4)))), fc(7)), 0, 255)}
		body := vec(st(O, q, idx))
		cases = append(cases, ccase{name: "requant_by_buffer", f: fnc("requant_by_buffer", []*tir.Buffer{X, M, O}, body),
			src: []string{nf}, notSrc: []string{cf}})
	}
	{
		O := gbuf("O", n)
		body := vec(st(O, clamp(f, 0, 6), idx))
		cases = append(cases, ccase{name: "clamp_of_float", f: fnc("clamp_of_float", []*tir.Buffer{F, O}, body),
			src: []string{cf}, notSrc: []string{nf}})
	}
	{
		// int32: converted without nan0, a NaN is INT_MIN on x86, whose low
		// byte is nan0's 0: an 8-bit output would not tell them apart.
		O := &tir.Buffer{Name: "O", DType: tir.Int32, Shape: []int{n}, Scope: tir.Global}
		q := &tir.Cast{To: tir.Int32, X: fn("nan0", clamp(fn("rint", f), -1000, 1000))}
		body := vec(st(O, q, idx))
		cases = append(cases, ccase{name: "quantize_float", f: fnc("quantize_float", []*tir.Buffer{F, O}, body),
			src: []string{"tsr_nan0_v16f(" + cf}, notSrc: []string{nf}})
	}
	runTable(t, cases)
}
