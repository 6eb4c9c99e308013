package codegen

import (
	"math"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/tir"
)

// ccase is one kernel of the table: it is emitted alone (for the source
// checks) and in one module with all the others (compiled and run).
type ccase struct {
	name   string
	f      *tir.PrimFunc
	guards string   // per param: 'a' guard page after (default), 'b' before
	src    []string // the kernel's C must contain these
	notSrc []string // and must not contain these
	// want computes the expected outputs in place; nil means tir.Run.
	want func(args [][]float32)
}

func fnc(name string, params []*tir.Buffer, body ...tir.Stmt) *tir.PrimFunc {
	return &tir.PrimFunc{Name: name, Params: params, Body: tir.SeqOf(body...)}
}

func floorDivGo(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func cases() []ccase {
	var cs []ccase

	{ // elementwise, odd sizes
		A, B := gbuf("A", 4, 37), gbuf("B", 4, 37)
		v := vars("i", "j")
		cs = append(cs, ccase{name: "elementwise", f: fnc("elementwise", []*tir.Buffer{A, B},
			loop(v[0], 4, tir.Serial, loop(v[1], 37, tir.Serial,
				st(B, add(mul(ld(A, v[0], v[1]), fc(2)), fc(1.5)), v[0], v[1])))),
			src: []string{"const float *restrict A", "float *restrict B", "1.5f"}})
	}

	{ // floor division and modulo, negative operands and divisors
		O := gbuf("O", 8, 40)
		v := vars("i", "j")
		i, j := v[0], v[1]
		x := tir.SubE(i, c(20))
		rows := []tir.Expr{
			tir.FloorDivE(x, c(3)),
			tir.FloorModE(x, c(3)),
			tir.FloorDivE(x, c(-4)),
			tir.FloorModE(x, c(-4)),
			tir.FloorDivE(i, c(4)), // provably non-negative: plain C
			tir.FloorModE(i, c(4)),
		}
		var body []tir.Stmt
		for r, e := range rows {
			body = append(body, st(O, toF(e), c(int64(r)), i))
		}
		// variable divisors of both signs: -(j+1) and j+2
		vd := loop(j, 3, tir.Serial,
			st(O, toF(add(mul(tir.FloorDivE(x, tir.SubE(c(-1), j)), c(100)), tir.FloorModE(x, add(j, c(2))))), c(6), add(i, mul(j, c(0)))),
			st(O, toF(tir.FloorModE(x, tir.SubE(c(-1), j))), c(7), i))
		want := func(args [][]float32) {
			o := args[0]
			for i := int64(0); i < 40; i++ {
				x := i - 20
				vals := []int64{floorDivGo(x, 3), x - floorDivGo(x, 3)*3, floorDivGo(x, -4), x - floorDivGo(x, -4)*-4, i / 4, i % 4}
				for r, v := range vals {
					o[int64(r)*40+i] = float32(v)
				}
				// j = 2 writes last
				o[6*40+i] = float32(floorDivGo(x, -3)*100 + (x - floorDivGo(x, 4)*4))
				o[7*40+i] = float32(x - floorDivGo(x, -3)*-3)
			}
		}
		cs = append(cs, ccase{name: "floordiv", f: fnc("floordiv", []*tir.Buffer{O},
			loop(i, 40, tir.Serial, append(body, vd)...)),
			src: []string{"tsr_floordiv(", "tsr_floormod(", "(i / 4)", "(i % 4)"}, want: want})
	}

	{ // every scalar expression kind
		A, B, O := gbuf("A", 16), gbuf("B", 16), gbuf("O", 24, 16)
		v := vars("i", "t")
		i, t := v[0], v[1]
		a, b := ld(A, i), ld(B, i)
		absA := fn("fabs", a)
		rows := []tir.Expr{
			tir.MinE(a, b),
			tir.MaxE(a, b),
			toF(tir.MinE(i, c(7))),
			toF(tir.MaxE(tir.SubE(i, c(3)), c(2))),
			sel(tir.Cmp(tir.GT, a, b), a, mul(b, fc(2))),
			toF(&tir.Cast{To: tir.Int, X: mul(a, fc(10))}),
			fn("exp", a),
			fn("log", add(absA, fc(0.5))),
			fn("sqrt", absA),
			fn("tanh", mul(a, fc(3))),
			fn("erf", b),
			fn("pow", add(absA, fc(0.1)), b),
			fn("sigmoid", mul(a, fc(4))),
			fn("floor", mul(a, fc(3))),
			fn("ceil", mul(a, fc(3))),
			tir.DivE(a, add(fn("fabs", b), fc(1))),
			tir.MaxE(a, fc(math.Inf(-1))),
			sel(lt(i, c(3)), fc(math.Inf(1)), sel(lt(i, c(6)), fc(math.Inf(-1)), add(a, fc(-0.0)))),
			sel(tir.Cmp(tir.GT, a, fc(2)), fc(math.NaN()), tir.SubE(a, b)),
			sel(and(lt(i, c(8)), tir.NotE(ge(a, fc(0)))), fc(1), fc(0)),
			sel(tir.OrE(tir.Cmp(tir.EQ, i, c(3)), tir.Cmp(tir.NE, tir.FloorModE(i, c(2)), c(0))), fc(1), fc(0)),
			sel(tir.Cmp(tir.LE, a, b), fc(1.25e-3), fc(3e10)),
			toF(t),
			tir.SubE(fc(1), mul(a, fc(0.333333343))),
		}
		var body []tir.Stmt
		for r, e := range rows {
			body = append(body, st(O, e, c(int64(r)), i))
		}
		cs = append(cs, ccase{name: "exprs", f: fnc("exprs", []*tir.Buffer{A, B, O},
			loop(i, 16, tir.Serial, &tir.Let{Var: t, Value: mul(i, c(3)), Body: tir.SeqOf(body...)})),
			src: []string{"INFINITY", "NAN", "expf(", "erff(", "powf(", "tsr_sigmoidf(", "tsr_mini(", "tsr_maxf(", "const int64_t t = "}})
	}

	{ // row reductions (reduce.go): sum, max with a NaN, min, a sum of a
		// select (top-k's: its scalar tail once printed row + c ? a : b,
		// which C reads as (row + c) ? a : b), each over 83 = 5 × 16 + 3
		// contiguous elements; and a column sum, whose loads are strided,
		// left scalar
		A, S, M, N, B, C, P := gbuf("A", 5, 83), gbuf("S", 5), gbuf("M", 5), gbuf("N", 5), gbuf("B", 83, 5), gbuf("C", 5), gbuf("P", 5)
		v := vars("i", "r", "r2", "r3", "j", "q", "r4")
		i, r, r2, r3, j, q, r4 := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
		nan := sel(and(tir.Cmp(tir.EQ, i, c(2)), tir.Cmp(tir.EQ, r2, c(40))), fc(math.NaN()), ld(A, i, r2))
		positive := sel(tir.Cmp(tir.GT, ld(A, i, r4), fc(0)), ld(A, i, r4), fc(0))
		cs = append(cs, ccase{name: "row_reductions", f: fnc("row_reductions", []*tir.Buffer{A, S, M, N, B, C, P},
			loop(i, 5, tir.Serial,
				st(S, fc(0), i),
				loop(r, 83, tir.Serial, st(S, add(ld(S, i), mul(ld(A, i, r), fc(2))), i)),
				st(M, fc(math.Inf(-1)), i),
				loop(r2, 83, tir.Serial, st(M, tir.MaxE(ld(M, i), nan), i)),
				st(N, fc(0.5), i),
				loop(r3, 83, tir.Serial, st(N, tir.MinE(ld(A, i, r3), ld(N, i)), i)),
				st(P, fc(0), i),
				loop(r4, 83, tir.Serial, st(P, add(ld(P, i), positive), i))),
			loop(j, 5, tir.Serial,
				st(C, fc(0), j),
				loop(q, 83, tir.Serial, st(C, add(ld(C, j), ld(B, q, j)), j)))),
			src:    []string{"tsr_v16f S_acc = tsr_splat_v16f(0.0f)", "tsr_max_v16f(M_acc", "tsr_min_v16f(N_acc", "for (int64_t r_c = 0; r_c < 5; ++r_c)", "P_row = (P_row + ("},
			notSrc: []string{"C_acc"}})
	}

	{ // under the auto-unroll pragma: a row of 96 stays a loop and runs
		// in vectors (keepForVectors), a row of 40 (under 4 vectors) is
		// unrolled into interleaved chains
		A, S, T := gbuf("A", 2, 96), gbuf("S", 2), gbuf("T", 2)
		v := vars("i", "r", "q")
		i, r, q := v[0], v[1], v[2]
		cs = append(cs, ccase{name: "row_reductions_unrolled", f: fnc("row_reductions_unrolled", []*tir.Buffer{A, S, T},
			&tir.Pragma{Key: "auto_unroll_max_step", Value: 512, Body: loop(i, 2, tir.Serial,
				st(S, fc(0), i),
				loop(r, 96, tir.Serial, st(S, add(ld(S, i), ld(A, i, r)), i)),
				st(T, fc(0), i),
				loop(q, 40, tir.Serial, st(T, add(ld(T, i), ld(A, i, q)), i)))}),
			src:    []string{"tsr_v16f S_acc", "T_sum"},
			notSrc: []string{"T_acc"}})
	}

	{ // vector loads with coefficients 1, 0 and other; gather and scatter
		A, B, S := gbuf("A", 64), gbuf("B", 64), gbuf("S", 4)
		O1, O2, O3, O4 := gbuf("O1", 64), gbuf("O2", 64), gbuf("O3", 4, 16), gbuf("O4", 64)
		v := vars("i", "v")
		i, l := v[0], v[1]
		x := add(mul(i, c(16)), l)
		cs = append(cs, ccase{name: "vec_basic", f: fnc("vec_basic", []*tir.Buffer{A, B, S, O1, O2, O3, O4},
			loop(i, 4, tir.Serial, loop(l, 16, tir.Vectorized,
				st(O1, add(mul(ld(A, x), ld(S, i)), fc(1)), x),
				st(O2, ld(A, tir.FloorModE(add(mul(i, c(16)), mul(l, c(3))), c(64))), x),
				st(O3, ld(A, add(mul(l, c(4)), i)), i, l),
				st(O4, ld(B, x), add(mul(l, c(4)), i))))),
			src:    []string{"tsr_load_v16f(&A[", "tsr_splat_v16f(S[i])", "tsr_store_v16f(&O1[", "(tsr_v16f){A[", "tsr_s[15]"},
			notSrc: []string{"omp simd", "scalar loop"}})
	}

	{ // gathering copies (a layout change): groups of L consecutive source
		// columns become transposes, the 8 columns left over stay gathers
		B, T := gbuf("B", 32, 70), gbuf("T", 2, 40, 20)
		v := vars("t", "d", "v")
		t, d, l := v[0], v[1], v[2]
		cs = append(cs, ccase{name: "vec_transpose", f: fnc("vec_transpose", []*tir.Buffer{B, T},
			loop(t, 2, tir.Serial, loop(d, 40, tir.Unrolled, loop(l, 16, tir.Vectorized,
				st(T, ld(B, add(mul(t, c(16)), l), add(d, c(3))), t, d, l))))),
			src: []string{"tsr_transpose_v16f(tsr_t);", "tsr_t[15] = tsr_load_v16f(&B[", "(tsr_v16f){B["}})
		// the same copy in a serial loop: strip-mined into blocks of L
		// columns and a serial tail of 8 (stripCopies)
		S := gbuf("S", 2, 40, 20)
		u := vars("t", "d", "v")
		cs = append(cs, ccase{name: "vec_transpose_serial", f: fnc("vec_transpose_serial", []*tir.Buffer{B, S},
			loop(u[0], 2, tir.Serial, loop(u[1], 40, tir.Serial, loop(u[2], 16, tir.Vectorized,
				st(S, ld(B, add(mul(u[0], c(16)), u[2]), add(u[1], c(3))), u[0], u[1], u[2]))))),
			src: []string{"tsr_transpose_v16f(tsr_t);", "for (int64_t d_r = 0; d_r < 8; ++d_r)"}})
		// 19 lanes: pieces of 16, 2 and 1 interleaved by the unrolled loop;
		// the 16-lane ones (8- or 4-lane at a narrower width) are grouped
		P, Tp := gbuf("P", 19, 16), gbuf("Tp", 16, 19)
		x := vars("d", "v")
		cs = append(cs, ccase{name: "vec_transpose_pieces", f: fnc("vec_transpose_pieces", []*tir.Buffer{P, Tp},
			loop(x[0], 16, tir.Unrolled, loop(x[1], 19, tir.Vectorized,
				st(Tp, ld(P, x[1], x[0]), x[0], x[1])))),
			src: []string{"tsr_transpose_v16f(tsr_t);", "tsr_store_v2f(&Tp[", "Tp[18] = P[288];"}})
		// stores that overlap (rows 8 apart) keep their order: no transpose
		O := gbuf("O", 2, 24*8+16)
		w := vars("t", "d", "v")
		cs = append(cs, ccase{name: "vec_transpose_overlap", f: fnc("vec_transpose_overlap", []*tir.Buffer{B, O},
			loop(w[0], 2, tir.Serial, loop(w[1], 24, tir.Unrolled, loop(w[2], 16, tir.Vectorized,
				st(O, ld(B, add(mul(w[0], c(16)), w[2]), w[1]), w[0], add(mul(w[1], c(8)), w[2])))))),
			src: []string{"(tsr_v16f){B["}, notSrc: []string{"tsr_transpose_v16f(tsr_t);"}})
	}

	{ // Select guarding out-of-bounds loads inside vector code (padding)
		A, Bp, Cc := gbuf("A", 64), gbuf("Bp", 64), gbuf("Cc", 64)
		var outs []*tir.Buffer
		for _, n := range []string{"P1", "P2", "P3", "P4", "P5", "P6"} {
			outs = append(outs, gbuf(n, 64))
		}
		v := vars("i", "v")
		i, l := v[0], v[1]
		x := add(mul(i, c(16)), l)
		params := append([]*tir.Buffer{A, Bp, Cc}, outs...)
		cs = append(cs, ccase{name: "vec_padding", guards: "bab", f: fnc("vec_padding", params,
			loop(i, 4, tir.Serial, loop(l, 16, tir.Vectorized,
				st(outs[0], sel(ge(tir.SubE(x, c(1)), c(0)), ld(A, tir.SubE(x, c(1))), fc(0)), x),
				st(outs[1], sel(lt(add(x, c(1)), c(64)), ld(Bp, add(x, c(1))), fc(-1)), x),
				st(outs[2], sel(ge(i, c(1)), ld(Cc, add(mul(tir.SubE(i, c(1)), c(16)), l)), fc(2)), x),
				st(outs[3], sel(and(lt(x, c(60)), tir.Cmp(tir.GT, ld(Bp, add(x, c(4))), fc(0))), fc(1), fc(0)), x),
				st(outs[4], sel(lt(l, c(8)), ld(A, x), mul(ld(Bp, x), fc(3))), x),
				st(outs[5], sel(lt(x, c(50)), ld(A, x), ld(Cc, tir.SubE(c(63), x))), x)))),
			src: []string{"tsr_select_v16f(", "(i >= 1) ? "}})
	}

	{ // non-power-of-two vectorized loops: pieces of powers of two
		A, O := gbuf("A", 3, 12), gbuf("O", 3, 12)
		v := vars("i", "v")
		cs = append(cs, ccase{name: "vec_nonpow2", f: fnc("vec_nonpow2", []*tir.Buffer{A, O},
			loop(v[0], 3, tir.Serial, loop(v[1], 12, tir.Vectorized,
				st(O, add(mul(ld(A, v[0], v[1]), fc(2)), fc(-1)), v[0], v[1])))),
			src: []string{"tsr_load_v8f(&A[i * 12])", "tsr_load_v4f(&A[(i * 12) + 8])"}, notSrc: []string{"omp simd"}})
		B, P := gbuf("B", 2, 7), gbuf("P", 2, 7)
		w := vars("i", "v")
		cs = append(cs, ccase{name: "vec_seven", f: fnc("vec_seven", []*tir.Buffer{B, P},
			loop(w[0], 2, tir.Serial, loop(w[1], 7, tir.Vectorized,
				st(P, add(ld(B, w[0], w[1]), fc(1)), w[0], w[1])))),
			src: []string{"tsr_load_v4f(&B[i * 7])", "tsr_load_v2f(&B[(i * 7) + 4])", "P[((i * 7) + 6)] = B[((i * 7) + 6)] + 1.0f;"}, notSrc: []string{"omp simd"}})
	}

	{ // 40 lanes: full chunks unrolled, then a tail (16 + 16 + 8 or 5 × 8)
		A, O := gbuf("A", 40), gbuf("O", 40)
		v := vars("v")
		cs = append(cs, ccase{name: "vec_chunks_tail", f: fnc("vec_chunks_tail", []*tir.Buffer{A, O},
			loop(v[0], 40, tir.Vectorized, st(O, mul(ld(A, v[0]), fc(3)), v[0]))),
			src: []string{"tsr_load_v8f(&A[32])"}, notSrc: []string{"omp simd"}})
	}

	{ // reduction across lanes: plain scalar fallback
		A, O := gbuf("A", 4, 16), gbuf("O", 4)
		v := vars("i", "k")
		cs = append(cs, ccase{name: "vec_reduction", f: fnc("vec_reduction", []*tir.Buffer{A, O},
			loop(v[0], 4, tir.Serial,
				st(O, fc(0), v[0]),
				loop(v[1], 16, tir.Vectorized, st(O, add(ld(O, v[0]), ld(A, v[0], v[1])), v[0])))),
			src: []string{"reduction across lanes"}, notSrc: []string{"omp simd", "tsr_load_v"}})
	}

	{ // lanes depending on each other: plain scalar fallback
		A, B, O := gbuf("A", 17), gbuf("B", 32), gbuf("O", 32)
		v := vars("v", "w")
		cs = append(cs, ccase{name: "vec_dependence", f: fnc("vec_dependence", []*tir.Buffer{A, B, O},
			loop(v[0], 16, tir.Vectorized, st(A, add(mul(ld(A, v[0]), fc(0.5)), fc(1)), add(v[0], c(1)))),
			loop(v[1], 16, tir.Vectorized,
				st(O, ld(B, v[1]), v[1]),
				st(B, ld(O, add(v[1], c(1))), v[1]))),
			src: []string{"lanes may depend on each other through A", "through O"}, notSrc: []string{"omp simd", "tsr_load_v"}})
	}

	{ // long vectorized loops split into native chunks
		A, B, O, O2 := gbuf("A", 64), gbuf("B", 64), gbuf("O", 64), gbuf("O2", 48)
		v := vars("v", "w")
		cs = append(cs, ccase{name: "vec_long", f: fnc("vec_long", []*tir.Buffer{A, B, O, O2},
			loop(v[0], 64, tir.Vectorized, st(O, tir.SubE(ld(A, v[0]), ld(B, v[0])), v[0])),
			loop(v[1], 48, tir.Vectorized, st(O2, mul(ld(A, add(v[1], c(16))), fc(2)), v[1]))),
			src: []string{"tsr_load_v16f(&A[48])", "tsr_store_v16f(&O2[32]"}, notSrc: []string{"tsr_v64f", "tsr_v48f", "scalar loop"}})
	}

	{ // math, min/max, masks and conversions in vector code
		A, B, O := gbuf("A", 64), gbuf("B", 64), gbuf("O", 18, 64)
		v := vars("i", "v")
		i, l := v[0], v[1]
		x := add(mul(i, c(16)), l)
		a, b := ld(A, x), ld(B, x)
		rows := []tir.Expr{
			sel(tir.Cmp(tir.GT, a, fc(0)), a, mul(a, fc(0.1))),
			tir.MaxE(a, b),
			tir.MinE(a, fc(0.25)),
			fn("exp", a),
			fn("sigmoid", b),
			fn("fabs", a),
			fn("pow", add(fn("fabs", a), fc(0.5)), b),
			fn("floor", mul(a, fc(4))),
			fn("ceil", mul(a, fc(4))),
			fn("sqrt", fn("fabs", b)),
			fn("log", add(fn("fabs", a), fc(1))),
			fn("tanh", mul(a, fc(2))),
			fn("erf", b),
			add(toF(l), mul(toF(i), fc(0.5))),
			sel(and(ge(x, c(8)), lt(x, c(40))), a, b),
			tir.DivE(a, add(fn("fabs", b), fc(1))),
			sel(lt(add(mul(l, c(2)), i), c(20)), fc(1), fc(0)),
			sel(lt(tir.FloorModE(l, c(3)), c(1)), a, fc(-2)),
		}
		var body []tir.Stmt
		for r, e := range rows {
			body = append(body, st(O, e, c(int64(r)), x))
		}
		cs = append(cs, ccase{name: "vec_math", f: fnc("vec_math", []*tir.Buffer{A, B, O},
			loop(i, 4, tir.Serial, loop(l, 16, tir.Vectorized, body...))),
			src:    []string{"tsr_exp_v16f(", "tsr_max_v16f(", "tsr_min_v16f(", "tsr_clamp32(", "tsr_pow_v16f("},
			notSrc: []string{"scalar loop"}})
	}

	{ // boolean casts, logic on masks, Int and Bool buffers
		A, O := gbuf("A", 32), gbuf("O", 6, 16)
		idx := &tir.Buffer{Name: "idx", DType: tir.Int, Shape: []int{16}, Scope: tir.Local}
		msk := &tir.Buffer{Name: "msk", DType: tir.Bool, Shape: []int{16}, Scope: tir.Local}
		v := vars("j", "v")
		j, l := v[0], v[1]
		a := ld(A, l)
		isB := func(e tir.Expr) tir.Expr { return &tir.Cast{To: tir.Bool, X: e} }
		body := loop(j, 16, tir.Serial,
			st(idx, tir.FloorDivE(mul(j, c(5)), c(3)), j),
			st(msk, tir.Cmp(tir.EQ, tir.FloorModE(j, c(3)), c(0)), j))
		vec := loop(l, 16, tir.Vectorized,
			st(O, toF(tir.Cmp(tir.LT, a, ld(A, add(l, c(16))))), c(0), l),
			st(O, toF(tir.NotE(tir.OrE(tir.Cmp(tir.GT, a, fc(0.5)), tir.Cmp(tir.LT, a, fc(-0.5))))), c(1), l),
			st(O, toF(isB(tir.MaxE(a, fc(0)))), c(2), l),
			st(O, ld(A, ld(idx, l)), c(3), l),
			st(O, sel(ld(msk, l), a, fc(7)), c(4), l),
			st(O, toF(&tir.Cast{To: tir.Int, X: mul(a, fc(8))}), c(5), l))
		want := func(args [][]float32) {
			a, o := args[0], args[1]
			for l := 0; l < 16; l++ {
				b2f := func(b bool) float32 {
					if b {
						return 1
					}
					return 0
				}
				o[0*16+l] = b2f(a[l] < a[l+16])
				o[1*16+l] = b2f(!(a[l] > 0.5 || a[l] < -0.5))
				o[2*16+l] = b2f(a[l] > 0)
				o[3*16+l] = a[l*5/3]
				if l%3 == 0 {
					o[4*16+l] = a[l]
				} else {
					o[4*16+l] = 7
				}
				o[5*16+l] = float32(int64(a[l] * 8))
			}
		}
		cs = append(cs, ccase{name: "vec_bool", want: want, f: fnc("vec_bool", []*tir.Buffer{A, O},
			&tir.Allocate{Buf: idx, Body: &tir.Allocate{Buf: msk, Body: tir.SeqOf(body, vec)}}),
			src: []string{"tsr_b2f_v16f(", "int64_t idx[16]", "int32_t msk[16]", "(~"}})
	}

	{ // lets and lane-invariant ifs in vector code; a lane-dependent if masks the store
		A, O, O2 := gbuf("A", 64), gbuf("O", 64), gbuf("O2", 64)
		v := vars("i", "v", "t", "w")
		i, l, t, w := v[0], v[1], v[2], v[3]
		x := add(mul(i, c(16)), w)
		cs = append(cs, ccase{name: "vec_let_if", f: fnc("vec_let_if", []*tir.Buffer{A, O, O2},
			loop(i, 4, tir.Serial,
				loop(l, 16, tir.Vectorized, &tir.Let{Var: t, Value: add(mul(i, c(16)), l), Body: &tir.IfThenElse{
					Cond: lt(i, c(2)),
					Then: st(O, mul(ld(A, t), fc(2)), t),
					Else: st(O, tir.SubE(ld(A, t), fc(1)), t)}}),
				loop(w, 16, tir.Vectorized, &tir.IfThenElse{Cond: lt(w, c(4)), Then: st(O2, fc(1), x)}))),
			src:    []string{"if (i < 2) {", "if (tsr_m[3]) O2[", "tsr_load_v16f(&A["},
			notSrc: []string{"scalar loop"}})
	}

	{ // a scalar exp over [-10060, 60): masked logits, underflow, overflow (tsr_expf)
		A, O := gbuf("A", 256), gbuf("O", 256)
		i := vars("i")[0]
		x := tir.SubE(mul(ld(A, i), fc(60)), tir.SelectE(lt(i, c(64)), fc(10000), fc(0)))
		cs = append(cs, ccase{name: "scalar_exp", f: fnc("scalar_exp", []*tir.Buffer{A, O},
			loop(i, 256, tir.Serial, st(O, fn("exp", x), i))),
			src: []string{"O[i] = tsr_expf("}})
	}

	{ // tiles of 16 over 50 elements: the last tile's guard masks its stores
		A, O, O2, O3, O4 := gbuf("A", 50, 8), gbuf("O", 50), gbuf("O2", 50), gbuf("O3", 4, 16), gbuf("O4", 64)
		T, acc, sh := lbuf("T", 64), lbuf("acc", 16), lbuf("sh", 64)
		v := vars("i", "l", "i", "l", "k", "l", "i", "l", "p", "l", "i", "l")
		row := func(i, l *tir.Var) tir.Expr { return add(mul(i, c(16)), l) }
		in := func(i, l *tir.Var) tir.Expr { return lt(row(i, l), c(50)) }
		guarded := func(i, l *tir.Var, s tir.Stmt) tir.Stmt { return &tir.IfThenElse{Cond: in(i, l), Then: s} }
		i0, l0, i1, l1, k, l2, i2, l3, p, l4, i3, l5 := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]
		cs = append(cs, ccase{name: "vec_masked", f: fnc("vec_masked", []*tir.Buffer{A, O, O2, O3, O4},
			// A stack buffer private to a parallel loop's iteration
			// blended, a global stored lane by lane, the loads past the
			// end of A never made.
			loop(i0, 4, tir.Parallel, &tir.Allocate{Buf: T, Body: tir.SeqOf(
				loop(l0, 16, tir.Vectorized, guarded(i0, l0, st(T, mul(ld(A, row(i0, l0), c(3)), fc(2)), row(i0, l0)))),
				loop(l0, 16, tir.Vectorized, &tir.IfThenElse{Cond: tir.AndE(lt(i0, c(3)), in(i0, l0)),
					Then: st(O, add(ld(T, row(i0, l0)), fc(1)), row(i0, l0))}),
				loop(l0, 16, tir.Vectorized, &tir.IfThenElse{Cond: tir.AndE(tir.Cmp(tir.GE, i0, c(3)), in(i0, l0)),
					Then: st(O, ld(T, row(i0, l0)), row(i0, l0))}))}),
			// A scalarized accumulator over a reduction, and an else.
			loop(i1, 4, tir.Serial, &tir.Allocate{Buf: acc, Body: tir.SeqOf(
				loop(l1, 16, tir.Vectorized, guarded(i1, l1, st(acc, fc(0), l1))),
				loop(k, 8, tir.Serial, loop(l2, 16, tir.Vectorized,
					guarded(i1, l2, st(acc, add(ld(acc, l2), ld(A, row(i1, l2), k)), l2)))),
				loop(l1, 16, tir.Vectorized, &tir.IfThenElse{Cond: in(i1, l1),
					Then: st(O2, ld(acc, l1), row(i1, l1))}))}),
			// A stack buffer shared by a parallel loop: stored lane by
			// lane; a lane-dependent if with an else.
			&tir.Allocate{Buf: sh, Body: tir.SeqOf(
				loop(i2, 4, tir.Parallel, loop(l3, 16, tir.Vectorized, &tir.IfThenElse{Cond: lt(l3, add(i2, c(9))),
					Then: st(sh, ld(O2, tir.MinE(row(i2, l3), c(49))), row(i2, l3)),
					Else: st(sh, fc(-1), row(i2, l3))})),
				loop(p, 4, tir.Serial, loop(l4, 16, tir.Vectorized, st(O3, ld(sh, row(p, l4)), p, l4))))},
			loop(i3, 4, tir.Serial, loop(l5, 16, tir.Vectorized, &tir.IfThenElse{Cond: in(i3, l5),
				Then: st(O3, add(ld(O3, i3, l5), ld(O, mul(i3, c(16)))), i3, l5)})),
			// A scatter under a guard, lane by lane.
			loop(i3, 4, tir.Serial, loop(l5, 16, tir.Vectorized, &tir.IfThenElse{Cond: lt(l5, c(7)),
				Then: st(O4, ld(O2, add(mul(i3, c(7)), l5)), add(mul(l5, c(4)), i3))})),
			// A contiguous load past the end under the guard.
			loop(i3, 4, tir.Serial, loop(l5, 16, tir.Vectorized, &tir.IfThenElse{Cond: in(i3, l5),
				Then: st(O, add(ld(O, row(i3, l5)), fc(0.25)), row(i3, l5))})),
			// A load the same in every lane: made where the guard
			// admits a lane (i < 4), never where it may admit none.
			loop(i3, 5, tir.Serial, loop(l5, 16, tir.Vectorized, &tir.IfThenElse{Cond: in(i3, l5),
				Then: st(O, add(ld(O, row(i3, l5)), ld(O2, mul(i3, c(16)))), row(i3, l5))}))),
			src: []string{"tsr_store_v16f(&T[i * 16], tsr_select_v16f(", "if (i < 3) {", "acc_v0 = tsr_select_v16f(",
				"if (tsr_m[15]) O[", "if (tsr_m[0]) sh[", "if (tsr_m[6]) O4["},
			notSrc: []string{"scalar loop", "tsr_store_v16f(&sh["}})
	}

	{ // a 6-row tile over 128 rows: the guard leaves the main loop (loop_partition.go)
		A, O := gbuf("A", 128, 8), gbuf("O", 128, 8)
		v := vars("i", "r", "l")
		i, r, l := v[0], v[1], v[2]
		row := add(mul(i, c(6)), r)
		cs = append(cs, ccase{name: "partition_tile", f: fnc("partition_tile", []*tir.Buffer{A, O},
			loop(i, 22, tir.Serial, loop(r, 6, tir.Unrolled, &tir.IfThenElse{
				Cond: lt(row, c(128)),
				Then: loop(l, 8, tir.Vectorized, st(O, mul(ld(A, row, l), fc(3)), row, l)),
			}))),
			src:    []string{"for (int64_t i = 0; i < 21; ++i)", "O[1016]"},
			notSrc: []string{"< 128)", "i_tail"}})
	}

	{ // unrolling and scalarization of a local tile
		A, B, O := gbuf("A", 8, 4), gbuf("B", 4, 4), gbuf("O", 8, 4)
		acc := lbuf("acc", 4)
		v := vars("i", "j", "k", "j", "j")
		i, j1, k, j2, j3 := v[0], v[1], v[2], v[3], v[4]
		cs = append(cs, ccase{name: "unroll_scalar", f: fnc("unroll_scalar", []*tir.Buffer{A, B, O},
			loop(i, 8, tir.Serial, &tir.Allocate{Buf: acc, Body: tir.SeqOf(
				loop(j1, 4, tir.Unrolled, st(acc, fc(0), j1)),
				loop(k, 4, tir.Serial, loop(j2, 4, tir.Unrolled,
					st(acc, add(ld(acc, j2), mul(ld(A, i, k), ld(B, k, j2))), j2))),
				loop(j3, 4, tir.Unrolled, st(O, ld(acc, j3), i, j3)))})),
			src:    []string{"float acc_0 = 0.0f;", "acc_3 = acc_3 + ", "O[((i * 4) + 3)] = acc_3;"},
			notSrc: []string{"acc[", "for (int64_t j"}})
	}

	{ // auto_unroll_max_step: TVM's step counting
		A, O1, O2 := gbuf("A", 8, 4), gbuf("O1", 4, 4), gbuf("O2", 8, 4)
		v := vars("a", "b", "p", "q")
		cs = append(cs, ccase{name: "auto_unroll", f: fnc("auto_unroll", []*tir.Buffer{A, O1, O2},
			&tir.Pragma{Key: "auto_unroll_max_step", Value: 16, Body: tir.SeqOf(
				loop(v[0], 4, tir.Serial, loop(v[1], 4, tir.Serial, st(O1, add(ld(A, v[0], v[1]), fc(1)), v[0], v[1]))),
				loop(v[2], 8, tir.Serial, loop(v[3], 4, tir.Serial, st(O2, mul(ld(A, v[2], v[3]), fc(2)), v[2], v[3]))))}),
			src:    []string{"for (int64_t p = 0; p < 8; ++p)", "O1[15] = ", "O2[((p * 4) + 3)]"},
			notSrc: []string{"for (int64_t a", "for (int64_t b", "for (int64_t q", "pragma auto"}})
	}

	{ // parallel loop with a per-thread local array; nested parallel runs serially
		A, O, O2 := gbuf("A", 8, 16), gbuf("O", 8, 16), gbuf("O2", 8, 2)
		tmp := lbuf("tmp", 16)
		v := vars("i", "j", "j", "q")
		i, j, j2, q := v[0], v[1], v[2], v[3]
		cs = append(cs, ccase{name: "parallel_local", f: fnc("parallel_local", []*tir.Buffer{A, O, O2},
			loop(i, 8, tir.Parallel, &tir.Allocate{Buf: tmp, Body: tir.SeqOf(
				loop(j, 16, tir.Serial, st(tmp, mul(ld(A, i, j), fc(2)), j)),
				loop(j2, 16, tir.Serial, st(O, add(ld(tmp, j2), ld(tmp, tir.SubE(c(15), j2))), i, j2)),
				loop(q, 2, tir.Parallel, st(O2, ld(tmp, q), i, q)))})),
			src: []string{"#pragma omp parallel for\n  for (int64_t i = 0;", "float tmp[16] __attribute__((aligned(64)));"}})
	}

	{ // global scratch and large local buffers on the heap; shared on the stack
		A, O := gbuf("A", 20000), gbuf("O", 20000)
		T := &tir.Buffer{Name: "T", DType: tir.Float32, Shape: []int{20000}, Scope: tir.Global}
		L := lbuf("L", 20000)
		S := &tir.Buffer{Name: "S", DType: tir.Float32, Shape: []int{4}, Scope: tir.Shared}
		v := vars("i", "i", "i", "s")
		i1, i2, i3, s := v[0], v[1], v[2], v[3]
		cs = append(cs, ccase{name: "scratch", f: fnc("scratch", []*tir.Buffer{A, O},
			&tir.Allocate{Buf: T, Body: &tir.Allocate{Buf: L, Body: &tir.Allocate{Buf: S, Body: tir.SeqOf(
				loop(i1, 20000, tir.Serial, st(T, mul(ld(A, i1), fc(3)), i1)),
				loop(i2, 20000, tir.Serial, st(L, ld(T, tir.SubE(c(19999), i2)), i2)),
				loop(s, 4, tir.Serial, st(S, fc(1), s)),
				loop(i3, 20000, tir.Serial, st(O, add(ld(L, i3), ld(S, tir.FloorModE(i3, c(4)))), i3)))}}}),
			src:    []string{"char *restrict tsr_ws)", "(char *)args[2]", "float *restrict T = (float *)(tsr_ws + 0);", "float *restrict L = (float *)(tsr_ws + 80000);", "float S[4]"},
			notSrc: []string{"tsr_ws_take(&"}})
	}

	{ // heap buffers one after the other share their piece of the
		// workspace; one inside a parallel loop comes from a slot, a
		// buffer per iteration
		A, O := gbuf("A", 4, 20000), gbuf("O", 4, 20000)
		T1 := &tir.Buffer{Name: "T1", DType: tir.Float32, Shape: []int{20000}, Scope: tir.Global}
		T2 := &tir.Buffer{Name: "T2", DType: tir.Float32, Shape: []int{20000}, Scope: tir.Global}
		P := &tir.Buffer{Name: "P", DType: tir.Float32, Shape: []int{20000}, Scope: tir.Global}
		v := vars("i", "i", "i", "i", "p", "j", "j")
		i1, i2, i3, i4, p, j1, j2 := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
		cs = append(cs, ccase{name: "scratch_reuse", f: fnc("scratch_reuse", []*tir.Buffer{A, O}, tir.SeqOf(
			&tir.Allocate{Buf: T1, Body: tir.SeqOf(
				loop(i1, 20000, tir.Serial, st(T1, mul(ld(A, c(0), i1), fc(3)), i1)),
				loop(i2, 20000, tir.Serial, st(O, ld(T1, tir.SubE(c(19999), i2)), c(0), i2)))},
			&tir.Allocate{Buf: T2, Body: tir.SeqOf(
				loop(i3, 20000, tir.Serial, st(T2, add(ld(A, c(1), i3), fc(1)), i3)),
				loop(i4, 20000, tir.Serial, st(O, ld(T2, i4), c(1), i4)))},
			loop(p, 2, tir.Parallel, &tir.Allocate{Buf: P, Body: tir.SeqOf(
				loop(j1, 20000, tir.Serial, st(P, ld(A, add(p, c(2)), j1), j1)),
				loop(j2, 20000, tir.Serial, st(O, mul(ld(P, tir.SubE(c(19999), j2)), fc(2)), add(p, c(2)), j2)))}))),
			src: []string{"float *restrict T1 = (float *)(tsr_ws + 0);", "float *restrict T2 = (float *)(tsr_ws + 0);",
				"static void *tsr_ws_scratch_reuse_0;", "float *restrict P = (float *)tsr_ws_take(&tsr_ws_scratch_reuse_0, 80000);", "tsr_ws_give(&tsr_ws_scratch_reuse_0, P);"}})
	}

	{ // runs of updates of one element: the partial sums stay in registers
		// (forwardUpdates), one store per element, a long run of one
		// associative operation in interleaved chains; a guarded term (padding);
		// runs that must stay: an element read twice per term, another
		// element read, a store every lane makes to one element
		A, O, P, Q, R := gbuf("A", 64), gbuf("O", 4, 16), gbuf("P", 4), gbuf("Q", 16), gbuf("R", 1)
		var long []tir.Stmt // longer than a merged run may be
		for k := range maxForwardRun + 6 {
			long = append(long, st(R, add(ld(R, c(0)), ld(A, c(int64(k%64)))), c(0)))
		}
		v := vars("i", "v", "v", "v", "v", "w", "w")
		i := v[0]
		lanes := func(lv *tir.Var, val func(*tir.Var) tir.Expr) tir.Stmt {
			return loop(lv, 16, tir.Vectorized, st(O, val(lv), i, lv))
		}
		guarded := func(lv *tir.Var) tir.Expr {
			return tir.SelectE(tir.Cmp(tir.GE, i, c(1)), ld(A, add(mul(i, c(16)), lv, c(-16))), fc(0))
		}
		cs = append(cs, ccase{name: "forward_updates", f: fnc("forward_updates", []*tir.Buffer{A, O, P, Q, R},
			loop(i, 4, tir.Serial,
				lanes(v[1], func(*tir.Var) tir.Expr { return fc(0) }),
				lanes(v[2], func(lv *tir.Var) tir.Expr { return add(ld(O, i, lv), mul(ld(A, lv), fc(2))) }),
				lanes(v[3], func(lv *tir.Var) tir.Expr { return add(ld(O, i, lv), mul(guarded(lv), fc(-5))) }),
				lanes(v[4], func(lv *tir.Var) tir.Expr { return add(ld(O, i, lv), ld(A, add(lv, c(32)))) }),
				st(P, ld(A, i), i),
				st(P, mul(ld(P, i), ld(P, i)), i),
				st(P, add(ld(P, i), fc(1)), i)),
			st(P, add(ld(P, c(0)), ld(P, c(1))), c(0)),
			st(P, add(ld(P, c(0)), fc(3)), c(0)),
			loop(v[5], 16, tir.Vectorized, st(Q, ld(A, v[5]), v[5])),
			loop(v[6], 16, tir.Vectorized, st(Q, add(ld(Q, c(3)), ld(A, v[6])), c(3))),
			tir.SeqOf(long...)),
			src: []string{"tsr_store_v16f(&O[i * 16], ((tsr_splat_v16f(0.0f) + ", "const float P_sum = P[i] * P[i];", "P[i] = P_sum_1;", "P[0] = P_sum_1;", "Q[3] = Q[3] + A[w];",
				// 64 updates of R[0] in 4 interleaved chains, then 6 in one
				"const float R_sum_1 = A[1];", "const float R_sum_4 = R_sum + A[4];", "const float R_sum_66 = R_sum_64 + R_sum_65;", "R[0] = R_sum_66;", "R[0] = R_sum_72;"},
			notSrc: []string{"tsr_store_v16f(&O[i * 16], tsr_splat_v16f(0.0f));"}})
	}

	{ // interleaved updates of several elements of a buffer in memory (a
		// max pool's vectors, tap after tap) sort into one run per element,
		// each stored once (groupInterleaved); elements whose lanes overlap
		// stay interleaved, every update stored and read back, as do the
		// elements of a tile the kernel allocates (a convolution's
		// accumulators: interleaved, one operand load feeds them all)
		A, X, Y, Z := gbuf("A", 64), gbuf("X", 32), gbuf("Y", 24), gbuf("Z", 32)
		T := gbuf("T", 32)
		v := vars("a", "b", "c", "d", "e", "f", "g", "h", "k", "l", "m", "n", "p", "q", "r", "s", "u")
		vec := func(lv *tir.Var, b *tir.Buffer, off int64, val func(*tir.Var) tir.Expr) tir.Stmt {
			return loop(lv, 16, tir.Vectorized, st(b, val(lv), add(lv, c(off))))
		}
		zero := func(*tir.Var) tir.Expr { return fc(0) }
		tap := func(b *tir.Buffer, off, aoff int64) func(*tir.Var) tir.Expr {
			return func(lv *tir.Var) tir.Expr { return tir.MaxE(ld(b, add(lv, c(off))), ld(A, add(lv, c(aoff)))) }
		}
		cs = append(cs, ccase{name: "interleaved_updates", f: fnc("interleaved_updates", []*tir.Buffer{A, X, Y, Z},
			vec(v[0], X, 0, zero), vec(v[1], X, 16, zero),
			vec(v[2], X, 0, tap(X, 0, 0)), vec(v[3], X, 16, tap(X, 16, 16)),
			vec(v[4], X, 0, tap(X, 0, 32)), vec(v[5], X, 16, tap(X, 16, 48)),
			vec(v[6], Y, 0, zero), vec(v[7], Y, 8, zero),
			vec(v[8], Y, 0, tap(Y, 0, 1)), vec(v[9], Y, 8, tap(Y, 8, 9)),
			&tir.Allocate{Buf: T, Body: tir.SeqOf(
				vec(v[10], T, 0, zero), vec(v[11], T, 16, zero),
				vec(v[12], T, 0, tap(T, 0, 2)), vec(v[13], T, 16, tap(T, 16, 18)),
				vec(v[14], T, 0, tap(T, 0, 34)), vec(v[15], T, 16, tap(T, 16, 40)),
				loop(v[16], 32, tir.Vectorized, st(Z, ld(T, v[16]), v[16])))}),
			src:    []string{"tsr_load_v16f(&Y[0])", "tsr_load_v16f(&Y[8])", "tsr_load_v16f(&T[0]), tsr_load_v16f(&A[2])"},
			notSrc: []string{"tsr_load_v16f(&X["}})
	}

	{ // thread-bound loops run serially on the CPU; loops of extent 1 and 0
		A, O := gbuf("A", 32), gbuf("O", 32)
		v := vars("bx", "tx", "one", "zero")
		cs = append(cs, ccase{name: "thread_bound", f: fnc("thread_bound", []*tir.Buffer{A, O},
			&tir.For{Var: v[0], Extent: 4, Kind: tir.ThreadBound, Thread: "blockIdx.x", Body: &tir.For{Var: v[1], Extent: 8, Kind: tir.ThreadBound, Thread: "threadIdx.x",
				Body: loop(v[2], 1, tir.Serial, st(O, add(ld(A, add(mul(v[0], c(8)), v[1], v[2])), fc(1)), add(mul(v[0], c(8)), v[1])))}},
			loop(v[3], 0, tir.Serial, st(O, fc(5), c(0)))),
			src: []string{"blockIdx.x", "for (int64_t tx = 0; tx < 8; ++tx)"}, notSrc: []string{"int64_t one", "O[0] = 5"}})
	}

	{ // a scalarized vector tile also accessed by one lane
		A, O := gbuf("A", 32), gbuf("O", 32)
		acc := lbuf("acc", 32)
		v := vars("j", "j")
		cs = append(cs, ccase{name: "vec_tile_lane", f: fnc("vec_tile_lane", []*tir.Buffer{A, O},
			&tir.Allocate{Buf: acc, Body: tir.SeqOf(
				loop(v[0], 32, tir.Vectorized, st(acc, ld(A, v[0]), v[0])),
				st(acc, add(ld(acc, c(21)), fc(100)), c(21)),
				loop(v[1], 32, tir.Vectorized, st(O, mul(ld(acc, v[1]), fc(2)), v[1])))}),
			src:    []string{"tsr_v16f acc_v1 = ", "acc_v1[5] = acc_v1[5] + 100.0f;", "acc_v0 = tsr_load_v16f(&A[0]);"},
			notSrc: []string{"acc["}})
	}

	{ // fused-then-split indices: floordiv/floormod affine across lanes, or not
		A, O, O2 := gbuf("A", 5, 80), gbuf("O", 4, 64), gbuf("O2", 4, 64)
		A3, O3 := gbuf("A3", 24, 10), gbuf("O3", 240)
		v := vars("o", "v", "p", "w")
		o, l, p, w := v[0], v[1], v[2], v[3]
		x := add(mul(o, c(16)), l)
		y := add(mul(p, c(16)), w)
		fd := func(e tir.Expr, m int64) tir.Expr { return tir.FloorDivE(e, c(m)) }
		fm := func(e tir.Expr, m int64) tir.Expr { return tir.FloorModE(e, c(m)) }
		cs = append(cs, ccase{name: "vec_fused", f: fnc("vec_fused", []*tir.Buffer{A, O, O2, A3, O3},
			loop(o, 16, tir.Serial, loop(l, 16, tir.Vectorized,
				st(O, mul(ld(A, fd(x, 64), fm(x, 64)), fc(2)), fd(x, 64), fm(x, 64)),
				st(O2, ld(A, fd(add(x, c(3)), 64), fm(add(x, c(3)), 64)), fd(x, 64), fm(x, 64)))),
			loop(p, 15, tir.Serial, loop(w, 16, tir.Vectorized,
				st(O3, add(ld(A3, fm(y, 24), fd(y, 24)), fc(1)), y)))),
			src: []string{"tsr_load_v16f(&A[", "tsr_store_v16f(&O[", "tsr_store_v16f(&O2[", "(tsr_v16f){A[", "(tsr_v16f){A3["}})
	}

	{ // names: sanitized and uniqued; lets of every type; 2- and 8-lane vectors
		A, A2, O := gbuf("A", 16), gbuf("A", 16), gbuf("tsr_out", 4, 16)
		v := vars("x", "x", "f.1", "b", "int", "v2", "v8")
		x1, x2, fv, bv, kw, l2, l8 := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
		fv.T, bv.T = tir.Float32, tir.Bool
		want := func(args [][]float32) {
			a, a2, o := args[0], args[1], args[2]
			for i := 0; i < 4; i++ {
				for j := 0; j < 4; j++ {
					f := a[i*4+j] * 2
					if f > 0 {
						o[i*16+j] = f + a2[j]
					} else {
						o[i*16+j] = float32(i*10 + j)
					}
				}
			}
			for l := 0; l < 2; l++ {
				o[1*16+8+l] = a[l] + a2[l+2]
			}
			for l := 0; l < 8; l++ {
				o[2*16+8+l] = a[l] * a2[15-l]
			}
		}
		cs = append(cs, ccase{name: "names_lets", want: want, f: fnc("names_lets", []*tir.Buffer{A, A2, O},
			loop(x1, 4, tir.Serial, loop(x2, 4, tir.Serial,
				&tir.Let{Var: fv, Value: mul(ld(A, add(mul(x1, c(4)), x2)), fc(2)), Body: &tir.Let{Var: bv, Value: tir.Cmp(tir.GT, fv, fc(0)), Body: &tir.Let{Var: kw, Value: add(mul(x1, c(10)), x2),
					Body: st(O, sel(bv, add(fv, ld(A2, x2)), toF(kw)), x1, x2)}}})),
			loop(l2, 2, tir.Vectorized, st(O, add(ld(A, l2), ld(A2, add(l2, c(2)))), c(1), add(l2, c(8)))),
			loop(l8, 8, tir.Vectorized, st(O, mul(ld(A, l8), ld(A2, tir.SubE(c(15), l8))), c(2), add(l8, c(8))))),
			src: []string{"const float *restrict A_1", "float *restrict vtsr_out", "for (int64_t x_1 = 0;", "const float f_1 = ", "const int b = ", "const int64_t int_1 = ", "tsr_load_v2f(", "tsr_store_v8f("}})
	}

	{ // the GEMM nest at a small size
		g := gemmTiles{M: 64, N: 64, K: 64, I1: 2, I2: 4, J1: 2, J2: 16, K1: 4, Vec: true, Unroll: 512}
		cs = append(cs, ccase{name: "gemm_small", f: gemmFunc("gemm_small", g),
			src:    []string{"tsr_v16f acc_v0 = ", "acc_v15 = acc_v15 + (tsr_splat_v16f(A[", "#pragma omp parallel for"},
			notSrc: []string{"acc[", "scalar loop"}})
	}
	{ // with a GELU epilogue: erf called, not inlined, in the register tile
		g := gemmTiles{M: 64, N: 64, K: 64, I1: 2, I2: 4, J1: 2, J2: 16, K1: 4, Vec: true, Unroll: 512,
			Epilogue: func(x tir.Expr) tir.Expr { return mul(mul(x, fc(0.5)), add(fc(1), fn("erf", mul(x, fc(0.70710677))))) }}
		cs = append(cs, ccase{name: "gemm_gelu", f: gemmFunc("gemm_gelu", g),
			src: []string{"+ tsr_erf_call_v16f(", "tsr_v16f acc_v0 = "}})
		A, O := gbuf("A", 64), gbuf("O", 64)
		v := vars("v")
		cs = append(cs, ccase{name: "vec_gelu", f: fnc("vec_gelu", []*tir.Buffer{A, O},
			loop(v[0], 64, tir.Vectorized, st(O, fn("erf", ld(A, v[0])), v[0]))),
			src: []string{"tsr_erf_v16f(tsr_load_v16f(&A["}, notSrc: []string{"tsr_erf_call_v16f(tsr_load"}})
	}
	{ // the same with the k.1 i.2 j.1 j.2 order, an odd M and a serial tail
		g := gemmTiles{M: 36, N: 96, K: 40, I1: 3, I2: 4, J1: 3, J2: 16, K1: 8, Vec: true, Unroll: 64, JInner: true}
		cs = append(cs, ccase{name: "gemm_small2", f: gemmFunc("gemm_small2", g)})
	}
	return cs
}

func TestKernels(t *testing.T) {
	runTable(t, cases())
}

// TestNarrowVectors prints the vector cases with 256- and 128-bit vectors:
// only vectors of that width appear (runTable compiles and runs them at
// every ISA level the machine has).
func TestNarrowVectors(t *testing.T) {
	for _, bits := range []int{256, 128} {
		want := map[int]string{256: "tsr_v8f", 128: "tsr_v4f"}[bits]
		var fs []*tir.PrimFunc
		for _, cse := range cases() {
			if strings.HasPrefix(cse.name, "vec_") || strings.HasPrefix(cse.name, "gemm") {
				fs = append(fs, cse.f)
			}
		}
		mod, err := CModule(fs, COptions{VectorBits: bits})
		if err != nil {
			t.Fatal(err)
		}
		if src := mod.Code; !strings.Contains(src, want) || strings.Contains(src, "tsr_v16f") {
			t.Errorf("VectorBits %d: want only %s vectors", bits, want)
		}
	}
}

// sourceBits is the vector width the cases' source expectations (src,
// notSrc) are written for; they are checked on a module printed at it,
// whatever the machine.
const sourceBits = 512

// runTable checks each case's source, then, at every ISA level the machine
// runs (testLevels), prints them all in one module with the level's vector
// width, compiles it for the level with each compiler and compares every
// kernel's outputs with the reference.
func runTable(t *testing.T, cs []ccase) {
	t.Helper()
	for _, cse := range cs {
		mod, err := C(cse.f, COptions{VectorBits: sourceBits})
		if err != nil {
			t.Fatalf("%s: %v", cse.name, err)
		}
		src := mod.Code
		for _, s := range cse.src {
			if !strings.Contains(src, s) {
				t.Errorf("%s: source lacks %q:\n%s", cse.name, s, numbered(src))
			}
		}
		for _, s := range cse.notSrc {
			if strings.Contains(src, s) {
				t.Errorf("%s: source contains %q:\n%s", cse.name, s, numbered(src))
			}
		}
	}
	for _, m := range testLevels(t) {
		mod := caseModule(t, cs, m.VectorBits())
		for _, cc := range testCompilers(t) {
			t.Run(m.Name+"/"+cc.name, func(t *testing.T) {
				t.Parallel()
				checkCases(t, cc, m, nil, mod, cs)
			})
		}
	}
}

// caseModule prints the kernels of cs in one module of vectors of bits.
func caseModule(t *testing.T, cs []ccase, bits int) *CSource {
	t.Helper()
	fs := make([]*tir.PrimFunc, len(cs))
	for i, cse := range cs {
		fs[i] = cse.f
	}
	mod, err := CModule(fs, COptions{VectorBits: bits})
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// checkCases compiles mod (caseModule of cs) with cc for machine m and
// checks each case's kernel against its reference, under emu (an
// emulator's command; nil: none).
func checkCases(t *testing.T, cc compiler, m machine.Machine, emu []string, mod *CSource, cs []ccase) {
	t.Helper()
	names := make([]string, len(cs))
	for i, cse := range cs {
		names[i] = cse.f.Name
	}
	exe := buildProgram(t, cc, m, mod, names)
	for _, cse := range cs {
		t.Run(cse.name, func(t *testing.T) { checkCase(t, emu, exe, cse) })
	}
}

// TestKernelsAarch64 compiles the vector and GEMM cases of the table for
// aarch64 (armv8-a: NEON, 4 lanes; the transposes' shuffles among them)
// with Debian's cross gcc and runs each under qemu-aarch64 against the
// reference. Skipped where the tools are missing, unless
// TESSERA_REQUIRE_CROSS is set (scripts/test.sh sets it).
func TestKernelsAarch64(t *testing.T) {
	tools := crosstest.RequireAarch64(t)
	m, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	var cs []ccase
	for _, cse := range cases() {
		if strings.HasPrefix(cse.name, "vec_") || strings.HasPrefix(cse.name, "gemm") {
			cs = append(cs, cse)
		}
	}
	mod := caseModule(t, cs, m.VectorBits())
	if !strings.Contains(mod.Code, "tsr_transpose_v4f(tsr_t);") {
		t.Error("no 4-lane transpose among the cases")
	}
	checkCases(t, compiler{"aarch64-gcc", tools.CC, []string{"-fopenmp"}}, m, tools.Exec, mod, cs)
}

// checkCase runs a case's kernel of exe (under emu, nil for none) on
// random arguments and compares its outputs with the reference's.
func checkCase(t *testing.T, emu []string, exe string, cse ccase) {
	t.Helper()
	args := randomArgs(cse.name, cse.f.Params)
	want := cloneArgs(args)
	if cse.want != nil {
		cse.want(want)
	} else if err := tir.Run(cse.f, want); err != nil {
		t.Fatalf("reference: %v", err)
	}
	got := cloneArgs(args)
	if err := runKernelUnder(emu, exe, cse.f.Name, cse.f.Params, cse.guards, got); err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := compareArgs(cse.f.Params, got, want); err != nil {
		t.Error(err)
	}
}

// TestGEMMAssembly proves the vectorized path reaches SIMD FMAs.
func TestGEMMAssembly(t *testing.T) {
	g := gemmTiles{M: 64, N: 64, K: 64, I1: 1, I2: 8, J1: 2, J2: 16, K1: 4, Vec: true, Unroll: 512, JInner: true}
	for _, m := range testLevels(t) {
		if !m.FMA {
			continue
		}
		mod, err := C(gemmFunc("gemm_asm", g), COptions{VectorBits: m.VectorBits()})
		if err != nil {
			t.Fatal(err)
		}
		src := mod.Code
		reg := map[int]string{32: "ymm", 64: "zmm"}[m.VectorBytes]
		fma := regexp.MustCompile(`vfmadd\w*ps\s+[^\n]*%` + reg)
		for _, cc := range testCompilers(t) {
			t.Run(m.Name+"/"+cc.name, func(t *testing.T) {
				dir := t.TempDir()
				in := dir + "/k.c"
				writeFile(t, in, src)
				args := append([]string{"-O2", "-march=" + m.March, "-S", "-o", "-"}, cc.flags...)
				out, err := exec.Command(cc.cmd, append(args, in)...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				// 8 rows × 32 lanes: 16 accumulators of 16 lanes, 32 of 8.
				want := 8 * 32 / m.Lanes()
				if n := len(fma.FindAll(out, -1)); n < want {
					t.Errorf("%d vector FMAs on %s registers in the GEMM kernel, want >= %d (one per accumulator)", n, reg, want)
				}
			})
		}
	}
}

func TestErrors(t *testing.T) {
	A := gbuf("A", 4)
	other := gbuf("X", 4)
	i := tir.NewVar("i")
	ok := func(name string) *tir.PrimFunc {
		return fnc(name, []*tir.Buffer{A}, loop(i, 4, tir.Serial, st(A, fc(1), i)))
	}
	bad := []struct {
		name string
		fs   []*tir.PrimFunc
		opts COptions
		msg  string
	}{
		{"duplicate", []*tir.PrimFunc{ok("k"), ok("k")}, COptions{VectorBits: 512}, "two kernels"},
		{"badname", []*tir.PrimFunc{ok("a-b")}, COptions{VectorBits: 512}, "not a C identifier"},
		{"reserved", []*tir.PrimFunc{ok("tsr_x")}, COptions{VectorBits: 512}, "reserved"},
		{"call", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, fn("foo", fc(1)), c(0)))}, COptions{VectorBits: 512}, `unknown function "foo"`},
		{"arity", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, fn("pow", fc(1)), c(0)))}, COptions{VectorBits: 512}, "pow with 1 arguments"},
		{"scope", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, ld(other, c(0)), c(0)))}, COptions{VectorBits: 512}, "buffer X"},
		{"rank", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, fc(0), c(0), c(1)))}, COptions{VectorBits: 512}, "2 indices"},
		{"type", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, lt(c(0), c(1)), c(0)))}, COptions{VectorBits: 512}, "bool value"},
		{"intdiv", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, toF(tir.DivE(c(4), c(2))), c(0)))}, COptions{VectorBits: 512}, "integer Div"},
		{"freevar", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, st(A, fc(0), i))}, COptions{VectorBits: 512}, "variable i is not in scope"},
		{"vecfree", []*tir.PrimFunc{fnc("k", []*tir.Buffer{A}, loop(i, 4, tir.Vectorized, st(A, toF(tir.NewVar("z")), i)))}, COptions{VectorBits: 512}, "variable z"},
		{"bits", []*tir.PrimFunc{ok("k")}, COptions{VectorBits: 100}, "VectorBits"},
		{"nobits", []*tir.PrimFunc{ok("k")}, COptions{}, "VectorBits is not set"},
		{"nil", []*tir.PrimFunc{nil}, COptions{VectorBits: 512}, "nil"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := CModule(b.fs, b.opts)
			if err == nil || !strings.Contains(err.Error(), b.msg) {
				t.Errorf("got error %v, want one containing %q", err, b.msg)
			}
		})
	}
}
