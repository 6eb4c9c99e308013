package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// recSeq makes the steps of every rec distinct (a split factor), as the
// schedules of a tuning run are.
var recSeq = 0

func rec(workload string, costs []float64, errKind string) Record {
	recSeq++
	return Record{
		Version: FormatVersion, WorkloadKey: workload, Target: "cpu-test",
		Steps: json.RawMessage(fmt.Sprintf(`[["SP",2,0,[%d]],["AN",2,1,"vectorize"]]`, recSeq)),
		Costs: costs, Error: errKind, At: time.Unix(1700000000, 0).UTC(),
	}
}

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAddBestRecords(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "t.db"))
	defer s.Close()
	batch := []Record{
		rec("w1", []float64{3e-3, 2e-3, 4e-3}, "none"),
		rec("w1", nil, "runtime_error"),
		rec("w1", []float64{1e-3}, "none"),
		rec("w2", []float64{5e-3}, "none"),
		rec("w1", []float64{1.5e-3}, "none"),
	}
	if err := s.Add(batch); err != nil {
		t.Fatal(err)
	}
	best, ok, err := s.Best("w1", "cpu-test")
	if err != nil || !ok || best.Cost() != 1e-3 {
		t.Fatalf("best of w1 = %v %v %v", best.Costs, ok, err)
	}
	if _, ok, _ := s.Best("w1", "other-target"); ok {
		t.Error("a record of another target was taken as best")
	}
	rs, err := s.Records("w1", "cpu-test")
	if err != nil || len(rs) != 4 {
		t.Fatalf("w1 has %d records (%v), want 4", len(rs), err)
	}
	st, err := s.Stats()
	if err != nil || len(st) != 2 || st[0].Records != 4 || st[0].Errors != 1 || st[0].Best != 1e-3 {
		t.Fatalf("stats %+v %v", st, err)
	}
	if err := s.Add([]Record{rec("w1", []float64{-1}, "none")}); err == nil {
		t.Error("a negative cost was accepted")
	}
}

func TestExportImportDistill(t *testing.T) {
	dir := t.TempDir()
	a := open(t, filepath.Join(dir, "a.db"))
	defer a.Close()
	var batch []Record
	for i := 0; i < 20; i++ {
		batch = append(batch, rec([]string{"w1", "w2", "w3"}[i%3], []float64{float64(i+1) * 1e-4}, "none"))
	}
	batch = append(batch, rec("w1", nil, "compile_error"))
	if err := a.Add(batch); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := a.Export(&buf); err != nil {
		t.Fatal(err)
	}
	b := open(t, filepath.Join(dir, "b.db"))
	defer b.Close()
	rep, err := b.Import(bytes.NewReader(buf.Bytes()))
	if err != nil || rep.Added != 21 || len(rep.Skipped) != 0 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	sa, _ := a.Stats()
	sb, _ := b.Stats()
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("stats differ after export → import:\n%+v\n%+v", sa, sb)
	}
	var d bytes.Buffer
	if err := a.Distill(&d, 2); err != nil {
		t.Fatal(err)
	}
	c := open(t, filepath.Join(dir, "c.db"))
	defer c.Close()
	if rep, err := c.Import(&d); err != nil || rep.Added != 6 {
		t.Fatalf("distilled import: %+v %v", rep, err)
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		ba, _, _ := a.Best(w, "cpu-test")
		bc, _, _ := c.Best(w, "cpu-test")
		if !reflect.DeepEqual(ba, bc) {
			t.Errorf("%s: best differs after distill: %v vs %v", w, ba.Costs, bc.Costs)
		}
	}
}

func TestImportSkipsBadLines(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "t.db"))
	defer s.Close()
	good, _ := json.Marshal(rec("w", []float64{1e-3}, "none"))
	old := rec("w", []float64{1e-3}, "none")
	old.Version = 0
	oldLine, _ := json.Marshal(old)
	badSteps := rec("w", []float64{1e-3}, "none")
	badSteps.Steps = json.RawMessage(`[["XX"]]`)
	badLine, _ := json.Marshal(badSteps)
	in := strings.Join([]string{string(good), "garbage", string(oldLine), `{"v":1}`, string(badLine), string(good)}, "\n")
	rep, err := s.Import(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// The second copy of the good line is a duplicate.
	if rep.Added != 1 || len(rep.Skipped) != 5 || !strings.HasPrefix(rep.Skipped[4].Reason, "duplicate") {
		t.Fatalf("report %+v", rep)
	}
	for _, sk := range rep.Skipped {
		if sk.Reason == "" || sk.Line < 2 {
			t.Errorf("skipped line without a reason: %+v", sk)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 1000), 0o644)
	truncated := filepath.Join(dir, "truncated.db")
	{
		s := open(t, filepath.Join(dir, "full.db"))
		s.Add([]Record{rec("w", []float64{1e-3}, "none")})
		s.Close()
		data, _ := os.ReadFile(filepath.Join(dir, "full.db"))
		os.WriteFile(truncated, data[:len(data)/3], 0o644)
	}
	// A database whose live pages lie past its first ones: the cut loses
	// them while the pages it keeps still read.
	cutTail := filepath.Join(dir, "cut-tail.db")
	{
		s := open(t, filepath.Join(dir, "big.db"))
		s.Add([]Record{rec("w", []float64{1e-3}, "none")})
		s.SaveModel("t", bytes.Repeat([]byte{'m'}, 1<<20))
		s.Close()
		data, _ := os.ReadFile(filepath.Join(dir, "big.db"))
		os.WriteFile(cutTail, data[:len(data)/3], 0o644)
	}
	foreign := filepath.Join(dir, "foreign.db")
	{
		db, err := bolt.Open(foreign, 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
		db.Close()
	}
	for _, tc := range []struct{ path, want string }{
		{garbage, "not a tessera records database"},
		{truncated, "tessera"},
		{cutTail, "truncated"},
		{foreign, "something else"},
		{filepath.Join(dir, "no", "such", "dir.db"), "open"},
	} {
		s, err := Open(tc.path)
		if err == nil {
			s.Close()
			t.Errorf("%s opened", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	s := open(t, path)
	defer s.Close()
	start := time.Now()
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second open: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("second open took %v; it must fail at once", time.Since(start))
	}
}

func TestModelBlob(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "t.db"))
	defer s.Close()
	if m, err := s.Model("cpu"); err != nil || m != nil {
		t.Fatalf("empty db has a model: %q %v", m, err)
	}
	s.SaveModel("cpu", []byte("tree\nversion=v3\n"))
	if m, _ := s.Model("cpu"); string(m) != "tree\nversion=v3\n" {
		t.Fatalf("model %q", m)
	}
}

// FuzzImport: arbitrary bytes given to Import are skipped with reasons or
// added; never a panic, and what was stored before stays.
func FuzzImport(f *testing.F) {
	good, _ := json.Marshal(rec("w", []float64{1e-3}, "none"))
	f.Add(good)
	f.Add([]byte("garbage\n{}\n"))
	f.Add([]byte(`{"v":1,"workload":"w","target":"t","steps":[["SP",0,0,[1e99]]],"error":"none","costs":[1]}`))
	dir := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		s, err := Open(filepath.Join(dir, "f"+strings.Repeat("x", n%3)+".db"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		before, _ := s.Count()
		rep, err := s.Import(bytes.NewReader(data))
		after, _ := s.Count()
		if err == nil && after != before+rep.Added {
			t.Fatalf("count %d → %d, report %+v", before, after, rep)
		}
		if err != nil && after != before {
			t.Fatalf("failed import changed the store: %d → %d", before, after)
		}
	})
}

// TestStatsReport: the document of tune records stats --json names the
// database it was opened at and has a row per (workload, target), the
// best cost in milliseconds (none where no record is valid), an empty
// list, not null, for an empty database; as text, it is the table of the
// stats.
func TestStatsReport(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name string
		recs []Record
		want []StatRow
	}{
		{"empty", nil, []StatRow{}},
		{"two workloads", []Record{rec("w1", []float64{3e-3}, "none"), rec("w1", nil, "runtime_error"), rec("w1", []float64{2e-3}, "none"), rec("w2", nil, "runtime_error")},
			[]StatRow{{WorkloadKey: "w1", Target: "cpu-test", Records: 3, Errors: 1, BestMs: ms(2)}, {WorkloadKey: "w2", Target: "cpu-test", Records: 1, Errors: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.db")
			s := open(t, path)
			defer s.Close()
			if len(c.recs) > 0 {
				if err := s.Add(c.recs); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.StatsReport()
			if err != nil {
				t.Fatal(err)
			}
			if r.DB != path || r.Stats == nil || len(r.Stats) != len(c.want) {
				t.Fatalf("report %+v; want db %s and %d rows", r, path, len(c.want))
			}
			var text, table strings.Builder
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Write(&text); err != nil || WriteStats(&table, st) != nil || text.String() != table.String() {
				t.Errorf("report as text (%v):\n%s\nwant the table of the stats:\n%s", err, text.String(), table.String())
			}
			for i, w := range c.want {
				g := r.Stats[i]
				if g.WorkloadKey != w.WorkloadKey || g.Target != w.Target || g.Records != w.Records || g.Errors != w.Errors || (g.BestMs == nil) != (w.BestMs == nil) || g.BestMs != nil && math.Abs(*g.BestMs-*w.BestMs) > 1e-9 {
					t.Errorf("row %d = %+v (best %v); want %+v (best %v)", i, g, g.BestMs, w, w.BestMs)
				}
			}
		})
	}
}
