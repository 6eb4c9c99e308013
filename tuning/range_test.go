package tuning

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/modelgen"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/search"
)

// countingMeasurer times every candidate alike, the later the faster,
// and fails every batch after its first failAfter measurements (0: never).
type countingMeasurer struct{ n, failAfter int }

func (c *countingMeasurer) Measure(ctx context.Context, in []measure.Input) ([]measure.Result, error) {
	if c.failAfter > 0 && c.n >= c.failAfter {
		return nil, errors.New("the machine is gone")
	}
	out := make([]measure.Result, len(in))
	for i := range out {
		c.n++
		out[i] = measure.Result{Costs: []float64{1e-3 / float64(c.n)}}
	}
	return out, nil
}

// rangeSession opens a session on db of the tasks of modelgen.SeqMatMul
// over S=lo..hi, tuned over S with trials in all.
func rangeSession(t *testing.T, db string, lo, hi, trials int, m search.Measurer) *Session {
	t.Helper()
	g, _ := modelgen.SeqMatMul()
	path := filepath.Join(t.TempDir(), "dim.onnx")
	if err := onnx.EncodeFile(path, g); err != nil {
		t.Fatal(err)
	}
	_, _, dp, err := LoadDims(path, frontend.LoadOptions{}, map[string][2]int{"S": {lo, hi}}, partition.Options{})
	if err != nil || dp == nil {
		t.Fatalf("no dimension given at run time (%v)", err)
	}
	tg := cpuTarget()
	opts := DefaultOptions(search.DefaultOptions(tg))
	opts.Trials, opts.PerRound, opts.Search.Population, opts.Dim = trials, 4, 32, dp
	s, err := Open(db, RangeTasks(nil, dp), tg.Key(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRunRange: over S=4..6, every value a tuning point, the probes
// measure only each point's rivals' bests, fewer than the quarter of the
// trials set aside for them; a second search takes what they left, and
// the store holds the trials asked, the summary the searches' share of
// them. A second run finds the budget spent, probes and all.
func TestRunRange(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	m := &countingMeasurer{}
	s := rangeSession(t, db, 4, 6, 80, m)
	share := ProbeBudget(s.opts.Dim) // 6: each of the 3 points' 2 rivals' bests, under a quarter of 80
	if s.ToGo() != 80-share || s.probes != share || share >= 20 {
		t.Fatalf("%d trials to search, %d to probe; want %d and %d", s.ToGo(), s.probes, 80-share, share)
	}
	var out strings.Builder
	last, sum, err := s.RunRange(context.Background(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	var probed, failed int
	if _, err := fmt.Sscanf(out.String(), "probed the tuning points' best schedules at S=[4 5 6]: %d measured (%d failed)", &probed, &failed); err != nil {
		t.Fatalf("no probe line: %v\n%s", err, out.String())
	}
	if probed > share || failed != 0 || m.n != 80 {
		t.Errorf("%d probes (%d failed), %d measurements in all; want %d at most, none failed, 80", probed, failed, m.n, share)
	}
	// The probes skip a rival's best measured there already.
	want := fmt.Sprintf("searching %d more trials, left by the probes\n", share-probed)
	if searched := strings.HasSuffix(out.String(), want); searched != (probed < share) || searched != (last != s) {
		t.Errorf("%d probes of %d; the second search (%v):\n%s", probed, share, last != s, out.String())
	}
	if sum.Trials != 80-probed || sum.Prior != 0 || len(sum.Tasks) != len(s.Tasks) {
		t.Errorf("summary: %d trials, %d prior, %d tasks; want %d, 0, %d", sum.Trials, sum.Prior, len(sum.Tasks), 80-probed, len(s.Tasks))
	}
	if n, err := RangeMeasured(s.Store, s.opts.Dim, s.Target); err != nil || n != 80 {
		t.Errorf("%d measurements of the range stored (%v), want 80", n, err)
	}
	s.Close()

	s = rangeSession(t, db, 4, 6, 80, m)
	out.Reset()
	last, sum, err = s.RunRange(context.Background(), &out, nil)
	if err != nil || last != s || sum.Trials != 0 || out.Len() != 0 || m.n != 80 {
		t.Errorf("resumed: %d trials, %d measurements in all, session ran last %v, %v:\n%s", sum.Trials, m.n, last == s, err, out.String())
	}
}

// TestRunRangeProbeFails: a measurer that fails once the search is done
// fails the probe, a *ProbeError (whatever it wraps), after the searched
// callback; the search's measurements are in the store.
func TestRunRangeProbeFails(t *testing.T) {
	m := &countingMeasurer{}
	s := rangeSession(t, filepath.Join(t.TempDir(), "t.db"), 4, 40, 24, m)
	m.failAfter = s.ToGo()
	searched := false
	_, _, err := s.RunRange(context.Background(), &strings.Builder{}, func() { searched = true })
	var perr *ProbeError
	if !errors.As(err, &perr) || !errors.Is(err, search.ErrMeasure) || !searched {
		t.Fatalf("err %v (%T), searched %v; want a ProbeError around search.ErrMeasure, after the search", err, err, searched)
	}
	if n, err := RangeMeasured(s.Store, s.opts.Dim, s.Target); err != nil || n != s.ToGo() {
		t.Errorf("%d measurements stored (%v), want the search's %d", n, err, s.ToGo())
	}
}

// TestResumable: a failed probe and a batch that could not be measured
// say how the same command goes on, naming the database; other errors,
// a cancelled run's included, and nil are not resumable.
func TestResumable(t *testing.T) {
	measureErr := fmt.Errorf("%w: worker gone", search.ErrMeasure)
	for _, c := range []struct {
		name  string
		err   error
		want  string // the error's text; "": nil
		inner error  // what it still wraps
	}{
		{"nil", nil, "", nil},
		{"other", errors.New("disk full"), "", nil},
		{"cancelled", context.Canceled, "", nil},
		{"probe", &ProbeError{Err: measureErr}, measureErr.Error() + "\nthe tuning's records are in t.db; run the same command to probe again", search.ErrMeasure},
		{"probe of another error", &ProbeError{Err: errors.New("bad replay")}, "bad replay\nthe tuning's records are in t.db; run the same command to probe again", nil},
		{"measure", fmt.Errorf("task 3: %w", measureErr), "task 3: " + measureErr.Error() + "\nevery batch measured before is in t.db; run the same command to resume", search.ErrMeasure},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Resumable(c.err, "t.db")
			if c.want == "" {
				if got != nil {
					t.Errorf("Resumable = %v, want nil", got)
				}
				return
			}
			if got == nil || got.Error() != c.want {
				t.Fatalf("Resumable = %v\nwant %s", got, c.want)
			}
			var perr *ProbeError
			if c.inner != nil && !errors.Is(got, c.inner) || errors.As(got, &perr) {
				t.Errorf("Resumable = %v: want it to wrap %v, not a *ProbeError", got, c.inner)
			}
		})
	}
}
