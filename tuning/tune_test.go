package tuning

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/search"
)

// countingBar counts the progress it is shown and its ends.
type countingBar struct{ sets, finished int }

func (b *countingBar) SetMax(int)      {}
func (b *countingBar) Set(string, int) { b.sets++ }
func (b *countingBar) Finish()         { b.finished++ }

// TestTune: a run measures the trials asked for into the database and
// reports its start, its rounds (on the log, or on a bar it finishes)
// and its end; the same run again has nothing to do. A cancelled run
// stops with its end written, a batch that cannot be measured is an
// error that says how to resume, and a cost model that cannot be read
// is one of --cost-model; so is a target tune does not know, of
// --target.
func TestTune(t *testing.T) {
	tg := cpuTarget()
	tasks := &TaskSet{Tasks: []*partition.Task{matmulTask(t, 16, 16, 16)}}
	db := filepath.Join(t.TempDir(), "t.db")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name      string
		ctx       context.Context
		db        string // db where ""
		costModel string
		target    string // cpu where ""
		bar       bool
		failAfter int
		stopped   bool
		err       string
		want      []string // in the report, in order
		log       string   // in the log
		stored    int
	}{
		{name: "first run", costModel: "none", log: "committed 8/8 trials (task 1/1)", stored: 8,
			want: []string{"tuning m.onnx: 1 tasks, 8 trials (0 from earlier runs, 8 to go), target cpu, records in t.db\n", "8 trials this run, 0 from earlier runs", "wall time "}},
		{name: "resumed, on a bar", costModel: "none", bar: true, stored: 8,
			want: []string{"tuning m.onnx: 1 tasks, 8 trials (8 from earlier runs, 0 to go)", "0 trials this run, 8 from earlier runs"}},
		{name: "cancelled", ctx: cancelled, db: "c.db", costModel: "none", stopped: true, err: context.Canceled.Error(),
			want: []string{"0 trials this run", "wall time "}},
		{name: "measurer fails", db: "f.db", costModel: "none", failAfter: 4, log: "committed 4/8 trials", err: "run the same command to resume"},
		{name: "no cost model", db: "n.db", costModel: "no-such.txt", err: "--cost-model: "},
		{name: "no such target", db: "t2.db", costModel: "none", target: "tpu", err: `--target "tpu": `},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, path := c.ctx, db
			if ctx == nil {
				ctx = context.Background()
			}
			if c.db != "" {
				path = filepath.Join(t.TempDir(), c.db)
			}
			opts := DefaultOptions(search.DefaultOptions(tg))
			opts.Trials, opts.PerRound, opts.Transfer = 8, 4, 0
			var out, log strings.Builder
			if c.target == "" {
				c.target = "cpu"
			}
			r := Run{Options: opts, Seed: 1, Population: 16, Tasks: tasks, Target: backend.Config{Name: c.target, CPU: "native", Threads: 1}, DB: path, Model: "m.onnx", DBName: filepath.Base(path),
				Measurer: &countingMeasurer{failAfter: c.failAfter}, CostModel: c.costModel, Log: &log}
			bar := &countingBar{}
			if c.bar {
				r.Bar = bar
			}
			stopped, err := Tune(ctx, &out, r)
			if stopped != c.stopped || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("stopped %v, %v; want %v and an error containing %q\n%s", stopped, err, c.stopped, c.err, out.String())
			}
			inOrder(t, out.String(), c.want)
			if !strings.Contains(log.String(), c.log) || c.log == "" && log.Len() > 0 {
				t.Errorf("log %q, want %q", log.String(), c.log)
			}
			if want := map[bool]int{true: 1}[c.bar]; bar.finished != want {
				t.Errorf("bar finished %d times, want %d", bar.finished, want)
			}
			if c.stored > 0 {
				store, err := records.OpenReadOnly(path)
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				if n, err := store.Count(); err != nil || n != c.stored {
					t.Errorf("%d records stored (%v), want %d", n, err, c.stored)
				}
			}
		})
	}
}

// TestWriteRanges: a model tuned as bound says nothing; over a batch, it
// is tuned one sample at a time (weights on it moving nothing); over a
// sequence length, at its tuning points and then its probe points, with
// the points' weights where weights fall on it.
func TestWriteRanges(t *testing.T) {
	path := dynamicModel(t, true)
	bound := frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}
	batched := frontend.LoadOptions{Inputs: map[string][]int{"x": {-1, 5, 8}}, DimNames: map[string][]string{"x": {"N", "", ""}}}
	ranges := map[string][2]int{"N": {1, 4}, "S": {16, 128}}
	batch := "tune: over N=1..4 one sample at a time: the tasks of the model at N=1, which tune build --range runs once per sample\n"
	dim := "tune: over S=16..128: the tasks at S=[24 48 96] (3 workloads), their best schedules then measured at S=[16 17 20 23 24 25 34 47 48 49 68 95 96 97 111 127 128], whose fastest tune build --range replays at the values nearest each\n"
	for _, c := range []struct {
		name string
		o    TaskOptions
		want string
	}{
		{"bound", TaskOptions{Load: bound}, ""},
		{"a weighed batch", TaskOptions{Ranges: map[string][2]int{"N": {1, 4}}, Load: batched, Weights: map[string]map[int]float64{"N": {4: 1}}},
			batch + "tune: --weights N=...: every sample of the batch runs the same kernels, so its weights move no trials\n"},
		{"a batch and a sequence length", TaskOptions{Ranges: ranges}, batch + dim},
		{"weights on the sequence length", TaskOptions{Ranges: ranges, Weights: map[string]map[int]float64{"S": {16: 1, 128: 3}}},
			batch + dim + "tune: --weights: S=24 weighs 0.75, S=48 weighs 0.00, S=96 weighs 2.25\n"},
	} {
		ts, err := LoadTasks(path, c.o)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var b strings.Builder
		ts.WriteRanges(&b, "tune")
		if b.String() != c.want {
			t.Errorf("%s: wrote\n%s\nwant\n%s", c.name, b.String(), c.want)
		}
	}
}

// TestRunCheck: tune's defaults pass; a budget, round, population or
// thread count that is not positive, a negative warm-up or transfer, and
// an unknown task scheduler do not, each naming the flags.
func TestRunCheck(t *testing.T) {
	const counts = "--trials, --per-round, --population and --threads must be positive (--warm-up and --transfer not negative)"
	for _, c := range []struct {
		name string
		edit func(*Run)
		err  string
	}{
		{"defaults", func(*Run) {}, ""},
		{"no trials", func(r *Run) { r.Trials = 0 }, ""}, // a run that only reports
		{"negative trials", func(r *Run) { r.Trials = -1 }, counts},
		{"no rounds", func(r *Run) { r.PerRound = 0 }, counts},
		{"no population", func(r *Run) { r.Population = 0 }, counts},
		{"no threads", func(r *Run) { r.Target.Threads = 0 }, counts},
		{"negative warm-up", func(r *Run) { r.WarmUp = -1 }, counts},
		{"negative transfer", func(r *Run) { r.Transfer = -1 }, counts},
		{"unknown scheduler", func(r *Run) { r.Scheduler.Strategy = "lottery" }, "lottery"},
	} {
		r := Run{Options: DefaultOptions(search.DefaultOptions(nil)), Population: 128, Target: backend.Config{Name: "cpu", Threads: 4}}
		r.Scheduler.Strategy = "gradient"
		c.edit(&r)
		if err := r.Check(); (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}
