package measure

import (
	"encoding/json"
	"math"
	"testing"
)

func TestErrorKindNames(t *testing.T) {
	// Records store these names: changing one breaks every stored record.
	want := map[ErrorKind]string{
		None:         "none",
		BuildTimeout: "build_timeout",
		CompileError: "compile_error",
		RuntimeError: "runtime_error",
		RunTimeout:   "run_timeout",
		WrongResult:  "wrong_result",
	}
	for k, name := range want {
		if got := k.String(); got != name {
			t.Errorf("%d.String() = %q, want %q", k, got, name)
		}
		back, err := ParseErrorKind(name)
		if err != nil || back != k {
			t.Errorf("ParseErrorKind(%q) = %v, %v; want %v", name, back, err, k)
		}
	}
	if got := ErrorKind(200).String(); got != "error_kind(200)" {
		t.Errorf("out of range String() = %q", got)
	}
	for _, bad := range []string{"", "None", "timeout", "error_kind(200)"} {
		if _, err := ParseErrorKind(bad); err == nil {
			t.Errorf("ParseErrorKind(%q) succeeded", bad)
		}
	}
}

func TestErrorKindJSON(t *testing.T) {
	type rec struct{ Error ErrorKind }
	data, err := json.Marshal(rec{RunTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"Error":"run_timeout"}` {
		t.Errorf("marshal = %s", data)
	}
	var back rec
	if err := json.Unmarshal(data, &back); err != nil || back.Error != RunTimeout {
		t.Errorf("unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"Error":"bogus"}`), &back); err == nil {
		t.Error("unmarshal of an unknown kind succeeded")
	}
}

func TestMedianMin(t *testing.T) {
	tests := []struct {
		costs       []float64
		median, min float64
	}{
		{nil, math.Inf(1), math.Inf(1)},
		{[]float64{2}, 2, 2},
		{[]float64{3, 1, 2}, 2, 1},
		{[]float64{4, 1, 3, 2}, 2.5, 1},
	}
	for _, tt := range tests {
		r := Result{Costs: tt.costs}
		if got := r.Median(); got != tt.median {
			t.Errorf("Median(%v) = %v, want %v", tt.costs, got, tt.median)
		}
		if got := r.Min(); got != tt.min {
			t.Errorf("Min(%v) = %v, want %v", tt.costs, got, tt.min)
		}
	}
	costs := []float64{3, 1, 2}
	Result{Costs: costs}.Median()
	if costs[0] != 3 {
		t.Error("Median reordered Costs")
	}
}
