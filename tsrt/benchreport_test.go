package tsrt

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/internal/chrometrace"
)

// profiledReport is the report of a made-up run of five steps of three
// tasks, two of them with records, at batch 2 of a model built over N.
func profiledReport() *BenchReport {
	m := &Manifest{Model: "m.onnx", Target: "cpu threads=1 | cc",
		Tasks: []TaskReport{{Index: 0, Record: &RecordUsed{Cost: 0.5e-3}}, {Index: 1}, {Index: 2, Record: &RecordUsed{Cost: 2e-6}}},
		Steps: []StepReport{{Group: 0, Task: 0, Ops: "Conv+Relu"}, {Group: 1, Task: 1, Ops: "MaxPool"}, {Group: 2, Task: 0, Ops: "Conv+Relu"},
			{Group: 3, Task: 2, Ops: "Add"}, {Group: 4, Task: 1, Ops: "MaxPool"}},
	}
	steps := []float64{0.6e-3, 0.1e-3, 0.7e-3, 3e-6, 0.1234567e-3}
	runs := []float64{1.6e-3, 1.7e-3, 1.5e-3}
	r := &BenchReport{Model: m.Model, Dir: "out", Target: m.Target, Threads: 1, Batch: 2, BatchName: "N", MinMs: 1.5, MedianMs: 1.6, MeanMs: 1.6, RunsMs: []float64{1.6, 1.7, 1.5}}
	r.Profile = m.Profile(steps, runs)
	r.Profile.PerSample = true
	return r
}

func TestProfileReport(t *testing.T) {
	r := profiledReport()
	p := r.Profile
	if len(p.Steps) != 5 || math.Abs(p.StepsMs-1.5264567) > 1e-9 || math.Abs(p.MeanRunMs-1.6) > 1e-9 || math.Abs(p.OutsideMs-(1.6-1.5264567)) > 1e-9 {
		t.Fatalf("profile %+v", p)
	}
	if s := p.Steps[1]; s.RecordMs != nil || s.Ratio != nil || s.Ops != "MaxPool" || s.Task != 1 {
		t.Errorf("step 1 (default schedule): %+v", s)
	}
	if s := p.Steps[2]; s.RecordMs == nil || *s.RecordMs != 0.5 || math.Abs(*s.Ratio-1.4) > 1e-9 || s.Group != 2 {
		t.Errorf("step 2: %+v", s)
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"per sample (batch N=2):\n", "     2     0  0.7000     0.5000   1.40  45.9% Conv+Relu\n", "     1     1  0.1000          -      -   6.6% MaxPool\n",
		"steps sum ms = 1.526\noutside steps ms = 0.074 (mean run 1.600)\nmin ms = 1.500\nmedian ms = 1.600\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	// The JSON keeps null for a step without a record.
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"min_ms":1.5,`, `"per_sample":true`, `{"step":1,"group":1,"task":1,"ops":"MaxPool","ms":0.1,"record_ms":null,"ratio":null,`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s:\n%s", want, data)
		}
	}
}

// TestWriteTrace checks the trace of a profile against the Trace Event
// Format (chrometrace.Check, whose own test shows it failing on traces
// that break it) and what its slices say.
func TestWriteTrace(t *testing.T) {
	r := profiledReport()
	var b bytes.Buffer
	if err := r.WriteTrace(&b); err != nil {
		t.Fatal(err)
	}
	if err := chrometrace.Check(b.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	var tr struct {
		Events []struct {
			Name, Ph string
			Ts, Dur  float64
			Args     map[string]any
		} `json:"traceEvents"`
		OtherData map[string]any `json:"otherData"`
	}
	if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	var slices []int
	for i, e := range tr.Events {
		if e.Ph == "X" {
			slices = append(slices, i)
		}
	}
	if len(slices) != 5 {
		t.Fatalf("%d slices, want one per step:\n%s", len(slices), b.String())
	}
	end := 0.0
	for k, i := range slices {
		e, s := tr.Events[i], r.Profile.Steps[k]
		if e.Ts != end || math.Abs(e.Dur-s.Ms*1e3) > 0.001 || e.Name != "step "+string(rune('0'+k))+": "+s.Ops {
			t.Errorf("slice %d: %s at %v µs for %v µs; want %s at %v µs for %v µs", k, e.Name, e.Ts, e.Dur, s.Ops, end, s.Ms*1e3)
		}
		end = e.Ts + e.Dur
		if e.Args["task"] != float64(s.Task) || e.Args["ops"] != s.Ops {
			t.Errorf("slice %d: args %v", k, e.Args)
		}
		_, hasRecord := e.Args["record_ms"]
		if hasRecord != (s.RecordMs != nil) || (s.Ratio != nil && e.Args["ratio"] != *s.Ratio) {
			t.Errorf("slice %d: args %v for step %+v", k, e.Args, s)
		}
	}
	if tr.OtherData["median_ms"] != 1.6 || tr.OtherData["model"] != "m.onnx" {
		t.Errorf("otherData %v", tr.OtherData)
	}
	// Without a profile there is nothing to trace.
	r.Profile = nil
	if err := r.WriteTrace(&b); err == nil {
		t.Error("a trace without a profile")
	}
}
