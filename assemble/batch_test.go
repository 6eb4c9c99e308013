package assemble

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
	"github.com/tessera-ml/tessera/tuning"
)

// batchModel writes a small image classifier on a dynamic batch N (input
// [N, 3, 10, 10]: two convolutions, the second with a Winograd
// alternative, a pooled Gemm and a softmax; outputs the probabilities and
// the first convolution's activations) and returns its path.
func batchModel(t *testing.T) string {
	t.Helper()
	g := graph.New("batch", 17)
	x := g.AddInput("x", graph.Float32, []int{-1, 3, 10, 10})
	x.DimParams = []string{"N", "", "", ""}
	weight := weights(g, 5, 1.0/8)
	pads := map[string]graph.Attr{"pads": {Kind: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}
	g.AddNode(&graph.Node{Name: "c1", OpType: "Conv", Inputs: []string{"x", weight("w1", 16, 3, 3, 3), weight("b1", 16)}, Outputs: []string{"y1"}, Attrs: pads})
	g.AddNode(&graph.Node{Name: "r1", OpType: "Relu", Inputs: []string{"y1"}, Outputs: []string{"z1"}})
	g.AddNode(&graph.Node{Name: "c2", OpType: "Conv", Inputs: []string{"z1", weight("w2", 16, 16, 3, 3)}, Outputs: []string{"y2"}, Attrs: pads})
	g.AddNode(&graph.Node{Name: "pool", OpType: "GlobalAveragePool", Inputs: []string{"y2"}, Outputs: []string{"p"}})
	g.AddNode(&graph.Node{Name: "flat", OpType: "Flatten", Inputs: []string{"p"}, Outputs: []string{"f"}})
	g.AddNode(&graph.Node{Name: "fc", OpType: "Gemm", Inputs: []string{"f", weight("wf", 5, 16), weight("bf", 5)}, Outputs: []string{"l"},
		Attrs: map[string]graph.Attr{"transB": {Kind: graph.AttrInt, I: 1}}})
	g.AddNode(&graph.Node{Name: "sm", OpType: "Softmax", Inputs: []string{"l"}, Outputs: []string{"prob"}, Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 1}}})
	g.Outputs = []string{"prob", "z1"}
	path := filepath.Join(t.TempDir(), "batch.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBatchBuild builds a model over N=1..7 twice, with default schedules
// and with schedules sampled at random (a seed drawn per run), and runs
// each at batches drawn per run: 1, a prime and one more of the range.
// Every output equals the reference evaluator's on the model bound to
// that batch. A batch outside the range is one clear error, from the
// build's runner, the Go package and the library itself.
func TestBatchBuild(t *testing.T) {
	path := batchModel(t)
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 7}}, partition.Options{Alternatives: true})
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (schedules and batches)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	sampled, _ := sampledRecords(t, prepared{bp.One.Graph, bp.One.Plan}, seed)
	var dir string
	var m *tsrt.Manifest
	checked := 0
	for _, build := range []struct {
		name    string
		records RecordSource
	}{{"default", nil}, {"sampled", sampled}} {
		dir = t.TempDir()
		m, err = Build(context.Background(), bp.One.Graph, bp.One.Plan, dir, Options{Target: testTarget(recordsKey, nil), Batch: bp, Records: build.records})
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch == nil || *m.Batch != (tsrt.BatchInfo{Name: "N", Lo: 1, Hi: 7}) || !m.Inputs[0].Batched || !m.Outputs[0].Batched || !m.Outputs[1].Batched {
			t.Fatalf("manifest: batch %+v, inputs %+v, outputs %+v", m.Batch, m.Inputs, m.Outputs)
		}
		if build.records != nil && m.Coverage.TunedTasks != m.Coverage.Tasks {
			t.Fatalf("%s: %d of %d tasks built from records", build.name, m.Coverage.TunedTasks, m.Coverage.Tasks)
		}
		model, err := tsrt.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer model.Close()
		primes := []int{2, 3, 5, 7}
		for _, n := range []int{1, primes[rng.IntN(len(primes))], 1 + rng.IntN(7)} {
			in := make([]float32, n*3*10*10)
			for i := range in {
				in[i] = float32(rng.Float64()*2 - 1)
			}
			got, err := model.RunFloat32(context.Background(), [][]float32{in}, tsrt.RunOptions{Threads: 2})
			if err != nil {
				t.Fatalf("%s, N=%d: %v", build.name, n, err)
			}
			want := referenceAt(t, path, map[string][]int{"x": {n, 3, 10, 10}}, [][]float32{in})
			for i, o := range m.Outputs {
				if len(got[i]) != len(want[i]) {
					t.Fatalf("%s, N=%d: output %s has %d values, want %d", build.name, n, o.Name, len(got[i]), len(want[i]))
				}
				if ok, msg := compareOutputs(got[i], want[i]); !ok {
					t.Errorf("%s, N=%d: output %s: %s", build.name, n, o.Name, msg)
				}
			}
			checked++
		}
	}
	t.Logf("2 builds, %d runs checked", checked)
	model, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	// Out of the range: each layer says so.
	if _, err := model.RunFloat32(context.Background(), [][]float32{make([]float32, 8*300)}, tsrt.RunOptions{}); err == nil || !strings.Contains(err.Error(), "batch N=8 is outside the range 1..7") {
		t.Errorf("Run at N=8: %v", err)
	}
	if _, err := model.Bench(context.Background(), 0, 1, tsrt.RunOptions{Batch: 8}); err == nil || !strings.Contains(err.Error(), "outside the range 1..7") {
		t.Errorf("Bench at N=8: %v", err)
	}
	rt, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if b := rt.Batch(); b != (tsrt.Batch{Name: "N", Lo: 1, Hi: 7}) || rt.Inputs()[0].Shape[0] != -1 {
		t.Fatalf("runtime: batch %+v, input %v", b, rt.Inputs()[0])
	}
	x := tsrt.NewTensor([]int64{8, 3, 10, 10}, make([]float32, 8*300))
	if _, err := rt.Run(context.Background(), []tsrt.Tensor{x}); err == nil || !strings.Contains(err.Error(), "outside the range 1..7") {
		t.Errorf("runtime Run at N=8: %v", err)
	}
	// The library's own check, past the Go package's.
	outs := []tsrt.Tensor{
		tsrt.NewTensor([]int64{8, 5}, make([]float32, 8*5)),
		tsrt.NewTensor([]int64{8, 16, 10, 10}, make([]float32, 8*1600)),
	}
	var e *tsrt.Error
	if err := rt.RunInto(context.Background(), []tsrt.Tensor{x}, outs); !errors.As(err, &e) || e.Status != tsrt.ShapeMismatch || !strings.Contains(err.Error(), "batch N=8, outside the range 1..7") {
		t.Errorf("library at N=8: %v", err)
	}
	// An input without its batch dimension.
	x3 := tsrt.NewTensor([]int64{3, 10, 10}, make([]float32, 300))
	if _, err := rt.Run(context.Background(), []tsrt.Tensor{x3}); !errors.As(err, &e) || e.Status != tsrt.ShapeMismatch || !strings.Contains(err.Error(), "has rank 3, the model's is 4 (its leading dimension the batch N)") {
		t.Errorf("input of rank 3: %v", err)
	}
	// Outputs of another batch than the inputs'.
	x2 := tsrt.NewTensor([]int64{2, 3, 10, 10}, make([]float32, 2*300))
	if err := rt.RunInto(context.Background(), []tsrt.Tensor{x2}, outs); !errors.As(err, &e) || e.Status != tsrt.ShapeMismatch {
		t.Errorf("outputs at N=8, inputs at N=2: %v", err)
	}
}

// buildBatch builds the model at batch 1 of bp over its batch for opts
// (its Batch set here) into a new folder, and opens it (closed when the
// test ends).
func buildBatch(t *testing.T, bp *partition.BatchPlan, opts Options) (*tsrt.Manifest, *tsrt.Model) {
	t.Helper()
	m, dir := buildBatchDir(t, bp, opts)
	return m, openIn(t, dir, nil, nil)
}

// buildBatchDir is buildBatch without opening the folder.
func buildBatchDir(t *testing.T, bp *partition.BatchPlan, opts Options) (*tsrt.Manifest, string) {
	t.Helper()
	dir := t.TempDir()
	opts.Batch = bp
	m, err := Build(context.Background(), bp.One.Graph, bp.One.Plan, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// openIn opens the build folder dir (closed when the test ends): into
// this process, or with exec to run it in the runner child under exec
// (Emulate, the runner compiled by b).
func openIn(t *testing.T, dir string, exec []string, b *measure.Builder) *tsrt.Model {
	t.Helper()
	open := func() (*tsrt.Model, error) { return tsrt.Open(dir) }
	if exec != nil {
		open = func() (*tsrt.Model, error) { return Emulate(context.Background(), dir, exec, b) }
	}
	m, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// referenceAt returns the reference evaluator's outputs of the model at
// path, its inputs bound to shapes, on inputs.
func referenceAt(t *testing.T, path string, shapes map[string][]int, inputs [][]float32) [][]float32 {
	t.Helper()
	l, err := frontend.Load(path, frontend.LoadOptions{Inputs: shapes})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Reference(l.Graph, inputs)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// bertBatch writes the BERT encoder c with a dynamic batch B (its token
// ids and mask [B, Seq]) and loads it over B=1..4.
func bertBatch(t *testing.T, c modelgen.BERTEncoderConfig) (string, *partition.BatchPlan) {
	t.Helper()
	path := writeBERT(t, c, map[int]string{0: "B"})
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"B": {1, 4}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return path, bp
}

// writeBERT writes the BERT encoder c with the dimensions axes (axis →
// name) of its input_ids and attention_mask dynamic, and returns its path.
func writeBERT(t *testing.T, c modelgen.BERTEncoderConfig, axes map[int]string) string {
	t.Helper()
	g, err := modelgen.BERTEncoder(c, modelgen.DefaultSeed)
	if err == nil {
		g, err = modelgen.Dynamic(g, map[string]map[int]string{"input_ids": axes, "attention_mask": axes})
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), c.Name+".onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBatchBuildBERT builds a BERT encoder (int64 token ids and mask, the
// attention per sample) over B=1..4 at a sequence of 16 and checks its
// output against the reference evaluator at batches 1 and 3.
func TestBatchBuildBERT(t *testing.T) {
	c := modelgen.BERTEncoderConfig{BERTConfig: modelgen.BERTConfig{Name: "bert_batch", Seq: 16, Hidden: 64, Heads: 4, FFN: 128, Opset: 17}, Layers: 1, Vocab: 100, MaxPositions: 32}
	path, bp := bertBatch(t, c)
	m, model := buildBatch(t, bp, Options{Target: testTarget(recordsKey, nil)})
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 3} {
		ids, mask := make([]float32, n*16), make([]float32, n*16)
		for i := range ids {
			ids[i] = float32(rng.IntN(c.Vocab))
			mask[i] = float32(min(1, i%16/3)) // the first tokens of each sample masked out
		}
		inputs := [][]float32{ids, mask}
		if m.Inputs[0].Name != "input_ids" {
			inputs[0], inputs[1] = mask, ids
		}
		got, err := model.RunFloat32(context.Background(), inputs, tsrt.RunOptions{Threads: 2})
		if err != nil {
			t.Fatalf("B=%d: %v", n, err)
		}
		want := referenceAt(t, path, map[string][]int{"input_ids": {n, 16}, "attention_mask": {n, 16}}, inputs)
		for i, o := range m.Outputs {
			if ok, msg := compareOutputs(got[i], want[i]); !ok || len(got[i]) != n*16*64 {
				t.Errorf("B=%d: output %s (%d values): %s", n, o.Name, len(got[i]), msg)
			}
		}
	}
}

// TestBatchRefusals: a GPU target refuses a build over a batch (the
// executor's per-sample loop is the CPU's), and a run whose batched
// inputs disagree on the batch is refused by the library.
func TestBatchRefusals(t *testing.T) {
	path := batchModel(t)
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 4}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := backend.OpenCL(context.Background(), backend.GPUConfig{Host: &measure.Builder{Timeout: LibraryTimeout}})
	switch {
	case errors.Is(err, measure.ErrNoDevice) && os.Getenv("TESSERA_REQUIRE_GPU_TOOLS") == "":
		t.Logf("no OpenCL device: the GPU refusal is not checked: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		defer tg.Close()
		if _, err := Generate(bp.One.Graph, bp.One.Plan, Options{Target: tg, Batch: bp}); err == nil || !strings.Contains(err.Error(), "built for the CPU only") {
			t.Errorf("OpenCL build over a batch: %v", err)
		}
	}

	// Two batched inputs of different batches.
	_, bp = bertBatch(t, modelgen.BERTEncoderConfig{BERTConfig: modelgen.BERTConfig{Name: "bert_batch", Seq: 8, Hidden: 32, Heads: 2, FFN: 64, Opset: 17}, Layers: 1, Vocab: 50, MaxPositions: 16})
	dir := t.TempDir()
	if _, err := Build(context.Background(), bp.One.Graph, bp.One.Plan, dir, Options{Target: testTarget(recordsKey, nil), Batch: bp}); err != nil {
		t.Fatal(err)
	}
	rt, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ids := tsrt.NewTensor([]int64{2, 8}, make([]int64, 16))
	mask := tsrt.NewTensor([]int64{3, 8}, make([]int64, 24))
	if _, err := rt.Run(context.Background(), []tsrt.Tensor{ids, mask}); err == nil || !strings.Contains(err.Error(), "has shape [3,8], the model's is [2,8]") {
		t.Errorf("inputs of batches 2 and 3: %v", err)
	}
}

// TestBatchBuildFolded builds a model whose Gemm runs on the batch folded
// with the tokens ([N, 4, 6] reshaped to [4·N, 6], back to [N, 4, 5]: a
// sample is 4 rows there) over N=1..5, and checks it at batches 1, 2 and
// 5; a model whose output keeps the folded rows is refused.
func TestBatchBuildFolded(t *testing.T) {
	model := func(unfold bool) string {
		g := graph.New("folded", 17)
		g.AddInput("x", graph.Float32, []int{-1, 4, 6}).DimParams = []string{"N", "", ""}
		weight := weights(g, 9, 0.5)
		g.AddConst("flat", &graph.Tensor{DType: graph.Int64, Shape: []int{2}, I64: []int64{-1, 6}})
		g.AddConst("back", &graph.Tensor{DType: graph.Int64, Shape: []int{3}, I64: []int64{-1, 4, 5}})
		g.AddNode(&graph.Node{Name: "r1", OpType: "Reshape", Inputs: []string{"x", "flat"}, Outputs: []string{"f"}})
		g.AddNode(&graph.Node{Name: "fc", OpType: "Gemm", Inputs: []string{"f", weight("w", 6, 5), weight("b", 5)}, Outputs: []string{"h"}})
		g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"h"}, Outputs: []string{"z"}})
		g.Outputs = []string{"z"}
		if unfold {
			g.AddNode(&graph.Node{Name: "r2", OpType: "Reshape", Inputs: []string{"z", "back"}, Outputs: []string{"y"}})
			g.Outputs = []string{"y"}
		}
		path := filepath.Join(t.TempDir(), "folded.onnx")
		if err := onnx.EncodeFile(path, g); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if _, _, err := tuning.LoadBatch(model(false), frontend.LoadOptions{}, map[string][2]int{"N": {1, 5}}, partition.Options{}); err == nil || !strings.Contains(err.Error(), "value z, a model input or output: shape [4 5] at batch 1, [8 5] at 2: its leading dimension is 4·N") {
		t.Errorf("an output of folded rows: %v", err)
	}
	path := model(true)
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 5}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bp.Batched["h"] {
		t.Fatalf("the folded [4·N, 5] is not batched: %v", bp.Batched)
	}
	_, m := buildBatch(t, bp, Options{Target: testTarget(recordsKey, nil)})
	rng := rand.New(rand.NewPCG(3, 9))
	for _, n := range []int{1, 2, 5} {
		in := make([]float32, n*24)
		for i := range in {
			in[i] = float32(rng.Float64()*2 - 1)
		}
		got, err := m.RunFloat32(context.Background(), [][]float32{in}, tsrt.RunOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := referenceAt(t, path, map[string][]int{"x": {n, 4, 6}}, [][]float32{in})
		if ok, msg := compareOutputs(got[0], want[0]); !ok || len(got[0]) != n*20 {
			t.Errorf("N=%d (%d values): %s", n, len(got[0]), msg)
		}
	}
}

// TestBatchRunner runs a model built over N=1..5 in a child process (the
// runner, as under an emulator): natively at N=3 its outputs equal the
// in-process run's to the bit, and built for aarch64 and run under
// qemu-aarch64 at N=3 they agree with the reference evaluator (skipped
// without the cross tools, unless TESSERA_REQUIRE_CROSS is set).
func TestBatchRunner(t *testing.T) {
	path := batchModel(t)
	_, bp, err := tuning.LoadBatch(path, frontend.LoadOptions{}, map[string][2]int{"N": {1, 5}}, partition.Options{Alternatives: true})
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 3*300)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range in {
		in[i] = float32(rng.Float64()*2 - 1)
	}
	run := func(tg *backend.Target, exec []string, b *measure.Builder, threads int) [][]float32 {
		t.Helper()
		_, dir := buildBatchDir(t, bp, Options{Target: tg})
		m := openIn(t, dir, exec, b)
		got, err := m.RunFloat32(context.Background(), [][]float32{in}, tsrt.RunOptions{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Bench(context.Background(), 0, 1, tsrt.RunOptions{Batch: 2}); err != nil {
			t.Errorf("bench at N=2 in the runner: %v", err)
		}
		return got
	}
	tg := testTarget(recordsKey, nil)
	here := run(tg, nil, nil, 1)
	child := run(tg, []string{"env"}, nil, 1)
	for i := range here {
		if !slices.Equal(here[i], child[i]) {
			t.Errorf("output %d: the runner's differs from the in-process run's", i)
		}
	}

	tools := crosstest.RequireAarch64(t)
	arm, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	b := &measure.Builder{CC: tools.CC, Timeout: LibraryTimeout}
	got := run(backend.CPU(backend.CPUConfig{Builder: b, Machine: arm, Key: "cpu test aarch64"}), tools.Exec, b, 2)
	want := referenceAt(t, path, map[string][]int{"x": {3, 3, 10, 10}}, [][]float32{in})
	for i := range want {
		if ok, msg := compareOutputs(got[i], want[i]); !ok || len(got[i]) != len(want[i]) {
			t.Errorf("aarch64 output %d: %s", i, msg)
		}
	}
	t.Logf("aarch64 (qemu) at N=3: %d outputs agree with the reference evaluator", len(want))
}
