package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/tsrt"
)

// The cases of TestHostileInputs, in phases: the cases of a phase run in
// parallel; a later phase uses what an earlier one made (the fixtures: a
// tuned database, built models).

func campaignPhases(c *campaign) []func() []campaignCase {
	models := map[string]string{}
	for _, m := range craftedModels {
		models[m.name] = writeModel(c.t, c.path("models"), m.craftedModel)
	}
	return []func() []campaignCase{
		func() []campaignCase { return append(c.fixtures(models), c.modelCases(models)...) },
		func() []campaignCase { return append(c.recordCases(models), c.buildCases(models)...) },
	}
}

// modelCases: every crafted model through inspect, damaged models, the
// tuning cases of the defects, flags and cost-model files.
func (c *campaign) modelCases(models map[string]string) []campaignCase {
	var cases []campaignCase
	for _, m := range craftedModels {
		cc := campaignCase{name: "inspect/" + m.name, args: []string{"inspect", models[m.name]}, expect: wantError}
		if m.valid {
			cc.expect = wantOK
		}
		cases = append(cases, cc)
	}
	// Names reach the terminal escaped.
	for i := range cases {
		switch cases[i].name {
		case "inspect/escape_names":
			cases[i].check = func(r result) error {
				if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07") {
					return errors.New("a raw escape character reached the output")
				}
				return nil
			}
		case "inspect/shadowed_input":
			cases[i].check = func(r result) error {
				if !strings.Contains(r.stderr, "note: input c has an initializer") {
					return errors.New("no note that input c is taken as a constant")
				}
				return nil
			}
		}
	}
	for _, msg := range []struct{ model, msg string }{
		{"ir_version_99", "IR version 99"}, {"opset_99", "opset 99"}, {"no_opset_import", "imports no version"},
		{"declared_shape_wrong", "declared with shape [1,2]"}, {"too_many_elements", "elements"},
	} {
		for i := range cases {
			if cases[i].name == "inspect/"+msg.model {
				cases[i].msg = msg.msg
			}
		}
	}

	// Truncations and byte flips of a real model and of a crafted one.
	for _, src := range []string{tiny, models["softmax"]} {
		data, err := os.ReadFile(src)
		if err != nil {
			c.t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(src), ".onnx")
		for _, d := range damaged(data, 15, uint64(len(data))) {
			path := c.path("models", base+"-"+d[0]+".onnx")
			if err := os.WriteFile(path, []byte(d[1]), 0o644); err != nil {
				c.t.Fatal(err)
			}
			cases = append(cases, campaignCase{name: "damaged/" + base + "/" + d[0], args: []string{"inspect", path}, expect: wantEither})
		}
	}

	db := func(name string) string { return c.path("work", name+".db") }
	dbs := 0
	tune := func(model string, extra ...string) []string { // a database of its own
		dbs++
		return append([]string{models[model], "--threads", "1", "--population", "128", "--db", db(fmt.Sprintf("%s-%d", model, dbs))}, extra...)
	}
	exhausted := func(r result) error {
		if !strings.Contains(r.stdout, "is exhausted") || !strings.Contains(r.stdout, "stopped at") {
			return errors.New("the run did not say that its task was exhausted")
		}
		return nil
	}
	cases = append(cases,
		// Defect 1: fewer distinct schedules than the budget.
		campaignCase{name: "tune/exhausted", args: tune("relu", "--trials", "8", "--per-round", "8"), expect: wantOK, check: exhausted},
		campaignCase{name: "tune/exhausted_verify", args: tune("relu", "--trials", "8", "--per-round", "8", "--verify"), expect: wantOK, check: exhausted},
		// Defect 2: a long chain is searched in seconds, at the default
		// population.
		campaignCase{name: "tune/chain300", args: tune("chain300", "--trials", "2", "--per-round", "2", "--population", "2048"), expect: wantOK, timeout: 90 * time.Second},
		// Defect 3: sizes beyond memory are errors, not crashes.
		campaignCase{name: "tune/relu_2p40", args: tune("relu_2p40", "--trials", "2"), expect: wantError, msg: "too large to measure"},
		campaignCase{name: "tune/matmul_65536", args: tune("matmul_65536", "--trials", "2"), expect: wantError, msg: "too large to measure"},
		campaignCase{name: "tune/max_memory_1KiB", args: tune("relu", "--trials", "2", "--max-memory", "1KiB"), expect: wantError, msg: "--max-memory"},
		campaignCase{name: "build/relu_2p40", args: []string{"build", models["relu_2p40"], "--no-records", "-o", c.path("work", "big2p40")}, expect: wantEither, timeout: 90 * time.Second},
	)

	// Flags and arguments.
	for _, f := range []struct {
		name string
		args []string
	}{
		{"negative_trials", tune("relu", "--trials", "-1")},
		{"zero_per_round", tune("relu", "--per-round", "0")},
		{"zero_threads", tune("relu", "--threads", "0")},
		{"bad_max_memory", tune("relu", "--max-memory", "8X")},
		{"unknown_scheduler", tune("relu", "--scheduler", "bogus")},
		{"unknown_flag", tune("relu", "--no-such-flag")},
		{"bad_input_dims", tune("relu", "--input", "x=1,a")},
		{"unknown_input", []string{"inspect", models["relu"], "--input", "nosuch=1,2"}},
		{"unknown_target", tune("relu", "--target", "bogus")},
		{"missing_model", []string{c.path("models", "nothere.onnx")}},
		{"model_is_directory", []string{"inspect", c.path("models")}},
		{"not_a_model_name", []string{"model.txt"}},
		{"no_arguments", nil},
		{"records_no_verb", []string{"records"}},
		{"records_unknown_verb", []string{"records", "bogus"}},
		{"two_models", tune("relu", models["sigmoid"])},
		{"build_no_output", []string{"build", models["relu"], "--no-records"}},
		{"build_missing_db", []string{"build", models["relu"], "--db", c.path("work", "none.db"), "-o", c.path("work", "nobuild")}},
		{"bench_not_a_build", []string{"bench", c.path("models")}},
		{"run_missing_dir", []string{"run", c.path("work", "nothere")}},
	} {
		cases = append(cases, campaignCase{name: "flags/" + f.name, args: f.args, expect: wantError})
	}

	// Cost-model files (defects 3 and 4).
	good := costModelText()
	for _, cm := range []struct {
		name, text string
		expect     expect
		msg        string
	}{
		{"valid", good, wantOK, ""},
		{"garbage", "hello\n", wantError, "--cost-model"},
		{"empty", "", wantError, "--cost-model"},
		{"huge_num_leaves", strings.Replace(good, "num_leaves=2", "num_leaves=999999999", 1), wantError, "num_leaves"},
		{"self_loop", strings.Replace(good, "left_child=-1", "left_child=0", 1), wantError, "cycle"},
		{"child_out_of_range", strings.Replace(good, "right_child=-2", "right_child=7", 1), wantError, "out of range"},
		{"nan_leaf", strings.Replace(good, "leaf_value=0.25 -0.5", "leaf_value=nan -0.5", 1), wantError, "leaf_value"},
		{"huge_feature_index", strings.Replace(good, fmt.Sprintf("max_feature_idx=%d", costmodel.NumFeatures-1), "max_feature_idx=999999999", 1), wantError, "max_feature_idx"},
	} {
		path := c.path("models", "cost-"+cm.name+".txt")
		if err := os.WriteFile(path, []byte(cm.text), 0o644); err != nil {
			c.t.Fatal(err)
		}
		cases = append(cases, campaignCase{name: "costmodel/" + cm.name, args: tune("relu", "--trials", "1", "--cost-model", path),
			expect: cm.expect, msg: cm.msg, timeout: 30 * time.Second})
	}

	// Signals: the run stops after committing, exits 128 + the signal, and
	// what it committed is there.
	for _, s := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		path := db(fmt.Sprintf("signal%d", s.sig))
		cases = append(cases, campaignCase{name: fmt.Sprintf("signal/%d", s.code),
			args:   []string{models["matmul"], "--threads", "1", "--population", "128", "--trials", "200", "--per-round", "2", "--db", path},
			expect: wantError, exitCode: s.code, msg: "run the same command to resume", signal: s.sig, signalAfter: "committed ",
			check: func(r result) error {
				n, err := countRecords(path)
				if err != nil || n < 2 {
					return fmt.Errorf("after the signal the database has %d records (%v), want the committed ones", n, err)
				}
				return nil
			}})
	}
	return cases
}

// costModelText is a valid one-tree LightGBM model of tessera's features.
func costModelText() string {
	return strings.Join([]string{"tree", "version=v3", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
		fmt.Sprintf("max_feature_idx=%d", costmodel.NumFeatures-1), "objective=regression",
		"feature_names=" + strings.Join(costmodel.FeatureNames, " "), "tree_sizes=1", "",
		"Tree=0", "num_leaves=2", "num_cat=0", "split_feature=0", "split_gain=1", "threshold=0.5", "decision_type=2",
		"left_child=-1", "right_child=-2", "leaf_value=0.25 -0.5", "leaf_weight=1 1", "leaf_count=1 1",
		"internal_value=0", "internal_weight=2", "internal_count=2", "is_linear=0", "shrinkage=1", "", "",
		"end of trees", ""}, "\n")
}

// fixtures makes what the later phases tamper with: a tuned database and
// its export, and built models. They are cases too (they must succeed).
func (c *campaign) fixtures(models map[string]string) []campaignCase {
	return []campaignCase{
		{name: "fixture/tune_matmul", args: []string{models["matmul"], "--threads", "1", "--population", "128", "--trials", "6", "--per-round", "3", "--db", c.path("work", "base.db")}, expect: wantOK},
		{name: "fixture/build_relu", args: []string{"build", models["relu"], "--no-records", "--threads", "1", "-o", c.path("work", "build-relu")}, expect: wantOK},
		{name: "fixture/build_matmul", args: []string{"build", models["matmul"], "--no-records", "--threads", "1", "-o", c.path("work", "build-matmul")}, expect: wantOK},
		{name: "fixture/build_collide", args: []string{"build", models["colliding_outputs"], "--no-records", "--threads", "1", "-o", c.path("work", "build-collide")}, expect: wantOK},
		{name: "fixture/build_names", args: []string{"build", models["escape_names"], "--no-records", "--threads", "1", "-o", c.path("work", "build-names")}, expect: wantOK},
	}
}

// countRecords opens a database read-only and counts its records.
func countRecords(path string) (int, error) {
	s, err := records.OpenReadOnly(path)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.Count()
}

// copyFile copies src to dst with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}

// unchanged returns a check that the file at path still holds its bytes
// of now.
func unchanged(path string) func(result) error {
	before, _ := os.ReadFile(path)
	return func(result) error {
		after, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(before, after) {
			return fmt.Errorf("%s was changed (%v)", filepath.Base(path), err)
		}
		return nil
	}
}

// recordCases: databases and record files, tampered (defect 8).
func (c *campaign) recordCases(models map[string]string) []campaignCase {
	base := c.path("work", "base.db")
	n, err := countRecords(base)
	if err != nil || n != 6 {
		c.t.Fatalf("the fixture database has %d records (%v), want 6", n, err)
	}
	export := c.path("work", "base.jsonl")
	if out, err := exec.Command(c.bin, "records", "export", "--db", base, "-o", export).CombinedOutput(); err != nil {
		c.t.Fatalf("export: %v\n%s", err, out)
	}
	// copyDB gives a case a database of its own.
	copyDB := func(name string, mode os.FileMode) string {
		p := c.path("work", "rec-"+name+".db")
		if err := copyFile(base, p, mode); err != nil {
			c.t.Fatal(err)
		}
		return p
	}
	file := func(name, text string) string {
		p := c.path("work", name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			c.t.Fatal(err)
		}
		return p
	}
	keeps := func(path string, want int) func(result) error {
		return func(result) error {
			n, err := countRecords(path)
			if err != nil || n != want {
				return fmt.Errorf("the database has %d records (%v), want %d: a stored record was lost or one was added", n, err, want)
			}
			return nil
		}
	}
	var cases []campaignCase
	for _, verb := range [][]string{{"stats"}, {"export"}, {"distill", "-k", "2"}} {
		p := copyDB(verb[0], 0o444) // read-only: it is only read
		cases = append(cases, campaignCase{name: "records/" + verb[0] + "_read_only", args: append([]string{"records", verb[0], "--db", p}, verb[1:]...),
			expect: wantOK, check: unchanged(p)})
	}
	own := copyDB("own_export", 0o644)
	cases = append(cases, campaignCase{name: "records/import_own_export", args: []string{"records", "import", "--db", own, export},
		expect: wantError, msg: "all 6 lines were skipped", check: keeps(own, 6)})
	// A record whose steps do not apply, with a tiny cost.
	var first records.Record
	data, _ := os.ReadFile(export)
	json.Unmarshal(bytes.SplitN(data, []byte("\n"), 2)[0], &first)
	first.Steps, first.Costs, first.Error = json.RawMessage(`[["AN",99,0,"parallel"]]`), []float64{1e-9}, records.ErrorNone
	badLine, _ := json.Marshal(first)
	bad := copyDB("bad_steps", 0o644)
	cases = append(cases, campaignCase{name: "records/import_steps_do_not_apply", args: []string{"records", "import", "--db", bad, file("bad.jsonl", string(badLine)+"\n")},
		expect: wantError, msg: "do not apply", check: keeps(bad, 6)})
	garbageImport := copyDB("import_garbage", 0o644)
	cases = append(cases, campaignCase{name: "records/import_garbage", args: []string{"records", "import", "--db", garbageImport, file("garbage.jsonl", "{not json\n\x00\x01\n[]\n")},
		expect: wantError, check: keeps(garbageImport, 6)})
	for _, k := range []string{"-5", "0"} {
		p := copyDB("distill"+k, 0o644)
		cases = append(cases, campaignCase{name: "records/distill_k" + k, args: []string{"records", "distill", "-k", k, "--db", p}, expect: wantError, msg: "-k " + k, check: unchanged(p)})
	}
	cases = append(cases, campaignCase{name: "records/export_unwritable", args: []string{"records", "export", "--db", copyDB("unwritable", 0o644), "-o", c.path("work", "no", "such", "dir.jsonl")}, expect: wantError})
	cases = append(cases, campaignCase{name: "records/stats_missing", args: []string{"records", "stats", "--db", c.path("work", "missing.db")}, expect: wantError,
		check: func(result) error {
			if _, err := os.Stat(c.path("work", "missing.db")); err == nil {
				return errors.New("stats created the missing database")
			}
			return nil
		}})
	// Damaged and foreign database files: never modified, a clear error.
	truncated := c.path("work", "truncated.db")
	if b, err := os.ReadFile(base); err == nil {
		os.WriteFile(truncated, b[:len(b)/3], 0o644)
	}
	foreign := c.path("work", "foreign.db")
	if fdb, err := bolt.Open(foreign, 0o644, nil); err == nil {
		fdb.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("not tessera")); return err })
		fdb.Close()
	}
	for _, d := range []struct{ name, path string }{
		{"garbage", file("garbage.db", strings.Repeat("not a database ", 2000))},
		{"truncated", truncated},
		{"foreign", foreign},
	} {
		cases = append(cases,
			campaignCase{name: "db/" + d.name + "_stats", args: []string{"records", "stats", "--db", d.path}, expect: wantError, check: unchanged(d.path)},
			campaignCase{name: "db/" + d.name + "_tune", args: []string{models["relu"], "--trials", "1", "--db", d.path}, expect: wantError, check: unchanged(d.path)},
			campaignCase{name: "db/" + d.name + "_build", args: []string{"build", models["relu"], "--db", d.path, "-o", c.path("work", "b-"+d.name)}, expect: wantError, check: unchanged(d.path)},
		)
	}
	cases = append(cases,
		campaignCase{name: "db/directory", args: []string{models["relu"], "--trials", "1", "--db", c.path("models")}, expect: wantError},
		campaignCase{name: "db/empty_file_stats", args: []string{"records", "stats", "--db", file("empty.db", "")}, expect: wantEither},
	)
	// A database held by another process.
	held := copyDB("held", 0o644)
	holdDB(c, held)
	cases = append(cases, campaignCase{name: "db/held_by_another_process", args: []string{"records", "stats", "--db", held}, expect: wantError, msg: "in use",
		check: unchanged(held)})
	// Resuming from the fixture: the budget is met, nothing is measured.
	resumed := copyDB("resume", 0o644)
	cases = append(cases, campaignCase{name: "records/resume_budget_met", args: []string{models["matmul"], "--threads", "1", "--trials", "6", "--db", resumed},
		expect: wantOK, check: keeps(resumed, 6)})
	return cases
}

// holdDB keeps the database at path open (a writer's lock) until the test
// ends.
func holdDB(c *campaign, path string) {
	s, err := records.Open(path)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
}

// buildCases: built models run and tampered with (defects 3, 6, 7, 9).
func (c *campaign) buildCases(models map[string]string) []campaignCase {
	src := c.path("work", "build-relu")
	man, err := tsrt.ReadManifest(src)
	if err != nil {
		c.t.Fatalf("the fixture build: %v", err)
	}
	n := man.Inputs[0].Elems()
	// The tampered builds are copies of a model with weights.
	weighted := c.path("work", "build-matmul")
	wman, err := tsrt.ReadManifest(weighted)
	if err != nil || wman.Weights.Bytes == 0 {
		c.t.Fatalf("the fixture build with weights: %v", err)
	}
	// tamper copies the build and lets edit change the copy.
	k := 0
	tamper := func(edit func(dir string)) string {
		k++
		dir := c.path("work", fmt.Sprintf("tampered%02d", k))
		os.MkdirAll(dir, 0o755)
		for _, f := range []string{tsrt.ManifestFile, tsrt.LibraryFile, tsrt.WeightsFile} {
			if err := copyFile(filepath.Join(weighted, f), filepath.Join(dir, f), 0o644); err != nil {
				c.t.Fatal(err)
			}
		}
		if edit != nil {
			edit(dir)
		}
		return dir
	}
	editManifest := func(f func(m map[string]any)) func(dir string) {
		return func(dir string) {
			p := filepath.Join(dir, tsrt.ManifestFile)
			data, _ := os.ReadFile(p)
			var m map[string]any
			json.Unmarshal(data, &m)
			f(m)
			data, _ = json.Marshal(m)
			os.WriteFile(p, data, 0o644)
		}
	}
	editWeights := func(f func(b []byte) []byte) func(dir string) {
		return func(dir string) {
			p := filepath.Join(dir, tsrt.WeightsFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, f(b), 0o644)
		}
	}
	floats := func(name string, v float32, count int) string {
		var b bytes.Buffer
		for range count {
			binary.Write(&b, binary.LittleEndian, v)
		}
		p := c.path("work", name)
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	nanIn := floats("nan.bin", float32(math.NaN()), n)
	xIn := floats("x-matmul.bin", 0.5, wman.Inputs[0].Elems())
	out := func(name string) string { return c.path("work", "out-"+name) }
	allNaN := func(dir string) func(result) error {
		return func(result) error {
			data, err := os.ReadFile(filepath.Join(dir, "y.bin"))
			if err != nil || len(data) != 4*n {
				return fmt.Errorf("output y.bin: %d bytes (%v), want %d", len(data), err, 4*n)
			}
			for i := 0; i < n; i++ {
				if v := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])); v == v {
					return fmt.Errorf("Relu(NaN) gave %v at %d: NaN must propagate", v, i)
				}
			}
			return nil
		}
	}
	cases := []campaignCase{
		{name: "build/bench", args: []string{"bench", src, "--threads", "1", "--repeat", "3"}, expect: wantOK,
			check: func(r result) error {
				if !strings.Contains(r.stdout, "median ms = ") {
					return errors.New("no median line")
				}
				return nil
			}},
		{name: "build/run_nan", args: []string{"run", src, "--threads", "1", "--input", "x=" + nanIn, "--format", "raw", "-o", out("nan")}, expect: wantOK, check: allNaN(out("nan"))},
		{name: "build/run_wrong_input_size", args: []string{"run", src, "--input", "x=" + floats("short.bin", 1, n-1), "-o", out("short")}, expect: wantError},
		{name: "build/run_unknown_input", args: []string{"run", src, "--input", "nosuch=" + nanIn}, expect: wantError},
		{name: "build/run_no_input", args: []string{"run", src}, expect: wantError},
		{name: "build/bench_zero_repeat", args: []string{"bench", src, "--repeat", "0"}, expect: wantError},
		{name: "build/bench_max_memory", args: []string{"bench", src, "--max-memory", "1KiB"}, expect: wantError, msg: "--max-memory"},
		{name: "build/run_colliding_outputs", args: []string{"run", c.path("work", "build-collide"), "--input", "x=" + floats("x4.bin", 1, 4), "-o", out("collide")}, expect: wantError, msg: "would both be written"},
		{name: "build/run_escape_names", args: []string{"run", c.path("work", "build-names"), "--input", floats("x4b.bin", 1, 4), "-o", out("names")}, expect: wantOK,
			check: func(r result) error {
				if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07") {
					return errors.New("a raw escape character reached the output")
				}
				return nil
			}},
	}
	for _, tc := range []struct {
		name string
		edit func(dir string)
		msg  string
	}{
		{"manifest_output_shape", editManifest(func(m map[string]any) { m["outputs"].([]any)[0].(map[string]any)["shape"] = []int{1, 2} }), "does not belong to this library"},
		{"manifest_no_outputs", editManifest(func(m map[string]any) { m["outputs"] = []any{} }), "lists 0 outputs"},
		{"manifest_output_renamed", editManifest(func(m map[string]any) { m["outputs"].([]any)[0].(map[string]any)["name"] = "z" }), "does not belong to this library"},
		{"manifest_huge_input", editManifest(func(m map[string]any) {
			m["inputs"].([]any)[0].(map[string]any)["shape"] = []int64{1, 3, 1 << 31, 1 << 31}
		}), "elements"},
		{"manifest_negative_dim", editManifest(func(m map[string]any) { m["inputs"].([]any)[0].(map[string]any)["shape"] = []int{1, -3} }), "positive dimensions"},
		{"manifest_huge_arena", editManifest(func(m map[string]any) { m["memory"].(map[string]any)["arena_bytes"] = int64(1) << 45 }), "--max-memory"},
		{"manifest_format", editManifest(func(m map[string]any) { m["format"] = 99 }), "manifest format 99"},
		{"manifest_library_path", editManifest(func(m map[string]any) { m["library"] = "../../../lib.so" }), "bad file name"},
		{"manifest_garbage", func(dir string) { os.WriteFile(filepath.Join(dir, tsrt.ManifestFile), []byte("{{{"), 0o644) }, tsrt.ManifestFile},
		{"manifest_missing", func(dir string) { os.Remove(filepath.Join(dir, tsrt.ManifestFile)) }, "not a directory written by tune build"},
		{"library_missing", func(dir string) { os.Remove(filepath.Join(dir, tsrt.LibraryFile)) }, tsrt.LibraryFile},
		{"library_garbage", func(dir string) {
			os.WriteFile(filepath.Join(dir, tsrt.LibraryFile), []byte("not a library"), 0o644)
		}, tsrt.LibraryFile},
		{"weights_missing", func(dir string) { os.Remove(filepath.Join(dir, tsrt.WeightsFile)) }, "weights"},
		{"weights_truncated", editWeights(func(b []byte) []byte { return b[:len(b)-1] }), "weights"},
		{"weights_flipped", editWeights(func(b []byte) []byte { b[len(b)-1] ^= 0x40; return b }), "checksum"},
		{"weights_header_checksum", editWeights(func(b []byte) []byte { b[16] ^= 1; return b }), "header says"},
	} {
		dir := tamper(tc.edit)
		cases = append(cases,
			campaignCase{name: "tampered/" + tc.name + "/bench", args: []string{"bench", dir, "--repeat", "1"}, expect: wantError, msg: tc.msg},
			campaignCase{name: "tampered/" + tc.name + "/run", args: []string{"run", dir, "--input", "x=" + xIn, "-o", out(tc.name)}, expect: wantError, msg: tc.msg},
		)
	}
	// The untouched copy runs.
	cases = append(cases, campaignCase{name: "tampered/none/run", args: []string{"run", tamper(nil), "--input", "x=" + xIn, "-o", out("none")}, expect: wantOK})
	return cases
}

// killLoop tunes a model, killing it with SIGKILL at random moments, then
// lets it finish: no committed record is ever lost, none is measured
// twice, the run ends with exactly the requested trials, and neither the
// temporary folders nor the compilers of the killed runs are left.
func (c *campaign) killLoop() []caseResult {
	model := writeModel(c.t, c.path("models"), craftedModel{"kill_matmul", matmul(6, 10, 8, true), nil})
	db := c.path("work", "kill.db")
	const trials = 30
	args := []string{model, "--threads", "1", "--population", "128", "--trials", strconv.Itoa(trials), "--per-round", "2", "--db", db}
	rng := rand.New(rand.NewPCG(9, 9))
	var out []caseResult
	last := 0
	var killed []int
	for i := range 5 {
		name := fmt.Sprintf("kill/%d", i)
		delay := time.Duration(200+rng.IntN(1500)) * time.Millisecond
		cmd := exec.Command(c.bin, args...)
		cmd.Env, cmd.Dir = c.env, c.path("work")
		if err := cmd.Start(); err != nil {
			c.t.Fatal(err)
		}
		killed = append(killed, cmd.Process.Pid)
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cr := caseResult{name: name, args: args, outcome: okOutcome, result: result{code: 137, took: delay}}
		n, err := countRecords(db)
		switch {
		case errors.Is(err, os.ErrNotExist):
			n = 0 // killed before it created the database
		case err != nil:
			cr.outcome, cr.why = failure, fmt.Sprintf("the database after SIGKILL at %v: %v", delay, err)
		case n < last:
			cr.outcome, cr.why = failure, fmt.Sprintf("%d records after SIGKILL at %v, %d before: a stored record was lost", n, delay, last)
		case n > trials:
			cr.outcome, cr.why = failure, fmt.Sprintf("%d records, more than the %d trials", n, trials)
		}
		last = max(last, n)
		c.t.Logf("kill -9 after %v: %d records committed", delay, n)
		out = append(out, cr)
	}
	// Resume to the end.
	r := c.run(campaignCase{args: args, timeout: 120 * time.Second})
	cc := campaignCase{name: "kill/resume", args: args, expect: wantOK, check: func(result) error {
		s, err := records.OpenReadOnly(db)
		if err != nil {
			return err
		}
		defer s.Close()
		seen := map[string]bool{}
		n := 0
		err = s.ForEach(func(r records.Record) error {
			n++
			k := r.WorkloadKey + string(r.Steps)
			if seen[k] {
				return fmt.Errorf("a schedule of %s was measured twice", r.WorkloadKey)
			}
			seen[k] = true
			return nil
		})
		if err != nil {
			return err
		}
		if n != trials || n < last {
			return fmt.Errorf("%d records after the resume, want %d (and at least the %d committed)", n, trials, last)
		}
		for _, pid := range killed {
			if m, _ := filepath.Glob(c.path("tmp", fmt.Sprintf("tessera-*-%d-*", pid))); len(m) > 0 {
				return fmt.Errorf("temporary folders of killed run %d are left: %v", pid, m)
			}
		}
		return nil
	}}
	o, why := judge(cc, r)
	out = append(out, caseResult{name: cc.name, args: args, outcome: o, why: why, result: r})
	// No compiler of the killed runs is still at work in the build cache.
	left := compilersIn(c.path("cache"))
	deadline := time.Now().Add(30 * time.Second)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		left = compilersIn(c.path("cache"))
	}
	cr := caseResult{name: "kill/no_compiler_left", args: args, outcome: okOutcome}
	if len(left) > 0 {
		cr.outcome, cr.why = failure, fmt.Sprintf("processes still running in the build cache: %v", left)
	}
	return append(out, cr)
}

// compilersIn lists the processes whose working directory is under dir
// (compilers run in scratch folders of the build cache).
func compilersIn(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	var out []string
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, dir) {
			comm, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "comm"))
			out = append(out, filepath.Base(filepath.Dir(p))+":"+strings.TrimSpace(string(comm)))
		}
	}
	return out
}
