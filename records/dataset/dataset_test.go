package dataset

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
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
		if _, err := Load(Options{DBs: c.dbs}, &costmodel.Dataset{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.dbs, err, c.want)
		}
	}
}

// Load hands the programs of the successful records of known workloads to
// the sink, featurized by the Featurizer it is given, and reports the
// rest: a failed measurement, a workload without a DAG, steps that no
// longer replay.
func TestLoad(t *testing.T) {
	dags := tetest.DAGs()
	mm, other := dags["matmul_bias_relu"], dags["softmax"]
	if mm == nil || other == nil {
		t.Fatal("tetest.DAGs lacks matmul_bias_relu or softmax")
	}
	rng := rand.New(rand.NewPCG(4, 9))
	var recs []records.Record
	add := func(d *te.DAG, res measure.Result) records.Record {
		st, _ := schedtest.RandomLowerable(rng, schedule.NewState(d), 8)
		r, err := records.New(d.WorkloadKey(), "cpu threads=1 | test", st.Steps, res, "test")
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		return r
	}
	for i := range 3 {
		add(mm, measure.Result{Costs: []float64{1e-3 * float64(i+1)}})
	}
	add(other, measure.Result{Costs: []float64{2e-3}})
	add(mm, measure.Result{Kind: measure.RunTimeout, Msg: "killed"})
	add(mm, measure.Result{Costs: []float64{5e-3}})
	recs[len(recs)-1].Steps = []byte(`[["SP",99,0,[2]]]`) // stale
	unknown := recs[0]
	unknown.WorkloadKey = "v2-unknown"
	recs = append(recs, unknown)

	db := filepath.Join(t.TempDir(), "r.db")
	s, err := records.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(recs); err != nil {
		t.Fatal(err)
	}
	s.Close()

	data := &costmodel.Dataset{}
	opts := Options{DBs: []string{db}, DAGs: map[string]*te.DAG{mm.WorkloadKey(): mm, other.WorkloadKey(): other}, Features: backend.FeaturesOf}
	rep, err := Load(opts, data)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{DBs: []string{db}, Records: 4, Tasks: 2, Targets: 1, Failed: 1, Unknown: 1, UnknownKeys: 1, Stale: 1}
	if !equalReports(rep, want) {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	if data.Len() != 4 || data.NumFeatures() != costmodel.NumFeatures {
		t.Fatalf("dataset of %d programs of %d features, want 4 of %d", data.Len(), data.NumFeatures(), costmodel.NumFeatures)
	}
	costs := map[string]float64{}
	for i := range data.Len() {
		costs[data.Task(i)] += data.Cost(i)
	}
	const target = " @ cpu threads=1 | test"
	if mmc, oc := costs[mm.WorkloadKey()+target], costs[other.WorkloadKey()+target]; len(costs) != 2 || math.Abs(mmc-6e-3) > 1e-12 || oc != 2e-3 {
		t.Errorf("costs by task %v", costs)
	}

	// Without a Featurizer nothing featurizes: every record is stale.
	opts.Features = nil
	if rep, err := Load(opts, &costmodel.Dataset{}); err == nil || rep.Stale != 5 {
		t.Errorf("no features: report %+v, error %v", rep, err)
	}
}

func equalReports(a, b Report) bool {
	return strings.Join(a.DBs, ",") == strings.Join(b.DBs, ",") && a.Records == b.Records && a.Tasks == b.Tasks &&
		a.Targets == b.Targets && a.Failed == b.Failed && a.OtherTarget == b.OtherTarget && a.Unknown == b.Unknown &&
		a.UnknownKeys == b.UnknownKeys && a.Stale == b.Stale
}
