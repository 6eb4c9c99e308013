package records_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

// Records read back give the states they measured, their results and the
// features of the state lowered for their target; records that cannot be
// read back say why.
func TestReplay(t *testing.T) {
	d := tetest.DAGs()["matmul_bias_relu"]
	key := d.WorkloadKey()
	rng := rand.New(rand.NewPCG(4, 4))
	var recs []records.Record
	var states []*schedule.State
	for i := range 6 {
		st, _ := schedtest.RandomLowerable(rng, schedule.NewState(d), 8)
		res := measure.Result{Costs: []float64{1e-3 * float64(i+1)}}
		if i == 5 {
			res = measure.Result{Kind: measure.RunTimeout, Msg: "killed"}
		}
		r, err := records.New(key, "cpu threads=1 | test", st.Steps, res, "test")
		if err != nil {
			t.Fatal(err)
		}
		recs, states = append(recs, r), append(states, st)
	}
	other := recs[0]
	other.WorkloadKey = "v2-unknown"
	stale := recs[0]
	stale.Steps = []byte(`[["SP",99,0,[2]]]`)
	unknownTarget := recs[1]
	unknownTarget.Target = "fpga model=x"
	recs = append(recs, other, stale, unknownTarget)

	got := records.Replay(recs, map[string]*te.DAG{key: d}, backend.FeaturesOf)
	for i := range 6 {
		r := got[i]
		if r.State == nil || r.Err != nil || sketchKey(r.State) != sketchKey(states[i]) {
			t.Fatalf("record %d: state %v, error %v", i, r.State, r.Err)
		}
		if r.Features == nil {
			t.Errorf("record %d: no features", i)
		}
		if (i == 5) != (r.Result.Kind == measure.RunTimeout) || (i < 5 && r.Result.Cost() != 1e-3*float64(i+1)) {
			t.Errorf("record %d: result %+v", i, r.Result)
		}
	}
	if r := got[6]; r.State != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "no DAG") {
		t.Errorf("unknown workload: %+v", r.Err)
	}
	if r := got[7]; r.State != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "replay") {
		t.Errorf("stale steps: %v", r.Err)
	}
	if r := got[8]; r.State == nil || r.Features != nil {
		t.Errorf("unknown target: state %v, features %v", r.State, r.Features != nil)
	}
	if noFeatures := records.Replay(recs[:1], map[string]*te.DAG{key: d}, nil); noFeatures[0].State == nil || noFeatures[0].Features != nil {
		t.Error("features without a lowering")
	}
}

func sketchKey(s *schedule.State) string {
	data, _ := schedule.MarshalSteps(s.Steps)
	return string(data)
}
