package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/costmodel"
	"github.com/tessera-ml/tessera/records"
)

// TestCostModelTrainEval tunes the tiny model briefly for real, splits its
// records into a training and a held-out database, trains a model on one,
// evaluates it on the other, and tunes again starting from the model.
func TestCostModelTrainEval(t *testing.T) {
	dir := t.TempDir()
	runDB, train, held := filepath.Join(dir, "run.db"), filepath.Join(dir, "train.db"), filepath.Join(dir, "held.db")
	var out, errs bytes.Buffer
	if st := run([]string{tiny, "--trials", "32", "--per-round", "8", "--population", testPopulation, "--threads", "1", "--db", runDB}, &out, &errs); st != 0 {
		t.Fatalf("tuning: status %d\n%s\n%s", st, out.String(), errs.String())
	}
	splitRecords(t, runDB, train, held)

	model := filepath.Join(dir, "model.txt")
	for _, c := range []struct {
		args   []string
		stdout []string
	}{
		{[]string{"costmodel", "train", "--db", train, "--model", tiny, "-o", model},
			[]string{"successful records of 4 tasks on 1 target(s)", "trained a pack-sum model", "wrote " + model}},
		{[]string{"costmodel", "train", "--db", train, "--db", held, "--model", tiny, "--objective", "pairwise", "-o", filepath.Join(dir, "pairwise.txt")},
			[]string{"trained a pairwise-rank model"}},
		{[]string{"costmodel", "eval", "--db", held, "--model", tiny, "--target", "threads=1", model},
			[]string{"pairwise accuracy = ", "top-1 score = ", "top-5 score = ", "(4 tasks, "}},
	} {
		out.Reset()
		errs.Reset()
		if st := run(c.args, &out, &errs); st != 0 {
			t.Fatalf("%v: status %d\n%s\n%s", c.args, st, out.String(), errs.String())
		}
		for _, s := range c.stdout {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args[:2], s, out.String())
			}
		}
		t.Logf("%v:\n%s", c.args[:2], out.String())
	}
	for _, m := range regexp.MustCompile(`(?m)^(pairwise accuracy|top-1 score|top-5 score) = (\S+)$`).FindAllStringSubmatch(out.String(), -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err != nil || v < 0 || v > 1 {
			t.Errorf("%s = %s, want a number in [0, 1]", m[1], m[2])
		}
	}

	// The trained model loads where tune takes a pretrained one.
	out.Reset()
	errs.Reset()
	if st := run([]string{tiny, "--trials", "4", "--per-round", "4", "--population", testPopulation, "--threads", "1", "--db", filepath.Join(dir, "fresh.db"), "--cost-model", model}, &out, &errs); st != 0 {
		t.Fatalf("tune --cost-model: status %d\n%s\n%s", st, out.String(), errs.String())
	}
}

// splitRecords copies every other record of src to a and the rest to b.
func splitRecords(t *testing.T, src, a, b string) {
	t.Helper()
	s, err := records.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var halves [2][]records.Record
	n := 0
	err = s.ForEach(func(r records.Record) error {
		halves[n%2] = append(halves[n%2], r)
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, path := range []string{a, b} {
		d, err := records.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Add(halves[i]); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
}

func TestCostModelErrors(t *testing.T) {
	dir := t.TempDir()
	empty := emptyDB(t, dir)
	failed, some := filepath.Join(dir, "failed.db"), filepath.Join(dir, "some.db")
	fakeRun(t, failed, fakeTarget, 0)
	fakeRun(t, some, fakeTarget, 1) // 12 successful records, 20 failed
	garbageDB := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbageDB, bytes.Repeat([]byte("x"), 10000), 0o644)
	garbageModel := filepath.Join(dir, "garbage.txt")
	os.WriteFile(garbageModel, []byte("not a model\n"), 0o644)
	// A valid LightGBM model of 3 features.
	var d costmodel.Dataset
	for i := range 20 {
		d.Add("t", [][]float32{{float32(i), 1, 2}}, float64(1+i))
	}
	small, err := costmodel.Train(&d, costmodel.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	narrow := filepath.Join(dir, "narrow.txt")
	var buf bytes.Buffer
	small.Save(&buf)
	os.WriteFile(narrow, buf.Bytes(), 0o644)
	// The dynamic tiny model bound to batch 2 has other workload keys.
	other := []string{"--model", dynamicTiny(t), "--input", "input=2,3,16,16"}
	out := filepath.Join(dir, "m.txt")

	for _, c := range []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"no verb", []string{"costmodel"}, []string{"usage: tune costmodel train"}},
		{"unknown verb", []string{"costmodel", "fit"}, []string{"usage: tune costmodel train"}},
		{"train without -o", []string{"costmodel", "train", "--db", failed, "--model", tiny}, []string{"-o model.txt"}},
		{"train with a positional model", []string{"costmodel", "train", "--db", failed, "-o", out, tiny}, []string{"models go with --model"}},
		{"eval without a model file", []string{"costmodel", "eval", "--db", failed, "--model", tiny}, []string{"usage: tune costmodel eval"}},
		{"unknown objective", []string{"costmodel", "train", "--db", failed, "--model", tiny, "-o", out, "--objective", "lambdarank"}, []string{`--objective "lambdarank"`}},
		{"no --model", []string{"costmodel", "train", "--db", failed, "-o", out}, []string{"--model", "workload keys"}},
		{"missing database", []string{"costmodel", "train", "--db", filepath.Join(dir, "nope.db"), "--model", tiny, "-o", out}, []string{"nope.db", "no such file"}},
		{"garbage database", []string{"costmodel", "train", "--db", garbageDB, "--model", tiny, "-o", out}, []string{"not a tessera records database"}},
		{"empty database", []string{"costmodel", "train", "--db", empty, "--model", tiny, "-o", out}, []string{"no records in " + empty}},
		{"only failures", []string{"costmodel", "train", "--db", failed, "--model", tiny, "-o", out}, []string{"no successful record", "16 failed measurements"}},
		{"other workloads", append([]string{"costmodel", "train", "--db", some, "-o", out}, other...), []string{"no successful record", "20 failed measurements, 12 records of 4 workloads that no --model has"}},
		{"unknown target", []string{"costmodel", "train", "--db", failed, "--model", tiny, "-o", out, "--target", "gpu"}, []string{`--target "gpu"`}},
		{"model file missing", []string{"costmodel", "eval", "--db", failed, "--model", tiny, filepath.Join(dir, "nope.txt")}, []string{"nope.txt", "no such file"}},
		{"model file not a model", []string{"costmodel", "eval", "--db", failed, "--model", tiny, garbageModel}, []string{"garbage.txt", "costmodel: load"}},
		{"model of other features", []string{"costmodel", "eval", "--db", failed, "--model", tiny, narrow}, []string{"a model of 3 features; Tessera extracts " + strconv.Itoa(costmodel.NumFeatures)}},
		{"tune with a model of other features", []string{tiny, "--db", filepath.Join(dir, "t.db"), "--cost-model", narrow}, []string{"--cost-model", "a model of 3 features"}},
	} {
		t.Run(c.name, func(t *testing.T) { expectRun(t, c.args, 1, c.stderr...) })
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed train wrote %s", out)
	}
}
