package main

import (
	"bytes"
	"html"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/tuning"
)

const fakeTarget = "cpu threads=1 | fake compiler"

// fakeRun writes a database as a short tuning run of the tiny model would
// leave it: its tasks, and records.New records (of the initial schedule)
// in rounds of 4 per task whose costs fall round after round: okRounds
// rounds of 3 successful records and 1 failed, then a round of 4 failed.
func fakeRun(t *testing.T, path, target string, okRounds int) {
	t.Helper()
	tasks, err := tuning.ModelTasks(tiny)
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
				svg, err := io.ReadAll(f)
				if err != nil {
					t.Fatal(err)
				}
				text := html.UnescapeString(string(svg))
				for _, want := range []string{"<svg", "estimated model latency", "best GFLOP/s", c.task, "</svg>"} {
					if !strings.Contains(text, want) {
						t.Errorf("%s lacks %q", out, want)
					}
				}
			}
		})
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
