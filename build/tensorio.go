package build

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tessera/graph"
	"tessera/graph/onnx"
)

// Tensor files: what `tune run` reads and writes.
//
//	.npy        NumPy's format, float32 ('<f4'), C order, versions 1 to 3
//	.pb         an ONNX TensorProto (the input_N.pb files of ONNX's test data)
//	otherwise   raw little-endian float32, the shape taken from the manifest
//
// A file is read as .npy when it starts with NumPy's magic, whatever its
// name. Shapes are checked: a .npy or .pb tensor must have exactly the
// shape the model takes, a raw file exactly its number of bytes.

const npyMagic = "\x93NUMPY"

// ReadTensor reads the tensor at path for want, checking its shape (of a
// batched tensor, every dimension but the batch; of one with dimensions
// given at run time, every dimension but those).
func ReadTensor(path string, want TensorInfo) ([]float32, error) {
	_, vals, err := readTensor(path, want)
	return vals, err
}

// readTensor is ReadTensor that also returns the tensor's shape, where its
// file has one (nil for raw float32).
func readTensor(path string, want TensorInfo) ([]int, []float32, error) {
	shape, vals, err := readTensorFile(path, want)
	if err != nil || shape == nil {
		return nil, vals, err
	}
	free := func(k int) bool { return want.Batched && k == 0 || slices.Contains(want.DimAxes, k) }
	ok := len(shape) == len(want.Shape)
	for k := 0; ok && k < len(shape); k++ {
		ok = shape[k] == want.Shape[k] || free(k) && shape[k] > 0
	}
	if !ok {
		got := TensorInfo{Shape: shape}
		return nil, nil, fmt.Errorf("%s: shape %s, %s takes %s", path, got.dims(), want.Name, want.dims())
	}
	return shape, vals, nil
}

// readTensorFile reads the file at path as ReadTensor does, checking the
// size of raw float32 only.
func readTensorFile(path string, want TensorInfo) ([]int, []float32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var shape []int
	var vals []float32
	switch {
	case strings.HasPrefix(string(data), npyMagic):
		shape, vals, err = decodeNpy(data)
	case strings.EqualFold(filepath.Ext(path), ".pb"):
		var t *graph.Tensor
		if _, t, err = onnx.DecodeTensor(data); err == nil {
			if t.DType.String() != want.DType && want.DType != "" {
				err = fmt.Errorf("a tensor of %s, the model takes %s", t.DType, want.DType)
			} else {
				shape = t.Shape
				vals, err = t.KernelData()
			}
		}
	default:
		if len(want.DimAxes) > 0 && len(data) > 0 && len(data)%4 == 0 {
			return nil, floatsOf(data), nil // the run checks the size at its value
		}
		if want.Batched && len(data) > 0 && len(data)%(4*want.Elems()) == 0 {
			return nil, floatsOf(data), nil // samples of a batched input
		}
		if len(data) != 4*want.Elems() {
			return nil, nil, fmt.Errorf("%s: %d bytes of raw float32, %s takes %d (%d values)", path, len(data), want, 4*want.Elems(), want.Elems())
		}
		return nil, floatsOf(data), nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if shape == nil {
		shape = []int{}
	}
	return shape, vals, nil
}

// WriteTensor writes t's data to path, in the format its extension names.
func WriteTensor(path string, t TensorInfo, data []float32) error {
	if len(data) != t.Elems() {
		return fmt.Errorf("%s: %d values for shape %v", t.Name, len(data), t.Shape)
	}
	var out []byte
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		out = encodeNpy(t.Shape, data)
	case ".pb":
		var err error
		if out, err = onnx.EncodeTensor(t.Name, graph.Float32Tensor(t.Shape, data)); err != nil {
			return err
		}
	default:
		out = floatBytes(data)
	}
	return os.WriteFile(path, out, 0o644)
}

// decodeNpy reads a float32 (or int64, int32, uint8, bool) C-order .npy
// file.
func decodeNpy(data []byte) ([]int, []float32, error) {
	if len(data) < 10 {
		return nil, nil, fmt.Errorf("truncated .npy header")
	}
	var hlen, start int
	switch data[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(data[8:])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, nil, fmt.Errorf("truncated .npy header")
		}
		hlen, start = int(binary.LittleEndian.Uint32(data[8:])), 12
	default:
		return nil, nil, fmt.Errorf(".npy version %d.%d is not supported", data[6], data[7])
	}
	if start+hlen > len(data) {
		return nil, nil, fmt.Errorf("truncated .npy header")
	}
	header := string(data[start : start+hlen])
	descr, err := npyField(header, "descr")
	if err != nil {
		return nil, nil, err
	}
	d := strings.Trim(descr, `'"`)
	size, ok := npyInts[d]
	if d != "<f4" && d != "=f4" && !ok {
		return nil, nil, fmt.Errorf(".npy of dtype %s: the model takes float32 ('<f4'; convert with x.astype(np.float32)), or integers and bools for inputs of those types", d)
	}
	if fo, err := npyField(header, "fortran_order"); err != nil || fo != "False" {
		return nil, nil, fmt.Errorf(".npy in Fortran order: the model takes C order (np.ascontiguousarray)")
	}
	shapeStr, err := npyField(header, "shape")
	if err != nil {
		return nil, nil, err
	}
	shape := []int{}
	for _, f := range strings.Split(strings.Trim(shapeStr, "()"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 {
			return nil, nil, fmt.Errorf(".npy shape %s", shapeStr)
		}
		shape = append(shape, d)
	}
	body := data[start+hlen:]
	if !ok {
		size = 4
	}
	if len(body) != size*graph.NumElems(shape) {
		return nil, nil, fmt.Errorf(".npy of shape %v holds %d bytes of data, want %d", shape, len(body), size*graph.NumElems(shape))
	}
	if !ok {
		return shape, floatsOf(body), nil
	}
	t := &graph.Tensor{DType: graph.Int64, Shape: shape, I64: make([]int64, graph.NumElems(shape))}
	for i := range t.I64 {
		b := body[size*i:]
		switch size {
		case 8:
			t.I64[i] = int64(binary.LittleEndian.Uint64(b))
		case 4:
			t.I64[i] = int64(int32(binary.LittleEndian.Uint32(b)))
		default:
			t.I64[i] = int64(b[0])
		}
	}
	vals, err := t.KernelData()
	return shape, vals, err
}

// npyInts are the integer and bool .npy dtypes an input of integer or
// bool type may be read from, with their sizes; the values reach the
// model as float32 (exact within ±2^24).
var npyInts = map[string]int{"<i8": 8, "<i4": 4, "|u1": 1, "|b1": 1}

// npyField returns the value of key in a .npy header dict: a quoted
// string, a word, or a parenthesized tuple.
func npyField(header, key string) (string, error) {
	i := strings.Index(header, "'"+key+"'")
	if i < 0 {
		return "", fmt.Errorf(".npy header has no %q", key)
	}
	rest := strings.TrimSpace(header[i+len(key)+2:])
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", fmt.Errorf(".npy header: bad %q", key)
	}
	rest = strings.TrimSpace(rest)
	end := strings.IndexAny(rest, ",}")
	if strings.HasPrefix(rest, "(") {
		end = strings.IndexByte(rest, ')') + 1
	}
	if end <= 0 {
		return "", fmt.Errorf(".npy header: bad %q", key)
	}
	return strings.TrimSpace(rest[:end]), nil
}

// encodeNpy writes a version 1.0 .npy file of float32 in C order.
func encodeNpy(shape []int, data []float32) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	header := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", tuple)
	// Pad with spaces so that the data starts at a multiple of 64 bytes.
	total := 10 + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	out := append([]byte(npyMagic), 1, 0)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(header)))
	out = append(out, header...)
	return append(out, floatBytes(data)...)
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
