package build

import (
	"context"
	"testing"

	"tessera/graph/onnx"
	"tessera/records"
)

// keyRecords ranks one record of cost 1 ms for each workload it holds.
type keyRecords map[string]bool

func (r keyRecords) Ranked(workload, target string) ([]records.Record, error) {
	if !r[workload] {
		return nil, nil
	}
	return []records.Record{{WorkloadKey: workload, Target: target, Costs: []float64{1e-3}}}, nil
}

// TestChooseLayoutByCoverage: without records the first layout is loaded
// alone; with records of the NCHW plan only, NCHW is chosen without a
// race, and its loaded model and plan are the ones to build. (The race of
// two covered layouts is cmd/tune's TestBuildChoosesLayout.)
func TestChooseLayoutByCoverage(t *testing.T) {
	const tiny = "../testdata/tiny.onnx"
	opts := Options{Target: testTarget(recordsKey, nil)}
	both := []string{LayoutNHWC, LayoutNCHW}
	c, err := ChooseLayout(context.Background(), tiny, onnx.LoadOptions{}, both, opts, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen.Layout != LayoutNHWC || c.Weighed != nil || c.Raced || c.Chosen.Plan == nil {
		t.Errorf("without records: chose %s, weighed %d, raced %v", c.Chosen.Layout, len(c.Weighed), c.Raced)
	}

	nchw, err := loadLayout(tiny, onnx.LoadOptions{}, LayoutNCHW)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRecords{}
	for _, task := range nchw.Plan.Tasks {
		keys[task.Key] = true
	}
	opts.Records = keys
	if c, err = ChooseLayout(context.Background(), tiny, onnx.LoadOptions{}, both, opts, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if c.Chosen.Layout != LayoutNCHW || len(c.Weighed) != 2 || c.Raced {
		t.Fatalf("records of NCHW: chose %s, weighed %d, raced %v", c.Chosen.Layout, len(c.Weighed), c.Raced)
	}
	if c.Chosen.Share != 100 || c.Weighed[0].Share >= MinTunedShare || c.Chosen.Estimate <= 0 {
		t.Errorf("shares: nchw %.1f%% (estimate %g s), nhwc %.1f%%", c.Chosen.Share, c.Chosen.Estimate, c.Weighed[0].Share)
	}
	if c.Chosen.Graph == nil || len(c.Chosen.Plan.Tasks) != len(nchw.Plan.Tasks) || c.Chosen.Graph.Values[c.Chosen.Graph.Inputs[0]] == nil {
		t.Error("the chosen layout's model is not loaded and partitioned")
	}
}
