package tuning

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

func matmulTask(t *testing.T, n, k, m int) *partition.Task {
	t.Helper()
	out, err := te.MatMul("mm", te.Placeholder("A", n, k), te.Constant("B", k, m))
	if err != nil {
		t.Fatal(err)
	}
	d, err := te.NewDAG(out)
	if err != nil {
		t.Fatal(err)
	}
	return &partition.Task{Key: d.WorkloadKey(), DAG: d, Weight: 1, FLOPs: d.FLOPs()}
}

func cpuTarget() *backend.Target {
	return backend.CPU(backend.CPUConfig{Threads: 1, Builder: &measure.Builder{}})
}

// samples draws n distinct states of the task's sketches.
func samples(t *testing.T, task *partition.Task, tg *backend.Target, n int) []*schedule.State {
	t.Helper()
	sk, err := sketch.Generate(schedule.NewState(task.DAG), tg.Sketch)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var states []*schedule.State
	seen := map[string]bool{}
	for tries := 0; len(states) < n && tries < 1000; tries++ {
		s, err := sketch.Sample(rng, sk[rng.IntN(len(sk))], tg.Sketch)
		if err == nil && !seen[sketch.Key(s)] {
			seen[sketch.Key(s)] = true
			states = append(states, s)
		}
	}
	if len(states) < n {
		t.Fatalf("%d distinct samples, want %d", len(states), n)
	}
	return states
}

func record(t *testing.T, task *partition.Task, key string, s *schedule.State, res measure.Result) records.Record {
	t.Helper()
	r, err := records.New(task.Key, key, s.Steps, res, "test")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantError fails t unless err is an error containing want where want
// is not "", nil where it is. It returns whether the case wanted an
// error, and so ends there.
func wantError(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want an error containing %q", err, want)
	}
	return true
}

// inOrder fails t unless text holds each of wants, in order.
func inOrder(t *testing.T, text string, wants []string) {
	t.Helper()
	rest := text
	for _, w := range wants {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("no %q (in order) in\n%s", w, text)
		}
		rest = rest[i+len(w):]
	}
}

func openStore(t *testing.T) *records.Store {
	t.Helper()
	store, err := records.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// TestPreloadRetriesBuildTimeouts: a build timeout (two runs sharing the
// cores) is measured again by a later run rather than stored for good,
// until a schedule has timed out in MaxBuildTimeouts runs; every
// measurement counts against the budget once, and an identical record
// (an imported copy) once only.
func TestPreloadRetriesBuildTimeouts(t *testing.T) {
	task := matmulTask(t, 16, 16, 16)
	tg := cpuTarget()
	states := samples(t, task, tg, 2)
	timeout := measure.Result{Kind: measure.BuildTimeout, Msg: "compiler killed after 15s"}
	ok := measure.Result{Costs: []float64{1e-3}}
	store := openStore(t)
	good := record(t, task, tg.Key(), states[1], ok)
	if err := store.Add([]records.Record{record(t, task, tg.Key(), states[0], timeout), good, good}); err != nil {
		t.Fatal(err)
	}
	check := func(wantPrior, wantDone, wantRetry int) {
		t.Helper()
		prior, done, retry, err := Preload(store, []*partition.Task{task}, tg.Key(), &costmodel.Dataset{})
		if err != nil {
			t.Fatal(err)
		}
		if len(prior[task.Key]) != wantPrior || done != wantDone || retry != wantRetry {
			t.Errorf("prior %d, done %d, retry %d; want %d, %d, %d", len(prior[task.Key]), done, retry, wantPrior, wantDone, wantRetry)
		}
	}
	check(1, 2, 1) // the timed-out schedule may be measured again
	if err := store.Add([]records.Record{record(t, task, tg.Key(), states[0], timeout)}); err != nil {
		t.Fatal(err)
	}
	check(2, 3, 0) // twice timed out: taken as too slow to compile
}

func TestFitLengths(t *testing.T) {
	for _, c := range []struct {
		lengths []int
		extent  int
		want    []int
	}{
		{[]int{4, 16}, 128, []int{4, 16}}, // divides: unchanged
		{[]int{4, 16}, 96, []int{3, 16}},  // 96/16 = 6 left: 3 is nearer 4 than 6 by ratio
		{[]int{8, 16}, 56, []int{4, 14}},  // innermost first: 14, then 4 of the 4 left
		{[]int{0, 16}, 40, []int{0, 20}},  // unfilled stays; 20 is nearer 16 than 10
		{[]int{32}, 7, []int{7}},          // a prime extent
		{[]int{1, 1, 1}, 5, []int{1, 1, 1}},
	} {
		if got := fitLengths(c.lengths, c.extent); !slices.Equal(got, c.want) {
			t.Errorf("fitLengths(%v, %d) = %v, want %v", c.lengths, c.extent, got, c.want)
		}
	}
}

// TestTransferSeedsSimilarWorkload: records of a 64³ matmul seed a new
// 96×64×80 matmul: the best states replay with their splits fitted, and a
// task of another kind gets none.
func TestTransferSeedsSimilarWorkload(t *testing.T) {
	tg := cpuTarget()
	src, dst := matmulTask(t, 64, 64, 64), matmulTask(t, 96, 64, 80)
	other := func() *partition.Task {
		d := tetest.DAGs()["softmax"]
		return &partition.Task{Key: d.WorkloadKey(), DAG: d, Weight: 1}
	}()
	store := openStore(t)
	if err := store.PutTask(TaskInfo(src)); err != nil {
		t.Fatal(err)
	}
	states := samples(t, src, tg, 6)
	var recs []records.Record
	for i, s := range states {
		recs = append(recs, record(t, src, tg.Key(), s, measure.Result{Costs: []float64{float64(i+1) * 1e-3}}))
	}
	if err := store.Add(recs); err != nil {
		t.Fatal(err)
	}
	seeds, err := Transfer(store, []*partition.Task{dst, other}, nil, tg.Key(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds[other.Key]) != 0 {
		t.Errorf("a softmax got %d seeds from a matmul", len(seeds[other.Key]))
	}
	got := seeds[dst.Key]
	if len(got) == 0 || len(got) > 4 {
		t.Fatalf("%d seeds, want 1 to 4", len(got))
	}
	for _, s := range got {
		if _, err := tg.Features(s); err != nil {
			t.Errorf("a seed does not lower: %v", err)
		}
		for _, st := range s.Steps {
			if sp, ok := st.(*schedule.Split); ok {
				prod := 1
				for _, l := range sp.Lengths {
					prod *= max(l, 1)
				}
				if prod > 96 {
					t.Errorf("split %v covers %d, more than any extent of the task", sp, prod)
				}
			}
		}
	}
}

// TestTransferFromAnotherTarget: a task measured on another target (two
// threads, another CPU) starts from its own best states there.
func TestTransferFromAnotherTarget(t *testing.T) {
	tg := cpuTarget()
	task := matmulTask(t, 32, 32, 32)
	store := openStore(t)
	if err := store.PutTask(TaskInfo(task)); err != nil {
		t.Fatal(err)
	}
	states := samples(t, task, tg, 3)
	var recs []records.Record
	for i, s := range states {
		recs = append(recs, record(t, task, "another target", s, measure.Result{Costs: []float64{float64(3-i) * 1e-3}}))
	}
	if err := store.Add(recs); err != nil {
		t.Fatal(err)
	}
	seeds, err := Transfer(store, []*partition.Task{task}, nil, tg.Key(), 2)
	if err != nil {
		t.Fatal(err)
	}
	got := seeds[task.Key]
	if len(got) != 2 || sketch.Key(got[0]) != sketch.Key(states[2]) || sketch.Key(got[1]) != sketch.Key(states[1]) {
		t.Errorf("%d seeds; want the 2 fastest states of the other target, fastest first", len(got))
	}
}
