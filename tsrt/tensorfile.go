package tsrt

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	npyfloat16 "codeberg.org/sbinet/npyio/npy/float16"
	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// Tensor files: what `tune run` reads and writes.
//
//	.npy        NumPy's format, read and written by codeberg.org/sbinet/npyio:
//	            float32, float16 and the integer and bool dtypes ('<f4',
//	            '<f2', '<i8', '<i4', '<i2', '|i1', '|u1', '<u2', '<u4',
//	            '|b1'; either byte order), C order
//	.pb         an ONNX TensorProto (the input_N.pb files of ONNX's test data)
//	otherwise   raw little-endian float32, the shape taken from the manifest
//
// A file is read as .npy when it starts with NumPy's magic, whatever its
// name. Shapes are checked: a .npy or .pb tensor must have exactly the
// shape the model takes, a raw file exactly its number of bytes.
//
// Values are exact. A .npy file is read in its dtype; given to an input of
// another dtype, every integer must be one of that dtype (to float32,
// within ±graph.MaxExactInt; to bool, 0 or 1) or the file is refused.
// Float32 values (raw files, '<f4') given to an integer or bool input are
// rounded to the nearest, as Model.RunFloat32 does. A .pb tensor must be of the
// dtype the model takes. Outputs are written in their own dtype (.npy,
// .pb) or as float32 (raw).

// ReadTensor reads the tensor at path for want, checking its shape (of a
// batched tensor, every dimension but the batch; of one with dimensions
// given at run time, every dimension but those), as float32 values
// (integers exact within ±graph.MaxExactInt).
func ReadTensor(path string, want ManifestTensor) ([]float32, error) {
	t, err := ReadTensorFile(path, want)
	if err != nil {
		return nil, err
	}
	vals, err := float32sOf(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vals, nil
}

// ReadTensorFile reads the tensor at path for want as ReadTensor does,
// converted to want's dtype (where want.DType is set) exactly or refused.
// Its shape is the file's; of a raw file, want's, or nil where want has a
// batch or a dimension given at run time (the run's sizes give them).
func ReadTensorFile(path string, want ManifestTensor) (Tensor, error) {
	t, err := readTensor(path, want)
	if err != nil || want.DType == "" || t.DType.String() == want.DType {
		return t, err
	}
	dt, err := ParseDType(want.DType)
	if err != nil {
		return Tensor{}, fmt.Errorf("%s: %w", want.Name, err)
	}
	out, err := convertTensor(t, dt)
	if err != nil {
		return Tensor{}, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// readTensor reads the file at path for want in the file's own dtype,
// checking its shape.
func readTensor(path string, want ManifestTensor) (Tensor, error) {
	t, sized, err := readTensorFile(path, want)
	if err != nil || !sized {
		return t, err
	}
	free := func(k int) bool { return want.Batched && k == 0 || slices.Contains(want.DimAxes, k) }
	ok := len(t.Shape) == len(want.Shape)
	for k := 0; ok && k < len(t.Shape); k++ {
		ok = int(t.Shape[k]) == want.Shape[k] || free(k) && t.Shape[k] > 0
	}
	if !ok {
		got := ManifestTensor{Shape: ints(t.Shape)}
		return Tensor{}, fmt.Errorf("%s: shape %s, %s takes %s", path, got.dims(), want.Name, want.dims())
	}
	return t, nil
}

// readTensorFile reads the file at path as readTensor does, checking the
// size of raw float32 only; sized says whether the file gave the shape.
func readTensorFile(path string, want ManifestTensor) (t Tensor, sized bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return t, false, err
	}
	switch {
	case bytes.HasPrefix(data, npy.Magic[:]):
		t, err = decodeNpy(data)
	case strings.EqualFold(filepath.Ext(path), ".pb"):
		var g *graph.Tensor
		if _, g, err = onnx.DecodeTensor(data); err == nil {
			if g.DType.String() != want.DType && want.DType != "" {
				err = fmt.Errorf("a tensor of %s, the model takes %s", g.DType, want.DType)
			} else {
				t, err = fromGraphTensor(g)
			}
		}
	default:
		raw := NewTensor(nil, floatsOf(data))
		raw.Name = want.Name
		if want.Batched || len(want.DimAxes) > 0 {
			if len(data) > 0 && len(data)%4 == 0 {
				return raw, false, nil // the run checks the size at its batch and value
			}
		} else if len(data) == 4*want.Elems() {
			raw.Shape = shape64(want.Shape)
			return raw, false, nil
		}
		return t, false, fmt.Errorf("%s: %d bytes of raw float32, %s takes %d (%d values)", path, len(data), want, 4*want.Elems(), want.Elems())
	}
	if err != nil {
		return Tensor{}, false, fmt.Errorf("%s: %w", path, err)
	}
	t.Name = want.Name
	return t, true, nil
}

// WriteTensor writes data, float32 values of t's shape, to path in the
// format its extension names (as float32, whatever t's dtype).
func WriteTensor(path string, t ManifestTensor, data []float32) error {
	if len(data) != t.Elems() {
		return fmt.Errorf("%s: %d values for shape %v", t.Name, len(data), t.Shape)
	}
	ft := NewTensor(shape64(t.Shape), data)
	ft.Name = t.Name
	return WriteTensorFile(path, ft)
}

// WriteTensorFile writes t to path in the format its extension names:
// .npy and .pb in t's dtype, anything else as raw float32. A .pb tensor
// is named t.Name.
func WriteTensorFile(path string, t Tensor) error {
	if n := graph.NumElems(ints(t.Shape)) * t.DType.Size(); t.DType.Size() == 0 || len(t.Data) != n {
		return fmt.Errorf("%s: %d bytes of %s for shape %v", t.Name, len(t.Data), t.DType, t.Shape)
	}
	var out []byte
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		out, err = encodeNpy(t)
	case ".pb":
		var g *graph.Tensor
		if g, err = graphTensor(t); err == nil {
			out, err = onnx.EncodeTensor(t.Name, g)
		}
	default:
		var vals []float32
		vals, err = float32sOf(t)
		out = floatBytes(vals)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// npyDTypes are the .npy element types tensors are read from and written
// as: NumPy's kind and size, after the byte order.
var npyDTypes = map[string]DType{
	"f4": Float32, "f2": Float16, "i8": Int64, "i4": Int32, "i2": Int16, "i1": Int8,
	"u1": Uint8, "u2": Uint16, "u4": Uint32, "b1": Bool,
}

// decodeNpy reads a .npy file in its dtype.
func decodeNpy(data []byte) (t Tensor, err error) {
	// npyio's header parser indexes what it expects to find: a damaged
	// header is an error here, not a crash.
	defer func() {
		if r := recover(); r != nil {
			t, err = Tensor{}, fmt.Errorf("a damaged .npy header (%v)", r)
		}
	}()
	body := bytes.NewReader(data)
	r, err := npy.NewReader(body)
	if err != nil {
		return t, fmt.Errorf("reading the .npy header: %w", err)
	}
	h := r.Header.Descr
	descr := strings.Trim(h.Type, `'"`)
	dt, ok := npyDTypes[strings.TrimLeft(descr, "<>=|")]
	if !ok {
		return t, fmt.Errorf(".npy of dtype %s: the model takes float32 ('<f4'; convert with x.astype(np.float32)), or integers and bools for inputs of those types", descr)
	}
	if h.Fortran {
		return t, fmt.Errorf(".npy in Fortran order: the model takes C order (np.ascontiguousarray)")
	}
	n := 1
	for _, d := range h.Shape {
		if d < 0 || d > 0 && n > len(data)/d {
			return t, fmt.Errorf(".npy of shape %v: not a shape (the file holds %d bytes of data)", h.Shape, body.Len())
		}
		n *= d
	}
	if body.Len() != n*dt.Size() {
		return t, fmt.Errorf(".npy of shape %v holds %d bytes of data, want %d", h.Shape, body.Len(), n*dt.Size())
	}
	shape := shape64(h.Shape)
	switch dt {
	case Float32:
		return readNpy[float32](r, shape)
	case Float16:
		var v []npyfloat16.Num
		if err := r.Read(&v); err != nil {
			return Tensor{}, fmt.Errorf("reading .npy data: %w", err)
		}
		return NewTensor(shape, convert(v, func(x npyfloat16.Num) float16.Float16 { return float16.Frombits(x.Uint16()) })), nil
	case Int64:
		return readNpy[int64](r, shape)
	case Int32:
		return readNpy[int32](r, shape)
	case Int16:
		return readNpy[int16](r, shape)
	case Int8:
		return readNpy[int8](r, shape)
	case Uint8:
		return readNpy[uint8](r, shape)
	case Uint16:
		return readNpy[uint16](r, shape)
	case Uint32:
		return readNpy[uint32](r, shape)
	default:
		return readNpy[bool](r, shape)
	}
}

// readNpy reads the data of a .npy file whose dtype is T's.
func readNpy[T Element](r *npy.Reader, shape []int64) (Tensor, error) {
	var v []T
	if err := r.Read(&v); err != nil {
		return Tensor{}, fmt.Errorf("reading .npy data: %w", err)
	}
	return NewTensor(shape, v), nil
}

// encodeNpy writes t as a .npy file of its dtype, in C order.
func encodeNpy(t Tensor) ([]byte, error) {
	if slices.Contains(t.Shape, 0) {
		// npyio takes a shape from nested slices, which cannot say [2, 0, 3].
		return nil, fmt.Errorf("shape %v holds no elements: npyio cannot write it as .npy (use --format pb)", t.Shape)
	}
	var v any
	var err error
	half := false
	switch t.DType {
	case Float32:
		v, err = npyValue[float32](t)
	case Float16:
		// npyio v0.14 reads float16 but cannot write it (its marshaller
		// panics on float16.Num): the bits go out as uint16, and the
		// header's '<u2' says '<f2' instead (the same length).
		var h []float16.Float16
		if h, err = Values[float16.Float16](t); err == nil {
			v = npyNest(t.Shape, convert(h, float16.Float16.Bits))
			half = true
		}
	case Int64:
		v, err = npyValue[int64](t)
	case Int32:
		v, err = npyValue[int32](t)
	case Int16:
		v, err = npyValue[int16](t)
	case Int8:
		v, err = npyValue[int8](t)
	case Uint8:
		v, err = npyValue[uint8](t)
	case Uint16:
		v, err = npyValue[uint16](t)
	case Uint32:
		v, err = npyValue[uint32](t)
	case Bool:
		v, err = npyValue[bool](t)
	default:
		err = fmt.Errorf("no .npy dtype for %s", t.DType)
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := npy.Write(&buf, v); err != nil {
		return nil, fmt.Errorf("writing .npy: %w", err)
	}
	out := buf.Bytes()
	if half {
		end := bytes.IndexByte(out, '\n')
		k := bytes.Index(out[:max(end, 0)], []byte("'descr': '<u2'"))
		if k < 0 {
			return nil, fmt.Errorf("writing .npy: npyio wrote no '<u2' header for float16's bits")
		}
		copy(out[k+len("'descr': '<"):], "f")
	}
	return out, nil
}

// npyValue returns t's elements as npy.Write takes a tensor of t's shape:
// the element itself for a scalar, else slices nested as deep as the
// shape, the innermost viewing t's data.
func npyValue[T Element](t Tensor) (any, error) {
	vals, err := Values[T](t)
	if err != nil {
		return nil, err
	}
	return npyNest(t.Shape, vals), nil
}

// npyNest returns vals, a slice of a tensor's elements, as npy.Write takes
// a tensor of its shape (see npyValue).
func npyNest[T any](shape []int64, vals []T) any {
	if len(shape) == 0 {
		return vals[0]
	}
	var nest func(v reflect.Value, shape []int64) reflect.Value
	nest = func(v reflect.Value, shape []int64) reflect.Value {
		if len(shape) == 1 {
			return v
		}
		inner := int(shape[1])
		for _, d := range shape[2:] {
			inner *= int(d)
		}
		var rows reflect.Value
		for i := range int(shape[0]) {
			row := nest(v.Slice(i*inner, (i+1)*inner), shape[1:])
			if i == 0 {
				rows = reflect.MakeSlice(reflect.SliceOf(row.Type()), int(shape[0]), int(shape[0]))
			}
			rows.Index(i).Set(row)
		}
		return rows
	}
	return nest(reflect.ValueOf(vals), shape).Interface()
}

// fromGraphTensor is a decoded ONNX tensor as a runtime tensor of its dtype.
func fromGraphTensor(g *graph.Tensor) (Tensor, error) {
	dt, err := ParseDType(g.DType.String())
	if err != nil {
		return Tensor{}, err
	}
	shape := shape64(g.Shape)
	switch dt {
	case Float32:
		return NewTensor(shape, g.F32), nil
	case Float16:
		return fromFloat32(dt, shape, g.F32) // exact: each one a float16
	}
	return convertTensor(NewTensor(shape, g.I64), dt)
}

// graphTensor is t as an ONNX tensor of its dtype.
func graphTensor(t Tensor) (*graph.Tensor, error) {
	dt, ok := graph.DTypeFromONNX(int32(t.DType))
	if !ok {
		return nil, fmt.Errorf("no ONNX tensor of %s", t.DType)
	}
	g := &graph.Tensor{DType: dt, Shape: ints(t.Shape)}
	var err error
	if dt.IsFloat() {
		g.F32, err = float32sOf(t)
	} else {
		g.I64, err = int64sOf(t)
	}
	return g, err
}
