package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/modelgen"
)

const tiny = "../../testdata/tiny.onnx"

// testPopulation is the evolutionary search's population in the tests that
// tune for real to check what tune does around the search (resuming,
// records, builds, training): a round of 2,048 states × 4 generations is
// most of their time, and package search tests the search itself.
const testPopulation = "128"

// dynamicTiny writes the tiny model with a dynamic batch dimension.
func dynamicTiny(t *testing.T) string {
	t.Helper()
	g, err := modelgen.Tiny(modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = modelgen.Dynamic(g, map[string]map[int]string{"input": {0: "batch"}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dyn.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	return path
}

// bertPath writes a small BERT layer, whose reshapes are computed from
// Shape.
func bertPath(t *testing.T) string {
	g, err := modelgen.BERT(modelgen.BERTConfig{Name: "b", Seq: 8, Hidden: 16, Heads: 2, FFN: 32, Opset: 17}, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bert.onnx")
	if err := modelgen.WriteFile(path, g); err != nil {
		t.Fatal(err)
	}
	return path
}

// ifModel writes a model that branches on its scalar int64 input sr:
// y = x·2 when sr = 16000, else y = x + 1 (x: 2×3 float32).
func ifModel(t *testing.T) string {
	t.Helper()
	branch := func(name, op, k string) *graph.Graph {
		b := graph.New(name, 17)
		b.AddConst(k, graph.Float32Tensor([]int{}, []float32{map[string]float32{"two": 2, "one": 1}[k]}))
		b.AddNode(&graph.Node{Name: op, OpType: op, Inputs: []string{"x", k}, Outputs: []string{name + "_y"}})
		b.Outputs = []string{name + "_y"}
		return b
	}
	g := graph.New("rate", 17)
	g.AddInput("x", graph.Float32, []int{2, 3})
	g.AddInput("sr", graph.Int64, []int{})
	g.AddConst("k16", graph.Int64Tensor([]int{}, []int64{16000}))
	g.AddNode(&graph.Node{Name: "eq", OpType: "Equal", Inputs: []string{"sr", "k16"}, Outputs: []string{"is16"}})
	g.AddNode(&graph.Node{Name: "if", OpType: "If", Inputs: []string{"is16"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{
		"then_branch": {Kind: graph.AttrGraph, G: branch("then", "Mul", "two")},
		"else_branch": {Kind: graph.AttrGraph, G: branch("else", "Add", "one")}}})
	g.Outputs = []string{"y"}
	data, err := onnx.Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rate.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRun(t *testing.T) {
	// The --cpu cases name their machine; $TESSERA_CPU (a test run for
	// another level) would change what the defaults are.
	t.Setenv("TESSERA_CPU", "")
	dyn := dynamicTiny(t)
	rate := ifModel(t)
	garbage := filepath.Join(t.TempDir(), "garbage.onnx")
	os.WriteFile(garbage, []byte("not a model"), 0o644)
	for _, c := range []struct {
		name   string
		args   []string
		status int
		stdout []string // substrings
		stderr []string
	}{
		{"inspect", []string{"inspect", tiny}, 0,
			[]string{"after passes", "BatchNormalization×1", "fused groups (4)", "Conv+Relu", "Reshape+Gemm", "MFLOP", "4 tasks, 4 groups, 0.266 MFLOP per inference"}, nil},
		{"flags after the model", []string{"inspect", tiny, "--no-pass", "fold-batchnorm", "--groups=false", "--no-pass", "convert-layout", "--no-pass", "decompose-batchnorm"}, 0,
			[]string{"Conv+BatchNormalization+Relu", "passes: fuse-qlinear, fold-constants, lookup-tables, remove-noops, merge-reshapes, fuse-layernorm, fuse-gelu, fuse-silu, matmul-scale, cse, dce\n"}, nil},
		{"flags before the model", []string{"inspect", "--input", "input=1,3,16,16", tiny}, 0, []string{"input[1,3,16,16]"}, nil},
		{"bind a dynamic batch", []string{"inspect", dyn, "--input", "input=4,3,16,16"}, 0, []string{"input[4,3,16,16]", "[4,16,16,8]", "output[4,10]"}, nil},
		{"unbound batch", []string{"inspect", dyn}, 1, nil, []string{"tune inspect: ", "input[0] (batch)", "--input"}},
		{"dag", []string{"inspect", tiny, "--dag", "3"}, 0, []string{"task 3 (Reshape+Gemm, key v2-", "= placeholder[1 1 1 16]", "sum("}, nil},
		{"dag out of range", []string{"inspect", tiny, "--dag", "4"}, 1, nil, []string{"--dag 4: the model has 4 tasks"}},
		{"shape arithmetic left", []string{"inspect", bertPath(t), "--no-pass", "fold-constants"}, 1, nil,
			[]string{"unsupported op Shape", "fold-constants pass disabled"}},
		{"no arguments", nil, 1, nil, []string{"usage:", "tune inspect"}},
		{"help", []string{"-h"}, 0, nil, []string{"usage:"}},
		{"inspect help", []string{"inspect", "-h"}, 0, nil, []string{"usage: tune inspect", "-no-pass"}},
		{"inspect without a model", []string{"inspect"}, 1, nil, []string{"usage: tune inspect"}},
		{"two models", []string{"inspect", tiny, tiny}, 1, nil, []string{"usage: tune inspect"}},
		{"missing file", []string{"inspect", "nope.onnx"}, 1, nil, []string{"tune inspect: ", "nope.onnx", "no such file"}},
		{"not a model", []string{"inspect", garbage}, 1, nil, []string{"not an ONNX model"}},
		{"bad input flag", []string{"inspect", tiny, "--input", "input"}, 1, nil, []string{"want name=d0,d1"}},
		{"bad dimension", []string{"inspect", tiny, "--input", "input=1,3x"}, 1, nil, []string{`dimension "3x"`}},
		{"named dimension without a range", []string{"inspect", tiny, "--input", "input=1,x,16,16"}, 1, nil, []string{"dimension 1 is named x", "--range x=lo..hi"}},
		{"not an input", []string{"inspect", tiny, "--input", "weights=1"}, 1, nil, []string{"not a graph input"}},
		{"wrong shape", []string{"inspect", tiny, "--input", "input=1,3,8,8"}, 1, nil, []string{"fixes dimension 2 to 16"}},
		{"If on an input", []string{"inspect", rate}, 1, nil,
			[]string{"If (opset 17) at node if: condition is16 is computed at run time from input sr", "--freeze sr=VALUE"}},
		{"If frozen to its then branch", []string{"inspect", rate, "--freeze", "sr=16000"}, 0, []string{"inputs:  x[2,3]", "frozen:  sr=16000", "Mul"}, nil},
		{"If frozen to its else branch", []string{"inspect", rate, "--freeze", "sr=8000"}, 0, []string{"inputs:  x[2,3]", "Add"}, nil},
		{"frozen to a bad value", []string{"inspect", rate, "--freeze", "sr=16k"}, 1, nil, []string{`--freeze sr: value 0 ("16k") is not a valid int64`}},
		{"frozen to too many values", []string{"inspect", rate, "--freeze", "sr=1,2"}, 1, nil, []string{"2 values for shape []"}},
		{"freezing no input", []string{"inspect", rate, "--freeze", "rate=1"}, 1, nil, []string{"--freeze rate: not a graph input (inputs: x, sr)"}},
		{"bad freeze flag", []string{"inspect", rate, "--freeze", "sr"}, 1, nil, []string{"want name=v0,v1"}},
		{"unknown pass", []string{"inspect", tiny, "--no-pass", "nope"}, 1, nil, []string{`unknown pass "nope"`, "fold-batchnorm"}},
		{"unknown flag", []string{"inspect", tiny, "--nope"}, 1, nil, []string{"flag provided but not defined"}},
		{"unknown command", []string{"inspekt", tiny}, 1, nil, []string{`unknown command "inspekt"`}},
		{"tuning with a bad budget", []string{tiny, "--trials", "-1"}, 1, nil, []string{"must be positive"}},
		{"tuning an unknown target", []string{tiny, "--target", "tpu"}, 1, nil, []string{`--target "tpu": unknown target`, "cpu, opencl, cuda"}},
		{"tuning for cuda without a GPU", []string{tiny, "--target", "cuda"}, 1, nil, []string{"tune: target cuda: no GPU device: tessera-cuda: no CUDA driver"}},
		{"tuning for an unknown cpu", []string{tiny, "--cpu", "pentium9"}, 1, nil, []string{`--cpu: cpu "pentium9": unknown cpu`, "x86-64-v3"}},
		{"tuning for another architecture", []string{tiny, "--cpu", "armv8-a"}, 1, nil, []string{"--cpu armv8-a: this machine", "lacks arch arm64", "tune build --cpu armv8-a"}},
		{"--cpu on a GPU target", []string{tiny, "--target", "opencl", "--cpu", "x86-64-v3"}, 1, nil, []string{"only the cpu target takes --cpu"}},
		{"bf16 on a CPU without it", []string{"build", tiny, "--no-records", "--precision", "bf16", "--cpu", "x86-64-v3", "-o", filepath.Join(t.TempDir(), "b")}, 1, nil,
			[]string{"tune build: --precision bf16: --cpu x86-64-v3 has no bf16 dot-product instructions"}},
		{"bf16 for a GPU", []string{tiny, "--precision", "bf16", "--target", "opencl"}, 1, nil, []string{"--precision bf16: it is for CPU targets"}},
		{"an unknown precision", []string{"inspect", tiny, "--precision", "int4"}, 1, nil, []string{`invalid value "int4" for flag -precision: want one of float32, bf16`}},
		{"machine", []string{"machine", "--cpu", "x86-64-v3"}, 0, []string{"cpu x86-64-v3 (-march=x86-64-v3, x86-64-v3): 256-bit vectors × 16 registers, FMA", "key: machine x86-64-v3"}, nil},
		{"machine of a level", []string{"machine", "--cpu", "x86-64-v2"}, 0, []string{"128-bit vectors × 16 registers", "features: popcnt sse sse2 sse3 sse4.1 sse4.2 ssse3"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath("nvidia-smi"); err == nil && strings.Contains(c.name, "without a GPU") {
				t.Skip("this machine has an NVIDIA driver")
			}
			var stdout, stderr bytes.Buffer
			status := run(c.args, &stdout, &stderr)
			if status != c.status {
				t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", status, c.status, stdout.String(), stderr.String())
			}
			for _, s := range c.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "goroutine") {
				t.Errorf("panic:\n%s", stderr.String())
			}
		})
	}
}
