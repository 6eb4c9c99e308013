package assemble

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/tsrt"
)

// The tests build real models (the generated architectures at small input
// sizes, so that the reference evaluator keeps up), run them through the
// runner, and compare every output with te.Eval of the whole graph
// (partition.Lower), the oracle of the conformance tests.

// prepared is a model after the passes, partitioned.
type prepared struct {
	g    *graph.Graph
	plan *partition.Plan
}

func prepare(t testing.TB, g *graph.Graph) prepared {
	t.Helper()
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(g, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prepared{g, plan}
}

// weights returns a function that adds to g a constant of the shape given,
// its values uniform in [-scale, scale) (seeded), and returns its name.
func weights(g *graph.Graph, seed uint64, scale float64) func(name string, shape ...int) string {
	rng := rand.New(rand.NewPCG(seed, seed))
	return func(name string, shape ...int) string {
		data := make([]float32, graph.NumElems(shape))
		for i := range data {
			data[i] = float32((rng.Float64()*2 - 1) * scale)
		}
		g.AddConst(name, graph.Float32Tensor(shape, data))
		return name
	}
}

// randomInputs draws every graph input uniformly from [-1, 1).
func randomInputs(m *tsrt.Manifest, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([][]float32, len(m.Inputs))
	for i, t := range m.Inputs {
		out[i] = make([]float32, t.Elems())
		for k := range out[i] {
			out[i][k] = float32(rng.Float64()*2 - 1)
		}
	}
	return out
}

// compareOutputs compares a whole model's output with the reference:
// float32 sums in another order differ by a few ulps per layer, so the
// tolerance is relative to the output's scale.
func compareOutputs(got, want []float32) (bool, string) {
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	return measure.Compare(got, want, 1e-3, 1e-4*max(scale, 1e-3))
}

// buildRunCheck builds p into dir, runs it on random inputs and compares
// the outputs with the reference.
func buildRunCheck(t *testing.T, p prepared, dir string, opts Options) *tsrt.Manifest {
	t.Helper()
	start := time.Now()
	m, err := Build(context.Background(), p.g, p.plan, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	built := time.Since(start)
	model, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	inputs := randomInputs(m, 1)
	got, err := model.RunFloat32(context.Background(), inputs, tsrt.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	want := reference(t, opts.Model, p, inputs)
	for i, o := range m.Outputs {
		if ok, msg := compareOutputs(got[i], want[i]); !ok {
			t.Errorf("output %s: %s", o.Name, msg)
		}
	}
	t.Logf("%d tasks, %d groups: built in %v, reference in %v; arena %d bytes, intermediates %d bytes",
		len(p.plan.Tasks), len(p.plan.Groups), built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		m.Memory.ArenaBytes, m.Memory.IntermediatesBytes)
	return m
}

// references holds the reference outputs of the models in smallModels by
// name: the whole-graph evaluator takes most of a minute on ResNet-18 at
// 64×64, and several tests check builds of the same model on the same
// inputs.
var references sync.Map // model name → referenceOutputs

type referenceOutputs struct {
	once    sync.Once
	outputs [][]float32
	err     error
}

// reference returns the reference outputs of p on inputs; when name is not
// empty they are computed once per name (every caller of a name must pass
// the same graph and inputs: a smallModels entry and randomInputs(m, 1)).
func reference(t *testing.T, name string, p prepared, inputs [][]float32) [][]float32 {
	t.Helper()
	if name == "" {
		want, err := Reference(p.g, inputs)
		if err != nil {
			t.Fatal(err)
		}
		return want
	}
	v, _ := references.LoadOrStore(name, &referenceOutputs{})
	r := v.(*referenceOutputs)
	r.once.Do(func() { r.outputs, r.err = Reference(p.g, inputs) })
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.outputs
}

// smallModels are the generated architectures at sizes the reference
// evaluator runs in seconds.
var smallModels = []struct {
	name  string
	build func() (*graph.Graph, error)
}{
	{"tiny", func() (*graph.Graph, error) { return onnx.DecodeFile("../testdata/tiny.onnx") }},
	{"resnet18@64", func() (*graph.Graph, error) {
		c := modelgen.ResNet18Config
		c.Input = 64
		return modelgen.ResNet(c, modelgen.DefaultSeed)
	}},
	{"resnet50@32", func() (*graph.Graph, error) {
		c := modelgen.ResNet50Config
		c.Input, c.Classes = 32, 100
		return modelgen.ResNet(c, modelgen.DefaultSeed)
	}},
	{"mobilenetv2@32", func() (*graph.Graph, error) { return modelgen.MobileNetV2At(32, modelgen.DefaultSeed) }},
	{"bert_layer(small)", func() (*graph.Graph, error) {
		return modelgen.BERT(modelgen.BERTConfig{Name: "bert_small", Seq: 16, Hidden: 64, Heads: 4, FFN: 256, Opset: 17}, modelgen.DefaultSeed)
	}},
	{"bert_layer_gelu(small)", func() (*graph.Graph, error) {
		return modelgen.BERT(modelgen.BERTConfig{Name: "bert_small_gelu", Seq: 16, Hidden: 64, Heads: 4, FFN: 256, Opset: 20, GeluOp: true}, modelgen.DefaultSeed)
	}},
}

// TestGeneratedModels builds every generated architecture with default
// schedules (an empty records database: every task warns) and checks its
// outputs.
func TestGeneratedModels(t *testing.T) {
	for _, c := range smallModels {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // compiling and the reference are one core each
			g, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			p := prepare(t, g)
			var warn bytes.Buffer
			m := buildRunCheck(t, p, t.TempDir(), Options{Records: emptyRecords{}, Target: testTarget("cpu test", nil), Model: c.name, Warn: &warn})
			// Without records, no alternative algorithm is chosen: the
			// build runs the direct definitions' tasks.
			if n := strings.Count(warn.String(), "using the default schedule"); n != len(m.Tasks) {
				t.Errorf("%d warnings for %d tasks without records:\n%s", n, len(m.Tasks), warn.String())
			}
			if m.Coverage.TunedTasks != 0 || m.Coverage.Tasks != len(m.Tasks) {
				t.Errorf("coverage %+v", m.Coverage)
			}
			if m.Memory.ArenaBytes > m.Memory.IntermediatesBytes || m.Memory.ArenaBytes < m.Memory.LiveMaxBytes {
				t.Errorf("memory %+v: want live max ≤ arena ≤ sum", m.Memory)
			}
		})
	}
}

type emptyRecords struct{}

func (emptyRecords) Ranked(string, string) ([]records.Record, error) { return nil, nil }

// recordsKey is the target key of the hand-made records.
const recordsKey = "cpu threads=1 | test"

// testTarget is the cpu target with the given key (the derived one when
// empty) and builder (one with LibraryTimeout when nil).
func testTarget(key string, b *measure.Builder) *backend.Target {
	if b == nil {
		b = &measure.Builder{Timeout: LibraryTimeout}
	}
	return backend.CPU(backend.CPUConfig{Builder: b, Key: key})
}

// handMadeRecords fills a new records database with a few sampled
// schedules per task (seeded differently from the default schedule), each
// with a made-up cost, and returns it with the best step list of each task.
func handMadeRecords(t *testing.T, p prepared) (*records.Store, map[string]string) {
	t.Helper()
	return sampledRecords(t, p, 42)
}

// sampledRecords is handMadeRecords with the schedules drawn from seed.
func sampledRecords(t *testing.T, p prepared, seed uint64) (*records.Store, map[string]string) {
	t.Helper()
	store, err := records.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	best := map[string]string{}
	rng := rand.New(rand.NewPCG(seed, seed))
	opts := sketch.CPUOptions(backend.MustDefaultMachine())
	// Unrolling at most 16 steps: gcc takes half a minute on some sampled
	// tiles unrolled 512 steps (ResNet-18's stem), and what these tests
	// check, which record a build takes and that the model computes right
	// with it, does not depend on unrolling. measure's end-to-end tests
	// compile sampled states with every unroll step.
	opts.UnrollSteps = []int{0, 16}
	for _, task := range p.plan.Tasks {
		sks, err := sketch.Generate(schedule.NewState(task.DAG), opts)
		if err != nil {
			t.Fatal(err)
		}
		var recs []records.Record
		bestCost := math.Inf(1)
		for k := 0; len(recs) < 3 && k < 30; k++ {
			st, err := sketch.Sample(rng, sks[k%len(sks)], opts)
			if err != nil {
				continue
			}
			if _, err := schedule.Lower(st, "k"); err != nil {
				continue
			}
			cost := 1e-3 * (1 + rng.Float64())
			r, err := records.New(task.Key, recordsKey, st.Steps, measure.Result{Costs: []float64{cost}}, "test")
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
			if cost < bestCost {
				bestCost, best[task.Key] = cost, string(r.Steps)
			}
		}
		if err := store.Add(recs); err != nil {
			t.Fatal(err)
		}
	}
	return store, best
}

// TestBuildFromRecords builds models from records: every task is tuned, the
// kernels come from the best record of each task, and the outputs match.
func TestBuildFromRecords(t *testing.T) {
	for _, c := range smallModels[:2] { // tiny and ResNet-18
		t.Run(c.name, func(t *testing.T) {
			g, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			p := prepare(t, g)
			store, best := handMadeRecords(t, p)
			var warn bytes.Buffer
			m := buildRunCheck(t, p, t.TempDir(), Options{Records: store, Target: testTarget(recordsKey, nil), Model: c.name, Warn: &warn})
			if warn.Len() > 0 {
				t.Errorf("warnings with every task tuned:\n%s", warn.String())
			}
			if m.Coverage.TunedTasks != len(m.Tasks) || m.Coverage.TunedShare() != 100 {
				t.Errorf("coverage %+v", m.Coverage)
			}
			for _, tr := range m.Tasks {
				var compact bytes.Buffer
				if tr.Record == nil || tr.Schedule != tsrt.FromRecord {
					t.Errorf("task %d: schedule %s", tr.Index, tr.Schedule)
					continue
				}
				if err := json.Compact(&compact, tr.Record.Steps); err != nil || compact.String() != best[tr.Key] {
					t.Errorf("task %d: compiled steps %s, best record %s", tr.Index, compact.String(), best[tr.Key])
				}
			}
		})
	}
}

// TestDeterministic builds the same model from the same records twice, in
// two directories with two compiler caches: every file must be identical.
func TestDeterministic(t *testing.T) {
	g, err := smallModels[0].build()
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, g)
	store, _ := handMadeRecords(t, p)
	// Half the tasks tuned, half default.
	half := &partialRecords{store: store, keep: map[string]bool{}}
	for i, task := range p.plan.Tasks {
		half.keep[task.Key] = i%2 == 0
	}
	var dirs [2]string
	for i := range dirs {
		dirs[i] = t.TempDir()
		opts := Options{Records: half, Target: testTarget(recordsKey, &measure.Builder{CacheDir: t.TempDir(), Timeout: LibraryTimeout}), Model: "tiny.onnx"}
		if _, err := Build(context.Background(), p.g, p.plan, dirs[i], opts); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{SourceFile, HeaderFile, tsrt.LibraryFile, tsrt.WeightsFile, tsrt.ManifestFile} {
		a, errA := os.ReadFile(filepath.Join(dirs[0], f))
		b, errB := os.ReadFile(filepath.Join(dirs[1], f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds (%v, %v)", f, errA, errB)
		}
	}
	m, err := tsrt.ReadManifest(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Coverage.TunedTasks != (len(p.plan.Tasks)+1)/2 {
		t.Errorf("coverage %+v", m.Coverage)
	}
}

// TestBuildChoosesAlgorithm builds a model of two 3×3 convolutions (one
// NHWC chain) from records in which the Winograd alternatives measured
// faster than the direct convolutions: the build runs the Winograd kernels
// (their weights transformed when the plan was made) and its outputs still
// match the reference; with the costs the other way round, it runs none.
func TestBuildChoosesAlgorithm(t *testing.T) {
	g := graph.New("two_convs", 17)
	g.AddInput("x", graph.Float32, []int{1, 16, 10, 10})
	weight := weights(g, 3, 1.0/16)
	pads := map[string]graph.Attr{"pads": {Kind: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}
	g.AddNode(&graph.Node{Name: "c1", OpType: "Conv", Inputs: []string{"x", weight("w1", 16, 16, 3, 3), weight("b1", 16)}, Outputs: []string{"y1"}, Attrs: pads})
	g.AddNode(&graph.Node{Name: "r1", OpType: "Relu", Inputs: []string{"y1"}, Outputs: []string{"z1"}})
	g.AddNode(&graph.Node{Name: "c2", OpType: "Conv", Inputs: []string{"z1", weight("w2", 16, 16, 3, 3)}, Outputs: []string{"y"}, Attrs: pads})
	g.Outputs = []string{"y"}
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(g, partition.Options{Alternatives: true})
	if err != nil {
		t.Fatal(err)
	}
	p := prepared{g, plan}
	alts := 0
	for _, grp := range p.plan.Groups {
		alts += len(grp.Alternatives)
	}
	if alts != 2 {
		t.Fatalf("%d Winograd alternatives, want 2", alts)
	}
	store, _ := handMadeRecords(t, p)
	for _, winogradFaster := range []bool{true, false} {
		recs := scaledRecords{store: store, plan: p.plan, winogradFaster: winogradFaster}
		m := buildRunCheck(t, p, t.TempDir(), Options{Records: recs, Target: testTarget(recordsKey, nil)})
		n := 0
		for _, tr := range m.Tasks {
			if strings.Contains(tr.Ops, "winograd") {
				n++
			}
			if strings.Contains(tr.Ops, "Conv") && tr.Layout != "NHWC" {
				t.Errorf("task %d (%s) reports layout %q, want NHWC (convert-layout ran)", tr.Index, tr.Ops, tr.Layout)
			}
		}
		if winogradFaster && n != 2 || !winogradFaster && n != 0 {
			t.Errorf("winograd faster %v: %d Winograd tasks built of %d", winogradFaster, n, len(m.Tasks))
		}
	}
}

// scaledRecords makes the records of the Winograd tasks 100 times faster
// (or slower) than the store says.
type scaledRecords struct {
	store          *records.Store
	plan           *partition.Plan
	winogradFaster bool
}

func (r scaledRecords) Ranked(workload, target string) ([]records.Record, error) {
	rs, err := r.store.Ranked(workload, target)
	if err != nil {
		return nil, err
	}
	for _, t := range r.plan.Tasks {
		if t.Key == workload && t.Groups[0].Algorithm != "" {
			f := 100.0
			if r.winogradFaster {
				f = 0.01
			}
			for i := range rs {
				rs[i].Costs = []float64{rs[i].Cost() * f}
			}
		}
	}
	return rs, nil
}

// partialRecords hides the records of some tasks.
type partialRecords struct {
	store *records.Store
	keep  map[string]bool
}

func (r *partialRecords) Ranked(workload, target string) ([]records.Record, error) {
	if !r.keep[workload] {
		return nil, nil
	}
	return r.store.Ranked(workload, target)
}

// TestRecordThatDoesNotApply falls back to the default schedule, with the
// reason in the warning and the manifest; with a valid record behind the
// one that does not apply, the build takes the valid one (a made-up fast
// record hid the valid ones).
func TestRecordThatDoesNotApply(t *testing.T) {
	g, err := smallModels[0].build()
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, g)
	bad := badRecords{key: p.plan.Tasks[0].Key}
	var warn bytes.Buffer
	m := buildRunCheck(t, p, t.TempDir(), Options{Records: bad, Target: testTarget("x", nil), Warn: &warn})
	if m.Tasks[0].Schedule != tsrt.FromDefault || !strings.Contains(m.Tasks[0].Default.Why, "does not apply") ||
		!strings.Contains(warn.String(), "task 0 ("+m.Tasks[0].Ops) {
		t.Errorf("task 0: %+v; warnings:\n%s", m.Tasks[0], warn.String())
	}
	st, _, err := sketch.Default(schedule.NewState(p.plan.Tasks[0].DAG), testTarget("x", nil).Sketch)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := schedule.MarshalSteps(st.Steps)
	if err != nil {
		t.Fatal(err)
	}
	bad.next = &records.Record{Version: records.FormatVersion, WorkloadKey: bad.key, Target: "x", Steps: steps, Costs: []float64{2}, Error: records.ErrorNone}
	warn.Reset()
	m = buildRunCheck(t, p, t.TempDir(), Options{Records: bad, Target: testTarget("x", nil), Warn: &warn})
	if m.Tasks[0].Schedule != tsrt.FromRecord || m.Tasks[0].Record.Cost != 2 || !strings.Contains(warn.String(), "1 faster records do not apply") {
		t.Errorf("with a valid record behind: task 0 %+v; warnings:\n%s", m.Tasks[0], warn.String())
	}
}

// badRecords has one record, for key, whose steps name a stage the DAG
// does not have, and then next, if set.
type badRecords struct {
	key  string
	next *records.Record
}

func (b badRecords) Ranked(workload, target string) ([]records.Record, error) {
	if workload != b.key {
		return nil, nil
	}
	out := []records.Record{{Version: records.FormatVersion, WorkloadKey: workload, Target: target,
		Steps: []byte(`[["AN",99,0,"parallel"]]`), Costs: []float64{1}, Error: records.ErrorNone}}
	if b.next != nil {
		out = append(out, *b.next)
	}
	return out, nil
}

func ExampleCoverage_TunedShare() {
	c := tsrt.Coverage{TunedTasks: 1, Tasks: 4, TunedFLOPs: 3e9, FLOPs: 4e9}
	fmt.Printf("tuned tasks = %d/%d, tuned FLOPs = %.1f%%\n", c.TunedTasks, c.Tasks, c.TunedShare())
	// Output: tuned tasks = 1/4, tuned FLOPs = 75.0%
}
