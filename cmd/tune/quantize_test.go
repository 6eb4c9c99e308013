package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/tsrt"
)

// writeNpy writes a tensor as a .npy file in dir and returns its path.
func writeNpy[T tsrt.Element](t *testing.T, dir, name string, shape []int64, data []T) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := tsrt.WriteTensorFile(path, tsrt.NewTensor(shape, data)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestQuantizeCommand quantizes the tiny model with calibration files,
// bare and named, and checks what it prints and writes; then the errors
// of bad input, none of which leaves a file behind.
func TestQuantizeCommand(t *testing.T) {
	dir := t.TempDir()
	sample := func(name string, seed float32) string {
		v := make([]float32, 3*16*16)
		for i := range v {
			v[i] = seed * float32(i%7-3) / 3
		}
		return writeNpy(t, dir, name, []int64{1, 3, 16, 16}, v)
	}
	s1, s2 := sample("s1.npy", 1), sample("s2.npy", 0.5)
	out := filepath.Join(dir, "tiny.int8.onnx")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"quantize", tiny, "-o", out, "--calibrate", s1, "--calibrate", "input=" + s2}, &stdout, &stderr); code == 0 {
		t.Fatalf("mixed bare and named files were taken: %s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"quantize", tiny, "-o", out, "--calibrate", s1, "--calibrate", s2, "--method", "percentile"}, &stdout, &stderr); code != 0 {
		t.Fatalf("tune quantize: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"calibration: percentile 99.999 of |x| over 2 samples", "quantized nodes: Conv×2 Gemm×1 GlobalAveragePool×1 Relu×2", "3 int8 (3 per channel), 3 biases int32", "output output: scale ", "wrote " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	g, err := onnx.DecodeFile(out)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, n := range g.Nodes {
		counts[n.OpType]++
	}
	if counts["QuantizeLinear"] != 6 || counts["DequantizeLinear"] != 12 || g.Opset != 17 {
		t.Errorf("wrote opset %d with %v", g.Opset, counts)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"quantize", tiny, "-o", out, "--calibrate", "input=" + s1}, &stdout, &stderr); code != 0 {
		t.Fatalf("named file: exit %d\n%s", code, stderr.String())
	}

	// Without calibration files: random inputs, and a warning.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"quantize", tiny, "-o", out, "--random", "2"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "no calibration data: ranges from 2 random inputs; give --calibrate for a model you deploy") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}

	// Bad input: an error naming the file, input or node, and no file.
	wrongShape := writeNpy(t, dir, "shape.npy", []int64{1, 3, 8, 8}, make([]float32, 192))
	wrongType := writeNpy(t, dir, "int.npy", []int64{1, 3, 16, 16}, make([]int64, 768))
	f64 := filepath.Join(dir, "f64.npy")
	header := "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3, 16, 16), }" + strings.Repeat(" ", 52) + "\n"
	f64data := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(header)))...)
	f64data = append(append(f64data, header...), make([]byte, 8*768)...)
	if err := os.WriteFile(f64, f64data, 0o644); err != nil {
		t.Fatal(err)
	}
	tanh := graph.New("tanh", 17)
	tanh.AddInput("x", graph.Float32, []int{2, 3})
	tanh.AddNode(&graph.Node{Name: "t", OpType: "Tanh", Inputs: []string{"x"}, Outputs: []string{"y"}})
	tanh.Outputs = []string{"y"}
	tanhPath := filepath.Join(dir, "tanh.onnx")
	if err := onnx.EncodeFile(tanhPath, tanh); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "never.onnx")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong shape", []string{tiny, "-o", fresh, "--calibrate", wrongShape}, "--calibrate: " + wrongShape + ": shape [1,3,8,8], input input takes [1,3,16,16]"},
		{"wrong dtype", []string{tiny, "-o", fresh, "--calibrate", wrongType}, "--calibrate: " + wrongType + ": int64 values, input input is float32"},
		{"float64 file", []string{tiny, "-o", fresh, "--calibrate", f64}, "--calibrate: " + f64 + ": .npy of dtype <f8"},
		{"missing file", []string{tiny, "-o", fresh, "--calibrate", filepath.Join(dir, "none.npy")}, "none.npy"},
		{"no op to quantize", []string{tanhPath, "-o", fresh}, "no op to quantize"},
		{"output is the input", []string{tiny, "-o", tiny}, "is the input model"},
		{"bad method", []string{tiny, "-o", fresh, "--method", "entropy"}, `method "entropy"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"quantize"}, c.args...), &stdout, &stderr); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.want)
			}
			if _, err := os.Stat(fresh); !os.IsNotExist(err) {
				t.Errorf("a failed run wrote %s", fresh)
			}
		})
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(entries) > 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}
