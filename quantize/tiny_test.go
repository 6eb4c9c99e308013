package quantize

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// TestTinyEndToEnd quantizes the tiny CNN of the test data (Conv, Relu,
// GlobalAveragePool, Gemm) with ranges from a compiled calibration build,
// writes the QDQ file, builds it with Tessera and runs it: its output must
// be the reference evaluator's of the same file within one output step,
// and, where node and onnxruntime-node are installed (scripts/deps.sh),
// onnxruntime's on the same file, with its graph optimizations off (the
// QDQ format's reference semantics) and with its int8 kernels
// (session.x64quantprecision=1: exact on CPUs without VNNI, where the
// default u8s8 kernels overflow 16 bits).
func TestTinyEndToEnd(t *testing.T) {
	ctx := context.Background()
	g, _, err := Load("../testdata/tiny.onnx", nil)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := RandomSamples(g, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, rep, err := Quantize(ctx, g, Options{Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	// The compiled calibration gives the reference evaluator's ranges.
	qr, _, err := Quantize(ctx, g, Options{Samples: samples, Run: ReferenceRunner})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range q.Values {
		if v.Const == nil || v.Const.DType != graph.Float32 {
			continue
		}
		r := qr.Values[name]
		for i, s := range v.Const.F32 {
			if r == nil || math.Abs(float64(s-r.Const.F32[i])) > 1e-5*math.Abs(float64(s)) {
				t.Fatalf("constant %s: %v with the compiled calibration, %v with the reference evaluator", name, v.Const, r)
			}
		}
	}
	if rep.Nodes["Conv"] != 2 || rep.Nodes["Gemm"] != 1 || rep.Folded != 2 || rep.Biases != 3 {
		t.Errorf("report %+v", rep)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.int8.onnx")
	if _, err := Write(path, q); err != nil {
		t.Fatal(err)
	}
	_, step, zp := outputParams(t, q)
	if len(rep.Outputs) != 1 || rep.Outputs[0] != (Output{"output", Params{step, zp}}) {
		t.Errorf("reported outputs %v, the model's output has scale %g and zero point %d", rep.Outputs, step, zp)
	}

	// One random input, through Tessera's build of the written file and
	// through the reference evaluator.
	in, err := RandomSamples(g, 1, 42)
	if err != nil {
		t.Fatal(err)
	}
	x := in[0][0].F32
	got := runBuilt(t, path, x)
	back, err := onnx.DecodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := frontend.InferShapes(back); err != nil {
		t.Fatal(err)
	}
	ref, err := assemble.Reference(back, [][]float32{x})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "Tessera vs the reference evaluator", got, ref[0], step, 1)
	float, err := assemble.Reference(g, [][]float32{x})
	if err != nil {
		t.Fatal(err)
	}
	if argmax(got) != argmax(float[0]) {
		t.Errorf("top-1 %d, the float model's %d", argmax(got), argmax(float[0]))
	}

	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found: scripts/deps.sh installs nodejs and onnxruntime-node (bench/ort)")
	}
	if _, err := os.Stat("../bench/ort/node_modules/onnxruntime-node/package.json"); err != nil {
		t.Skip("onnxruntime-node not installed: scripts/deps.sh installs it into bench/ort/node_modules")
	}
	xfile := filepath.Join(dir, "x.bin")
	if err := os.WriteFile(xfile, floatBytes(x), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range [][]string{{"--optimization", "disabled"}, {"--config", "session.x64quantprecision=1"}} {
		out := filepath.Join(dir, "ort")
		args := append([]string{"../bench/ort/run.mjs", path, out, "--input", "input=" + xfile}, mode...)
		if b, err := exec.Command("node", args...).CombinedOutput(); err != nil {
			t.Fatalf("node %v: %v\n%s", args, err, b)
		}
		data, err := os.ReadFile(filepath.Join(out, "output.bin"))
		if err != nil {
			t.Fatal(err)
		}
		within(t, "Tessera vs onnxruntime "+mode[1], got, floatsOf(data), step, 1)
	}
}

// outputParams returns the scale and zero point of the DequantizeLinear
// that writes q's first output.
func outputParams(t *testing.T, q *graph.Graph) (name string, scale float32, zp int64) {
	t.Helper()
	_, s, z, _ := dqParams(t, q, q.Outputs[0])
	return q.Outputs[0], s.F32[0], z.I64[0]
}

// runBuilt builds the model at path with default schedules and runs it on
// the one input x.
func runBuilt(t *testing.T, path string, x []float32) []float32 {
	t.Helper()
	l, err := frontend.Load(path, frontend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(l.Graph, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := backend.CPU(backend.CPUConfig{Builder: &measure.Builder{Timeout: assemble.LibraryTimeout}})
	defer tg.Close()
	dir := t.TempDir()
	if _, err := assemble.Build(context.Background(), l.Graph, plan, dir, assemble.Options{Target: tg, Model: filepath.Base(path)}); err != nil {
		t.Fatal(err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	outs, err := m.RunFloat32(context.Background(), [][]float32{x}, tsrt.RunOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return outs[0]
}

// within checks got against want within steps quantization steps.
func within(t *testing.T, what string, got, want []float32, step float32, steps float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst := 0.0
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i]-want[i]))/float64(step))
	}
	t.Logf("%s: %.3f output steps apart at most", what, worst)
	if worst > steps+1e-3 {
		t.Errorf("%s: %.2f output steps apart (at most %g allowed)", what, worst, steps)
	}
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func floatBytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}

func floatsOf(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
