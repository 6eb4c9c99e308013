package tsrt

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"

	"codeberg.org/sbinet/npyio/npy"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/internal/pytest"
)

// dtypeSamples are a tensor of each dtype a model takes, with its
// extremes among its values.
func dtypeSamples() []Tensor {
	shape := []int64{2, 3}
	return []Tensor{
		NewTensor(shape, []float32{1, -2, 3.5, float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32}),
		NewTensor(shape, []int64{math.MinInt64, -1, 0, 1, 1<<53 + 1, math.MaxInt64}),
		NewTensor(shape, []int32{math.MinInt32, -1, 0, 1, 1<<24 + 1, math.MaxInt32}),
		NewTensor(shape, []int16{math.MinInt16, -1, 0, 1, 300, math.MaxInt16}),
		NewTensor(shape, []int8{math.MinInt8, -1, 0, 1, 100, math.MaxInt8}),
		NewTensor(shape, []uint8{0, 1, 2, 127, 128, math.MaxUint8}),
		NewTensor(shape, []uint16{0, 1, 2, 300, 40000, math.MaxUint16}),
		NewTensor(shape, []uint32{0, 1, 2, 1 << 24, 1<<31 + 1, math.MaxUint32}),
		NewTensor(shape, []bool{true, false, false, true, true, false}),
		NewTensor(shape, []float16.Float16{float16.Fromfloat32(1), float16.Fromfloat32(-2), float16.Fromfloat32(3.5),
			float16.Inf(-1), float16.Fromfloat32(65504), float16.Frombits(1)}), // the largest and the smallest subnormal
	}
}

// npyDescr returns the dtype a .npy file's header declares.
func npyDescr(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := npy.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(r.Header.Descr.Type, `'"`)
}

// TestTensorFileDTypes writes a tensor of each dtype as .npy and .pb and
// reads it back: the same dtype, shape and bytes. A .npy file declares
// the dtype NumPy spells for it.
func TestTensorFileDTypes(t *testing.T) {
	descr := map[DType]string{Float32: "<f4", Float16: "<f2", Int64: "<i8", Int32: "<i4", Int16: "<i2", Int8: "|i1",
		Uint8: "|u1", Uint16: "<u2", Uint32: "<u4", Bool: "|b1"}
	dir := t.TempDir()
	for _, want := range dtypeSamples() {
		want.Name = "t"
		info := ManifestTensor{Name: "t", Shape: ints(want.Shape), DType: want.DType.String()}
		for _, ext := range []string{".npy", ".pb"} {
			path := filepath.Join(dir, want.DType.String()+ext)
			if err := WriteTensorFile(path, want); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			got, err := ReadTensorFile(path, info)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("%s: read %s%v %v, wrote %s%v %v", path, got.DType, got.Shape, got.Data, want.DType, want.Shape, want.Data)
			}
			if ext == ".npy" {
				if d := npyDescr(t, path); d != descr[want.DType] {
					t.Errorf("%s: dtype %s, want %s", path, d, descr[want.DType])
				}
			}
		}
	}
	// Other shapes: a scalar, a vector, ones.
	for _, shape := range [][]int64{{}, {5}, {1, 2, 1, 3}} {
		want := NewTensor(shape, []int64{7, -8, 9, 10, -11, 12}[:graph.NumElems(ints(shape))])
		path := filepath.Join(dir, fmt.Sprintf("shape%d.npy", len(shape)))
		if err := WriteTensorFile(path, want); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensorFile(path, ManifestTensor{Name: "s", Shape: ints(shape), DType: "int64"})
		if err != nil || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("shape %v: read %v %v (%v)", shape, got.Shape, got.Data, err)
		}
	}
	if err := WriteTensorFile(filepath.Join(dir, "empty.npy"), NewTensor([]int64{2, 0}, []float32{})); err == nil || !strings.Contains(err.Error(), "use --format pb") {
		t.Errorf("a tensor of no elements as .npy: %v", err)
	}
	// Raw files are float32 whatever the tensor's dtype.
	raw := filepath.Join(dir, "int.bin")
	if err := WriteTensorFile(raw, NewTensor([]int64{3}, []int64{-1, 0, 1 << 24})); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(raw); !bytes.Equal(data, floatBytes([]float32{-1, 0, 1 << 24})) {
		t.Errorf("raw int64: %v", data)
	}
	if err := WriteTensorFile(raw, NewTensor([]int64{1}, []int64{1<<24 + 1})); err == nil || !strings.Contains(err.Error(), "exact only within") {
		t.Errorf("raw int64 beyond 2^24: %v", err)
	}
}

// TestTensorFileConversions: a .npy file given to an input of another
// dtype is taken where every value is one of that dtype, and refused
// naming the first that is not.
func TestTensorFileConversions(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		file Tensor
		to   string
		want Tensor // the converted tensor; zero: an error
		err  string
	}{
		{file: NewTensor([]int64{3}, []int32{-5, 0, 1 << 24}), to: "int64", want: NewTensor([]int64{3}, []int64{-5, 0, 1 << 24})},
		{file: NewTensor([]int64{3}, []uint8{0, 200, 255}), to: "int64", want: NewTensor([]int64{3}, []int64{0, 200, 255})},
		{file: NewTensor([]int64{3}, []bool{true, false, true}), to: "int64", want: NewTensor([]int64{3}, []int64{1, 0, 1})},
		{file: NewTensor([]int64{3}, []int64{-1 << 24, 0, 1 << 24}), to: "float32", want: NewTensor([]int64{3}, []float32{-1 << 24, 0, 1 << 24})},
		{file: NewTensor([]int64{3}, []int64{0, 1, 0}), to: "bool", want: NewTensor([]int64{3}, []bool{false, true, false})},
		{file: NewTensor([]int64{3}, []int64{-128, 5, 127}), to: "int8", want: NewTensor([]int64{3}, []int8{-128, 5, 127})},
		{file: NewTensor([]int64{3}, []float32{1.4, -2.6, 2.5}), to: "int64", want: NewTensor([]int64{3}, []int64{1, -3, 2})}, // float32 rounds, as Model.Run
		{file: NewTensor([]int64{3}, []int64{0, 300, 1}), to: "int8", err: "element 1 of int64 is 300: the model takes int8"},
		{file: NewTensor([]int64{3}, []int32{0, -1, 1}), to: "uint32", err: "element 1 of int32 is -1: the model takes uint32"},
		{file: NewTensor([]int64{3}, []int64{0, 0, 1<<24 + 1}), to: "float32", err: "element 2 of int64 is 16777217: the model takes float32, exact only within ±16777216"},
		{file: NewTensor([]int64{3}, []int64{0, 2, 1}), to: "bool", err: "element 1 of int64 is 2: the model takes bool (0 or 1)"},
	} {
		path := filepath.Join(dir, fmt.Sprintf("c%d.npy", i))
		if err := WriteTensorFile(path, c.file); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensorFile(path, ManifestTensor{Name: "x", Shape: []int{3}, DType: c.to})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s to %s: %v, want an error containing %q", c.file.DType, c.to, err, c.err)
			}
			continue
		}
		if err != nil || got.DType != c.want.DType || !bytes.Equal(got.Data, c.want.Data) {
			t.Errorf("%s to %s: %s %v (%v), want %s %v", c.file.DType, c.to, got.DType, got.Data, err, c.want.DType, c.want.Data)
		}
	}
	// Big-endian files read too.
	header := "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n"
	data := append(append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), 0), header...)
	data = append(data, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xfe)
	path := filepath.Join(dir, "big.npy")
	os.WriteFile(path, data, 0o644)
	if got, err := ReadTensorFile(path, ManifestTensor{Name: "x", Shape: []int{2}, DType: "int64"}); err != nil || !bytes.Equal(got.Data, NewTensor([]int64{2}, []int64{256, -2}).Data) {
		t.Errorf("big-endian int32: %v %v", got.Data, err)
	}
}

// TestTensorFileDamaged: .npy headers npyio's parser would index past are
// errors, not crashes.
func TestTensorFileDamaged(t *testing.T) {
	dir := t.TempDir()
	npyFile := func(header string) []byte {
		return append(append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), 0), header...)
	}
	for i, data := range [][]byte{
		npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), // no newline
		npyFile("{'shape': (3,), 'fortran_order': False, 'descr': '<f4', }\n"),
		npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': }\n"),
		npyFile("{}\n"),
		npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }\n"),
		npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n"),
		[]byte("\x93NUMPY\x01\x00\xff\x7f"),
		[]byte("\x93NUMPY\x09\x00"),
	} {
		path := filepath.Join(dir, fmt.Sprintf("d%d.npy", i))
		os.WriteFile(path, data, 0o644)
		if _, err := ReadTensorFile(path, ManifestTensor{Name: "x", Shape: []int{3}, DType: "float32"}); err == nil {
			t.Errorf("%q reads", data)
		} else {
			t.Log(err)
		}
	}
}

// TestTensorFilesNumPy: NumPy reads the files of every dtype written here
// as their dtype, shape and values, and files NumPy writes of every dtype
// read here exactly.
func TestTensorFilesNumPy(t *testing.T) {
	py := pytest.Require(t)
	dir := t.TempDir()
	for _, s := range dtypeSamples() {
		if err := WriteTensorFile(filepath.Join(dir, "go_"+s.DType.String()+".npy"), s); err != nil {
			t.Fatal(err)
		}
	}
	script := `
import sys, os
import numpy as np
d = sys.argv[1]
samples = {
    "float32": [1, -2, 3.5, -np.inf, np.finfo(np.float32).max, np.finfo(np.float32).smallest_subnormal],
    "int64": [np.iinfo(np.int64).min, -1, 0, 1, 2**53 + 1, np.iinfo(np.int64).max],
    "int32": [np.iinfo(np.int32).min, -1, 0, 1, 2**24 + 1, np.iinfo(np.int32).max],
    "int16": [np.iinfo(np.int16).min, -1, 0, 1, 300, np.iinfo(np.int16).max],
    "int8": [-128, -1, 0, 1, 100, 127],
    "uint8": [0, 1, 2, 127, 128, 255],
    "uint16": [0, 1, 2, 300, 40000, 65535],
    "uint32": [0, 1, 2, 2**24, 2**31 + 1, 2**32 - 1],
    "bool": [True, False, False, True, True, False],
    "float16": [1, -2, 3.5, -np.inf, 65504, np.finfo(np.float16).smallest_subnormal],
}
for name, vals in samples.items():
    want = np.array(vals, dtype=name).reshape(2, 3)
    got = np.load(os.path.join(d, "go_" + name + ".npy"))
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (name, got)
    np.save(os.path.join(d, "np_" + name + ".npy"), want)
print("ok")
`
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	for _, want := range dtypeSamples() {
		path := filepath.Join(dir, "np_"+want.DType.String()+".npy")
		got, err := ReadTensorFile(path, ManifestTensor{Name: "t", Shape: []int{2, 3}, DType: want.DType.String()})
		if err != nil || got.DType != want.DType || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("numpy's %s: %s %v (%v), want %v", want.DType, got.DType, got.Data, err, want.Data)
		}
	}
}

func TestTensorFiles(t *testing.T) {
	info := ManifestTensor{Name: "x", Shape: []int{2, 3}, DType: "float32"}
	data := []float32{1, -2, 3.5, float32(math.Inf(1)), 0, 6}
	dir := t.TempDir()
	for _, name := range []string{"x.npy", "x.pb", "x.bin", "x.raw"} {
		path := filepath.Join(dir, name)
		if err := WriteTensor(path, info, data); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensor(path, info)
		if err != nil || !slices.Equal(got, data) {
			t.Errorf("%s: %v, %v", name, got, err)
		}
	}
	// What numpy.save writes for np.arange(3, dtype=np.float32): version
	// 1.0, the data at byte 128.
	header := "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n"
	npy := append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), 0)
	npy = append(append(npy, header...), floatBytes([]float32{0, 1, 2})...)
	wrongShape, err := encodeNpy(NewTensor([]int64{3, 2}, data))
	if err != nil {
		t.Fatal(err)
	}
	vec := ManifestTensor{Name: "v", Shape: []int{3}}
	path := filepath.Join(dir, "numpy-written.dat") // the magic decides, not the name
	os.WriteFile(path, npy, 0o644)
	if got, err := ReadTensor(path, vec); err != nil || !slices.Equal(got, []float32{0, 1, 2}) {
		t.Errorf("numpy's file: %v, %v", got, err)
	}
	pbInt, _ := onnx.EncodeTensor("i", graph.Int64Tensor([]int{2, 3}, []int64{1, 2, 3, 4, 5, 6}))
	f64 := strings.Replace(string(npy), "<f4", "<f8", 1)
	fortran := strings.Replace(strings.Replace(string(npy), "False, ", "True, ", 1), " \n", "  \n", 1)
	for _, c := range []struct {
		name, data string
		want       ManifestTensor
		err        string
	}{
		{"short.bin", "abcd", info, "4 bytes of raw float32, x[2,3] takes 24"},
		{"wrong-shape.npy", string(wrongShape), info, "shape [3,2], x takes [2,3]"},
		{"f64.npy", f64, vec, "dtype <f8"},
		{"fortran.npy", fortran, vec, "Fortran order"},
		{"truncated.npy", string(npy[:132]), vec, "holds 4 bytes of data, want 12"},
		{"int.pb", string(pbInt), info, "int64"},
		{"garbage.pb", "\xff\xff\xff", info, "not an ONNX tensor"},
	} {
		path := filepath.Join(dir, c.name)
		os.WriteFile(path, []byte(c.data), 0o644)
		if _, err := ReadTensor(path, c.want); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
		}
	}
	if _, err := ReadTensor(filepath.Join(dir, "nothere.npy"), info); err == nil {
		t.Errorf("a missing file reads")
	}
}

func TestDiff(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		got, want []float32
		bad       int
		maxAbs    float64
	}{
		{[]float32{1, 2}, []float32{1, 2}, 0, 0},
		{[]float32{1, 2.5}, []float32{1, 2}, 1, 0.5},
		{[]float32{nan, inf}, []float32{nan, inf}, 0, 0},
		{[]float32{nan}, []float32{1}, 1, math.Inf(1)},
		{[]float32{1.0005}, []float32{1}, 0, 0.0005}, // within rtol 1e-3
	} {
		d := Diff(c.got, c.want, 1e-3, 0)
		if d.Bad != c.bad || math.Abs(d.MaxAbs-c.maxAbs) > 1e-6 && !math.IsInf(c.maxAbs, 1) {
			t.Errorf("Diff(%v, %v) = %+v, want %d bad, max abs %g", c.got, c.want, d, c.bad, c.maxAbs)
		}
	}
}
