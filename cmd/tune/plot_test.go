package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tessera/measure"
	"tessera/records"
)

const fakeTarget = "cpu threads=1 | fake compiler"

// fakeRun writes a database as a short tuning run of the tiny model would
// leave it: its tasks, and records.New records (of the initial schedule)
// in rounds of 4 per task whose costs fall round after round: okRounds
// rounds of 3 successful records and 1 failed, then a round of 4 failed.
func fakeRun(t *testing.T, path, target string, okRounds int) {
	t.Helper()
	tasks, err := modelTasks(tiny, modelFlags{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := records.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Unix(1700000000, 0)
	for _, task := range tasks {
		if err := s.PutTask(records.TaskInfo{Key: task.Key, DAG: task.DAG.CanonicalString(), FLOPs: task.FLOPs, Weight: task.Weight}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range okRounds + 1 {
		for i, task := range tasks {
			var batch []records.Record
			for k := range 4 {
				res := measure.Result{Kind: measure.None, Costs: []float64{task.FLOPs / 1e9 / float64(1+round+k) / float64(i+1)}}
				if k == 3 || round == okRounds {
					res = measure.Result{Kind: measure.RuntimeError, Msg: "fake"}
				}
				r, err := records.New(task.Key, target, nil, res, "test")
				if err != nil {
					t.Fatal(err)
				}
				at = at.Add(time.Second)
				r.At = at
				batch = append(batch, r)
			}
			if err := s.Add(batch); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestRecordsPlot(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	fakeRun(t, db, fakeTarget, 5)
	for _, c := range []struct {
		name string
		args []string
		task string // a task's name in the legend
	}{
		{"with the model", []string{tiny}, "task 1 Conv+Relu ×1"},
		{"stored tasks", nil, "task v2-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, ext := range []string{"svg", "png"} {
				out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+"."+ext)
				var stdout, stderr bytes.Buffer
				args := append([]string{"records", "plot", "--db", db, "-o", out}, c.args...)
				if st := run(args, &stdout, &stderr); st != 0 {
					t.Fatalf("status %d: %s", st, stderr.String())
				}
				for _, s := range []string{"wrote " + out, "96 trials (60 successful) of 4 tasks", "estimated model latency: "} {
					if !strings.Contains(stdout.String(), s) {
						t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
					}
				}
				f, err := os.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if ext == "png" {
					img, err := png.Decode(f)
					if err != nil {
						t.Fatal(err)
					}
					if b := img.Bounds(); b.Dx() != 9*96 || b.Dy() != 9*96 {
						t.Errorf("PNG of %v, want 864×864", b)
					}
					continue
				}
				checkSVG(t, f, "estimated model latency", "best GFLOP/s", c.task)
			}
		})
	}
}

// checkSVG parses an SVG document to its end and checks that its text
// holds each of want.
func checkSVG(t *testing.T, r io.Reader, want ...string) {
	t.Helper()
	dec := xml.NewDecoder(r)
	var root string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("SVG text lacks %q", w)
		}
	}
}

func TestRecordsPlotErrors(t *testing.T) {
	dir := t.TempDir()
	empty := emptyDB(t, dir)
	failed := filepath.Join(dir, "failed.db")
	fakeRun(t, failed, fakeTarget, 0)
	two := filepath.Join(dir, "two.db")
	fakeRun(t, two, fakeTarget, 2)
	fakeRun(t, two, "cpu threads=2 | fake compiler", 2)
	svg := filepath.Join(dir, "out.svg")
	for _, c := range []struct {
		name   string
		args   []string
		status int
		stderr []string
	}{
		{"missing database", []string{"--db", filepath.Join(dir, "nope.db")}, 1, []string{"nope.db", "no such file"}},
		{"empty database", []string{"--db", empty}, 1, []string{"has no records of these tasks"}},
		{"empty database with a model", []string{"--db", empty, tiny}, 1, []string{"has no records of these tasks"}},
		{"only failures", []string{"--db", failed}, 1, []string{"16 records", "none successful"}},
		{"two targets", []string{"--db", two}, 1, []string{"records of 2 targets", "--target", "threads=2 | fake"}},
		{"unknown target", []string{"--db", two, "--target", "gpu"}, 1, []string{`--target "gpu"`, "threads=1 | fake"}},
		{"ambiguous target", []string{"--db", two, "--target", "fake"}, 1, []string{"names 2 targets"}},
		{"one of two targets", []string{"--db", two, "--target", "threads=2"}, 0, nil},
		{"bad extension", []string{"--db", two, "-o", filepath.Join(dir, "x.pdf")}, 1, []string{".svg or .png"}},
		{"two models", []string{"--db", two, tiny, tiny}, 1, []string{"at most one model"}},
		{"help", []string{"-h"}, 0, []string{"usage: tune records plot", "estimated model latency"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectRun(t, append([]string{"records", "plot", "-o", svg}, c.args...), c.status, c.stderr...)
		})
	}
}

// TestDrawCurve draws curves that the fake runs do not make: more tasks
// than the legend names, and a task without a successful record (no
// latency panel).
func TestDrawCurve(t *testing.T) {
	c := &records.Curve{Target: fakeTarget, Trials: 100}
	var names []string
	for i := range 12 {
		c.Tasks = append(c.Tasks, records.TaskInfo{Key: strconv.Itoa(i), FLOPs: 1e6 * float64(i+1), Weight: 1 + i%3})
		c.Best = append(c.Best, []records.CurvePoint{{Trial: i + 1, Value: 1e-3}, {Trial: 50 + i, Value: 5e-5 * float64(i+1)}})
		names = append(names, strconv.Itoa(i))
	}
	var b bytes.Buffer
	if err := drawCurve(&b, ".svg", c, names, "many"); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, &b, "estimated model latency", "task 11 ×3", "4 other tasks", "estimated latency (ms)", "best GFLOP/s")

	c.Best[3] = nil
	b.Reset()
	if err := drawCurve(&b, ".png", c, names, "incomplete"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := drawCurve(&b, ".svg", c, names, "incomplete"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "estimated model latency") {
		t.Error("a latency panel while a task has no successful record")
	}
	checkSVG(t, &b, "(1 without a successful record)", "3 other tasks")
}

// emptyDB creates a records database without records in dir.
func emptyDB(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "empty.db")
	s, err := records.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return path
}

// expectRun runs the command line and checks its exit status, that its
// standard error holds each of stderr, and that it did not panic.
func expectRun(t *testing.T, args []string, status int, stderr ...string) {
	t.Helper()
	var out, errs bytes.Buffer
	if st := run(args, &out, &errs); st != status {
		t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", st, status, out.String(), errs.String())
	}
	for _, s := range stderr {
		if !strings.Contains(errs.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, errs.String())
		}
	}
	if strings.Contains(errs.String(), "goroutine") {
		t.Errorf("panic:\n%s", errs.String())
	}
}
