package dataset

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/records"
)

func TestReportString(t *testing.T) {
	r := Report{DBs: []string{"a.db", "b.db"}, Records: 10, Tasks: 3, Targets: 1, Failed: 2, Unknown: 4, UnknownKeys: 2, Stale: 1}
	want := "10 successful records of 3 tasks on 1 target(s) from a.db, b.db; left out: 2 failed measurements, 4 records of 2 workloads that no --model has, 1 records whose steps no longer apply"
	if got := r.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := (Report{DBs: []string{"a.db"}}).String(); strings.Contains(got, "left out") {
		t.Errorf("nothing left out: %s", got)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	s, err := records.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, c := range []struct {
		dbs  []string
		want string
	}{
		{[]string{filepath.Join(dir, "none.db")}, "records database: stat"},
		{[]string{empty}, "no records in " + empty},
	} {
		if _, _, err := Load(Options{DBs: c.dbs}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.dbs, err, c.want)
		}
	}
}
