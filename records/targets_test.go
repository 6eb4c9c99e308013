package records

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTargets(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "t.db"))
	defer s.Close()
	a, b, other := rec("wa", []float64{1e-3}, ErrorNone), rec("wb", nil, "runtime_error"), rec("wc", []float64{1e-3}, ErrorNone)
	b.Target = "cpu-other"
	if err := s.Add([]Record{a, b, other}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Targets([]string{"wa", "wb"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]Stat{
		"cpu-test":  {"wa": {WorkloadKey: "wa", Target: "cpu-test", Records: 1, Best: 1e-3}},
		"cpu-other": {"wb": {WorkloadKey: "wb", Target: "cpu-other", Records: 1, Errors: 1, Best: math.Inf(1)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Targets = %v, want %v", got, want)
	}
}

func TestPickTarget(t *testing.T) {
	keys := []string{"cpu threads=2 | gcc", "cpu threads=1 | gcc", "cuda sm_90"}
	for _, c := range []struct {
		keys       []string
		want, pick string
		err        string
	}{
		{keys[:1], "", keys[0], ""},
		{keys, "cuda", keys[2], ""},
		{keys, keys[1], keys[1], ""},
		{keys, "", "", "records of 3 targets; name one with --target:\n  cpu threads=1 | gcc\n  cpu threads=2"},
		{keys, "gcc", "", `--target "gcc" names 2 targets of db`},
		{keys, "opencl", "", `--target "opencl": db has no records of such a target`},
		{nil, "", "", "db has no records of these tasks"},
	} {
		got, err := PickTarget(c.keys, c.want, "db")
		if got != c.pick || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("PickTarget(%q, %q) = %q, %v; want %q, %q", c.keys, c.want, got, err, c.pick, c.err)
		}
	}
}
