package assemble

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/internal/pytest"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tsrt"
	"github.com/tessera-ml/tessera/tuning"
)

// bertDims writes a small BERT encoder whose batch B and sequence length S
// are dynamic and loads it over B=1..bHi and S=sLo..sHi.
func bertDims(t *testing.T, c modelgen.BERTEncoderConfig, bHi, sLo, sHi int) (string, *partition.BatchPlan, *partition.DimPlan) {
	t.Helper()
	path := writeBERT(t, c, map[int]string{0: "B", 1: "S"})
	r, err := tuning.LoadRange(path, frontend.LoadOptions{}, map[string][2]int{"B": {1, bHi}, "S": {sLo, sHi}}, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, bp, dp, err := r.Dims()
	if err != nil {
		t.Fatal(err)
	}
	if bp == nil || dp == nil || bp.Symbol.Name != "B" || dp.Symbol.Name != "S" {
		t.Fatalf("batch %v, dimension %v: want B and S", bp, dp)
	}
	return path, bp, dp
}

// TestDimBuildBERT builds a BERT encoder over a batch and a sequence
// length given at run time, with default schedules, and checks its runs
// at values drawn per run (the ends, a prime, others) against the
// reference evaluator; a value outside the range is one clear error.
func TestDimBuildBERT(t *testing.T) {
	c := modelgen.BERTEncoderConfig{BERTConfig: modelgen.BERTConfig{Name: "bert_dim", Seq: 16, Hidden: 64, Heads: 4, FFN: 128, Opset: 17}, Layers: 1, Vocab: 100, MaxPositions: 64}
	const sLo, sHi = 5, 40
	path, bp, dp := bertDims(t, c, 4, sLo, sHi)
	dir := t.TempDir()
	m, err := Build(context.Background(), dp.Hi().Graph, dp.Hi().Plan, dir, Options{Target: testTarget(recordsKey, nil), Batch: bp, Dim: dp})
	if err != nil {
		t.Fatal(err)
	}
	if m.Dim == nil || m.Dim.Name != "S" || m.Dim.Lo != sLo || m.Dim.Hi != sHi || !slices.Equal(m.Inputs[0].DimAxes, []int{1}) {
		t.Fatalf("manifest: dim %+v, input %+v", m.Dim, m.Inputs[0])
	}
	classes := 0
	for _, tr := range m.Tasks {
		classes += tr.Family.Classes
	}
	t.Logf("%d tasks, %d kernels over S=%d..%d", len(m.Tasks), classes, sLo, sHi)
	model, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 9))
	primes := []int{7, 11, 13, 17, 19, 23, 29, 31, 37}
	runs := [][2]int{{1, sLo}, {4, sHi}, {1 + rng.IntN(4), primes[rng.IntN(len(primes))]}, {1 + rng.IntN(4), sLo + rng.IntN(sHi-sLo+1)}}
	t.Logf("seed %d: (B, S) = %v", seed, runs)
	for _, r := range runs {
		n, s := r[0], r[1]
		ids, mask := make([]float32, n*s), make([]float32, n*s)
		for i := range ids {
			ids[i] = float32(rng.IntN(c.Vocab))
			mask[i] = float32(min(1, i%s/2)) // the first tokens of each sample masked out
		}
		inputs := [][]float32{ids, mask}
		if m.Inputs[0].Name != "input_ids" {
			inputs[0], inputs[1] = mask, ids
		}
		got, err := model.RunFloat32(context.Background(), inputs, tsrt.RunOptions{Threads: 2, Dim: s})
		if err != nil {
			t.Fatalf("B=%d, S=%d: %v", n, s, err)
		}
		want := referenceAt(t, path, map[string][]int{"input_ids": {n, s}, "attention_mask": {n, s}}, inputs)
		for i, o := range m.Outputs {
			if ok, msg := compareOutputs(got[i], want[i]); !ok || len(got[i]) != n*s*c.Hidden {
				t.Errorf("B=%d, S=%d: output %s (%d values): %s", n, s, o.Name, len(got[i]), msg)
			}
		}
		if r == runs[2] { // in the runner child too (TESSERA_RUNNER_DIM): the same bits
			child, err := openIn(t, dir, []string{"env"}, nil).RunFloat32(context.Background(), inputs, tsrt.RunOptions{Threads: 2, Dim: s})
			if err != nil {
				t.Fatalf("B=%d, S=%d in the runner: %v", n, s, err)
			}
			for i := range got {
				if !slices.Equal(got[i], child[i]) {
					t.Errorf("B=%d, S=%d: output %d: the runner's differs from the in-process run's", n, s, i)
				}
			}
		}
	}
	ids := make([]float32, sHi+1)
	if _, err := model.RunFloat32(context.Background(), [][]float32{ids, ids}, tsrt.RunOptions{Threads: 2, Dim: sHi + 1}); err == nil || !strings.Contains(err.Error(), "outside the range") {
		t.Errorf("S=%d: %v, want an error naming the range", sHi+1, err)
	}
	// The library itself refuses it, naming the input and the range.
	rt, err := tsrt.Open(filepath.Join(dir, tsrt.LibraryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if d := rt.Dim(); d != (tsrt.Batch{Name: "S", Lo: sLo, Hi: sHi}) || !slices.Equal(rt.Inputs()[0].Shape, []int64{-1, -2}) {
		t.Errorf("the library's dimension %+v, input shape %v", d, rt.Inputs()[0].Shape)
	}
	long := tsrt.Tensor{DType: tsrt.Int64, Shape: []int64{1, sHi + 1}, Data: make([]byte, 8*(sHi+1))}
	out := tsrt.Tensor{DType: tsrt.Float32, Shape: []int64{1, sHi + 1, int64(c.Hidden)}, Data: make([]byte, 4*(sHi+1)*c.Hidden)}
	err = rt.RunInto(context.Background(), []tsrt.Tensor{long, long}, []tsrt.Tensor{out})
	if err == nil || !strings.Contains(err.Error(), "has S=41 in its dimension 1, outside the range 5..40 the model was built for") {
		t.Errorf("the library at S=%d: %v", sHi+1, err)
	}
	// The Python module takes S from the arrays' shapes too, and gives
	// the bits the Go package does.
	py := pytest.Require(t)
	n, sv := 2, primes[rng.IntN(len(primes))]
	raw := make([]byte, 8*n*sv)
	for i := range n * sv {
		raw[8*i] = byte(rng.IntN(c.Vocab))
	}
	in := tsrt.Tensor{DType: tsrt.Int64, Shape: []int64{int64(n), int64(sv)}, Data: raw}
	want, err := rt.Run(context.Background(), []tsrt.Tensor{in, in})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "ids.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import sys
import numpy as np
import tessera
model = tessera.load(sys.argv[1])
print(model.dim, model.inputs[0].shape)
x = np.fromfile(sys.argv[2], np.int64).reshape(int(sys.argv[4]), int(sys.argv[5]))
y = model.run({t.name: x for t in model.inputs})[model.outputs[0].name]
print(y.shape)
y.tofile(sys.argv[3])
try:
    model.run({t.name: np.zeros((1, 41), np.int64) for t in model.inputs})
    print("no error")
except tessera.Error as e:
    print(e.status)
`
	cmd := exec.Command(py, "-c", script, dir, filepath.Join(work, "ids.bin"), filepath.Join(work, "out.bin"), fmt.Sprint(n), fmt.Sprint(sv))
	cmd.Env = append(os.Environ(), "PYTHONPATH=../tsrt/python")
	printed, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, printed)
	}
	if wantOut := fmt.Sprintf("('S', 5, 40) (-1, -2)\n(%d, %d, %d)\nTESSERA_SHAPE_MISMATCH\n", n, sv, c.Hidden); string(printed) != wantOut {
		t.Errorf("python printed\n%s\nwant\n%s", printed, wantOut)
	}
	got, err := os.ReadFile(filepath.Join(work, "out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want[0].Data) {
		t.Errorf("the Python module's output at B=%d, S=%d differs from the Go package's", n, sv)
	}
}

// TestDimRefusals: a model whose weights depend on the dimension other
// than by a prefix (x divided by its own length S, a scalar folded per
// value) is refused by the build, naming the constant, and an output
// whose dimension is 2·S is refused, naming the output: one payload or
// one shape would be wrong at every value but one.
func TestDimRefusals(t *testing.T) {
	write := func(name string, build func(g *graph.Graph)) string {
		g := graph.New(name, 17)
		g.AddInput("x", graph.Float32, []int{4, -1}).DimParams = []string{"", "S"}
		build(g)
		path := filepath.Join(t.TempDir(), name+".onnx")
		if err := onnx.EncodeFile(path, g); err != nil {
			t.Fatal(err)
		}
		return path
	}
	load := func(path string) *partition.DimPlan {
		r, err := tuning.LoadRange(path, frontend.LoadOptions{}, map[string][2]int{"S": {3, 9}}, partition.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, bp, dp, err := r.Dims()
		if err != nil || bp != nil || dp == nil {
			t.Fatalf("batch %v, dimension %v: %v", bp, dp, err)
		}
		return dp
	}
	// y = x · (0, 1, …, S−1)/S: a table folded at each length, whose
	// first elements at 3 are not those at 9.
	byLength := write("by_length", func(g *graph.Graph) {
		g.AddConst("one", graph.Int64Tensor(nil, []int64{1}))
		g.AddConst("zero", graph.Float32Tensor(nil, []float32{0}))
		g.AddConst("step", graph.Float32Tensor(nil, []float32{1}))
		g.AddNode(&graph.Node{Name: "shape", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"s"}})
		g.AddNode(&graph.Node{Name: "len", OpType: "Gather", Inputs: []string{"s", "one"}, Outputs: []string{"n"}})
		g.AddNode(&graph.Node{Name: "cast", OpType: "Cast", Inputs: []string{"n"}, Outputs: []string{"nf"}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: int64(graph.Float32)}}})
		g.AddNode(&graph.Node{Name: "range", OpType: "Range", Inputs: []string{"zero", "nf", "step"}, Outputs: []string{"r"}})
		g.AddNode(&graph.Node{Name: "scale", OpType: "Div", Inputs: []string{"r", "nf"}, Outputs: []string{"w"}})
		g.AddNode(&graph.Node{Name: "mul", OpType: "Mul", Inputs: []string{"x", "w"}, Outputs: []string{"y"}})
		g.Outputs = []string{"y"}
	})
	dp := load(byLength)
	_, err := Generate(dp.Hi().Graph, dp.Hi().Plan, Options{Target: testTarget(recordsKey, nil), Dim: dp})
	if err == nil || !strings.Contains(err.Error(), "is not the first elements of the one at 9") {
		t.Errorf("a constant of each length: %v", err)
	}
	doubled := write("doubled", func(g *graph.Graph) {
		g.AddNode(&graph.Node{Name: "cat", OpType: "Concat", Inputs: []string{"x", "x"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 1}}})
		g.Outputs = []string{"y"}
	})
	dp = load(doubled)
	_, err = Generate(dp.Hi().Graph, dp.Hi().Plan, Options{Target: testTarget(recordsKey, nil), Dim: dp})
	if err == nil || !strings.Contains(err.Error(), "y, a model input or output, has dimension 1 of 6 at S=3 and 18 at 9") {
		t.Errorf("an output of 2·S: %v", err)
	}
	// A scalar folded at each length is a literal of the kernel at that
	// length (a class of its own): x / S is built, and right at each S.
	perLength := write("per_length", func(g *graph.Graph) {
		g.AddConst("one", graph.Int64Tensor(nil, []int64{1}))
		g.AddNode(&graph.Node{Name: "shape", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"s"}})
		g.AddNode(&graph.Node{Name: "len", OpType: "Gather", Inputs: []string{"s", "one"}, Outputs: []string{"n"}})
		g.AddNode(&graph.Node{Name: "cast", OpType: "Cast", Inputs: []string{"n"}, Outputs: []string{"nf"}, Attrs: map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: int64(graph.Float32)}}})
		g.AddNode(&graph.Node{Name: "div", OpType: "Div", Inputs: []string{"x", "nf"}, Outputs: []string{"y"}})
		g.Outputs = []string{"y"}
	})
	dp = load(perLength)
	dir := t.TempDir()
	if _, err := Build(context.Background(), dp.Hi().Graph, dp.Hi().Plan, dir, Options{Target: testTarget(recordsKey, nil), Dim: dp}); err != nil {
		t.Fatal(err)
	}
	model, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	for _, n := range []int{3, 5, 9} {
		x := make([]float32, 4*n)
		for i := range x {
			x[i] = float32(i + 1)
		}
		got, err := model.RunFloat32(context.Background(), [][]float32{x}, tsrt.RunOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := referenceAt(t, perLength, map[string][]int{"x": {4, n}}, [][]float32{x})
		if ok, msg := compareOutputs(got[0], want[0]); !ok || len(got[0]) != 4*n {
			t.Errorf("x / S at S=%d: %s", n, msg)
		}
	}
}

// probeMeasurer times a schedule by its steps: fast where they are fast's,
// else slow; it counts the schedules it measured.
type probeMeasurer struct {
	fast string
	n    int
}

func (p *probeMeasurer) Measure(_ context.Context, in []measure.Input) ([]measure.Result, error) {
	out := make([]measure.Result, len(in))
	for i, x := range in {
		data, err := schedule.MarshalSteps(x.State.Steps)
		if err != nil {
			return nil, err
		}
		cost := 2e-3
		if string(data) == p.fast {
			cost = 1e-3
		}
		out[i] = measure.Result{Costs: []float64{cost}}
		p.n++
	}
	return out, nil
}

// TestDimBuildProbes: after a tuning over S=16..128 (points 24, 48, 96,
// two schedules recorded at each), tuning.Probe measures at every probe
// point (the points, the ends, the values next to those, and the
// midpoints) the nearest point's best schedules and each other point's
// best, once, the farthest from a point first where limited; the build
// then replays, at each value, the fastest schedule of the nearest probe
// point — the second best of the point at 24, fastest everywhere here,
// at the values whose nearest point is 24 — and the model is right at
// both ends.
func TestDimBuildProbes(t *testing.T) {
	g, w := modelgen.SeqMatMul()
	path := filepath.Join(t.TempDir(), "probe.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	_, bp, dp, err := tuning.LoadDims(path, frontend.LoadOptions{}, map[string][2]int{"S": {16, 128}}, partition.Options{})
	if err != nil || bp != nil || dp == nil {
		t.Fatalf("batch %v, dimension %v: %v", bp, dp, err)
	}
	store, err := records.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Each tuning point's two best records: sampled schedules of the task
	// there, the second a microsecond slower.
	rng := rand.New(rand.NewPCG(3, 3))
	opts := sketch.CPUOptions(backend.MustDefaultMachine())
	opts.UnrollSteps = []int{0, 16}
	ranked := map[int][]string{}
	for _, p := range dp.Symbol.TunePoints() {
		task := dp.TaskAt(0, p)
		if err := store.PutTask(tuning.TaskInfo(task)); err != nil {
			t.Fatal(err)
		}
		sks, err := sketch.Generate(schedule.NewState(task.DAG), opts)
		if err != nil {
			t.Fatal(err)
		}
		lo := schedule.NewState(dp.TaskAt(0, 16).DAG)
		for k := 0; len(ranked[p]) < 2; k++ {
			if k > 400 {
				t.Fatalf("no two schedules sampled at S=%d replay at 16", p)
			}
			st, err := sketch.Sample(rng, sks[k%len(sks)], opts)
			if err != nil {
				continue
			}
			if _, err := schedule.Replay(lo, st.Steps); err != nil {
				continue // one that does not replay at S=16 would leave the lowest values to default schedules
			}
			cost := float64(p)*1e-5 + float64(len(ranked[p]))*1e-6
			r, err := records.New(task.Key, recordsKey, st.Steps, measure.Result{Costs: []float64{cost}}, "test")
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(ranked[p], string(r.Steps)) {
				continue
			}
			if err := store.Add([]records.Record{r}); err != nil {
				t.Fatal(err)
			}
			ranked[p] = append(ranked[p], string(r.Steps))
		}
	}
	fast := ranked[24][1]
	m := &probeMeasurer{fast: fast}
	// A limit of 4: the four schedules at 16 (farthest from a point: the
	// two of 24, the best of 48 and of 96); then the rest.
	first, err := tuning.Probe(context.Background(), store, dp, recordsKey, m, "test", 4)
	if err != nil || first.Measured != 4 {
		t.Fatalf("a probe limited to 4 measured %d: %v", first.Measured, err)
	}
	if at16, err := store.Records(dp.TaskAt(0, 16).Key, recordsKey); err != nil || len(at16) != 4 {
		t.Errorf("%d records at S=16 after the first 4, want 4: %v", len(at16), err)
	}
	sum, err := tuning.Probe(context.Background(), store, dp, recordsKey, m, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	sum.Measured += first.Measured
	if want := []int{16, 17, 20, 23, 24, 25, 34, 47, 48, 49, 68, 95, 96, 97, 111, 127, 128}; !slices.Equal(sum.Values, want) {
		t.Errorf("probe points %v, want %v", sum.Values, want)
	}
	// At the 14 probes that are no tuning point, the two of the nearest
	// point and the best of the other two; at each point, the best of
	// the other two.
	if sum.Measured != m.n || sum.Measured != 14*4+3*2 || sum.Measured > tuning.ProbeBudget(dp) || sum.Failed != 0 {
		t.Errorf("probe: %+v, measurer saw %d, budget %d", sum, m.n, tuning.ProbeBudget(dp))
	}
	if again, err := tuning.Probe(context.Background(), store, dp, recordsKey, m, "test", 0); err != nil || again.Measured != 0 {
		t.Errorf("a second probe measured %d: %v", again.Measured, err)
	}
	// What the tuning spent: the six records at the points and the probes.
	if spent, err := tuning.RangeMeasured(store, dp, recordsKey); err != nil || spent != 6+sum.Measured {
		t.Errorf("RangeMeasured = %d, want %d: %v", spent, 6+sum.Measured, err)
	}
	// Where 24 is not the nearest point, only its best was measured.
	if at111, err := store.Records(dp.TaskAt(0, 111).Key, recordsKey); err != nil || len(at111) != 4 {
		t.Errorf("%d records at S=111, want 4 (the two of 96, the best of 24 and 48): %v", len(at111), err)
	} else {
		for _, r := range at111 {
			if r.Cost() == 1e-3 {
				t.Errorf("the second best of 24 was measured at 111, whose nearest point is 96")
			}
		}
	}
	dir := t.TempDir()
	man, err := Build(context.Background(), dp.Hi().Graph, dp.Hi().Plan, dir, Options{Target: testTarget(recordsKey, nil), Dim: dp, Records: store})
	if err != nil {
		t.Fatal(err)
	}
	fam := man.Tasks[0].Family
	if fam == nil || fam.FromRecords != 113 || fam.Points[16] == 0 || fam.Points[128] == 0 {
		t.Fatalf("family %+v: want every value from records, some from the probes at 16 and 128", fam)
	}
	at16, err := store.Ranked(dp.TaskAt(0, 16).Key, recordsKey)
	if err != nil || len(at16) == 0 {
		t.Fatalf("no records at the probe S=16: %v", err)
	}
	if st, err := at16[0].State(schedule.NewState(dp.TaskAt(0, 16).DAG)); err != nil || at16[0].Cost() != 1e-3 {
		t.Errorf("the best at S=16 costs %v (%v), want the second best of the point at 24, 1e-3", at16[0].Cost(), err)
	} else if data, _ := schedule.MarshalSteps(st.Steps); string(data) != fast {
		t.Errorf("the best at S=16 is not the second best schedule of the point at 24")
	}
	model, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	for _, n := range []int{16, 17, 101, 128} {
		x := make([]float32, 2*n*8)
		for i := range x {
			x[i] = float32((i*5)%11) - 5
		}
		got, err := model.RunFloat32(context.Background(), [][]float32{x}, tsrt.RunOptions{Threads: 1, Dim: n})
		if err != nil {
			t.Fatalf("S=%d: %v", n, err)
		}
		for r := range 2 * n {
			for c := range 16 {
				var want float32
				for k := range 8 {
					want += x[r*8+k] * w[k*16+c]
				}
				want = max(want, 0)
				if d := got[0][r*16+c] - want; d > 1e-4 || d < -1e-4 {
					t.Fatalf("S=%d: y[%d,%d] = %v, want %v", n, r, c, got[0][r*16+c], want)
				}
			}
		}
	}
}
