package quantize

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"tessera/graph"
)

// npyTypes maps the .npy dtypes a calibration file may hold to the graph's
// dtypes and their sizes.
var npyTypes = map[string]struct {
	dt   graph.DType
	size int
}{
	"<f4": {graph.Float32, 4},
	"<i8": {graph.Int64, 8},
	"<i4": {graph.Int32, 4},
	"<i2": {graph.Int16, 2},
	"|i1": {graph.Int8, 1},
	"|u1": {graph.Uint8, 1},
	"<u2": {graph.Uint16, 2},
	"<u4": {graph.Uint32, 4},
	"|b1": {graph.Bool, 1},
}

// npyNames names the .npy dtypes no input has, for errors.
var npyNames = map[string]string{"<f8": "float64", "<f2": "float16", "<u8": "uint64", "<c8": "complex64", "<c16": "complex128"}

// ReadNpy reads a .npy file (versions 1 to 3, C order, little-endian) as
// a tensor.
func ReadNpy(path string) (*graph.Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := decodeNpy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func decodeNpy(data []byte) (*graph.Tensor, error) {
	if !strings.HasPrefix(string(data), "\x93NUMPY") || len(data) < 10 {
		return nil, fmt.Errorf("not a .npy file (NumPy's np.save writes one)")
	}
	var hlen, start int
	switch data[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(data[8:])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, fmt.Errorf("truncated .npy header")
		}
		hlen, start = int(binary.LittleEndian.Uint32(data[8:])), 12
	default:
		return nil, fmt.Errorf(".npy version %d.%d is not supported", data[6], data[7])
	}
	if start+hlen > len(data) {
		return nil, fmt.Errorf("truncated .npy header")
	}
	header := string(data[start : start+hlen])
	descr, err := npyField(header, "descr")
	if err != nil {
		return nil, err
	}
	d := normDescr(strings.Trim(descr, `'"`))
	typ, ok := npyTypes[d]
	if !ok {
		name := npyNames[d]
		if name == "" {
			name = "dtype " + d
		}
		return nil, fmt.Errorf("%s values ('%s'): a calibration file holds the input's own type (float32: x.astype(np.float32))", name, d)
	}
	if fo, err := npyField(header, "fortran_order"); err != nil || fo != "False" {
		return nil, fmt.Errorf("Fortran order: a calibration file is in C order (np.ascontiguousarray)")
	}
	shapeStr, err := npyField(header, "shape")
	if err != nil {
		return nil, err
	}
	shape := []int{}
	for _, f := range strings.Split(strings.Trim(shapeStr, "()"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad .npy shape %s", shapeStr)
		}
		shape = append(shape, n)
	}
	body := data[start+hlen:]
	n := graph.NumElems(shape)
	if len(body) != typ.size*n {
		return nil, fmt.Errorf(".npy of shape %v holds %d bytes of data, want %d", shape, len(body), typ.size*n)
	}
	t := &graph.Tensor{DType: typ.dt, Shape: shape}
	if typ.dt == graph.Float32 {
		t.F32 = make([]float32, n)
		for i := range t.F32 {
			t.F32[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		}
		return t, nil
	}
	t.I64 = make([]int64, n)
	for i := range t.I64 {
		b := body[typ.size*i:]
		var v int64
		switch typ.size {
		case 8:
			v = int64(binary.LittleEndian.Uint64(b))
		case 4:
			v = int64(binary.LittleEndian.Uint32(b))
		case 2:
			v = int64(binary.LittleEndian.Uint16(b))
		default:
			v = int64(b[0])
		}
		t.I64[i] = typ.dt.Wrap(v)
	}
	return t, nil
}

// normDescr spells a dtype as npyTypes does: native order ('=') is
// little-endian here, and one-byte types have no order ('|').
func normDescr(d string) string {
	if len(d) < 3 {
		return d
	}
	order, kind := d[:1], d[1:]
	if order == "=" {
		order = "<"
	}
	if strings.HasSuffix(kind, "1") && order != ">" {
		order = "|"
	}
	return order + kind
}

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

// EncodeNpy writes t as a version 1.0 .npy file (float32, or the integer
// dtypes ReadNpy reads).
func EncodeNpy(t *graph.Tensor) ([]byte, error) {
	descr := ""
	size := 0
	for d, typ := range npyTypes {
		if typ.dt == t.DType {
			descr, size = d, typ.size
		}
	}
	if descr == "" {
		return nil, fmt.Errorf("no .npy dtype for %s", t.DType)
	}
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(t.Shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	total := 10 + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	out := append([]byte("\x93NUMPY"), 1, 0)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(header)))
	out = append(out, header...)
	for i := range t.Len() {
		if t.DType == graph.Float32 {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(t.F32[i]))
			continue
		}
		v := uint64(t.I64[i])
		switch size {
		case 8:
			out = binary.LittleEndian.AppendUint64(out, v)
		case 4:
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		case 2:
			out = binary.LittleEndian.AppendUint16(out, uint16(v))
		default:
			out = append(out, byte(v))
		}
	}
	return out, nil
}
