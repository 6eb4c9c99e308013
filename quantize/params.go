package quantize

import (
	"math"
)

// The arithmetic of scales and zero points, as onnxruntime's quantization
// tools (quant_utils.compute_scale_zp, quantize_nparray, the QDQ
// quantizer's bias quantization and its weight-scale adjustment for int32
// biases) compute it: float32 where numpy computes in float32, float64
// where it computes in float64, rounding half to even.

// Params are the scale and zero point of a quantized tensor (or of one
// channel of it): x ≈ (q − ZeroPoint)·Scale.
type Params struct {
	Scale     float32
	ZeroPoint int64
}

// The integer ranges values are quantized to: activations (and constants
// that are not weights) to uint8 over its full range; weights to int8's
// symmetric range, which leaves out −128 so that zero is the zero point;
// biases to int32.
const (
	uint8Min, uint8Max = 0, 255
	int8Min, int8Max   = -127, 127
	int32Min, int32Max = math.MinInt32, math.MaxInt32
	// Weights with Options.ReduceRange: 7 bits, onnxruntime's
	// reduce_range for symmetric int8.
	reducedMin, reducedMax = -64, 64
)

// tinyFloat32 is float32's smallest normal number (numpy's
// finfo(float32).tiny): a scale below it is a degenerate range.
const tinyFloat32 = 0x1p-126

// ScaleZeroPoint returns the scale and zero point that map the real range
// [rmin, rmax] onto the integers [qmin, qmax], as onnxruntime's
// compute_scale_zp does: the range is first widened to contain 0 (so that
// 0 is exactly representable and qmin ≤ zero point ≤ qmax); symmetric
// makes it [−m, m] with m the larger magnitude and puts the zero point in
// the middle of [qmin, qmax]. A range narrower than float32's smallest
// normal number times qmax−qmin (all zeros, in practice) is degenerate:
// it gets scale 1 and zero point 0, onnxruntime's rule, never scale 0.
// rmin and rmax must be finite.
func ScaleZeroPoint(rmin, rmax float32, qmin, qmax int64, symmetric bool) Params {
	rmin, rmax = min(rmin, 0), max(rmax, 0)
	if symmetric {
		m := max(float32(math.Abs(float64(rmin))), float32(math.Abs(float64(rmax))))
		rmin, rmax = -m, m
	}
	// numpy: the difference in float32, the quotient in float64.
	scale := float64(rmax-rmin) / (float64(qmax) - float64(qmin))
	if scale < tinyFloat32 {
		return Params{Scale: 1, ZeroPoint: 0}
	}
	var zp float64
	if symmetric {
		zp = math.RoundToEven(float64(qmin+qmax) / 2)
	} else {
		zp = math.RoundToEven(float64(qmin) - float64(rmin)/scale)
	}
	return Params{Scale: float32(scale), ZeroPoint: int64(zp)}
}

// Degenerate reports whether p is the degenerate range's scale and zero
// point (ScaleZeroPoint of an empty range).
func (p Params) Degenerate() bool { return p.Scale == 1 && p.ZeroPoint == 0 }

// Quantize returns x quantized with p into [qmin, qmax]: x/scale in
// float32, rounded half to even, plus the zero point, saturated.
func (p Params) Quantize(x float32, qmin, qmax int64) int64 {
	q := math.RoundToEven(float64(x/p.Scale)) + float64(p.ZeroPoint)
	return int64(min(max(q, float64(qmin)), float64(qmax)))
}

// Dequantize returns (q − zero point)·scale in float32, DequantizeLinear.
func (p Params) Dequantize(q int64) float32 {
	return float32(q-p.ZeroPoint) * p.Scale
}

// channels splits a tensor of the given shape along axis: it returns the
// number of channels and, for each element in row-major order, its
// channel. axis < 0 means one channel.
func channels(shape []int, axis int) (n int, of func(i int) int) {
	if axis < 0 {
		return 1, func(int) int { return 0 }
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	n = shape[axis]
	return n, func(i int) int { return (i / inner) % n }
}

// WeightParams returns the int8 scale and zero point of a weight of the
// given shape and data, per channel along axis (axis < 0: one for the
// whole tensor): symmetric over each channel's range, zero point 0.
func WeightParams(shape []int, data []float32, axis int) []Params {
	return dataParams(shape, data, axis, int8Min, int8Max, true)
}

// ConstParams returns the uint8 scale and zero point of a constant that
// is quantized as an activation is (an operand of Add or Concat that the
// model holds as an initializer): asymmetric over its range.
func ConstParams(data []float32) Params {
	return dataParams([]int{len(data)}, data, -1, uint8Min, uint8Max, false)[0]
}

func dataParams(shape []int, data []float32, axis int, qmin, qmax int64, symmetric bool) []Params {
	n, of := channels(shape, axis)
	lo := make([]float32, n)
	hi := make([]float32, n)
	seen := make([]bool, n)
	for i, v := range data {
		c := of(i)
		if !seen[c] {
			lo[c], hi[c], seen[c] = v, v, true
			continue
		}
		lo[c], hi[c] = min(lo[c], v), max(hi[c], v)
	}
	out := make([]Params, n)
	for c := range out {
		out[c] = ScaleZeroPoint(lo[c], hi[c], qmin, qmax, symmetric)
	}
	return out
}

// QuantizeData quantizes data of the given shape with per-channel params
// along axis (one Params and axis < 0: per tensor) into [qmin, qmax].
func QuantizeData(shape []int, data []float32, axis int, ps []Params, qmin, qmax int64) []int64 {
	_, of := channels(shape, axis)
	out := make([]int64, len(data))
	for i, v := range data {
		out[i] = ps[of(i)].Quantize(v, qmin, qmax)
	}
	return out
}

// BiasScales returns the scales of an int32 bias: input scale × weight
// scale (per channel, or one) × beta, in float32, as onnxruntime computes
// them. A scale that underflows to zero is returned as zero; the caller
// must not write it.
func BiasScales(input float32, weight []Params, beta float32) []float32 {
	out := make([]float32, len(weight))
	for i, w := range weight {
		out[i] = input * w.Scale * beta
	}
	return out
}

// QuantizeBias quantizes a bias with scales (one, or one per element):
// round(bias / scale) in float64, half to even, saturated to int32.
// clipped counts the elements that int32 could not hold (onnxruntime
// saturates them too, with a warning).
func QuantizeBias(bias []float32, scales []float32) (q []int64, clipped int) {
	q = make([]int64, len(bias))
	for i, b := range bias {
		s := scales[0]
		if len(scales) > 1 {
			s = scales[i]
		}
		r := math.RoundToEven(float64(b) / float64(s))
		switch {
		case r > int32Max:
			r, clipped = int32Max, clipped+1
		case r < int32Min:
			r, clipped = int32Min, clipped+1
		}
		q[i] = int64(r)
	}
	return q, clipped
}

// AdjustForBias raises weight scales whose bias scale (input scale ×
// weight scale) would be too small for the bias to fit int32, as
// onnxruntime's QDQ quantizer does before it quantizes weights: a bias
// scale must be at least 1.0001·2·|b| / (2³² − 2), |b| the largest bias
// magnitude of the channel (per channel) or of the tensor (one scale).
// It returns the channels it raised; ws is changed in place. The weight
// is then quantized with the raised scales, so that its values shrink
// instead of the bias overflowing.
func AdjustForBias(input float32, ws []Params, bias []float32) (raised []int) {
	const qrange = float64(int32Max) - float64(int32Min+1)
	if len(ws) == 1 {
		// numpy: the range widened to 0 in float64, and so the rest.
		var lo, hi float32
		for _, b := range bias {
			lo, hi = min(lo, b), max(hi, b)
		}
		smallest := 1.0001 * (2 * float64(max(-lo, hi))) / qrange
		if adjusted, ok := raise(input, ws[0].Scale, smallest); ok {
			ws[0].Scale = adjusted
			raised = append(raised, 0)
		}
		return raised
	}
	for i := range ws {
		if i >= len(bias) {
			break
		}
		// numpy: 1.0001·(2·|b|) in float32, then / qrange in float64.
		smallest := float64(float32(1.0001)*(2*float32(math.Abs(float64(bias[i]))))) / qrange
		if adjusted, ok := raise(input, ws[i].Scale, smallest); ok {
			ws[i].Scale = adjusted
			raised = append(raised, i)
		}
	}
	return raised
}

// raise returns the weight scale that makes input × weight at least
// smallest, when it is below it (and positive).
func raise(input, weight float32, smallest float64) (float32, bool) {
	candidate := float64(input) * float64(weight)
	if candidate < smallest && candidate > 0 {
		return float32(float64(weight) * (smallest / candidate)), true
	}
	return weight, false
}
