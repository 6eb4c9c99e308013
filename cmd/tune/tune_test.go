package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/records"
)

// TestTuneResume tunes the tiny model briefly, then asks for a larger
// budget with the same command (which must resume: nothing measured twice,
// the earlier trials counted toward the budget), and checks the records and
// the errors on a held or foreign database.
func TestTuneResume(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	args := []string{tiny, "--trials", "8", "--per-round", "4", "--db", db, "--threads", "1", "--verify", "--population", testPopulation}
	var out, errs bytes.Buffer
	if st := run(args, &out, &errs); st != 0 {
		t.Fatalf("status %d\n%s\n%s", st, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "8 trials this run, 0 from earlier runs") {
		t.Fatalf("first run:\n%s", out.String())
	}
	out.Reset()
	if st := run(args, &out, &errs); st != 0 || !strings.Contains(out.String(), "0 trials this run, 8 from earlier runs") {
		t.Fatalf("the same command again should find its budget spent: status %d\n%s", st, out.String())
	}
	out.Reset()
	args[2] = "16"
	if st := run(args, &out, &errs); st != 0 {
		t.Fatalf("second run: status %d\n%s\n%s", st, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "8 trials this run, 8 from earlier runs") {
		t.Fatalf("second run did not resume:\n%s", out.String())
	}
	s, err := records.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	n := 0
	err = s.ForEach(func(r records.Record) error {
		n++
		k := r.WorkloadKey + string(r.Steps)
		if seen[k] {
			t.Errorf("a schedule of %s was measured twice", r.WorkloadKey)
		}
		seen[k] = true
		return nil
	})
	if err != nil || n != 16 {
		t.Fatalf("%d records (%v), want 16", n, err)
	}
	// Export → import into a fresh database → identical stats; distill
	// keeps the best record of each task.
	dir := t.TempDir()
	exported, fresh := filepath.Join(dir, "all.jsonl"), filepath.Join(dir, "fresh.db")
	s.Close()
	for _, a := range [][]string{
		{"records", "export", "--db", db, "-o", exported},
		{"records", "import", "--db", fresh, exported},
	} {
		if st := run(a, &out, &errs); st != 0 {
			t.Fatalf("%v: status %d: %s", a, st, errs.String())
		}
	}
	stats := func(path string) string {
		var b bytes.Buffer
		if st := run([]string{"records", "stats", "--db", path}, &b, &errs); st != 0 {
			t.Fatalf("stats: %s", errs.String())
		}
		return b.String()
	}
	if a, b := stats(db), stats(fresh); a != b || !strings.Contains(a, "workload") {
		t.Errorf("stats differ after export → import:\n%s\n%s", a, b)
	}
	var distilled bytes.Buffer
	if st := run([]string{"records", "distill", "--db", db, "-k", "1"}, &distilled, &errs); st != 0 {
		t.Fatal(errs.String())
	}
	if n := strings.Count(distilled.String(), "\n"); n != 4 {
		t.Errorf("distill -k 1 kept %d records, want one per task (4)", n)
	}
	if s, err = records.Open(db); err != nil {
		t.Fatal(err)
	}
	// While the store is open, a second tune fails at once.
	errs.Reset()
	if st := run(args, &out, &errs); st != 1 || !strings.Contains(errs.String(), "in use by another process") {
		t.Errorf("held database: status %d, %s", st, errs.String())
	}
	s.Close()

	garbage := filepath.Join(t.TempDir(), "garbage.db")
	os.WriteFile(garbage, bytes.Repeat([]byte("x"), 10000), 0o644)
	errs.Reset()
	if st := run([]string{tiny, "--db", garbage}, &out, &errs); st != 1 || !strings.Contains(errs.String(), "not a tessera records database") {
		t.Errorf("garbage database: status %d, %s", st, errs.String())
	}
}
