package records

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

// TestImportOwnExport: importing a database's own export adds nothing (it
// doubled every record, and tune then counted twice the trials).
func TestImportOwnExport(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "t.db"))
	defer s.Close()
	var batch []Record
	for i := range 12 {
		batch = append(batch, rec([]string{"w1", "w2"}[i%2], []float64{float64(i+1) * 1e-4}, "none"))
	}
	if err := s.Add(batch); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Export(&buf); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Import(bytes.NewReader(buf.Bytes()))
	if err != nil || rep.Added != 0 || len(rep.Skipped) != 12 {
		t.Fatalf("import of the own export: %+v %v", rep, err)
	}
	if n, _ := s.Count(); n != 12 {
		t.Errorf("%d records after importing the own export, want 12", n)
	}
	// The same steps written differently are the same schedule.
	r := batch[0]
	r.Steps = json.RawMessage(strings.ReplaceAll(string(r.Steps), ",", " , "))
	line, _ := json.Marshal(r)
	if rep, _ := s.Import(bytes.NewReader(line)); rep.Added != 0 {
		t.Errorf("a respaced copy was added: %+v", rep)
	}
}

// validRecords returns n records of d with distinct steps that replay.
func validRecords(t *testing.T, d *te.DAG, key string, n int) []Record {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 5))
	seen := map[string]bool{}
	var out []Record
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		st := schedtest.RandomState(rng, schedule.NewState(d), 4)
		data, err := schedule.MarshalSteps(st.Steps)
		if err != nil || seen[string(data)] || len(st.Steps) == 0 {
			continue
		}
		seen[string(data)] = true
		r := rec(key, []float64{float64(len(out)+1) * 1e-3}, "none")
		r.Steps = data
		out = append(out, r)
	}
	if len(out) < n {
		t.Fatalf("only %d distinct random states", len(out))
	}
	return out
}

// TestRecordThatDoesNotReplay: an imported record whose steps do not apply
// to the task, with a tiny cost, hid 8 valid records (build fell back to
// the default schedule, distill kept only it). Knowing the task's DAG, the
// store skips it on import; a record stored before the DAG was known is
// never ranked, so Best and Distill give the next valid record.
func TestRecordThatDoesNotReplay(t *testing.T) {
	d := tetest.DAGs()["matmul_bias_relu"]
	key := d.WorkloadKey()
	codec, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	bad := rec(key, []float64{1e-9}, "none")
	bad.Steps = json.RawMessage(`[["AN",99,0,"parallel"]]`)
	badLine, _ := json.Marshal(bad)
	good := validRecords(t, d, key, 8)

	for _, known := range []bool{true, false} {
		s := open(t, filepath.Join(t.TempDir(), "t.db"))
		if err := s.Add(good); err != nil {
			t.Fatal(err)
		}
		if known {
			if err := s.PutTask(TaskInfo{Key: key, Codec: codec}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := s.Import(bytes.NewReader(badLine))
		if err != nil {
			t.Fatal(err)
		}
		if known && (rep.Added != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "do not apply")) {
			t.Errorf("task known: import %+v, want the line skipped", rep)
		}
		if !known {
			if rep.Added != 1 {
				t.Fatalf("task unknown: import %+v, want it added (nothing to check against)", rep)
			}
			if err := s.PutTask(TaskInfo{Key: key, Codec: codec}); err != nil {
				t.Fatal(err)
			}
			s.dags = nil // a new process would decode it afresh
		}
		best, ok, err := s.Best(key, "cpu-test")
		if err != nil || !ok || best.Cost() != 1e-3 {
			t.Errorf("known %v: best %v %v %v, want the fastest valid record (1 ms)", known, best.Costs, ok, err)
		}
		var buf bytes.Buffer
		if err := s.Distill(&buf, 2); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(buf.String(), "\n"); n != 2 || strings.Contains(buf.String(), `"AN",99`) {
			t.Errorf("known %v: distill wrote %d lines:\n%s", known, n, buf.String())
		}
		s.Close()
	}
}

// TestOpenReadOnly: a database is read without being written (stats,
// export, build open it so): several readers at once, no file created for
// a missing path, writes refused, the file's bytes unchanged.
func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	s := open(t, path)
	if err := s.Add([]Record{rec("w", []float64{1e-3}, "none")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, _ := os.ReadFile(path)
	os.Chmod(path, 0o444)
	a, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	if st, err := b.Stats(); err != nil || len(st) != 1 {
		t.Errorf("stats: %v %v", st, err)
	}
	if err := a.Add([]Record{rec("w", []float64{1e-3}, "none")}); err == nil {
		t.Error("a read-only store took a record")
	}
	a.Close()
	b.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("reading changed the file")
	}
	if _, err := OpenReadOnly(filepath.Join(dir, "none.db")); err == nil {
		t.Error("a missing database opened")
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); err == nil {
		t.Error("OpenReadOnly created a file")
	}
	w := open(t, filepath.Join(dir, "w.db"))
	defer w.Close()
	if _, err := OpenReadOnly(filepath.Join(dir, "w.db")); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a database held by a writer: %v", err)
	}
}
