package assemble

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/tsrt"
)

// builtIntegers builds a model of int64 outputs: best, the ArgMax over
// axis 1 of scores (float32 [2, 6]), and next, ids (int64 [3]) plus one.
func builtIntegers(t *testing.T) string {
	t.Helper()
	g := graph.New("ints", 17)
	g.AddInput("scores", graph.Float32, []int{2, 6})
	g.AddInput("ids", graph.Int64, []int{3})
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "best", OpType: "ArgMax", Inputs: []string{"scores"}, Outputs: []string{"best"}, Attrs: axisAttr(1)})
	g.AddNode(&graph.Node{Name: "next", OpType: "Add", Inputs: []string{"ids", "one"}, Outputs: []string{"next"}})
	g.Outputs = []string{"best", "next"}
	p := prepare(t, g)
	dir := t.TempDir()
	if _, err := Build(context.Background(), p.g, p.plan, dir, Options{Target: testTarget(recordsKey, nil)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunFilesIntegers: tune run's files keep integers exact end to end.
// An int32 .npy file feeds an int64 input; the model's int64 outputs
// (an ArgMax, and that input plus one) are written as int64 .npy files
// and compare equal to int64 references.
func TestRunFilesIntegers(t *testing.T) {
	m, err := tsrt.Open(builtIntegers(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	work := t.TempDir()
	file := func(name string, v tsrt.Tensor) string {
		path := filepath.Join(work, name)
		if err := tsrt.WriteTensorFile(path, v); err != nil {
			t.Fatal(err)
		}
		return path
	}
	scores := file("scores.npy", tsrt.NewTensor([]int64{2, 6}, []float32{0, 1, 9, 2, 0, 0, 5, 4, 3, 2, 1, 0}))
	ids := file("ids.npy", tsrt.NewTensor([]int64{3}, []int32{-5, 0, 1<<24 - 2}))
	wantNext := tsrt.NewTensor([]int64{3}, []int64{-4, 1, 1<<24 - 1})
	refNext := file("next_ref.npy", wantNext)
	out := filepath.Join(work, "out")
	written, err := m.RunFiles(context.Background(), tsrt.FileRun{
		Inputs: map[string]string{"scores": scores, "ids": ids}, References: map[string]string{"next": refNext},
		OutDir: out, Format: "npy", RTol: 0, ATol: 0, RunOptions: tsrt.RunOptions{Threads: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 || written[1].Diff == nil || written[1].Diff.Bad != 0 {
		t.Errorf("written %+v", written)
	}
	for _, c := range []struct {
		name  string
		shape []int
		want  tsrt.Tensor
	}{
		{"best", []int{2, 1}, tsrt.NewTensor([]int64{2, 1}, []int64{2, 0})},
		{"next", []int{3}, wantNext},
	} {
		path := filepath.Join(out, c.name+".npy")
		got, err := tsrt.ReadTensorFile(path, tsrt.ManifestTensor{Name: c.name, Shape: c.shape}) // in the file's dtype
		if err != nil || got.DType != tsrt.Int64 || !bytes.Equal(got.Data, c.want.Data) {
			t.Errorf("%s: %v (%v), want %v", path, got.Data, err, c.want.Data)
		}
	}
	// From 2^24 on the runtime refuses an integer, where float32 would
	// round it.
	big := file("big.npy", tsrt.NewTensor([]int64{3}, []int64{0, 0, 1<<24 + 1}))
	if _, err := m.RunFiles(context.Background(), tsrt.FileRun{Inputs: map[string]string{"scores": scores, "ids": big}, OutDir: out, Format: "npy"}); err == nil {
		t.Errorf("an int64 input beyond 2^24 ran")
	} else {
		t.Logf("beyond 2^24: %v", err)
	}
}
