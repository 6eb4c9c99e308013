package main

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"tessera/costmodel"
	"tessera/measure"
	"tessera/partition"
	"tessera/records"
	"tessera/schedule"
	"tessera/search"
	"tessera/sketch"
)

// TestPriorRetriesBuildTimeouts: a build timeout (two runs sharing the
// cores) is measured again by a later run rather than stored for good,
// until a schedule has timed out in maxBuildTimeouts runs; every
// measurement counts against the budget once, and an identical record
// (an imported copy) once only.
func TestPriorRetriesBuildTimeouts(t *testing.T) {
	l, err := loadModel(tiny, modelFlags{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(l.g, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	task := plan.Tasks[0]
	tg, err := newTarget("cpu", "native", 1, measure.RunOptions{}, &measure.Builder{}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	sk, err := sketch.Generate(schedule.NewState(task.DAG), tg.Sketch)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var states []*schedule.State
	for len(states) < 2 {
		s, err := sketch.Sample(rng, sk[0], tg.Sketch)
		if err == nil && (len(states) == 0 || sketch.Key(s) != sketch.Key(states[0])) {
			states = append(states, s)
		}
	}
	rec := func(s *schedule.State, res measure.Result) records.Record {
		r, err := records.New(task.Key, tg.Key(), s.Steps, res, toolVersion)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	timeout := measure.Result{Kind: measure.BuildTimeout, Msg: "compiler killed after 15s"}
	ok := measure.Result{Costs: []float64{1e-3}}
	store, err := records.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	good := rec(states[1], ok)
	if err := store.Add([]records.Record{rec(states[0], timeout), good, good}); err != nil {
		t.Fatal(err)
	}
	tasks := []search.Task{{Key: task.Key, DAG: task.DAG, Weight: 1}}
	check := func(wantPrior, wantDone, wantRetry int) {
		t.Helper()
		prior, done, retry, err := loadPrior(store, tasks, tg.Key(), search.NewGBDTModel(costmodel.DefaultParams()))
		if err != nil {
			t.Fatal(err)
		}
		if len(prior[task.Key]) != wantPrior || done != wantDone || retry != wantRetry {
			t.Errorf("prior %d, done %d, retry %d; want %d, %d, %d", len(prior[task.Key]), done, retry, wantPrior, wantDone, wantRetry)
		}
	}
	check(1, 2, 1) // the timed-out schedule may be measured again
	if err := store.Add([]records.Record{rec(states[0], timeout)}); err != nil {
		t.Fatal(err)
	}
	check(2, 3, 0) // twice timed out: taken as too slow to compile
}
