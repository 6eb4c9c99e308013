package assemble

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/tsrt"
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
	c, err := ChooseLayout(context.Background(), tiny, frontend.LoadOptions{}, partition.Options{Alternatives: true}, both, opts, tsrt.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen.Layout != LayoutNHWC || c.Weighed != nil || c.Raced || c.Chosen.Plan == nil {
		t.Errorf("without records: chose %s, weighed %d, raced %v", c.Chosen.Layout, len(c.Weighed), c.Raced)
	}

	nchw, err := loadLayout(tiny, frontend.LoadOptions{}, partition.Options{Alternatives: true}, LayoutNCHW)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRecords{}
	for _, task := range nchw.Plan.Tasks {
		keys[task.Key] = true
	}
	opts.Records = keys
	if c, err = ChooseLayout(context.Background(), tiny, frontend.LoadOptions{}, partition.Options{Alternatives: true}, both, opts, tsrt.RunOptions{}); err != nil {
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

// TestOwnShares: a layout's own share counts only the tasks no other
// layout has, so that two layouts sharing all but one task are raced only
// when that task has a record (Swin-T: everything but the patch
// embedding is the same in both).
func TestOwnShares(t *testing.T) {
	nhwc := &LayoutModel{Layout: LayoutNHWC, tasks: []taskCover{{"conv-nhwc", 2, true}, {"mlp", 90, true}, {"norm", 8, true}}}
	nchw := &LayoutModel{Layout: LayoutNCHW, tasks: []taskCover{{"conv-nchw", 2, false}, {"mlp", 90, true}, {"norm", 8, true}}}
	same := &LayoutModel{Layout: "same", tasks: []taskCover{{"mlp", 90, true}}}
	for _, c := range []struct {
		name string
		lms  []*LayoutModel
		want []float64
	}{
		{"own task untuned", []*LayoutModel{nhwc, nchw}, []float64{100, 0}},
		{"no own task", []*LayoutModel{same, nhwc}, []float64{100, 100}},
	} {
		ownShares(c.lms)
		for i, lm := range c.lms {
			if lm.OwnShare != c.want[i] {
				t.Errorf("%s: %s own share %g, want %g", c.name, lm.Layout, lm.OwnShare, c.want[i])
			}
		}
	}
}

func TestLayouts(t *testing.T) {
	for _, c := range []struct {
		layout    string
		noConvert bool
		want      []string
		err       string
	}{
		{"auto", false, []string{LayoutNHWC, LayoutNCHW}, ""},
		{"auto", true, []string{LayoutNCHW}, ""},
		{"nhwc", false, []string{LayoutNHWC}, ""},
		{"nhwc", true, nil, "--layout nhwc needs the convert-layout pass"},
		{"nchw", true, []string{LayoutNCHW}, ""},
		{"nchw8c", false, nil, `--layout "nchw8c": want auto, nhwc or nchw`},
	} {
		got, err := Layouts(c.layout, c.noConvert)
		if !slices.Equal(got, c.want) || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("Layouts(%q, %v) = %v, %v; want %v, %q", c.layout, c.noConvert, got, err, c.want, c.err)
		}
	}
}

// TestLayoutLoadOptions: NCHW turns the convert-layout pass off, in a
// copy of the passes turned off; NHWC leaves the options as they are.
func TestLayoutLoadOptions(t *testing.T) {
	for _, c := range []struct {
		name   string
		noPass map[string]bool
		layout string
		want   map[string]bool
	}{
		{"nhwc", nil, LayoutNHWC, nil},
		{"nhwc keeps passes off", map[string]bool{"cse": true}, LayoutNHWC, map[string]bool{"cse": true}},
		{"nchw", nil, LayoutNCHW, map[string]bool{"convert-layout": true}},
		{"nchw adds to passes off", map[string]bool{"cse": true}, LayoutNCHW, map[string]bool{"cse": true, "convert-layout": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := maps.Clone(c.noPass)
			in := frontend.LoadOptions{NoPass: c.noPass, Inputs: map[string][]int{"x": {1, 3}}}
			got := LayoutLoadOptions(in, c.layout)
			if !maps.Equal(got.NoPass, c.want) {
				t.Errorf("NoPass = %v, want %v", got.NoPass, c.want)
			}
			if !maps.Equal(c.noPass, before) {
				t.Errorf("the caller's NoPass changed to %v", c.noPass)
			}
			if !slices.Equal(got.Inputs["x"], []int{1, 3}) {
				t.Errorf("Inputs = %v, want the caller's", got.Inputs)
			}
		})
	}
}

// TestOpenRecords: a build's missing database is an error that says how
// to make it; an existing one opens for reading only, beside another
// reader.
func TestOpenRecords(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "tuning.db")
	_, err := OpenRecords(db, "m.onnx")
	if err == nil || !strings.Contains(err.Error(), "tune the model first (tune --db "+db+" m.onnx)") {
		t.Fatalf("missing database: err = %v", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenRecords created %s (%v)", db, err)
	}
	st, err := records.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = OpenRecords(db, "m.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Read only, it shares the file with other readers (a writer would
	// hold it alone).
	other, err := records.OpenReadOnly(db)
	if err != nil {
		t.Fatalf("another reader: %v (want the build's open read-only)", err)
	}
	other.Close()
}
