package tsrt

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
)

// Converting tensors between dtypes, exactly or not at all: what a tensor
// file of one dtype given to an input of another goes through, and what
// RunFloat32's float32 values go through.

// convertTensor returns t's values as a tensor of dtype to: integers
// exactly or an error naming the first that dtype cannot hold; float32
// and float16 values rounded to the nearest integer or float16
// (fromFloat32; float16 to float32 is exact).
func convertTensor(t Tensor, to DType) (Tensor, error) {
	if t.DType == to {
		return t, nil
	}
	if t.DType == Float32 || t.DType == Float16 {
		v, err := float32sOf(t)
		if err != nil {
			return Tensor{}, err
		}
		out, err := fromFloat32(to, t.Shape, v)
		out.Name = t.Name
		return out, err
	}
	v, err := int64sOf(t)
	if err != nil {
		return Tensor{}, err
	}
	var out Tensor
	switch to {
	case Float32:
		f := make([]float32, len(v))
		for i, x := range v {
			if x > graph.MaxExactInt || x < -graph.MaxExactInt {
				return Tensor{}, fmt.Errorf("element %d of %s is %d: the model takes float32, exact only within ±%d", i, t.DType, x, graph.MaxExactInt)
			}
			f[i] = float32(x)
		}
		out = NewTensor(t.Shape, f)
	case Int64:
		out = NewTensor(t.Shape, v)
	case Int32:
		out, err = narrowed[int32](t, v, to)
	case Int16:
		out, err = narrowed[int16](t, v, to)
	case Int8:
		out, err = narrowed[int8](t, v, to)
	case Uint8:
		out, err = narrowed[uint8](t, v, to)
	case Uint16:
		out, err = narrowed[uint16](t, v, to)
	case Uint32:
		out, err = narrowed[uint32](t, v, to)
	case Bool:
		b := make([]bool, len(v))
		for i, x := range v {
			if x != 0 && x != 1 {
				return Tensor{}, fmt.Errorf("element %d of %s is %d: the model takes bool (0 or 1)", i, t.DType, x)
			}
			b[i] = x == 1
		}
		out = NewTensor(t.Shape, b)
	default:
		err = fmt.Errorf("%s cannot be given as %s", t.DType, to)
	}
	out.Name = t.Name
	return out, err
}

// narrowed is v, the values of t, as a tensor of T (of dtype to), or an
// error naming the first value T cannot hold.
func narrowed[T int32 | int16 | int8 | uint8 | uint16 | uint32](t Tensor, v []int64, to DType) (Tensor, error) {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
		if int64(out[i]) != x {
			return Tensor{}, fmt.Errorf("element %d of %s is %d: the model takes %s", i, t.DType, x, to)
		}
	}
	return NewTensor(t.Shape, out), nil
}

// fromFloat32 converts float32 values to a tensor of dtype dt (integers
// and bool rounded to the nearest, exact within ±2^24, as the kernels
// compute them; float16 rounded to the nearest, ties to even).
func fromFloat32(dt DType, shape []int64, v []float32) (Tensor, error) {
	switch dt {
	case Float32:
		return NewTensor(shape, v), nil
	case Float16:
		return NewTensor(shape, convert(v, float16.Fromfloat32)), nil
	case Int64:
		return rounded[int64](shape, v), nil
	case Int32:
		return rounded[int32](shape, v), nil
	case Int16:
		return rounded[int16](shape, v), nil
	case Int8:
		return rounded[int8](shape, v), nil
	case Uint8:
		return rounded[uint8](shape, v), nil
	case Uint16:
		return rounded[uint16](shape, v), nil
	case Uint32:
		return rounded[uint32](shape, v), nil
	case Bool:
		return NewTensor(shape, convert(v, func(x float32) bool { return x != 0 })), nil
	}
	return Tensor{}, fmt.Errorf("dtype %s cannot be given as float32", dt)
}

// int64sOf returns the values of an integer or bool tensor (bool as 0 and 1).
func int64sOf(t Tensor) ([]int64, error) {
	switch t.DType {
	case Int64:
		v, err := Values[int64](t)
		return slices.Clone(v), err
	case Int32:
		return widened[int32](t)
	case Int16:
		return widened[int16](t)
	case Int8:
		return widened[int8](t)
	case Uint8:
		return widened[uint8](t)
	case Uint16:
		return widened[uint16](t)
	case Uint32:
		return widened[uint32](t)
	case Bool:
		v, err := Values[bool](t)
		return convert(v, func(b bool) int64 {
			if b {
				return 1
			}
			return 0
		}), err
	}
	return nil, fmt.Errorf("%s is not an integer dtype", t.DType)
}

func widened[T int32 | int16 | int8 | uint8 | uint16 | uint32](t Tensor) ([]int64, error) {
	v, err := Values[T](t)
	return convert(v, func(x T) int64 { return int64(x) }), err
}

// float32sOf returns t's values as float32: float16 exact, integers and
// bools exact within ±graph.MaxExactInt, an error beyond.
func float32sOf(t Tensor) ([]float32, error) {
	switch t.DType {
	case Float32:
		v, err := Values[float32](t)
		return slices.Clone(v), err
	case Float16:
		v, err := Values[float16.Float16](t)
		return convert(v, float16.Float16.Float32), err
	}
	v, err := int64sOf(t)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(v))
	for i, x := range v {
		if x > graph.MaxExactInt || x < -graph.MaxExactInt {
			return nil, fmt.Errorf("element %d of %s is %d: float32 is exact only within ±%d", i, t.DType, x, graph.MaxExactInt)
		}
		out[i] = float32(x)
	}
	return out, nil
}

// float64sOf returns t's values as float64, to compare them.
func float64sOf(t Tensor) ([]float64, error) {
	if t.DType == Float32 || t.DType == Float16 {
		v, err := float32sOf(t)
		return convert(v, func(x float32) float64 { return float64(x) }), err
	}
	v, err := int64sOf(t)
	return convert(v, func(x int64) float64 { return float64(x) }), err
}

// floatBytes returns bufs back to back as little-endian float32.
func floatBytes(bufs ...[]float32) []byte {
	n := 0
	for _, b := range bufs {
		n += 4 * len(b)
	}
	out := make([]byte, 0, n)
	for _, b := range bufs {
		for _, v := range b {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// floatsOf reads little-endian float32s.
func floatsOf(data []byte) []float32 {
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

// ints is shape64's inverse.
func ints(shape []int64) []int {
	out := make([]int, len(shape))
	for i, d := range shape {
		out[i] = int(d)
	}
	return out
}

// rounded is vals as a tensor of integers, each rounded to the nearest.
func rounded[T int64 | int32 | int16 | int8 | uint8 | uint16 | uint32](shape []int64, vals []float32) Tensor {
	return NewTensor(shape, convert(vals, func(x float32) T { return T(math.RoundToEven(float64(x))) }))
}

func convert[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

func shape64(shape []int) []int64 {
	out := make([]int64, len(shape))
	for i, d := range shape {
		out[i] = int64(d)
	}
	return out
}
