package chrometrace

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteCheck(t *testing.T) {
	tr := Trace{DisplayTimeUnit: "ms", OtherData: map[string]any{"model": "m"}, Events: []Event{
		ProcessName(1, "p"), ThreadName(1, 1, "steps"),
		Complete("a", 1, 1, 0, 2.5, map[string]any{"k": 1}),
		Complete("b", 1, 1, 2.5, 0, nil),
		Complete("c", 1, 1, 2.5, 1.25, nil),
	}}
	var b bytes.Buffer
	if err := tr.Write(&b); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	if err := Check([]byte(good)); err != nil {
		t.Fatalf("Check: %v\n%s", err, good)
	}
	if !strings.Contains(good, `{"name":"a","ph":"X","ts":0,"dur":2.5,"pid":1,"tid":1,"args":{"k":1}},`+"\n") {
		t.Errorf("trace:\n%s", good)
	}
	// Check fails on what is not such a trace.
	for _, c := range []struct{ name, old, new, want string }{
		{"not JSON", "{", "[", "not a JSON object"},
		{"no events", `"traceEvents"`, `"events"`, `no "traceEvents"`},
		{"events not an array", `{"traceEvents": [`, `{"traceEvents": 3, "x": [`, "not an array"},
		{"no name", `"name":"a",`, ``, `"name" is <nil>`},
		{"ts a string", `"ts":2.5,"dur":0`, `"ts":"2.5","dur":0`, `"ts" is 2.5 (string): want a number`},
		{"no dur", `"dur":1.25,`, ``, `"dur" is <nil>`},
		{"negative dur", `"dur":1.25`, `"dur":-1.25`, "want both at least 0"},
		{"pid not an integer", `"ts":0,"dur":2.5,"pid":1`, `"ts":0,"dur":2.5,"pid":1.5`, `"pid" is 1.5: want an integer`},
		{"overlap", `"ts":2.5,"dur":0,`, `"ts":2.5,"dur":0.5,`, "inside the event before it"},
		{"out of order", `"ts":2.5,"dur":1.25`, `"ts":1,"dur":1.25`, "before the event before it"},
		{"args not an object", `"args":{"k":1}`, `"args":[1]`, `"args" is [1]`},
		{"unknown phase", `"ph":"X","ts":2.5,"dur":0`, `"ph":"Q","ts":2.5,"dur":0`, `"ph" is Q`},
		{"unnamed track", `"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1`, `"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":2`, "has no thread_name"},
		{"unnamed process", `"name":"process_name"`, `"name":"thread_name"`, "has no process_name"},
		{"metadata without a name", `"args":{"name":"steps"}`, `"args":{"label":"steps"}`, "without a string args.name"},
		{"display unit", `"displayTimeUnit": "ms"`, `"displayTimeUnit": "s"`, `"displayTimeUnit" is "s"`},
	} {
		bad := strings.Replace(good, c.old, c.new, 1)
		if bad == good {
			t.Fatalf("%s: %q is not in the trace", c.name, c.old)
		}
		if err := Check([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v, want %q", c.name, err, c.want)
		}
	}
}
