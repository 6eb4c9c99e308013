package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// jsonOf runs tune with args and decodes its stdout, which must be one
// JSON document and nothing else.
func jsonOf(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := tuneCmd(t, args...)
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("tune %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	if dec.More() {
		t.Fatalf("tune %s: more than one JSON document on stdout:\n%s", strings.Join(args, " "), out)
	}
	return doc
}

// field returns the value at path in doc (object keys, or array indices
// as numbers), failing the test where there is none.
func field(t *testing.T, doc any, path ...any) any {
	t.Helper()
	v := doc
	for i, k := range path {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %v", path, path[:i])
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("%v: no %q among %v", path, k, keysOf(m))
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no element %d at %v", path, k, path[:i])
			}
			v = a[k]
		}
	}
	return v
}

func keysOf(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// TestJSON: tune inspect, tune records stats and tune machine print one
// JSON document with what their text says (tune bench's is in
// TestBuildRunBench).
func TestJSON(t *testing.T) {
	doc := jsonOf(t, "inspect", tiny, "--json", "--dag", "3")
	if field(t, doc, "model", "graph") != "tiny" || field(t, doc, "model", "inputs", 0, "name") != "input" || field(t, doc, "model", "after_passes", "ops", "Conv") != 2.0 {
		t.Errorf("inspect --json: model %v", doc["model"])
	}
	if n := len(field(t, doc, "plan", "tasks").([]any)); n != 4 {
		t.Errorf("inspect --json: %d tasks, want 4", n)
	}
	for _, k := range []string{"index", "key", "ops", "shapes", "flops", "weight", "share"} {
		field(t, doc, "plan", "tasks", 0, k)
	}
	for _, k := range []string{"id", "key", "ops", "shapes", "outputs"} {
		field(t, doc, "plan", "groups", 0, k)
	}
	if field(t, doc, "plan", "dag", "ops") != "Reshape+Gemm" || !strings.Contains(field(t, doc, "plan", "dag", "dag").(string), "placeholder") {
		t.Errorf("inspect --json --dag 3: %v", field(t, doc, "plan", "dag"))
	}
	field(t, doc, "plan", "flops")

	doc = jsonOf(t, "inspect", dynamicTiny(t), "--range", "batch=1..4", "--json")
	if field(t, doc, "range_plan", "symbols", 0, "name") != "batch" || field(t, doc, "range_tuning", "yes") != true || field(t, doc, "range_plan", "tasks", 0, "dynamic") != true {
		t.Errorf("inspect --range --json: %v", doc)
	}

	db := filepath.Join(t.TempDir(), "t.db")
	fakeRun(t, db, fakeTarget, 2)
	doc = jsonOf(t, "records", "stats", "--db", db, "--json")
	if field(t, doc, "db") != db || len(field(t, doc, "stats").([]any)) != 4 || field(t, doc, "stats", 0, "target") != fakeTarget {
		t.Errorf("records stats --json: %v", doc)
	}
	for _, k := range []string{"workload_key", "records", "errors", "best_ms"} {
		field(t, doc, "stats", 0, k)
	}
	if r := field(t, doc, "stats", 0, "records"); r != 12.0 {
		t.Errorf("records stats --json: %v records of the first task, want 12", r)
	}

	doc = jsonOf(t, "machine", "--cpu", "x86-64-v3", "--json")
	if field(t, doc, "level") != "x86-64-v3" || field(t, doc, "vector_bits") != 256.0 || !strings.HasPrefix(field(t, doc, "key").(string), "machine x86-64-v3 ") {
		t.Errorf("machine --json: %v", doc)
	}
	for _, k := range []string{"features", "vector_regs", "fma", "cores", "l1d_bytes", "host_runs", "description"} {
		field(t, doc, k)
	}
}
