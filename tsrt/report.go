package tsrt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Report is what one of the runtime's programs (runner.c, harness.c, the
// GPU harnesses) printed: the values of its "tessera KEY VALUE" lines, by
// key, in order, and whether "tessera done" came. Other lines (a kernel's
// own output) are ignored.
type Report struct {
	Values map[string][]string
	Done   bool
}

// ParseReport reads a program's stdout.
func ParseReport(out string) Report {
	r := Report{Values: map[string][]string{}}
	for line := range strings.Lines(out) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "tessera ")
		if !ok {
			if strings.TrimSpace(line) == "tessera done" {
				r.Done = true
			}
			continue
		}
		key, value, _ := strings.Cut(rest, " ")
		if key == "done" {
			r.Done = true
			continue
		}
		r.Values[key] = append(r.Values[key], value)
	}
	return r
}

// Last returns the last value of key ("" when there is none).
func (r Report) Last(key string) string {
	v := r.Values[key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// Int returns the last value of key as an integer of at least min.
func (r Report) Int(key string, min int) (int, error) {
	n, err := strconv.Atoi(r.Last(key))
	if err != nil || n < min {
		return 0, fmt.Errorf("bad %s %q", key, r.Last(key))
	}
	return n, nil
}

// Seconds returns the values of key as durations in seconds: each finite
// and not negative.
func (r Report) Seconds(key string) ([]float64, error) {
	out := make([]float64, 0, len(r.Values[key]))
	for _, v := range r.Values[key] {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || !(t >= 0) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("bad %s %q", key, v)
		}
		out = append(out, t)
	}
	return out, nil
}

// Steps returns the "step I SECONDS" values, I counting from 0.
func (r Report) Steps() ([]float64, error) {
	out := make([]float64, 0, len(r.Values["step"]))
	for _, v := range r.Values["step"] {
		k, s, _ := strings.Cut(v, " ")
		i, err1 := strconv.Atoi(k)
		t, err2 := strconv.ParseFloat(s, 64)
		if err1 != nil || err2 != nil || i != len(out) || !(t >= 0) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("bad step line %q", v)
		}
		out = append(out, t)
	}
	return out, nil
}
