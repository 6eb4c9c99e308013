package tuning

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/measure/remote"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/search"
)

// TestLoadTasks: a model as bound, over a batch (tuned at 1), over a
// sequence length (the tasks of its tuning points), weighed where weights
// fall on the sequence length and not where they fall on the batch; a
// weight outside the range is an error of --weights.
func TestLoadTasks(t *testing.T) {
	path := dynamicModel(t, true)
	bound := frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}
	batch := frontend.LoadOptions{Inputs: map[string][]int{"x": {-1, 5, 8}}, DimNames: map[string][]string{"x": {"N", "", ""}}}
	for _, c := range []struct {
		name, path    string // path: the dynamic model's where ""
		o             TaskOptions
		tasks         int
		batch, dim    string // the symbols, "" for none
		points, err   string
		emphasis      bool
		firstTaskDims []int // the shape of the first task's input
	}{
		{name: "bound", o: TaskOptions{Load: bound}, tasks: 1, firstTaskDims: []int{2, 5, 8}},
		{name: "a batch", o: TaskOptions{Load: batch, Ranges: map[string][2]int{"N": {1, 8}}, Weights: map[string]map[int]float64{"N": {4: 1}}},
			tasks: 1, batch: "N=1..8", firstTaskDims: []int{1, 5, 8}},
		{name: "a batch and a sequence length", o: TaskOptions{Ranges: map[string][2]int{"N": {1, 4}, "S": {16, 128}}},
			tasks: 3, batch: "N=1..4", dim: "S=16..128", firstTaskDims: []int{1, 24, 8}},
		{name: "weights on the sequence length", o: TaskOptions{Ranges: map[string][2]int{"N": {1, 4}, "S": {16, 128}}, Weights: map[string]map[int]float64{"S": {16: 1, 128: 3}}},
			tasks: 3, batch: "N=1..4", dim: "S=16..128", emphasis: true, points: "S=24 weighs 0.75, S=48 weighs 0.00, S=96 weighs 2.25", firstTaskDims: []int{1, 24, 8}},
		{name: "a weight outside the range", o: TaskOptions{Ranges: map[string][2]int{"N": {1, 4}, "S": {16, 128}}, Weights: map[string]map[int]float64{"S": {129: 1}}},
			err: "--weights: weight on S=129, outside the range S=16..128"},
		{name: "no model", path: "no-such.onnx", o: TaskOptions{Load: bound}, err: "no-such.onnx"},
	} {
		if c.path == "" {
			c.path = path
		}
		ts, err := LoadTasks(c.path, c.o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var b, d string
		if ts.Batch != nil {
			b = ts.Batch.Symbol.String()
		}
		if ts.Dim != nil {
			d = ts.Dim.Symbol.String()
		}
		if len(ts.Tasks) != c.tasks || b != c.batch || d != c.dim || (ts.Emphasis != nil) != c.emphasis || ts.Points != c.points || ts.Model == nil {
			t.Errorf("%s: %d tasks, batch %q, dim %q, emphasis %v, points %q; want %d, %q, %q, %v, %q",
				c.name, len(ts.Tasks), b, d, ts.Emphasis, ts.Points, c.tasks, c.batch, c.dim, c.emphasis, c.points)
			continue
		}
		if got := ts.Tasks[0].DAG.Tensors[0].Shape; !slices.Equal(got, c.firstTaskDims) {
			t.Errorf("%s: the first task reads %v, want %v", c.name, got, c.firstTaskDims)
		}
	}
}

// TestCheckFootprints: tasks within the bound pass (0: the default);
// the first one over it is named with --max-memory.
func TestCheckFootprints(t *testing.T) {
	tasks := []*partition.Task{matmulTask(t, 4, 4, 4), matmulTask(t, 64, 64, 64)}
	small := measure.Footprint(tasks[0].DAG)
	for _, c := range []struct {
		max  int64
		want string
	}{
		{0, ""},
		{1 << 30, ""},
		{measure.Footprint(tasks[1].DAG), ""},
		{small, "task 1 (" + tasks[1].Ops() + ") cannot be tuned: "},
		{small - 1, "task 0 (" + tasks[0].Ops() + ") cannot be tuned: "},
	} {
		err := CheckFootprints(tasks, c.max)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "(--max-memory)")) {
			t.Errorf("max %d: %v, want %q", c.max, err, c.want)
		}
	}
}

// TestMeasurer: without a NATS server, this machine measures, as the
// target's Measurer with the checks asked for, under the target's key;
// with one, its workers do, and a server that cannot be reached is
// Open's error.
func TestMeasurer(t *testing.T) {
	tg := cpuTarget()
	for _, c := range []struct {
		r         remote.DialOptions
		verify    bool
		maxMemory int64
		err       string
	}{
		{remote.DialOptions{}, false, 0, ""},
		{remote.DialOptions{}, true, 1 << 20, ""},
		{remote.DialOptions{URL: "nats://127.0.0.1:1"}, true, 0, "--nats: "},
	} {
		m, key, err := Measurer(context.Background(), tg, c.r, c.verify, c.maxMemory)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %v, want an error containing %q", c.r, err, c.err)
			}
			continue
		}
		local, ok := m.(*measure.Measurer)
		if err != nil || !ok || key != tg.Key() || local.Verify != c.verify || local.MaxMemory != c.maxMemory {
			t.Errorf("verify %v, max memory %d: %T %+v, key %q, %v", c.verify, c.maxMemory, m, local, key, err)
		}
	}
}

// fakeBar records what a progress bar is told.
type fakeBar struct {
	max  int
	desc string
	n    int
}

func (b *fakeBar) SetMax(n int)           { b.max = n }
func (b *fakeBar) Set(desc string, n int) { b.desc, b.n = desc, n }
func (b *fakeBar) Finish()                {}

// TestBarProgress: the bar moves to the trials committed, out of the
// trials asked for, saying the round's task and the estimated latency
// ("?" while a task has no valid schedule).
func TestBarProgress(t *testing.T) {
	tasks := make([]*search.TaskProgress, 3)
	for _, c := range []struct {
		p    search.Progress
		want fakeBar
	}{
		{search.Progress{Trials: 64, Total: 200, Task: 0, Objective: 0.0015, Complete: true, Tasks: tasks}, fakeBar{200, "task 1/3, est. model latency 1.500 ms", 64}},
		{search.Progress{Trials: 10, Total: 100, Task: 2, Objective: 0.0015, Complete: false, Tasks: tasks}, fakeBar{100, "task 3/3, est. model latency ?", 10}},
	} {
		var b fakeBar
		BarProgress(&b)(c.p)
		if b != c.want {
			t.Errorf("%+v: bar %+v, want %+v", c.p, b, c.want)
		}
	}
}
