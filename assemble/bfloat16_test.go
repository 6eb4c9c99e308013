package assemble

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/tir"
	"github.com/tessera-ml/tessera/tsrt"
)

// TestBFloat16Model: the tiny CNN in bfloat16 (modelgen.BFloat16:
// bfloat16 weights, input and output), written as an ONNX file and read
// back, builds with default schedules and runs through the C runtime with
// float32 tensors at the API: its input is rounded to bfloat16 on entry,
// and its output is the reference evaluator's (te.Eval of the whole graph
// in float32, rounding where the model rounds) within one bfloat16 step,
// each value a bfloat16.
func TestBFloat16Model(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 3*16*16)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) // rounded to bfloat16 by the model
	}
	want, outs := runHalfModel(t, modelgen.BFloat16, "tiny.bf16.onnx", x, tsrt.NewTensor([]int64{1, 3, 16, 16}, x))
	if len(outs) != 1 || outs[0].DType != tsrt.Float32 {
		t.Fatalf("outputs %+v: want one of float32", outs)
	}
	got, err := tsrt.Values[float32](outs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d outputs, the reference has %d", len(got), len(want))
	}
	exact := 0
	for i, w := range want {
		g := got[i]
		if g == w {
			exact++
		}
		step := math.Max(math.Abs(float64(w))*0x1p-7, 0x1p-133) // a bfloat16 step at w's magnitude
		if g != tir.RoundBFloat16(g) || math.Abs(float64(g-w)) > step {
			t.Errorf("output[%d] = %g, the reference %g (not a bfloat16, or more than a bfloat16 step apart)", i, g, w)
		}
	}
	t.Logf("%d of %d outputs equal to the reference's, the others a bfloat16 step apart", exact, len(want))
}
