package assemble

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/internal/pytest"
	"github.com/tessera-ml/tessera/tsrt"
)

// dtypeSamples are a tensor of each dtype a model takes, with its
// extremes among its values.
func dtypeSamples() []tsrt.Tensor {
	shape := []int64{2, 3}
	return []tsrt.Tensor{
		tsrt.NewTensor(shape, []float32{1, -2, 3.5, float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32}),
		tsrt.NewTensor(shape, []int64{math.MinInt64, -1, 0, 1, 1<<53 + 1, math.MaxInt64}),
		tsrt.NewTensor(shape, []int32{math.MinInt32, -1, 0, 1, 1<<24 + 1, math.MaxInt32}),
		tsrt.NewTensor(shape, []int16{math.MinInt16, -1, 0, 1, 300, math.MaxInt16}),
		tsrt.NewTensor(shape, []int8{math.MinInt8, -1, 0, 1, 100, math.MaxInt8}),
		tsrt.NewTensor(shape, []uint8{0, 1, 2, 127, 128, math.MaxUint8}),
		tsrt.NewTensor(shape, []uint16{0, 1, 2, 300, 40000, math.MaxUint16}),
		tsrt.NewTensor(shape, []uint32{0, 1, 2, 1 << 24, 1<<31 + 1, math.MaxUint32}),
		tsrt.NewTensor(shape, []bool{true, false, false, true, true, false}),
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
	descr := map[tsrt.DType]string{tsrt.Float32: "<f4", tsrt.Int64: "<i8", tsrt.Int32: "<i4", tsrt.Int16: "<i2", tsrt.Int8: "|i1",
		tsrt.Uint8: "|u1", tsrt.Uint16: "<u2", tsrt.Uint32: "<u4", tsrt.Bool: "|b1"}
	dir := t.TempDir()
	for _, want := range dtypeSamples() {
		want.Name = "t"
		info := TensorInfo{Name: "t", Shape: ints(want.Shape), DType: want.DType.String()}
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
		want := tsrt.NewTensor(shape, []int64{7, -8, 9, 10, -11, 12}[:graph.NumElems(ints(shape))])
		path := filepath.Join(dir, fmt.Sprintf("shape%d.npy", len(shape)))
		if err := WriteTensorFile(path, want); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensorFile(path, TensorInfo{Name: "s", Shape: ints(shape), DType: "int64"})
		if err != nil || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("shape %v: read %v %v (%v)", shape, got.Shape, got.Data, err)
		}
	}
	if err := WriteTensorFile(filepath.Join(dir, "empty.npy"), tsrt.NewTensor([]int64{2, 0}, []float32{})); err == nil || !strings.Contains(err.Error(), "use --format pb") {
		t.Errorf("a tensor of no elements as .npy: %v", err)
	}
	// Raw files are float32 whatever the tensor's dtype.
	raw := filepath.Join(dir, "int.bin")
	if err := WriteTensorFile(raw, tsrt.NewTensor([]int64{3}, []int64{-1, 0, 1 << 24})); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(raw); !bytes.Equal(data, floatBytes([]float32{-1, 0, 1 << 24})) {
		t.Errorf("raw int64: %v", data)
	}
	if err := WriteTensorFile(raw, tsrt.NewTensor([]int64{1}, []int64{1<<24 + 1})); err == nil || !strings.Contains(err.Error(), "exact only within") {
		t.Errorf("raw int64 beyond 2^24: %v", err)
	}
}

// TestTensorFileConversions: a .npy file given to an input of another
// dtype is taken where every value is one of that dtype, and refused
// naming the first that is not.
func TestTensorFileConversions(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		file tsrt.Tensor
		to   string
		want tsrt.Tensor // the converted tensor; zero: an error
		err  string
	}{
		{file: tsrt.NewTensor([]int64{3}, []int32{-5, 0, 1 << 24}), to: "int64", want: tsrt.NewTensor([]int64{3}, []int64{-5, 0, 1 << 24})},
		{file: tsrt.NewTensor([]int64{3}, []uint8{0, 200, 255}), to: "int64", want: tsrt.NewTensor([]int64{3}, []int64{0, 200, 255})},
		{file: tsrt.NewTensor([]int64{3}, []bool{true, false, true}), to: "int64", want: tsrt.NewTensor([]int64{3}, []int64{1, 0, 1})},
		{file: tsrt.NewTensor([]int64{3}, []int64{-1 << 24, 0, 1 << 24}), to: "float32", want: tsrt.NewTensor([]int64{3}, []float32{-1 << 24, 0, 1 << 24})},
		{file: tsrt.NewTensor([]int64{3}, []int64{0, 1, 0}), to: "bool", want: tsrt.NewTensor([]int64{3}, []bool{false, true, false})},
		{file: tsrt.NewTensor([]int64{3}, []int64{-128, 5, 127}), to: "int8", want: tsrt.NewTensor([]int64{3}, []int8{-128, 5, 127})},
		{file: tsrt.NewTensor([]int64{3}, []float32{1.4, -2.6, 2.5}), to: "int64", want: tsrt.NewTensor([]int64{3}, []int64{1, -3, 2})}, // float32 rounds, as Model.Run
		{file: tsrt.NewTensor([]int64{3}, []int64{0, 300, 1}), to: "int8", err: "element 1 of int64 is 300: the model takes int8"},
		{file: tsrt.NewTensor([]int64{3}, []int32{0, -1, 1}), to: "uint32", err: "element 1 of int32 is -1: the model takes uint32"},
		{file: tsrt.NewTensor([]int64{3}, []int64{0, 0, 1<<24 + 1}), to: "float32", err: "element 2 of int64 is 16777217: the model takes float32, exact only within ±16777216"},
		{file: tsrt.NewTensor([]int64{3}, []int64{0, 2, 1}), to: "bool", err: "element 1 of int64 is 2: the model takes bool (0 or 1)"},
	} {
		path := filepath.Join(dir, fmt.Sprintf("c%d.npy", i))
		if err := WriteTensorFile(path, c.file); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTensorFile(path, TensorInfo{Name: "x", Shape: []int{3}, DType: c.to})
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
	if got, err := ReadTensorFile(path, TensorInfo{Name: "x", Shape: []int{2}, DType: "int64"}); err != nil || !bytes.Equal(got.Data, tsrt.NewTensor([]int64{2}, []int64{256, -2}).Data) {
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
		if _, err := ReadTensorFile(path, TensorInfo{Name: "x", Shape: []int{3}, DType: "float32"}); err == nil {
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
		got, err := ReadTensorFile(path, TensorInfo{Name: "t", Shape: []int{2, 3}, DType: want.DType.String()})
		if err != nil || got.DType != want.DType || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("numpy's %s: %s %v (%v), want %v", want.DType, got.DType, got.Data, err, want.Data)
		}
	}
}

// builtIntegers builds a model of int64 outputs: best, the ArgMax over
// axis 1 of scores (float32 [2, 6]), and next, ids (int64 [3]) plus one.
func builtIntegers(t *testing.T) string {
	t.Helper()
	g := graph.New("ints", 17)
	g.AddInput("scores", graph.Float32, []int{2, 6})
	g.AddInput("ids", graph.Int64, []int{3})
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "best", OpType: "ArgMax", Inputs: []string{"scores"}, Outputs: []string{"best"}, Attrs: axisAttr(1)})
	g.AddNode(&graph.Node{Name: "next", OpType: "Add", Inputs: []string{"ids", "one"}, Outputs: []string{"next"}})
	g.Outputs = []string{"best", "next"}
	p := prepare(t, g)
	dir := t.TempDir()
	if _, err := Build(context.Background(), p.g, p.plan, dir, Options{Target: testTarget(recordsKey, nil)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunFilesIntegers: tune run's files keep integers exact end to end.
// An int32 .npy file feeds an int64 input; the model's int64 outputs
// (an ArgMax, and that input plus one) are written as int64 .npy files
// and compare equal to int64 references.
func TestRunFilesIntegers(t *testing.T) {
	m, err := Open(builtIntegers(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	work := t.TempDir()
	file := func(name string, v tsrt.Tensor) string {
		path := filepath.Join(work, name)
		if err := WriteTensorFile(path, v); err != nil {
			t.Fatal(err)
		}
		return path
	}
	scores := file("scores.npy", tsrt.NewTensor([]int64{2, 6}, []float32{0, 1, 9, 2, 0, 0, 5, 4, 3, 2, 1, 0}))
	ids := file("ids.npy", tsrt.NewTensor([]int64{3}, []int32{-5, 0, 1<<24 - 2}))
	wantNext := tsrt.NewTensor([]int64{3}, []int64{-4, 1, 1<<24 - 1})
	refNext := file("next_ref.npy", wantNext)
	out := filepath.Join(work, "out")
	written, err := m.RunFiles(context.Background(), FileRun{
		Inputs: map[string]string{"scores": scores, "ids": ids}, References: map[string]string{"next": refNext},
		OutDir: out, Format: "npy", RTol: 0, ATol: 0, RunOptions: RunOptions{Threads: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 || written[1].Diff == nil || written[1].Diff.Bad != 0 {
		t.Errorf("written %+v", written)
	}
	for _, c := range []struct {
		name  string
		shape []int
		want  tsrt.Tensor
	}{
		{"best", []int{2, 1}, tsrt.NewTensor([]int64{2, 1}, []int64{2, 0})},
		{"next", []int{3}, wantNext},
	} {
		path := filepath.Join(out, c.name+".npy")
		if d := npyDescr(t, path); d != "<i8" {
			t.Errorf("%s: dtype %s, want <i8", path, d)
		}
		got, err := ReadTensorFile(path, TensorInfo{Name: c.name, Shape: c.shape, DType: "int64"})
		if err != nil || !bytes.Equal(got.Data, c.want.Data) {
			t.Errorf("%s: %v (%v), want %v", path, got.Data, err, c.want.Data)
		}
	}
	// From 2^24 on the runtime refuses an integer, where float32 would
	// round it.
	big := file("big.npy", tsrt.NewTensor([]int64{3}, []int64{0, 0, 1<<24 + 1}))
	if _, err := m.RunFiles(context.Background(), FileRun{Inputs: map[string]string{"scores": scores, "ids": big}, OutDir: out, Format: "npy"}); err == nil {
		t.Errorf("an int64 input beyond 2^24 ran")
	} else {
		t.Logf("beyond 2^24: %v", err)
	}
}
