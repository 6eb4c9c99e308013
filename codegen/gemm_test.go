package codegen

import (
	"github.com/tessera-ml/tessera/tir"
)

// gemmTiles describes the Ansor-style SGEMM nest
//
//	for i.0 (parallel), j.0:
//	  alloc acc[I1*I2][J1*J2] local
//	  pragma auto_unroll_max_step = Unroll:
//	    init acc; for k.0: for i.1, j.1, k.1, i.2, j.2: acc += A*B; store C
//
// with i = (i.0*I1 + i.1)*I2 + i.2, j = (j.0*J1 + j.1)*J2 + j.2 and
// k = k.0*K1 + k.1; j.2 is vectorized when Vec is set.
type gemmTiles struct {
	M, N, K            int
	I1, I2, J1, J2, K1 int
	Vec                bool
	Unroll             int
	JInner             bool // compute order k.1 i.2 j.1 j.2 instead of j.1 k.1 i.2 j.2
	// Epilogue, if set, is applied to each sum as it is stored (a fused
	// activation).
	Epilogue func(x tir.Expr) tir.Expr
}

func gemmFunc(name string, g gemmTiles) *tir.PrimFunc {
	A := gbuf("A", g.M, g.K)
	B := gbuf("B", g.K, g.N)
	C := gbuf("C", g.M, g.N)
	acc := lbuf("acc", g.I1*g.I2, g.J1*g.J2)
	vk := tir.Serial
	if g.Vec {
		vk = tir.Vectorized
	}
	i0, j0, k0 := tir.NewVar("i.0"), tir.NewVar("j.0"), tir.NewVar("k.0")
	mk := func(withK bool, body func(i1, i2, j1, j2, k1 *tir.Var) tir.Stmt) tir.Stmt {
		i1, i2, j1, j2, k1 := tir.NewVar("i.1"), tir.NewVar("i.2"), tir.NewVar("j.1"), tir.NewVar("j.2"), tir.NewVar("k.1")
		in := loop(j2, g.J2, vk, body(i1, i2, j1, j2, k1))
		if withK && g.JInner {
			return loop(i1, g.I1, tir.Serial, loop(k1, g.K1, tir.Serial, loop(i2, g.I2, tir.Serial, loop(j1, g.J1, tir.Serial, in))))
		}
		if withK {
			return loop(i1, g.I1, tir.Serial, loop(j1, g.J1, tir.Serial, loop(k1, g.K1, tir.Serial, loop(i2, g.I2, tir.Serial, in))))
		}
		return loop(i1, g.I1, tir.Serial, loop(i2, g.I2, tir.Serial, loop(j1, g.J1, tir.Serial, in)))
	}
	ai := func(i1, i2 *tir.Var) tir.Expr { return add(mul(i1, c(int64(g.I2))), i2) }
	aj := func(j1, j2 *tir.Var) tir.Expr { return add(mul(j1, c(int64(g.J2))), j2) }
	gi := func(i1, i2 *tir.Var) tir.Expr {
		return add(mul(i0, c(int64(g.I1*g.I2))), ai(i1, i2))
	}
	gj := func(j1, j2 *tir.Var) tir.Expr {
		return add(mul(j0, c(int64(g.J1*g.J2))), aj(j1, j2))
	}
	initS := mk(false, func(i1, i2, j1, j2, _ *tir.Var) tir.Stmt {
		return st(acc, fc(0), ai(i1, i2), aj(j1, j2))
	})
	compute := loop(k0, g.K/g.K1, tir.Serial, mk(true, func(i1, i2, j1, j2, k1 *tir.Var) tir.Stmt {
		k := add(mul(k0, c(int64(g.K1))), k1)
		return st(acc, add(ld(acc, ai(i1, i2), aj(j1, j2)), mul(ld(A, gi(i1, i2), k), ld(B, k, gj(j1, j2)))), ai(i1, i2), aj(j1, j2))
	}))
	out := mk(false, func(i1, i2, j1, j2, _ *tir.Var) tir.Stmt {
		x := ld(acc, ai(i1, i2), aj(j1, j2))
		if g.Epilogue != nil {
			return st(C, g.Epilogue(x), gi(i1, i2), gj(j1, j2))
		}
		return st(C, x, gi(i1, i2), gj(j1, j2))
	})
	var body tir.Stmt = tir.SeqOf(initS, compute, out)
	if g.Unroll > 0 {
		body = &tir.Pragma{Key: "auto_unroll_max_step", Value: g.Unroll, Body: body}
	}
	tile := &tir.Allocate{Buf: acc, Body: body}
	outer := loop(i0, g.M/(g.I1*g.I2), tir.Parallel, loop(j0, g.N/(g.J1*g.J2), tir.Serial, tile))
	return &tir.PrimFunc{
		Name:   name,
		Params: []*tir.Buffer{A, B, C},
		Body:   outer,
	}
}
