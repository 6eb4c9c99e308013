// Package chrometrace writes and checks traces in the Trace Event Format,
// the JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open: an
// object whose "traceEvents" are complete events ("ph": "X", a slice of
// a track from "ts" for "dur" microseconds, with "args" shown beside it)
// and metadata events ("ph": "M") naming the processes and threads the
// tracks belong to. Only what Tessera writes is covered.
package chrometrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Event is one trace event.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`            // microseconds
	Dur  *float64       `json:"dur,omitempty"` // microseconds; complete events only
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Complete returns a complete event: a slice of track (pid, tid) from ts
// for dur microseconds.
func Complete(name string, pid, tid int, ts, dur float64, args map[string]any) Event {
	return Event{Name: name, Ph: "X", Ts: ts, Dur: &dur, Pid: pid, Tid: tid, Args: args}
}

// ProcessName returns the metadata event that names process pid.
func ProcessName(pid int, name string) Event {
	return Event{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": name}}
}

// ThreadName returns the metadata event that names the track (pid, tid).
func ThreadName(pid, tid int, name string) Event {
	return Event{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}}
}

// Trace is a trace file.
type Trace struct {
	Events []Event `json:"traceEvents"`
	// DisplayTimeUnit is the unit the viewer shows times in: "ms" or "ns".
	DisplayTimeUnit string `json:"displayTimeUnit,omitempty"`
	// OtherData is shown as the trace's metadata.
	OtherData map[string]any `json:"otherData,omitempty"`
}

// Write writes the trace as JSON, one event a line.
func (t *Trace) Write(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("{\"traceEvents\": [\n")
	for i, e := range t.Events {
		data, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("trace event %d (%s): %w", i, e.Name, err)
		}
		b.Write(data)
		if i < len(t.Events)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]")
	if t.DisplayTimeUnit != "" {
		fmt.Fprintf(&b, ",\n\"displayTimeUnit\": %q", t.DisplayTimeUnit)
	}
	if t.OtherData != nil {
		data, err := json.Marshal(t.OtherData)
		if err != nil {
			return fmt.Errorf("trace's otherData: %w", err)
		}
		b.WriteString(",\n\"otherData\": ")
		b.Write(data)
	}
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Check checks that data is a trace of complete and metadata events as
// the Trace Event Format defines them: a JSON object with a
// "traceEvents" array; every event with a string "name" and "ph" and
// integer "pid" and "tid"; a complete event ("X") with numbers "ts" and
// "dur" at least 0 and, if any, an object "args"; a metadata event ("M")
// that names a process or thread ("process_name", "thread_name") with a
// string args.name. The complete events of one track (pid, tid) must
// start in order and not overlap, and every track and process they use
// must be named. It returns every problem found, joined.
func Check(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := top["traceEvents"]
	if !ok {
		return errors.New(`no "traceEvents"`)
	}
	var events []map[string]any
	if err := json.Unmarshal(raw, &events); err != nil {
		return fmt.Errorf(`"traceEvents" is not an array of objects: %w`, err)
	}
	if u, ok := top["displayTimeUnit"]; ok && string(u) != `"ms"` && string(u) != `"ns"` {
		return fmt.Errorf(`"displayTimeUnit" is %s: want "ms" or "ns"`, u)
	}
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("event %d: "+format, append([]any{i}, args...)...))
	}
	type track struct{ pid, tid int }
	end := map[track]float64{}   // where the last complete event of a track ended
	start := map[track]float64{} // where it started
	named := map[track]bool{}    // tracks named by thread_name (pid, tid) and process_name (pid, -1)
	used := map[track]int{}      // the tracks complete events use, and the first event on each
	number := func(i int, e map[string]any, key string) (float64, bool) {
		v, ok := e[key].(float64)
		if !ok {
			bad(i, "%q is %v (%T): want a number", key, e[key], e[key])
		}
		return v, ok
	}
	integer := func(i int, e map[string]any, key string) int {
		v, ok := number(i, e, key)
		if ok && v != float64(int64(v)) {
			bad(i, "%q is %v: want an integer", key, v)
		}
		return int(v)
	}
	for i, e := range events {
		name, ok := e["name"].(string)
		if !ok {
			bad(i, `"name" is %v: want a string`, e["name"])
		}
		ph, _ := e["ph"].(string)
		pid, tid := integer(i, e, "pid"), integer(i, e, "tid")
		if a, ok := e["args"]; ok {
			if _, ok := a.(map[string]any); !ok {
				bad(i, `"args" is %v: want an object`, a)
			}
		}
		switch ph {
		case "X":
			ts, ok1 := number(i, e, "ts")
			dur, ok2 := number(i, e, "dur")
			if !ok1 || !ok2 {
				continue
			}
			if ts < 0 || dur < 0 {
				bad(i, "ts %v, dur %v: want both at least 0", ts, dur)
			}
			t := track{pid, tid}
			if _, seen := used[t]; !seen {
				used[t] = i
			} else if ts < start[t] {
				bad(i, "(%s) starts at %v µs, before the event before it on track %d/%d (%v µs)", name, ts, pid, tid, start[t])
			} else if ts < end[t]-1e-6 {
				bad(i, "(%s) starts at %v µs, inside the event before it on track %d/%d (until %v µs)", name, ts, pid, tid, end[t])
			}
			start[t], end[t] = ts, ts+dur
		case "M":
			args, _ := e["args"].(map[string]any)
			if _, ok := args["name"].(string); !ok {
				bad(i, "metadata %s without a string args.name", name)
			}
			switch name {
			case "process_name":
				named[track{pid, -1}] = true
			case "thread_name":
				named[track{pid, tid}] = true
			default:
				bad(i, "metadata %q: want process_name or thread_name", name)
			}
		default:
			bad(i, `"ph" is %v: want "X" or "M"`, e["ph"])
		}
	}
	if len(used) == 0 {
		errs = append(errs, errors.New("no complete events"))
	}
	for t, i := range used {
		if !named[t] {
			bad(i, "its track %d/%d has no thread_name", t.pid, t.tid)
		}
		if !named[track{t.pid, -1}] {
			bad(i, "its process %d has no process_name", t.pid)
		}
	}
	return errors.Join(errs...)
}
