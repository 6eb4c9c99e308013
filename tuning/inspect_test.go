package tuning

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/partition"
)

// TestInspect: a model as bound is its summary and plan, as text and as
// a document, and its kernels can be dumped; over ranges it is its plan
// over them, whether tune takes them and the form of the task asked for,
// and it cannot be dumped; a task the ranged plan lacks, or a model that
// does not load, is an error.
func TestInspect(t *testing.T) {
	path := dynamicModel(t, true)
	bound := frontend.LoadOptions{Inputs: map[string][]int{"x": {2, 5, 8}}}
	ranges := map[string][2]int{"S": {16, 128}, "N": {1, 4}}
	for _, c := range []struct {
		name, path string
		o          InspectOptions
		text       []string // in the text, in order
		report     func(*InspectReport) bool
		dump       string // in Dump("list"), or its error
		err        string
	}{
		{name: "bound", o: InspectOptions{Load: bound, Groups: true, DAG: 0},
			text: []string{"dyn.onnx", "MatMul+Relu"},
			report: func(r *InspectReport) bool {
				return r.Model != nil && r.Plan != nil && r.RangePlan == nil && r.Plan.DAG != nil
			},
			dump: "lower/"},
		{name: "over ranges", o: InspectOptions{Ranges: ranges, DAG: 0},
			text: []string{"[N,S,4]", "tune and tune build over N=1..4 S=16..128: yes: N=1..4 one sample at a time", "; S=16..128 given to the kernels at run time",
				"\ntask 0 (MatMul+Relu, key ", "), its DAG over the ranges:\n"},
			report: func(r *InspectReport) bool {
				return r.Model == nil && r.RangePlan != nil && r.RangeTuning.Yes && r.RangeTuning.Ranges == "N=1..4 S=16..128" && r.RangeDAG.Task == 0
			},
			dump: "--dump takes a model of static shapes (not --range)"},
		{name: "over ranges, no task", o: InspectOptions{Ranges: ranges, DAG: -1},
			text:   []string{"tune and tune build over N=1..4 S=16..128: yes: "},
			report: func(r *InspectReport) bool { return r.RangeDAG == nil },
			dump:   "--dump takes a model"},
		{name: "a task the ranged plan lacks", o: InspectOptions{Ranges: ranges, DAG: 3}, err: "--dag 3: the model has 1 tasks"},
		{name: "no model", path: "no-such.onnx", o: InspectOptions{Load: bound, DAG: -1}, err: "no-such.onnx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.path == "" {
				c.path = path
			}
			c.o.Partition = partition.Options{}
			in, err := Inspect(c.path, c.o)
			if wantError(t, err, c.err) {
				return
			}
			var b strings.Builder
			if err := in.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			inOrder(t, b.String(), c.text)
			if r, err := in.Report(); err != nil || !c.report(r) {
				t.Errorf("report %+v, %v", r, err)
			}
			out, err := in.Dump("list", backend.Config{Name: "cpu", Threads: 1})
			if got := out + errString(err); !strings.Contains(got, c.dump) {
				t.Errorf("dump: %q, want %q", got, c.dump)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
