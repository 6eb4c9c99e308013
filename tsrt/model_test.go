package tsrt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// buildTiny builds the tiny model of the test suite with default schedules
// and returns its folder.
func buildTiny(t testing.TB) string {
	t.Helper()
	return buildTinyWith(t, false)
}

// buildTinyWith builds the tiny model, its weights inside the library when
// singleFile.
func buildTinyWith(t testing.TB, singleFile bool) string {
	t.Helper()
	tg := backend.CPU(backend.CPUConfig{Builder: &measure.Builder{Timeout: assemble.LibraryTimeout}})
	return buildTinyFor(t, tg, singleFile)
}

// buildTinyFor builds the tiny model for tg.
func buildTinyFor(t testing.TB, tg *backend.Target, singleFile bool) string {
	t.Helper()
	g, err := onnx.DecodeFile("../testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(g, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := assemble.Build(context.Background(), g, plan, dir, assemble.Options{Target: tg, Model: "tiny.onnx", SingleFile: singleFile}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSingleFile builds the tiny model with its weights inside the library,
// copies the library alone to another folder, and runs it there: its
// outputs are those of the build with a weights file.
func TestSingleFile(t *testing.T) {
	dir := buildTinyWith(t, true)
	if _, err := os.Stat(filepath.Join(dir, "weights.bin")); !os.IsNotExist(err) {
		t.Fatalf("a --single-file build wrote weights.bin (%v)", err)
	}
	alone := filepath.Join(t.TempDir(), "model.so")
	data, err := os.ReadFile(filepath.Join(dir, "libmodel.so"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	single, err := tsrt.Open(alone)
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	files, err := tsrt.Open(buildTiny(t))
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	in := randomInput(files, 9)
	a, err := single.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := files.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a[0].Data, b[0].Data) {
		t.Error("the single-file library's outputs differ from those of the build with weights.bin")
	}
	// The library alone has no manifest; the build folder has its own,
	// and benchmarks.
	if single.Manifest() != nil {
		t.Error("a library copied alone has a manifest")
	}
	if _, err := single.Bench(context.Background(), 0, 1, tsrt.RunOptions{Threads: 1}); !errors.Is(err, tsrt.ErrNoManifest) {
		t.Errorf("Bench of a library alone: %v, want ErrNoManifest", err)
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if man := m.Manifest(); man == nil || !man.Weights.Embedded {
		t.Fatalf("the --single-file build's manifest: %+v", man)
	}
	if _, err := m.Bench(context.Background(), 0, 1, tsrt.RunOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
}

func randomInput(m *tsrt.Model, seed int) []tsrt.Tensor {
	var ins []tsrt.Tensor
	for _, info := range m.Inputs() {
		v := make([]float32, info.Elems())
		x := uint32(seed*7919 + 1)
		for i := range v {
			x = x*1664525 + 1013904223
			v[i] = float32(x>>8)/float32(1<<24)*2 - 1
		}
		ins = append(ins, tsrt.NewTensor(info.Shape, v))
	}
	return ins
}

// TestConcurrentRuns runs one loaded model from 16 goroutines at once, each
// on inputs of its own, and checks every output against a run of the same
// inputs alone: the runs share the weights and nothing else.
func TestConcurrentRuns(t *testing.T) {
	dir := buildTiny(t)
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetThreads(1); err != nil {
		t.Fatal(err)
	}
	const goroutines, runs = 16, 50
	ctx := context.Background()
	want := make([][]byte, goroutines)
	inputs := make([][]tsrt.Tensor, goroutines)
	for g := range goroutines {
		inputs[g] = randomInput(m, g)
		out, err := m.Run(ctx, inputs[g])
		if err != nil {
			t.Fatal(err)
		}
		want[g] = out[0].Data
	}
	if slices.Equal(want[0], want[1]) {
		t.Fatal("two inputs gave the same output: the test would not see runs mixed up")
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for r := range runs {
				out, err := m.Run(ctx, inputs[g])
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(out[0].Data, want[g]) {
					errs <- errors.New("goroutine " + string(rune('a'+g)) + " run " + string(rune('0'+r%10)) + ": output differs from the run alone")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBadCalls checks that every bad call comes back as an *Error with its
// status and a message naming what was wrong.
func TestBadCalls(t *testing.T) {
	dir := buildTiny(t)
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := m.Inputs()[0]
	good := randomInput(m, 1)
	for _, c := range []struct {
		name   string
		inputs []tsrt.Tensor
		status tsrt.Status
		msg    string
	}{
		{"no inputs", nil, tsrt.InvalidArgument, "0 inputs and 1 outputs given, the model has 1 and 1"},
		{"wrong shape", []tsrt.Tensor{tsrt.NewTensor([]int64{1, 3, 16, 16, 1}, make([]float32, in.Elems()))}, tsrt.ShapeMismatch, "has shape [1,3,16,16,1], the model's is [1,3,16,16]"},
		{"wrong dtype", []tsrt.Tensor{tsrt.NewTensor(in.Shape, make([]int32, in.Elems()))}, tsrt.DTypeMismatch, "is int32, the model's is float32"},
	} {
		_, err := m.Run(ctx, c.inputs)
		var e *tsrt.Error
		if !errors.As(err, &e) || e.Status != c.status || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s: got %v, want %s containing %q", c.name, err, c.status, c.msg)
		}
	}
	for _, n := range []int{0, 8} {
		short := []tsrt.Tensor{{DType: tsrt.Float32, Shape: in.Shape, Data: make([]byte, n)}}
		if _, err := m.Run(ctx, short); err == nil || !strings.Contains(err.Error(), "bytes of data, its dtype and shape need 3072") {
			t.Errorf("%d bytes of data: %v", n, err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Run(canceled, good); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, good); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("run after close: %v", err)
	}

	// Weights: truncated, swapped with another file, missing.
	weights := filepath.Join(dir, "weights.bin")
	data, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"truncated", data[:len(data)-4], "truncated"},
		{"flipped", append(slices.Clone(data[:len(data)-1]), data[len(data)-1]^1), "corrupt"},
		{"another build's", append(slices.Clone(data[:8]), make([]byte, len(data)-8)...), "the weights of another build"},
	} {
		if err := os.WriteFile(weights, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := tsrt.Open(dir)
		var e *tsrt.Error
		if !errors.As(err, &e) || e.Status != tsrt.BadWeights || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s weights: got %v, want %s containing %q", c.name, err, tsrt.BadWeights, c.msg)
		}
	}
	if _, err := tsrt.Open(filepath.Join(dir, "nothing-here")); !errors.Is(err, &tsrt.Error{Status: tsrt.NotFound}) {
		t.Errorf("a missing path: got %v, want %s", err, tsrt.NotFound)
	}
	notLib := filepath.Join(t.TempDir(), "libmodel.so")
	if err := os.WriteFile(notLib, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tsrt.Open(notLib); !errors.Is(err, &tsrt.Error{Status: tsrt.BadLibrary}) || !strings.Contains(err.Error(), "not a whole ELF") {
		t.Errorf("not a library: got %v, want %s", err, tsrt.BadLibrary)
	}
}

// TestProfile checks that the steps of profiled runs are timed.
func TestProfile(t *testing.T) {
	m, err := tsrt.Open(buildTiny(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	steps := make([]float64, len(m.Steps()))
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	if err := m.SetProfile(steps); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(context.Background(), randomInput(m, 3)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetProfile(nil); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, s := range steps {
		sum += s
	}
	if !(sum > 0) {
		t.Errorf("profiled steps sum to %g seconds", sum)
	}
}

// BenchmarkRun measures a run of the tiny model through the Go API and
// what the API adds to its kernels (tessera_run's checks, the context
// pool, the pinning and the call through purego): the time of a run less
// the time of its steps, which a profiled pass of as many runs measures
// before.
func BenchmarkRun(b *testing.B) {
	m, err := tsrt.Open(buildTiny(b))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.SetThreads(1); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	in := randomInput(m, 1)
	o := m.Outputs()[0]
	out := []tsrt.Tensor{{DType: o.DType, Shape: o.Shape, Data: make([]byte, o.Elems()*o.DType.Size())}}
	const profiled = 20000
	steps := make([]float64, len(m.Steps()))
	if err := m.SetProfile(steps); err != nil {
		b.Fatal(err)
	}
	for range profiled {
		if err := m.RunInto(ctx, in, out); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.SetProfile(nil); err != nil {
		b.Fatal(err)
	}
	var kernels float64
	for _, s := range steps {
		kernels += s
	}
	kernels /= profiled
	b.ResetTimer()
	t0 := time.Now()
	for b.Loop() {
		if err := m.RunInto(ctx, in, out); err != nil {
			b.Fatal(err)
		}
	}
	perRun := time.Since(t0).Seconds() / float64(b.N)
	b.ReportMetric(kernels*1e6, "µs-kernels/op")
	b.ReportMetric((perRun-kernels)*1e6, "µs-overhead/op")
}

// TestOpenChecked opens build folders intact and damaged: a damaged
// folder's manifest or weights are named by the checks in Go
// (ErrNoManifest, ErrCorruptWeights), not by the library.
func TestOpenChecked(t *testing.T) {
	dir, single := buildTiny(t), buildTinyWith(t, true)
	copyDir := func(t *testing.T, damage func(dir string)) string {
		t.Helper()
		out := t.TempDir()
		if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		damage(out)
		return out
	}
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
		want error  // nil: it opens
		msg  string // in the error
	}{
		{"intact", func(*testing.T) string { return dir }, nil, ""},
		{"single file", func(*testing.T) string { return single }, nil, ""},
		{"weights flipped", func(t *testing.T) string {
			return copyDir(t, func(d string) {
				p := filepath.Join(d, tsrt.WeightsFile)
				w, _ := os.ReadFile(p)
				w[len(w)-1] ^= 0xff
				os.WriteFile(p, w, 0o644)
			})
		}, tsrt.ErrCorruptWeights, "checksum"},
		{"weights truncated", func(t *testing.T) string {
			return copyDir(t, func(d string) {
				p := filepath.Join(d, tsrt.WeightsFile)
				w, _ := os.ReadFile(p)
				os.WriteFile(p, w[:len(w)-4], 0o644)
			})
		}, tsrt.ErrCorruptWeights, "the manifest says"},
		{"no manifest", func(t *testing.T) string {
			return copyDir(t, func(d string) { os.Remove(filepath.Join(d, tsrt.ManifestFile)) })
		}, tsrt.ErrNoManifest, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := tsrt.OpenChecked(c.dir(t))
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				m.Close()
				return
			}
			if err == nil {
				m.Close()
				t.Fatalf("opened; want %v", c.want)
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %v; want %v, saying %q", err, c.want, c.msg)
			}
		})
	}
}
