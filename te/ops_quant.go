package te

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// Requantize maps the int32 sums acc of an integer convolution or matmul
// (or float32 sums that are exact integers) to the
// quantized type q (Int8 or Uint8), as onnxruntime's integer
// kernels do: saturate(rint(float(acc + bias[c]) · mult[c]) + zero), c
// the index along axis channel. bias (int32; nil: none) and mult (float32)
// are vectors along that axis or single elements. The product is rounded
// on its own (no fused multiply-add can reach it), and the clamp comes
// before the conversion, so the result is exact.
func Requantize(name string, acc, bias, mult *Tensor, channel int, zero int64, q tir.DType) (*Tensor, error) {
	if acc.DType() != tir.Int32 && acc.DType() != tir.Float32 {
		return nil, opError("Requantize", name, "sums of type %v, want int32 (or float32 holding integers)", acc.DType())
	}
	if q != tir.Int8 && q != tir.Uint8 {
		return nil, opError("Requantize", name, "quantized type %v", q)
	}
	if channel < 0 || channel >= len(acc.Shape) {
		return nil, opError("Requantize", name, "channel axis %d of rank %d", channel, len(acc.Shape))
	}
	at, err := channelReader(name, acc.Shape[channel], channel, bias, mult)
	if err != nil {
		return nil, err
	}
	lo, hi := q.Range()
	return Compute(name, acc.Shape, func(i []tir.Expr) tir.Expr {
		sum := acc.At(i...)
		if bias != nil {
			b := bias.At(at(bias, i)...)
			if acc.DType() == tir.Float32 {
				sum = tir.AddE(sum, toFloat32(b)) // exact: the caller's bound
			} else {
				sum = tir.AddE(sum, toInt32(b))
			}
		}
		v := tir.MulE(toFloat32(sum), mult.At(at(mult, i)...))
		r := tir.AddE(tir.CallE("rint", v), tir.F32(float64(zero)))
		return &tir.Cast{To: q, X: tir.MinE(tir.MaxE(r, tir.F32(float64(lo))), tir.F32(float64(hi)))}
	}), nil
}

// channelReader checks that every tensor of ts is a vector of n elements
// or holds one element, and returns how to index one at output index i.
func channelReader(name string, n, channel int, ts ...*Tensor) (func(t *Tensor, i []tir.Expr) []tir.Expr, error) {
	for _, t := range ts {
		if t == nil {
			continue
		}
		if t.Size() != 1 && (len(t.Shape) != 1 || t.Shape[0] != n) {
			return nil, fmt.Errorf("te: Requantize %s: %s has shape %v, want [%d] or one element", name, t.Name, t.Shape, n)
		}
	}
	return func(t *Tensor, i []tir.Expr) []tir.Expr {
		if t.Size() != 1 {
			return []tir.Expr{i[channel]}
		}
		idx := make([]tir.Expr, len(t.Shape))
		for k := range idx {
			idx[k] = Idx(0)
		}
		return idx
	}, nil
}

// Shifted returns the integers of x minus zero as float32 (exact): the
// operand of a quantized convolution or matmul summed in float32, which
// pads with 0 like any float convolution.
func Shifted(name string, x *Tensor, zero int64) *Tensor {
	return Compute(name, x.Shape, func(i []tir.Expr) tir.Expr {
		return tir.SubE(toFloat32(x.At(i...)), tir.F32(float64(zero)))
	})
}

// ZeroPointMatMul is the exact int32 Σ_k (a − za)·(b − zb) of two 8-bit
// integer operands both computed at run time (a QLinearMatMul of
// activations: attention's scores, and their product with the values),
// a [batch..., M, K] and b [batch..., K, N] of rank 3 or more (batches
// broadcast), K a multiple of four, in the form a dot-product instruction
// computes (u8·s8 groups of four, VNNI's vpdpbusd): b is laid out by a
// stage of its own (name_packed) as [batch..., K/4, N, 4] signed bytes,
// each lane's four k adjacent, uint8 shifted by −128 (b' = b − s, s = 128;
// int8 b as it is, s = 0); name_dots sums a·b' in groups of four; the
// shift and the zero points are corrected for from a's row sums
// (name_rows) and b's column sums (name_cols):
//
//	Σ(a − za)(b − zb) = Σ a·b' + (s − zb)·Σa − za·Σb + K·za·zb
//
// The caller bounds the sums to int32: four terms of up to K·255·255 each.
func ZeroPointMatMul(name string, a, b *Tensor, za, zb int64) (*Tensor, error) {
	name = orDefault(name, "qmatmul")
	if err := checkInputs("MatMul", name, a, b); err != nil {
		return nil, err
	}
	is8 := func(t *Tensor) bool { return t.DType() == tir.Uint8 || t.DType() == tir.Int8 }
	ra, rb := len(a.Shape), len(b.Shape)
	if !is8(a) || !is8(b) || ra < 2 || rb < 2 {
		return nil, opError("MatMul", name, "want 8-bit integer operands of rank 2 or more, have %v %v and %v %v", a.DType(), a.Shape, b.DType(), b.Shape)
	}
	aBatch, m, k := a.Shape[:ra-2], a.Shape[ra-2], a.Shape[ra-1]
	bBatch, kb, n := b.Shape[:rb-2], b.Shape[rb-2], b.Shape[rb-1]
	if k != kb || k%4 != 0 {
		return nil, opError("MatMul", name, "inner dimensions %v · %v: want equal, a multiple of 4", a.Shape, b.Shape)
	}
	batch, err := BroadcastShapes(aBatch, bBatch)
	if err != nil {
		return nil, opError("MatMul", name, "batch dimensions: %v", err)
	}
	nb := len(batch)
	shift := int64(0)
	if b.DType() == tir.Uint8 {
		shift = 128
	}
	i32 := func(v int64) tir.Expr { return tir.IntOf(tir.Int32, v) }
	// [bBatch..., K/4, N, 4]: element (r, j, g) is b[4r+g, j] − shift.
	packed := Compute(name+"_packed", append(slices.Clone(bBatch), k/4, n, 4), func(i []tir.Expr) tir.Expr {
		r, j, g := i[len(bBatch)], i[len(bBatch)+1], i[len(bBatch)+2]
		v := b.At(append(slices.Clone(i[:len(bBatch)]), iadd(imulc(r, 4), g), j)...)
		return &tir.Cast{To: tir.Int8, X: tir.SubE(toInt32(v), i32(shift))}
	})
	out := append(slices.Clone(batch), m, n)
	dots := Reduce(name+"_dots", out, Sum, []int{k / 4}, func(i, r []tir.Expr) tir.Expr {
		ai := append(broadcastIndex(aBatch, batch, i[:nb]), i[nb])
		pi := append(broadcastIndex(bBatch, batch, i[:nb]), r[0], i[nb+1])
		terms := make([]tir.Expr, 4)
		for g := range 4 {
			kk := iaddc(imulc(r[0], 4), g)
			terms[g] = intProduct(a.At(append(slices.Clone(ai), kk)...), packed.At(append(slices.Clone(pi), Idx(g))...))
		}
		return dotForm{n: 4}.sum(terms)
	})
	rows := Reduce(name+"_rows", a.Shape[:ra-1], Sum, []int{k}, func(i, r []tir.Expr) tir.Expr {
		return toInt32(a.At(append(slices.Clone(i), r[0])...))
	})
	cols := Reduce(name+"_cols", append(slices.Clone(bBatch), n), Sum, []int{k}, func(i, r []tir.Expr) tir.Expr {
		return toInt32(b.At(append(slices.Clone(i[:len(bBatch)]), r[0], i[len(bBatch)])...))
	})
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		v := dots.At(i...)
		if c := shift - zb; c != 0 {
			v = tir.AddE(v, tir.MulE(i32(c), rows.At(append(broadcastIndex(aBatch, batch, i[:nb]), i[nb])...)))
		}
		if za != 0 {
			v = tir.SubE(v, tir.MulE(i32(za), cols.At(append(broadcastIndex(bBatch, batch, i[:nb]), i[nb+1])...)))
		}
		if c := int64(k) * za * zb; c != 0 {
			v = tir.AddE(v, i32(c))
		}
		return v
	}), nil
}
