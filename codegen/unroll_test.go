package codegen

import (
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestAutoUnrollCountsDotProducts: under auto_unroll_max_step, a reduction
// whose stores each sum four 8-bit products unrolls as far as the float
// reduction of four times its length, not four times further. A 28-step
// reduction of dot groups over 5 rows of 16 lanes (560 products) keeps its
// loop under a limit of 512 and unrolls its 5 rows; the same loop of float
// stores with one product each (140 steps) unrolls entirely.
func TestAutoUnrollCountsDotProducts(t *testing.T) {
	v := vars("r", "p", "l")
	r, p, l := v[0], v[1], v[2]
	X := &tir.Buffer{Name: "X", DType: tir.Uint8, Shape: []int{112}}
	W := &tir.Buffer{Name: "W", DType: tir.Int8, Shape: []int{28, 16, 4}}
	acc := &tir.Buffer{Name: "acc", DType: tir.Int32, Shape: []int{5, 16}}
	wide := func(e tir.Expr) tir.Expr { return &tir.Cast{To: tir.Int32, X: e} }
	dot := ld(acc, p, l)
	for j := int64(0); j < 4; j++ {
		dot = add(dot, mul(wide(ld(X, add(mul(r, c(4)), c(j)))), wide(ld(W, r, l, c(j)))))
	}
	F, A := gbuf("F", 28), gbuf("A", 5, 16)
	float := add(ld(A, p, l), mul(ld(F, r), ld(A, p, l)))

	for _, tc := range []struct {
		name       string
		store      tir.Stmt
		keepsLoopR bool
	}{
		{"int8 dot groups", st(acc, dot, p, l), true},
		{"float multiply-adds", st(A, float, p, l), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &tir.Pragma{Key: "auto_unroll_max_step", Value: 512,
				Body: loop(r, 28, tir.Serial, loop(p, 5, tir.Serial, loop(l, 16, tir.Vectorized, tc.store)))}
			out := unroll(body, 0, 8, nil)
			loops := map[*tir.Var]int{}
			tir.WalkStmt(out, func(s tir.Stmt) bool {
				if f, ok := s.(*tir.For); ok {
					loops[f.Var]++
				}
				return true
			})
			if got := loops[r] > 0; got != tc.keepsLoopR {
				t.Errorf("reduction loop kept = %v, want %v", got, tc.keepsLoopR)
			}
			if loops[p] != 0 {
				t.Errorf("the 5 rows were not unrolled (%d loops left)", loops[p])
			}
		})
	}
}
