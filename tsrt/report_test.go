package tsrt

import (
	"math"
	"slices"
	"testing"
)

func TestParseReport(t *testing.T) {
	for _, tt := range []struct {
		name  string
		out   string
		times []float64
		steps []float64
		done  bool
		bad   bool
	}{
		{"runner", "tessera time 1e-3\ntessera time 2e-3\ntessera step 0 5e-4\ntessera step 1 1e-4\ntessera done\n", []float64{1e-3, 2e-3}, []float64{5e-4, 1e-4}, true, false},
		{"noise", "hello tessera time 9\ntessera time 1\n  tessera done  \n", []float64{1}, []float64{}, true, false},
		{"no done", "tessera time 1\n", []float64{1}, []float64{}, false, false},
		{"negative", "tessera time -1\ntessera done\n", nil, nil, true, true},
		{"nan", "tessera time NaN\ntessera done\n", nil, nil, true, true},
		{"inf", "tessera time +Inf\ntessera done\n", nil, nil, true, true},
		{"step out of order", "tessera time 1\ntessera step 1 1\ntessera done\n", []float64{1}, nil, true, true},
	} {
		r := ParseReport(tt.out)
		times, err1 := r.Seconds("time")
		steps, err2 := r.Steps()
		if r.Done != tt.done || (err1 != nil || err2 != nil) != tt.bad {
			t.Errorf("%s: done %v, errors %v %v", tt.name, r.Done, err1, err2)
			continue
		}
		if !tt.bad && (!slices.Equal(times, tt.times) || !slices.Equal(steps, tt.steps)) {
			t.Errorf("%s: times %v steps %v", tt.name, times, steps)
		}
	}
	if n, err := ParseReport("tessera number 8\n").Int("number", 1); n != 8 || err != nil {
		t.Errorf("number: %d %v", n, err)
	}
	if _, err := ParseReport("tessera number 0\n").Int("number", 1); err == nil {
		t.Error("number 0 accepted")
	}
}

// FuzzParseReport: any output parses without panicking, and what the
// accessors accept is finite and not negative.
func FuzzParseReport(f *testing.F) {
	f.Add("tessera time 1e-3\ntessera step 0 1\ntessera done\n")
	f.Add("tessera number 3\ntessera cost 2\n")
	f.Fuzz(func(t *testing.T, out string) {
		r := ParseReport(out)
		for _, key := range []string{"time", "cost"} {
			if v, err := r.Seconds(key); err == nil {
				for _, x := range v {
					if !(x >= 0) || math.IsInf(x, 0) {
						t.Fatalf("%s %v accepted", key, x)
					}
				}
			}
		}
		if v, err := r.Steps(); err == nil {
			for _, x := range v {
				if !(x >= 0) || math.IsInf(x, 0) {
					t.Fatalf("step %v accepted", x)
				}
			}
		}
		r.Int("number", 1)
	})
}
