package assemble

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// TestFloat16Model: the tiny CNN in float16 (modelgen.Float16: float16
// weights, input and output), written as an ONNX file and read back, builds with default schedules and runs on
// float16 tensors through the C runtime; its output is the reference
// evaluator's (Reference: te.Eval of the whole graph, in float32,
// rounding where the model's Casts round) within one float16 step, and its
// dtype is float16 in the manifest and the run.
func TestFloat16Model(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float16.Float16, 3*16*16)
	x32 := make([]float32, len(x))
	for i := range x {
		x[i] = float16.Fromfloat32(float32(rng.NormFloat64()))
		x32[i] = x[i].Float32()
	}
	want, outs := runHalfModel(t, modelgen.Float16, "tiny.fp16.onnx", x32, tsrt.NewTensor([]int64{1, 3, 16, 16}, x))
	if len(outs) != 1 || outs[0].DType != tsrt.Float16 {
		t.Fatalf("outputs %+v: want one of float16", outs)
	}
	got, err := tsrt.Values[float16.Float16](outs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d outputs, the reference has %d", len(got), len(want))
	}
	exact := 0
	for i, w := range want {
		g := got[i].Float32()
		if g == w {
			exact++
		}
		step := math.Max(math.Abs(float64(w))*0x1p-10, 0x1p-24) // a float16 step at w's magnitude
		if w != float16.Fromfloat32(w).Float32() || math.Abs(float64(g-w)) > step {
			t.Errorf("output[%d] = %g, the reference %g (not a float16, or more than a float16 step apart)", i, g, w)
		}
	}
	t.Logf("%d of %d outputs equal to the reference's, the others a float16 step apart", exact, len(want))
}

// runHalfModel converts the tiny CNN to a half precision (convert:
// modelgen.Float16 or BFloat16), writes it as an ONNX file and reads it
// back, builds it with default schedules and runs it through the C
// runtime on input in, and returns the reference evaluator's output on x32
// (the input's values as float32) and the runtime's outputs.
func runHalfModel(t *testing.T, convert func(*graph.Graph) (*graph.Graph, error), name string, x32 []float32, in tsrt.Tensor) ([]float32, []tsrt.Tensor) {
	t.Helper()
	g32, err := modelgen.Tiny(modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	g, err := convert(g32)
	if err != nil {
		t.Fatal(err)
	}
	file, err := onnx.Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = onnx.Decode(file, name); err != nil {
		t.Fatal(err)
	}
	l, err := frontend.Prepare(g, name, frontend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference(l.Graph, [][]float32{x32})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(l.Graph, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Build(context.Background(), l.Graph, plan, dir, Options{Target: testTarget(recordsKey, nil)}); err != nil {
		t.Fatal(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	outs, err := m.Run(context.Background(), []tsrt.Tensor{in})
	if err != nil {
		t.Fatal(err)
	}
	return ref[0], outs
}
