package sketch

import (
	"strings"
	"testing"

	"tessera/schedule"
	"tessera/schedule/schedtest"
	"tessera/te"
)

// TestDefault: every example DAG gets a default schedule that lowers,
// computes what the reference evaluator computes, and is the same every
// time; a matmul's gets the 16-lane register tile.
func TestDefault(t *testing.T) {
	dags := te.ExampleDAGs()
	for _, name := range sortedNames(dags) {
		d := dags[name]
		st, rule, err := Default(schedule.NewState(d), testOptions())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		f, err := schedule.Lower(st, "default")
		if err != nil {
			t.Errorf("%s: %s: %v", name, rule, err)
			continue
		}
		if err := schedtest.Check(d, f, 3); err != nil {
			t.Errorf("%s: %s: %v\n%v", name, rule, err, st)
		}
		again, _, _ := Default(schedule.NewState(d), testOptions())
		if Key(again) != Key(st) {
			t.Errorf("%s: two default schedules differ:\n%v\n%v", name, st, again)
		}
	}
	a, b := te.Placeholder("A", 64, 64), te.Placeholder("B", 64, 64)
	mm, err := te.MatMul("C", a, b)
	if err != nil {
		t.Fatal(err)
	}
	d, err := te.NewDAG(mm)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := Default(schedule.NewState(d), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if s := st.String(); !strings.Contains(s, "vectorize(16)") {
		t.Errorf("the default matmul schedule has no 16-lane vector loop:\n%s", s)
	}
}
