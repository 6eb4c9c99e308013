package records

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCurve(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "t.db"))
	defer s.Close()
	at := func(r Record, sec int64) Record { r.At = time.Unix(1700000000+sec, 0).UTC(); return r }
	other := rec("w1", []float64{1e-9}, "none")
	other.Target = "elsewhere"
	// Added out of measurement order: the record of second 2 comes last.
	batch := []Record{
		at(rec("w1", []float64{4e-3}, "none"), 1),  // trial 1
		at(rec("w1", nil, "runtime_error"), 3),     // trial 3
		at(rec("w2", []float64{10e-3}, "none"), 4), // trial 4: every task valid
		at(rec("w1", []float64{3e-3}, "none"), 5),  // trial 5
		at(rec("w3", []float64{1e-9}, "none"), 6),  // not a task of the curve
		at(other, 7), // another target
		at(rec("w2", []float64{8e-3, 9e-3, 7e-3}, "none"), 8), // trial 6 (median 8e-3)
		at(rec("w1", []float64{5e-3}, "none"), 2),             // trial 2, no better
	}
	if err := s.Add(batch); err != nil {
		t.Fatal(err)
	}
	tasks := []TaskInfo{{Key: "w1", Weight: 2}, {Key: "w2", Weight: 1}}
	c, err := s.Curve("cpu-test", tasks)
	if err != nil {
		t.Fatal(err)
	}
	if c.Trials != 6 || c.Valid != 5 {
		t.Errorf("%d trials, %d valid; want 6, 5", c.Trials, c.Valid)
	}
	wantBest := [][]CurvePoint{{{1, 4e-3}, {5, 3e-3}}, {{4, 10e-3}, {6, 8e-3}}}
	if !reflect.DeepEqual(c.Best, wantBest) {
		t.Errorf("best %v, want %v", c.Best, wantBest)
	}
	wantLat := []CurvePoint{{4, 2*4e-3 + 10e-3}, {5, 2*3e-3 + 10e-3}, {6, 2*3e-3 + 8e-3}}
	got := c.Latency()
	if len(got) != len(wantLat) {
		t.Fatalf("latency %v, want %v", got, wantLat)
	}
	for i, p := range got {
		if p.Trial != wantLat[i].Trial || math.Abs(p.Value-wantLat[i].Value) > 1e-15 {
			t.Errorf("latency %v, want %v", got, wantLat)
		}
	}
	// A task without a valid record leaves the latency undefined.
	c, err = s.Curve("cpu-test", append(tasks, TaskInfo{Key: "nothing", Weight: 1}))
	if err != nil || c.Latency() != nil || c.Trials != 6 {
		t.Errorf("with a task never measured: %v, latency %v, %d trials", err, c.Latency(), c.Trials)
	}
	if c, err := s.Curve("no such target", tasks); err != nil || c.Trials != 0 || c.Latency() != nil {
		t.Errorf("unknown target: %+v %v", c, err)
	}
}

// TestCurveOf picks the target and, without tasks, takes every stored
// task with records on it; a curve with nothing to plot is an error.
func TestCurveOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	s := open(t, path)
	defer s.Close()
	for _, k := range []string{"w1", "w2", "w3"} {
		if err := s.PutTask(TaskInfo{Key: k, Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	failed := rec("w2", nil, "runtime_error")
	failed.Target = "cpu-other"
	if err := s.Add([]Record{rec("w1", []float64{2e-3}, "none"), rec("w2", []float64{1e-3}, "none"), failed}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CurveOf(nil, ""); err == nil || !strings.Contains(err.Error(), "records of 2 targets; name one with --target") {
		t.Errorf("two targets, none named: %v", err)
	}
	c, err := s.CurveOf(nil, "cpu-test")
	if err != nil || len(c.Tasks) != 2 || c.Trials != 2 {
		t.Fatalf("every task of cpu-test: %+v, %v", c, err)
	}
	want := "2 trials (2 successful) of 2 tasks on cpu-test\nestimated model latency: 3.0000 ms after trial 2, 3.0000 ms after trial 2"
	if got := c.Summary(); got != want {
		t.Errorf("Summary:\n%s\nwant\n%s", got, want)
	}
	if _, err := s.CurveOf(nil, "other"); err == nil || err.Error() != path+" has 1 records of these tasks on cpu-other, none successful: nothing to plot" {
		t.Errorf("only failed records: %v", err)
	}
	if _, err := s.CurveOf([]TaskInfo{}, ""); err == nil || err.Error() != path+" has no records of these tasks" {
		t.Errorf("no tasks: %v", err)
	}
}

func TestWriteStats(t *testing.T) {
	var b strings.Builder
	WriteStats(&b, []Stat{{WorkloadKey: "w1", Target: "cpu", Records: 3, Errors: 1, Best: 2e-3}, {WorkloadKey: "w2", Target: "cpu", Records: 1, Errors: 1, Best: math.Inf(1)}})
	want := "workload  records  errors  best ms  target\nw1        3        1       2.0000   cpu\nw2        1        1       -        cpu\n"
	if b.String() != want {
		t.Errorf("WriteStats:\n%s\nwant\n%s", b.String(), want)
	}
	if ShortKey("v2-4e89717c8d06c431") != "v2-4e89717c" || ShortKey("w1") != "w1" {
		t.Error("ShortKey")
	}
}
