package main

import (
	"bytes"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/internal/chrometrace"
	"github.com/tessera-ml/tessera/tsrt"
)

// tinyReference evaluates testdata/tiny.onnx on x with the reference
// evaluator.
func tinyReference(t *testing.T, x []float32) []float32 {
	t.Helper()
	l, err := frontend.Load(tiny, frontend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := assemble.Reference(l.Graph, [][]float32{x})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

var (
	inputInfo  = tsrt.ManifestTensor{Name: "input", Shape: []int{1, 3, 16, 16}}
	outputInfo = tsrt.ManifestTensor{Name: "output", Shape: []int{1, 10}}
)

// TestBuildRunBench is the whole flow: tune the tiny model briefly, build
// it from the records, run it on an .npy input against a .pb reference,
// and time it.
func TestBuildRunBench(t *testing.T) {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "t.db"), filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if st := run([]string{tiny, "--trials", "8", "--per-round", "8", "--population", testPopulation, "--db", db, "--threads", "1"}, &stdout, &stderr); st != 0 {
		t.Fatalf("tune: status %d\n%s", st, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if st := run([]string{"build", tiny, "--db", db, "--threads", "1", "-o", out}, &stdout, &stderr); st != 0 {
		t.Fatalf("build: status %d\n%s", st, stderr.String())
	}
	t.Logf("tune build:\n%s%s", stdout.String(), stderr.String())
	m := regexp.MustCompile(`(?m)^tuned tasks = (\d+)/4$`).FindStringSubmatch(stdout.String())
	if m == nil || m[1] == "0" {
		t.Errorf("no tuned task after 8 trials:\n%s", stdout.String())
	}
	for _, line := range []string{"tuned FLOPs = ", "arena peak bytes = ", "sum of intermediates bytes = "} {
		if !strings.Contains(stdout.String(), "\n"+line) {
			t.Errorf("no %q line", line)
		}
	}
	if n := strings.Count(stderr.String(), "warning: "); m != nil && n != 4-int(m[1][0]-'0') {
		t.Errorf("%d warnings for %s tuned tasks of 4:\n%s", n, m[1], stderr.String())
	}

	x := make([]float32, 768)
	for i := range x {
		x[i] = float32(i%17)/8 - 1
	}
	in, ref, res := filepath.Join(dir, "x.npy"), filepath.Join(dir, "want.pb"), filepath.Join(dir, "res")
	want := tinyReference(t, x)
	if err := tsrt.WriteTensor(in, inputInfo, x); err != nil {
		t.Fatal(err)
	}
	if err := tsrt.WriteTensor(ref, outputInfo, want); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if st := run([]string{"run", out, "--input", "input=" + in, "--reference", "output=" + ref, "-o", res}, &stdout, &stderr); st != 0 {
		t.Fatalf("run: status %d\n%s\n%s", st, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "max abs error = ") || !strings.Contains(stdout.String(), ": ok") {
		t.Errorf("run printed:\n%s", stdout.String())
	}
	got, err := tsrt.ReadTensor(filepath.Join(res, "output.npy"), outputInfo)
	if err != nil {
		t.Fatal(err)
	}
	if d := tsrt.Diff(got, want, 1e-3, 1e-4); d.Bad > 0 {
		t.Errorf("written output differs from the reference: %+v", d)
	}

	stdout.Reset()
	stderr.Reset()
	if st := run([]string{"bench", out, "--threads", "1", "--warmup", "1", "--repeat", "3"}, &stdout, &stderr); st != 0 {
		t.Fatalf("bench: status %d\n%s", st, stderr.String())
	}
	// bench/onnxruntime.sh parses these two lines; nothing else is on stdout.
	if !regexp.MustCompile(`^min ms = [0-9.]+\nmedian ms = [0-9.]+\n$`).MatchString(stdout.String()) {
		t.Errorf("bench stdout:\n%s", stdout.String())
	}
	// --profile puts a table of the steps before them.
	stdout.Reset()
	if st := run([]string{"bench", out, "--threads", "1", "--warmup", "1", "--repeat", "3", "--profile"}, &stdout, &stderr); st != 0 {
		t.Fatalf("bench --profile: status %d\n%s", st, stderr.String())
	}
	if !regexp.MustCompile(`(?s)^ *step +task +ms +record ms.*\n +0 +0 +[0-9.]+ .*steps sum ms = [0-9.]+\noutside steps ms = -?[0-9.]+ \(mean run [0-9.]+\)\nmin ms = [0-9.]+\nmedian ms = [0-9.]+\n$`).MatchString(stdout.String()) {
		t.Errorf("bench --profile stdout:\n%s", stdout.String())
	}
	checkBenchOutputs(t, dir, out)
}

// checkBenchOutputs runs tune bench --profile on the build out of the
// tiny model with --json, --trace and --plot: one JSON document on
// stdout, a trace of the Trace Event Format, a chart.
func checkBenchOutputs(t *testing.T, dir, out string) {
	trace, svg, pngFile := filepath.Join(dir, "steps.json"), filepath.Join(dir, "steps.svg"), filepath.Join(dir, "steps.png")
	doc := jsonOf(t, "bench", out, "--threads", "1", "--warmup", "1", "--repeat", "3", "--profile", "--json", "--trace", trace, "--plot", svg)
	if runs := field(t, doc, "runs_ms").([]any); len(runs) != 3 || field(t, doc, "model") != "tiny.onnx" || field(t, doc, "threads") != 1.0 {
		t.Errorf("bench --json: %v", doc)
	}
	for _, k := range []string{"min_ms", "median_ms", "mean_ms", "target", "batch"} {
		field(t, doc, k)
	}
	steps := field(t, doc, "profile", "steps").([]any)
	records := 0
	for i := range steps {
		for _, k := range []string{"step", "group", "task", "ops", "ms", "record_ms", "ratio", "share"} {
			field(t, steps, i, k)
		}
		if field(t, steps, i, "record_ms") != nil {
			records++
		}
	}
	if len(steps) < 4 || records == 0 {
		t.Errorf("bench --json: %d steps, %d with a record: %v", len(steps), records, steps)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := chrometrace.Check(data); err != nil {
		t.Errorf("--trace %s: %v\n%s", trace, err, data)
	}
	if n := strings.Count(string(data), `"ph":"X"`); n != len(steps) {
		t.Errorf("--trace: %d slices for %d steps", n, len(steps))
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(html.UnescapeString(string(data)), "0  Conv+Relu (task 0)") {
		t.Errorf("--plot %s: %v", svg, err)
	}
	tuneCmd(t, "bench", out, "--threads", "1", "--warmup", "0", "--repeat", "1", "--profile", "--plot", pngFile)
	if f, err := os.Open(pngFile); err != nil {
		t.Error(err)
	} else {
		if _, err := png.Decode(f); err != nil {
			t.Errorf("--plot %s: %v", pngFile, err)
		}
		f.Close()
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", trace}, "add --profile"},
		{[]string{"--profile", "--plot", filepath.Join(dir, "steps.pdf")}, "the plot is .svg or .png"},
	} {
		var stdout, stderr bytes.Buffer
		if st := run(append([]string{"bench", out, "--repeat", "1"}, c.args...), &stdout, &stderr); st != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("bench %s: status %d, %s", c.args, st, stderr.String())
		}
	}
}

// TestModelCommandErrors: every mistake is one clear message and status 1.
func TestModelCommandErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if st := run([]string{"build", tiny, "--no-records", "-o", out}, &stdout, &stderr); st != 0 {
		t.Fatalf("build: status %d\n%s", st, stderr.String())
	}
	// A database with records of another model only.
	other := filepath.Join(dir, "other.db")
	if st := run([]string{bertPath(t), "--trials", "2", "--per-round", "2", "--population", testPopulation, "--db", other, "--threads", "1"}, &stdout, &stderr); st != 0 {
		t.Fatalf("tune bert: status %d\n%s", st, stderr.String())
	}
	dyn := dynamicTiny(t)
	x, bad := filepath.Join(dir, "x.bin"), filepath.Join(dir, "bad")
	os.WriteFile(x, make([]byte, 4*768), 0o644)
	short := filepath.Join(dir, "short.bin")
	os.WriteFile(short, make([]byte, 100), 0o644)
	wrongShape := filepath.Join(dir, "wrong.npy")
	tsrt.WriteTensor(wrongShape, outputInfo, make([]float32, 10))
	os.CopyFS(bad, os.DirFS(out))
	w, _ := os.ReadFile(filepath.Join(bad, tsrt.WeightsFile))
	w[len(w)-1] ^= 0x40
	os.WriteFile(filepath.Join(bad, tsrt.WeightsFile), w, 0o644)
	wrongRef := filepath.Join(dir, "ref.npy")
	tsrt.WriteTensor(wrongRef, outputInfo, []float32{1e6, 0, 0, 0, 0, 0, 0, 0, 0, 0})

	for _, c := range []struct {
		name   string
		args   []string
		status int
		want   string // in stderr (status 1) or stdout (status 0)
	}{
		{"build without -o", []string{"build", tiny, "--no-records"}, 1, "want one model file and -o DIR"},
		{"missing database", []string{"build", tiny, "--db", filepath.Join(dir, "none.db"), "-o", out}, 1, "none.db does not exist: tune the model first"},
		{"database of another model", []string{"build", tiny, "--db", other, "--threads", "1", "-o", filepath.Join(dir, "o2")}, 0, "tuned tasks = 0/4"},
		{"records of another thread count", []string{"build", bertPath(t), "--db", other, "--threads", "3", "-o", filepath.Join(dir, "o4")}, 0, "tuned tasks = 0/"},
		{"not a model", []string{"build", x, "--no-records", "-o", out}, 1, "x.bin"},
		{"dynamic input unbound", []string{"build", dyn, "--no-records", "-o", filepath.Join(dir, "o3")}, 1, "batch"},
		{"dynamic input bound", []string{"build", dyn, "--no-records", "--input", "input=2,3,16,16", "-o", filepath.Join(dir, "o3")}, 0, "tuned tasks = 0/4"},
		{"missing manifest", []string{"run", dir, "--input", x}, 1, "no manifest.json"},
		{"missing directory", []string{"bench", filepath.Join(dir, "nothere")}, 1, "is not a directory"},
		{"no input", []string{"run", out}, 1, "no --input for input[1,3,16,16]"},
		{"unknown input", []string{"run", out, "--input", "image=" + x}, 1, `no input "image"`},
		{"raw input of the wrong size", []string{"run", out, "--input", short}, 1, "100 bytes of raw float32, input[1,3,16,16] takes 3072"},
		{"npy of the wrong shape", []string{"run", out, "--input", wrongShape}, 1, "shape [1,10], input takes [1,3,16,16]"},
		{"corrupt weights", []string{"run", bad, "--input", x}, 1, "corrupt"},
		{"wrong reference", []string{"run", out, "--input", x, "--reference", wrongRef, "-o", dir}, 1, "output output differs from the reference"},
		{"reference of an unknown output", []string{"run", out, "--input", x, "--reference", "y=" + wrongRef}, 1, `no reference "y"`},
		{"bad format", []string{"run", out, "--input", x, "--format", "csv"}, 1, "--format"},
		{"bench without repetitions", []string{"bench", out, "--repeat", "0"}, 1, "--repeat must be positive"},
		{"unknown layout", []string{"build", tiny, "--no-records", "--layout", "nchw8c", "-o", out}, 1, `--layout "nchw8c": want auto, nhwc or nchw`},
		{"nhwc without its pass", []string{"build", tiny, "--no-records", "--layout", "nhwc", "--no-pass", "convert-layout", "-o", out}, 1, "--layout nhwc needs the convert-layout pass"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			st := run(c.args, &stdout, &stderr)
			where := stderr.String()
			if c.status == 0 {
				where = stdout.String()
			}
			if st != c.status || !strings.Contains(where, c.want) {
				t.Errorf("status %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", st, c.status, c.want, stdout.String(), stderr.String())
			}
			if c.status == 0 && !strings.Contains(stderr.String(), "using the default schedule") {
				t.Errorf("no warning:\n%s", stderr.String())
			}
			if hint := strings.Contains(stderr.String(), `have records for target "cpu threads=1 |`); hint != (c.name == "records of another thread count") {
				t.Errorf("hint %v:\n%s", hint, stderr.String())
			}
		})
	}
}

// TestBuildChoosesLayout: with records of the model in both activation
// layouts (tune, and tune --no-pass convert-layout), `tune build` builds
// both, times them end to end and keeps the faster; with records of one
// layout only, it builds that one without a race.
func TestBuildChoosesLayout(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	tune := func(extra ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := append([]string{tiny, "--trials", "16", "--per-round", "8", "--population", testPopulation, "--db", db, "--threads", "1"}, extra...)
		if st := run(args, &stdout, &stderr); st != 0 {
			t.Fatalf("tune %v: status %d\n%s", extra, st, stderr.String())
		}
	}
	buildLayout := func(out string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if st := run([]string{"build", tiny, "--db", db, "--threads", "1", "-o", out}, &stdout, &stderr); st != 0 {
			t.Fatalf("build: status %d\n%s", st, stderr.String())
		}
		m, err := tsrt.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		layout := "nchw"
		for _, task := range m.Tasks {
			if task.Layout == "NHWC" {
				layout = "nhwc"
			}
		}
		return layout, stderr.String()
	}

	tune("--no-pass", "convert-layout")
	layout, log := buildLayout(filepath.Join(dir, "one"))
	if layout != "nchw" || !strings.Contains(log, "tune build: layout nchw: records cover 100.0% of its FLOPs, 0.0% of nhwc's") || strings.Contains(log, "both layouts are tuned") {
		t.Errorf("records of NCHW only: built %s\n%s", layout, log)
	}

	tune()
	layout, log = buildLayout(filepath.Join(dir, "both"))
	m := regexp.MustCompile(`both layouts are tuned; end to end, 1 threads, median of 3 rounds of 10 runs: nhwc ([0-9.]+) ms \(records' estimate [0-9.]+\); nchw ([0-9.]+) ms \(records' estimate [0-9.]+\); building (nhwc|nchw) into `).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no race of the layouts:\n%s", log)
	}
	nhwc, nchw := parseMs(t, m[1]), parseMs(t, m[2])
	want := "nhwc"
	if nchw < nhwc || nchw == nhwc && m[3] == "nchw" { // printed equal: either is the faster
		want = "nchw"
	}
	if m[3] != want || layout != want {
		t.Errorf("nhwc %.3f ms, nchw %.3f ms: chose %s, built %s", nhwc, nchw, m[3], layout)
	}
}

func parseMs(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
