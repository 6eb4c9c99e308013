package te

import "github.com/tessera-ml/tessera/tir"

// LRN is ONNX LRN, local response normalization across channels: for x
// [N, C, ...], out = x / (bias + alpha/size · Σ x²)^beta, the sum over the
// channels c − ⌊(size−1)/2⌋ to c + ⌈(size−1)/2⌉ that exist. Stages:
// name_sqsum (a reduction over the window) and name.
func LRN(name string, x *Tensor, size int, alpha, beta, bias float32) (*Tensor, error) {
	name = orDefault(name, "lrn")
	if err := checkInputs("LRN", name, x); err != nil {
		return nil, err
	}
	if len(x.Shape) < 2 {
		return nil, opError("LRN", name, "input %v has rank < 2", x.Shape)
	}
	if size <= 0 {
		return nil, opError("LRN", name, "size %d", size)
	}
	C := x.Shape[1]
	lo := (size - 1) / 2 // channels before c in the window
	sq := Reduce(name+"_sqsum", x.Shape, Sum, []int{size}, func(i, r []tir.Expr) tir.Expr {
		c := iadd(iaddc(i[1], -lo), r[0])
		inside := andCond(tir.Cmp(tir.GE, c, Idx(0)), tir.Cmp(tir.LT, c, Idx(C)))
		xi := append([]tir.Expr(nil), i...)
		xi[1] = tir.MinE(tir.MaxE(c, Idx(0)), Idx(C-1)) // in bounds whatever the select evaluates
		v := x.At(xi...)
		return tir.SelectE(inside, tir.MulE(v, v), tir.F32(0))
	})
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		d := tir.AddE(tir.F32(float64(bias)), tir.MulE(tir.F32(float64(alpha)/float64(size)), sq.At(i...)))
		return tir.DivE(x.At(i...), tir.CallE("pow", d, tir.F32(float64(beta))))
	}), nil
}
