package te

import (
	"fmt"

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
