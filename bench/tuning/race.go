package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/records"
	"github.com/tessera-ml/tessera/tsrt"
)

// point is one checkpoint of a run: the model built from the records of
// its first trials.
type point struct {
	mode   string
	trials int
	wall   time.Duration // from the run's start to its record of that trial
	dir    string        // the build
	ms     []float64     // median of each bench process
}

// checkpoint is a build's record source: the records a run had made by
// its trial n (and the records imported before it started), by workload.
type checkpoint map[string][]records.Record

func (c checkpoint) Ranked(workload, target string) ([]records.Record, error) {
	var out []records.Record
	for _, r := range c[workload] {
		if r.Target == target && r.Error == records.ErrorNone {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Cost() < out[j].Cost() })
	return out, nil
}

// checkpoints builds the model of every checkpoint of a run.
func checkpoints(ctx context.Context, c config, mode string, tg *backend.Target, g *graph.Graph, plan *partition.Plan) ([]*point, error) {
	data, err := os.ReadFile(startFile(c, mode))
	if err != nil {
		return nil, fmt.Errorf("the %s run's start time: %w (tune first, without -skip-tune)", mode, err)
	}
	start, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(data)))
	if err != nil {
		return nil, err
	}
	store, err := records.OpenReadOnly(dbPath(c, mode))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var before, run []records.Record
	err = store.ForEach(func(r records.Record) error {
		if r.Target != tg.Key() {
			return nil
		}
		if r.At.Before(start) {
			before = append(before, r)
		} else {
			run = append(run, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(run, func(i, j int) bool { return run[i].At.Before(run[j].At) })
	var out []*point
	for _, n := range c.checkpoints {
		if n > len(run) {
			fmt.Fprintf(os.Stderr, "%s: %d trials recorded, checkpoint %d left out\n", mode, len(run), n)
			break
		}
		cp := checkpoint{}
		for _, r := range append(slices.Clip(before), run[:n]...) {
			cp[r.WorkloadKey] = append(cp[r.WorkloadKey], r)
		}
		p := &point{mode: mode, trials: n, wall: run[n-1].At.Sub(start), dir: filepath.Join(c.out, fmt.Sprintf("%s-%d", mode, n))}
		if _, err := os.Stat(filepath.Join(p.dir, tsrt.ManifestFile)); err != nil {
			opts := assemble.Options{Records: cp, Target: tg, Model: c.model}
			if _, err := assemble.Build(ctx, g, plan, p.dir, opts); err != nil {
				return nil, fmt.Errorf("%s at %d trials: %w", mode, n, err)
			}
		}
		fmt.Fprintf(os.Stderr, "built %s\n", p.dir)
		out = append(out, p)
	}
	return out, nil
}

// race builds every checkpoint and times them against onnxruntime.
func race(ctx context.Context, c config, tg *backend.Target, g *graph.Graph, plan *partition.Plan) error {
	var points []*point
	for _, mode := range c.modes {
		ps, err := checkpoints(ctx, c, mode, tg, g, plan)
		if err != nil {
			return err
		}
		points = append(points, ps...)
	}
	if c.buildOnly {
		return nil
	}
	tune := filepath.Join(c.out, "tune")
	if out, err := exec.Command("go", "build", "-o", tune, "./cmd/tune").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/tune: %v\n%s", err, out)
	}
	inputs, err := writeInputs(g, c.out)
	if err != nil {
		return err
	}
	ort := &point{mode: "onnxruntime"}
	sides := append([]*point{ort}, points...)
	repeat, err := repeats(ctx, c, tune, inputs, sides)
	if err != nil {
		return err
	}
	for round := range c.rounds {
		order := slices.Clone(sides)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, p := range order {
			ms, err := benchOnce(ctx, c, tune, inputs, p, repeat)
			if err != nil {
				return err
			}
			p.ms = append(p.ms, ms)
		}
		fmt.Fprintf(os.Stderr, "round %d of %d timed\n", round+1, c.rounds)
	}
	report(c, ort, points)
	return plotCurves(c, ort, points)
}

// writeInputs writes one random float32 file per graph input (seed 1).
func writeInputs(g *graph.Graph, dir string) (map[string]string, error) {
	rng := rand.New(rand.NewPCG(1, 1))
	files := map[string]string{}
	for _, name := range g.Inputs {
		v := g.Values[name]
		n := 1
		for _, d := range v.Shape {
			n *= d
		}
		buf := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		f := filepath.Join(dir, "input-"+strconv.Itoa(len(files))+".bin")
		if err := os.WriteFile(f, buf, 0o644); err != nil {
			return nil, err
		}
		files[name] = f
	}
	return files, nil
}

// repeats returns the timed runs per process: c.seconds over the slowest
// side's time of one run (a probe of each side), at least 3.
func repeats(ctx context.Context, c config, tune string, inputs map[string]string, sides []*point) (int, error) {
	slowest := 0.0
	for _, p := range []*point{sides[0], sides[1]} { // onnxruntime and the least tuned build
		ms, err := runBench(ctx, command(c, tune, inputs, p, 1, 3))
		if err != nil {
			return 0, err
		}
		slowest = math.Max(slowest, ms)
	}
	return max(3, min(200, int(c.seconds*1e3/slowest))), nil
}

// benchOnce times one side in its own process and returns its median.
func benchOnce(ctx context.Context, c config, tune string, inputs map[string]string, p *point, repeat int) (float64, error) {
	return runBench(ctx, command(c, tune, inputs, p, max(1, repeat/5), repeat))
}

func command(c config, tune string, inputs map[string]string, p *point, warmup, repeat int) []string {
	if p.mode == "onnxruntime" {
		args := []string{"node", "bench/ort/bench.mjs", c.model, "--threads", strconv.Itoa(c.threads),
			"--warmup", strconv.Itoa(warmup), "--repeat", strconv.Itoa(repeat)}
		for _, name := range slices.Sorted(mapsKeys(inputs)) {
			args = append(args, "--input", name+"="+inputs[name])
		}
		return args
	}
	return []string{tune, "bench", p.dir, "--threads", strconv.Itoa(c.threads),
		"--warmup", strconv.Itoa(warmup), "--repeat", strconv.Itoa(repeat)}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// runBench runs a bench command and returns its "median ms".
func runBench(ctx context.Context, args []string) (float64, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "median ms = "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s printed no median:\n%s", strings.Join(args, " "), out.String())
}

// median of a side's process medians.
func (p *point) median() float64 { return measure.Result{Costs: p.ms}.Median() }

// report prints the figures.
func report(c config, ort *point, points []*point) {
	w := io.Writer(os.Stdout)
	fmt.Fprintf(w, "onnxruntime ms = %.3f (threads %d, %d rounds)\n", ort.median(), c.threads, c.rounds)
	final := map[string]float64{}
	for _, p := range points {
		fmt.Fprintf(w, "%s trials=%d ms = %.3f (min %.3f, wall %.0f s)\n", p.mode, p.trials, p.median(), slices.Min(p.ms), p.wall.Seconds())
		final[p.mode] = p.median()
	}
	cold, haveCold := final["cold"]
	for _, mode := range c.modes {
		toORT, toCold := "never", "never"
		for _, p := range points {
			if p.mode != mode {
				continue
			}
			if toORT == "never" && p.median() <= ort.median() {
				toORT = strconv.Itoa(p.trials)
			}
			if haveCold && toCold == "never" && p.median() <= 1.05*cold {
				toCold = strconv.Itoa(p.trials)
			}
		}
		fmt.Fprintf(w, "%s trials to onnxruntime = %s\n", mode, toORT)
		if haveCold {
			fmt.Fprintf(w, "%s trials to within 5%% = %s\n", mode, toCold)
			fmt.Fprintf(w, "%s final / cold final = %.3f\n", mode, final[mode]/cold)
		}
	}
}
