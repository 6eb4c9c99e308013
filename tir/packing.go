package tir

import (
	"fmt"
	"strings"
)

// Packing says how a kernel parameter holds a tensor in another layout
// than the row-major order of the tensor's own shape (a weight packed into
// the order a tiled loop nest reads it). The packed buffer's shape is the
// Buffer's Shape; element idx of it is the element src of the tensor,
//
//	src[a] = Offset[a] + Σ { idx[d] * Dims[d].Stride : Dims[d].Axis == a }
//
// or zero where src lies outside Shape (tiles that overshoot the tensor:
// the kernel never uses those elements).
type Packing struct {
	Shape  []int     // the tensor's own shape
	Dims   []PackDim // one per dimension of the packed buffer
	Offset []int     // one per dimension of the tensor
}

// PackDim is a dimension of a packed buffer: it steps the tensor's index
// Axis by Stride.
type PackDim struct {
	Axis   int
	Extent int
	Stride int
}

// PackedShape returns the shape of the packed buffer.
func (p *Packing) PackedShape() []int {
	s := make([]int, len(p.Dims))
	for d, pd := range p.Dims {
		s[d] = pd.Extent
	}
	return s
}

// Pack returns src, a tensor of p.Shape in row-major order, in the packed
// layout.
func (p *Packing) Pack(src []float32) []float32 {
	n := 1
	for _, pd := range p.Dims {
		n *= pd.Extent
	}
	out := make([]float32, n)
	strides := rowMajor(p.Shape)
	idx := make([]int, len(p.Dims))
	for k := range out {
		off, in := 0, true
		for a := range p.Shape {
			v := p.Offset[a]
			for d, pd := range p.Dims {
				if pd.Axis == a {
					v += idx[d] * pd.Stride
				}
			}
			if v < 0 || v >= p.Shape[a] {
				in = false
				break
			}
			off += v * strides[a]
		}
		if in && off < len(src) {
			out[k] = src[off]
		}
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < p.Dims[d].Extent {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

func rowMajor(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// Check reports an error when p is malformed: a dimension that names no
// axis of Shape, a non-positive extent or stride, an offset per axis
// missing.
func (p *Packing) Check() error {
	if len(p.Offset) != len(p.Shape) {
		return fmt.Errorf("packing: %d offsets for rank %d", len(p.Offset), len(p.Shape))
	}
	for d, pd := range p.Dims {
		if pd.Axis < 0 || pd.Axis >= len(p.Shape) || pd.Extent <= 0 || pd.Stride <= 0 {
			return fmt.Errorf("packing: dimension %d (axis %d, extent %d, stride %d) is malformed", d, pd.Axis, pd.Extent, pd.Stride)
		}
	}
	return nil
}

// String prints the packed dimensions as axis:extent*stride, outer to
// inner, e.g. [a0:4*16 a1:64*1 a2:3*1 a0:16*1].
func (p *Packing) String() string {
	parts := make([]string, len(p.Dims))
	for d, pd := range p.Dims {
		parts[d] = fmt.Sprintf("a%d:%d*%d", pd.Axis, pd.Extent, pd.Stride)
	}
	s := "[" + strings.Join(parts, " ") + "]"
	for _, o := range p.Offset {
		if o != 0 {
			return fmt.Sprintf("%s+%v", s, p.Offset)
		}
	}
	return s
}

// PackArgs returns args (one slice per parameter of f, each in the row-major
// order of the tensor's own shape) with the parameters that f packs
// repacked; the others are shared, not copied.
func PackArgs(params []*Buffer, args [][]float32) [][]float32 {
	out := make([][]float32, len(args))
	for i, a := range args {
		out[i] = a
		if i < len(params) && params[i].Packed != nil {
			out[i] = params[i].Packed.Pack(a)
		}
	}
	return out
}

// Packing says how f takes its parameters: the packing of each that takes
// a constant repacked (Buffer.Packed), "" where none does. Two kernels of
// one computation with the same Packing take the same arguments.
func (f *PrimFunc) Packing() string {
	var b strings.Builder
	for i, p := range f.Params {
		if p.Packed != nil {
			fmt.Fprintf(&b, "%d:%v;", i, p.Packed)
		}
	}
	return b.String()
}
