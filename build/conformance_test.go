package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"tessera/graph"
	"tessera/graph/onnx"
	"tessera/measure"
	"tessera/partition"
)

// The model tests of ONNX's own backend test data (Debian's
// libonnx-testdata), built and run: each model is decoded, bound to the
// shapes of its test inputs, simplified, partitioned and built with
// default schedules; the library runs on the stored inputs and every
// output is compared with the stored one. As in partition's conformance
// test, int64 inputs (shapes, axes) and float inputs an op needs as
// constants are frozen to the test's values, and a test using an op, a
// data type or a feature Tessera does not handle counts as unsupported.

const testdataRoot = "/usr/share/libonnx-testdata/data"

// modelSuites are the suites of whole models (the node suite tests single
// ops, which partition's conformance test covers with the evaluator).
var modelSuites = []string{"pytorch-converted", "simple"}

// minModelsPassed guards against a silent drop in what the build handles:
// the count measured when the test was written (85 passed, 20 unsupported:
// ConvTranspose, Gradient, sequence ops, Shrink, Sign, string and double
// inputs).
const minModelsPassed = 85

type outcome int

const (
	passed outcome = iota
	failed
	unsupported
)

func TestConformanceModels(t *testing.T) {
	if _, err := os.Stat(testdataRoot); err != nil {
		t.Fatalf("ONNX test data not found at %s: install Debian's libonnx-testdata (scripts/deps.sh does it)", testdataRoot)
	}
	type job struct{ suite, name, dir string }
	var jobs []job
	for _, s := range modelSuites {
		entries, err := os.ReadDir(filepath.Join(testdataRoot, s))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				jobs = append(jobs, job{s, e.Name(), filepath.Join(testdataRoot, s, e.Name())})
			}
		}
	}
	builder := &measure.Builder{Timeout: LibraryTimeout}
	type result struct {
		o      outcome
		reason string
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				o, why := runModelCase(t, jobs[i].dir, builder)
				results[i] = result{o, why}
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()

	var counts [3]int
	why := map[string]int{}
	for i, r := range results {
		counts[r.o]++
		switch r.o {
		case failed:
			t.Errorf("%s/%s: %s", jobs[i].suite, jobs[i].name, r.reason)
		case unsupported:
			why[r.reason]++
			if testing.Verbose() {
				t.Logf("unsupported %s/%s: %s", jobs[i].suite, jobs[i].name, r.reason)
			}
		}
	}
	reasons := make([]string, 0, len(why))
	for r := range why {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	fmt.Println("built models, unsupported by reason:")
	for _, r := range reasons {
		fmt.Printf("  %3d  %s\n", why[r], r)
	}
	fmt.Printf("built models (%v): %d passed, %d failed, %d unsupported\n", modelSuites, counts[passed], counts[failed], counts[unsupported])
	if counts[passed] < minModelsPassed {
		t.Errorf("%d models passed, want at least %d", counts[passed], minModelsPassed)
	}
}

// runModelCase builds and runs one test directory: every test_data_set_*
// must match.
func runModelCase(t *testing.T, dir string, builder *measure.Builder) (outcome, string) {
	g, err := onnx.DecodeFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return classify(err)
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return failed, "no test_data_set_* directory"
	}
	sort.Strings(sets)
	for _, set := range sets {
		o, why := runModelDataSet(t, g.Clone(), set, builder)
		if o == failed {
			return o, filepath.Base(set) + ": " + why
		}
		if o != passed {
			return o, why
		}
	}
	return passed, ""
}

// readTensors reads PREFIX_0.pb, PREFIX_1.pb, ... for n values.
func readTensors(set, prefix string, n int) ([]*graph.Tensor, error) {
	out := make([]*graph.Tensor, n)
	for i := range out {
		data, err := os.ReadFile(filepath.Join(set, fmt.Sprintf("%s_%d.pb", prefix, i)))
		if err != nil {
			return nil, err
		}
		if _, out[i], err = onnx.DecodeTensor(data); err != nil {
			return nil, fmt.Errorf("%s %d: %w", prefix, i, err)
		}
	}
	return out, nil
}

func runModelDataSet(t *testing.T, g *graph.Graph, set string, builder *measure.Builder) (outcome, string) {
	inputs, err := readTensors(set, "input", len(g.Inputs))
	if err != nil {
		return classify(err)
	}
	want, err := readTensors(set, "output", len(g.Outputs))
	if err != nil {
		return classify(err)
	}
	byName := map[string]*graph.Tensor{}
	dims := map[string][]int{}
	for i, name := range append([]string(nil), g.Inputs...) {
		byName[name] = inputs[i]
		if inputs[i].DType == graph.Int64 {
			if err := g.Freeze(name, inputs[i]); err != nil {
				return failed, err.Error()
			}
			continue
		}
		dims[name] = inputs[i].Shape
	}
	if err := g.Bind(dims); err != nil {
		return failed, err.Error()
	}
	var plan *partition.Plan
	for attempt := 0; ; attempt++ {
		base := g.Clone()
		err := graph.RunPasses(g, nil)
		if err == nil {
			plan, err = partition.Extract(g, partition.Options{})
		}
		var nc *graph.NotConstantError
		if errors.As(err, &nc) && base.IsInput(nc.Value) && attempt < 8 {
			// The op needs this input's contents: freeze it and start over.
			g = base
			if err := g.Freeze(nc.Value, byName[nc.Value]); err != nil {
				return failed, err.Error()
			}
			continue
		}
		if err != nil {
			return classify(err)
		}
		break
	}
	dir := t.TempDir()
	if _, err := Build(context.Background(), g, plan, dir, Options{Target: testTarget("", builder), Model: "model.onnx"}); err != nil {
		return classify(err)
	}
	m, err := Open(dir)
	if err != nil {
		return failed, err.Error()
	}
	data := make([][]float32, len(g.Inputs))
	for i, name := range g.Inputs {
		data[i] = byName[name].F32
	}
	got, err := m.Run(context.Background(), data, RunOptions{Builder: builder, Threads: 1})
	if err != nil {
		return failed, err.Error()
	}
	for i, w := range want {
		if w.DType != graph.Float32 {
			return unsupported, "output is " + w.DType.String()
		}
		if ok, msg := measure.Compare(got[i], w.F32, 1e-4, 1e-5); !ok {
			return failed, fmt.Sprintf("output %s: %s", g.Outputs[i], msg)
		}
	}
	return passed, ""
}

// classify tells unsupported features from failures; unsupported reasons
// are shortened to the op where there is one, so that the tally groups
// them.
func classify(err error) (outcome, string) {
	var uo *graph.UnsupportedOpError
	switch {
	case errors.As(err, &uo):
		return unsupported, "op " + uo.Op
	case errors.Is(err, graph.ErrUnsupported):
		msg := err.Error()
		if i := strings.Index(msg, ".onnx: "); i >= 0 {
			msg = msg[i+len(".onnx: "):] // the file is in the test's name
		}
		return unsupported, msg
	}
	return failed, err.Error()
}
