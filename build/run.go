package build

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"tessera/measure"
)

// Running a built model: Go → runner child → dlopen(libmodel.so).
//
//	inputs ──raw float32 file──▶ runner LIB WEIGHTS IN OUT WARMUP REPEAT
//	       ◀──raw float32 file── outputs of the first run
//	       ◀──stdout──────────── "tessera time S" per timed run, "tessera done"
//
// The runner (runner/runner.c) is compiled once per compiler into the
// build cache by measure.Builder.BuildProgram, as the kernel harness is.

// runnerSrc is the child program. It sits in a directory of its own because
// the go tool refuses .c files in a package that does not use cgo.
//
//go:embed runner/runner.c
var runnerSrc string

// Model is a build directory opened for running.
type Model struct {
	Dir      string
	Manifest *Manifest

	checked bool // the manifest was found to agree with the library
}

// Open reads the build directory dir: its manifest, and its weights file,
// which must match the manifest (ErrCorruptWeights otherwise).
func Open(dir string) (*Model, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if err := VerifyWeights(filepath.Join(dir, m.Weights.File), m.Weights); err != nil {
		return nil, err
	}
	return &Model{Dir: dir, Manifest: m}, nil
}

// RunOptions control a run of the model. Zero fields take their defaults.
type RunOptions struct {
	Threads int              // OMP_NUM_THREADS of the runner; default runtime.NumCPU()
	Timeout time.Duration    // the whole runner process; default 10 minutes
	Builder *measure.Builder // compiles the runner; nil means a zero Builder
	// MaxMemory is the most bytes a run may take (Model.Footprint);
	// 0 means measure.DefaultMaxMemory.
	MaxMemory int64
	// Exec, when set, is the command the runner runs under: an emulator
	// for a model built for another architecture (qemu-aarch64 -L
	// /usr/aarch64-linux-gnu), whose runner Builder compiles too.
	Exec []string
}

// command returns the runner child's command: runner args, under opts.Exec.
func (opts RunOptions) command(ctx context.Context, runner string, args ...string) *exec.Cmd {
	if len(opts.Exec) > 0 {
		args = append(append(slices.Clone(opts.Exec[1:]), runner), args...)
		runner = opts.Exec[0]
	}
	cmd := exec.CommandContext(ctx, runner, args...)
	measure.DieWithParent(cmd)
	return cmd
}

// Run runs the model once on inputs (one per manifest input, in order,
// each of the input's size) and returns the outputs.
func (m *Model) Run(ctx context.Context, inputs [][]float32, opts RunOptions) ([][]float32, error) {
	if err := m.checkInputs(inputs); err != nil {
		return nil, err
	}
	runner, err := m.prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	outs, _, err := m.child(ctx, runner, inputs, true, 0, 0, false, opts)
	return outs, err
}

// Bench runs the model on random inputs (uniform in [-1, 1), fixed seed):
// once, then warmup times untimed, then repeat times timed; it returns the
// seconds of each timed run.
func (m *Model) Bench(ctx context.Context, warmup, repeat int, opts RunOptions) ([]float64, error) {
	times, _, err := m.bench(ctx, warmup, repeat, false, opts)
	return times, err
}

// Profile is Bench that also times every step of the executor (one kernel
// call, Manifest.Steps[i]): steps[i] is its mean seconds per timed run.
// The timed runs carry the cost of reading the clock around each call
// (two reads a step, well under a microsecond). Builds for a GPU cannot
// be profiled.
func (m *Model) Profile(ctx context.Context, warmup, repeat int, opts RunOptions) (times, steps []float64, err error) {
	times, steps, err = m.bench(ctx, warmup, repeat, true, opts)
	if err == nil && len(steps) != len(m.Manifest.Steps) {
		return nil, nil, fmt.Errorf("%s: the library times %d steps, the manifest lists %d", m.Dir, len(steps), len(m.Manifest.Steps))
	}
	return times, steps, err
}

func (m *Model) bench(ctx context.Context, warmup, repeat int, profile bool, opts RunOptions) (times, steps []float64, err error) {
	if warmup < 0 || repeat < 1 {
		return nil, nil, fmt.Errorf("build: bench: %d warm-up runs and %d repetitions (want ≥ 0 and ≥ 1)", warmup, repeat)
	}
	runner, err := m.prepare(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := make([][]float32, len(m.Manifest.Inputs))
	for i, t := range m.Manifest.Inputs {
		inputs[i] = make([]float32, t.Elems())
		for k := range inputs[i] {
			inputs[i][k] = float32(rng.Float64()*2 - 1)
		}
	}
	_, res, err := m.child(ctx, runner, inputs, false, warmup, repeat, profile, opts)
	return res.times, res.steps, err
}

// Footprint returns the bytes a run of the model takes at least: its
// inputs and outputs (held by this process and by the runner), its
// weights and the arena of its intermediate tensors.
func (m *Model) Footprint() int64 {
	var io int64
	for _, ts := range [][]TensorInfo{m.Manifest.Inputs, m.Manifest.Outputs} {
		for _, t := range ts {
			io += 4 * int64(t.Elems())
		}
	}
	return 2*io + m.Manifest.Weights.Bytes + m.Manifest.Memory.ArenaBytes
}

// prepare checks that a run fits in opts.MaxMemory, compiles the runner,
// and checks the manifest against the library (once per Model); it
// returns the runner's path. Nothing sized by the model is allocated
// before these checks.
func (m *Model) prepare(ctx context.Context, opts RunOptions) (string, error) {
	limit := opts.MaxMemory
	if limit <= 0 {
		limit = measure.DefaultMaxMemory
	}
	if need := m.Footprint(); need > limit {
		return "", fmt.Errorf("%s: a run takes %s (inputs, outputs, weights and the arena), more than the %s allowed (--max-memory)",
			m.Dir, measure.Bytes(need), measure.Bytes(limit))
	}
	b := opts.Builder
	if b == nil {
		b = &measure.Builder{}
	}
	runner, err := b.BuildProgram(ctx, "runner", runnerSrc, []string{"-O2", "-std=gnu11"}, []string{"-ldl"})
	if err != nil {
		return "", err
	}
	if !m.checked {
		if err := m.checkLibrary(ctx, runner, opts); err != nil {
			return "", err
		}
		m.checked = true
	}
	return runner, nil
}

// checkLibrary compares the inputs and outputs the manifest lists (names,
// element counts) with those the library was compiled with: the library
// is the truth, and a manifest that disagrees was edited or belongs to
// another build.
func (m *Model) checkLibrary(ctx context.Context, runner string, opts RunOptions) error {
	lib, err := filepath.Abs(filepath.Join(m.Dir, m.Manifest.Library))
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := opts.command(cctx, runner, "--describe", lib)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s: reading the library %s: %s", m.Dir, m.Manifest.Library, msg)
	}
	lists := map[string][]TensorInfo{}
	sizes := map[string][]int{}
	done := false
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "tessera" && f[1] == "done" {
			done = true
			continue
		}
		if len(f) != 4 || f[0] != "tessera" || (f[1] != "input" && f[1] != "output") {
			return fmt.Errorf("%s: the runner's description of %s: bad line %q", m.Dir, m.Manifest.Library, strings.TrimSpace(line))
		}
		n, err := strconv.Atoi(f[2])
		name, herr := hex.DecodeString(strings.TrimPrefix(f[3], "-"))
		if err != nil || herr != nil {
			return fmt.Errorf("%s: the runner's description of %s: bad line %q", m.Dir, m.Manifest.Library, strings.TrimSpace(line))
		}
		lists[f[1]] = append(lists[f[1]], TensorInfo{Name: string(name)})
		sizes[f[1]] = append(sizes[f[1]], n)
	}
	if !done {
		return fmt.Errorf("%s: the runner's description of %s is incomplete", m.Dir, m.Manifest.Library)
	}
	for _, c := range []struct {
		what string
		man  []TensorInfo
	}{{"input", m.Manifest.Inputs}, {"output", m.Manifest.Outputs}} {
		lib, n := lists[c.what], sizes[c.what]
		if len(lib) != len(c.man) {
			return fmt.Errorf("%s: %s lists %d %ss, the library %s has %d (%s): the manifest does not belong to this library",
				m.Dir, ManifestFile, len(c.man), c.what, m.Manifest.Library, len(lib), quotedNames(lib))
		}
		for i, t := range c.man {
			if t.Name != lib[i].Name || t.Elems() != n[i] {
				return fmt.Errorf("%s: %s says %s %d is %q%s (%d elements), the library %s has %q with %d elements: the manifest does not belong to this library",
					m.Dir, ManifestFile, c.what, i, t.Name, t.dims(), t.Elems(), m.Manifest.Library, lib[i].Name, n[i])
			}
		}
	}
	return nil
}

// quotedNames lists the tensors' names, quoted.
func quotedNames(ts []TensorInfo) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = strconv.Quote(t.Name)
	}
	return strings.Join(parts, ", ")
}

func (m *Model) checkInputs(inputs [][]float32) error {
	if len(inputs) != len(m.Manifest.Inputs) {
		return fmt.Errorf("%d inputs given, the model has %d (%s)", len(inputs), len(m.Manifest.Inputs), TensorList(m.Manifest.Inputs))
	}
	for i, t := range m.Manifest.Inputs {
		if len(inputs[i]) != t.Elems() {
			return fmt.Errorf("input %s: %d values, its shape takes %d", t, len(inputs[i]), t.Elems())
		}
	}
	return nil
}

// TensorList prints "name[d0,d1] name2[...]".
func TensorList(ts []TensorInfo) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, " ")
}

// child runs the runner (built by prepare) once.
func (m *Model) child(ctx context.Context, runner string, inputs [][]float32, wantOutputs bool, warmup, repeat int, profile bool, opts RunOptions) ([][]float32, runnerResult, error) {
	var none runnerResult
	tmp, err := measure.TempDir("tessera-model-run")
	if err != nil {
		return nil, none, err
	}
	defer os.RemoveAll(tmp)
	inPath, outPath := filepath.Join(tmp, "in.bin"), "-"
	if err := os.WriteFile(inPath, floatBytes(inputs...), 0o644); err != nil {
		return nil, none, err
	}
	if wantOutputs {
		outPath = filepath.Join(tmp, "out.bin")
	}
	lib, err := filepath.Abs(filepath.Join(m.Dir, m.Manifest.Library)) // dlopen searches the library path for a bare name
	if err != nil {
		return nil, none, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{lib, filepath.Join(m.Dir, m.Manifest.Weights.File), inPath, outPath, strconv.Itoa(warmup), strconv.Itoa(repeat)}
	if profile {
		args = append(args, "profile")
	}
	cmd := opts.command(cctx, runner, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OMP_NUM_THREADS=")
	}), "OMP_NUM_THREADS="+strconv.Itoa(threads))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cctx.Err() != nil && ctx.Err() == nil {
		return nil, none, fmt.Errorf("the model did not finish within %v", timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, none, fmt.Errorf("running %s: %s", m.Dir, msg)
	}
	res, err := parseRunner(stdout.String(), repeat)
	if err != nil {
		return nil, none, err
	}
	if !wantOutputs {
		return nil, res, nil
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		return nil, none, err
	}
	want := 0
	for _, t := range m.Manifest.Outputs {
		want += 4 * t.Elems()
	}
	if len(data) != want {
		return nil, none, fmt.Errorf("the runner wrote %d bytes of outputs, the manifest's outputs take %d", len(data), want)
	}
	outs := make([][]float32, len(m.Manifest.Outputs))
	for i, t := range m.Manifest.Outputs {
		n := 4 * t.Elems()
		outs[i] = floatsOf(data[:n])
		data = data[n:]
	}
	return outs, res, nil
}

// runnerResult is what the runner prints: the seconds of every timed run
// and, when profiling, the mean seconds of every step.
type runnerResult struct {
	times, steps []float64
}

// parseRunner reads the runner's result lines.
func parseRunner(out string, repeat int) (runnerResult, error) {
	var res runnerResult
	done := false
	for line := range strings.Lines(out) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "tessera ")
		if !ok {
			continue
		}
		field, value, _ := strings.Cut(rest, " ")
		switch field {
		case "time":
			t, err := strconv.ParseFloat(value, 64)
			if err != nil || !(t >= 0) || math.IsInf(t, 0) {
				return res, fmt.Errorf("runner output: bad time %q", value)
			}
			res.times = append(res.times, t)
		case "step":
			k, v, _ := strings.Cut(value, " ")
			i, err1 := strconv.Atoi(k)
			t, err2 := strconv.ParseFloat(v, 64)
			if err1 != nil || err2 != nil || i != len(res.steps) || !(t >= 0) || math.IsInf(t, 0) {
				return res, fmt.Errorf("runner output: bad step line %q", value)
			}
			res.steps = append(res.steps, t)
		case "done":
			done = true
		}
	}
	if !done || len(res.times) != repeat {
		return res, fmt.Errorf("runner output: incomplete (%d of %d times)", len(res.times), repeat)
	}
	return res, nil
}

// floatBytes returns bufs back to back as little-endian float32.
func floatBytes(bufs ...[]float32) []byte {
	n := 0
	for _, b := range bufs {
		n += 4 * len(b)
	}
	out := make([]byte, 0, n)
	for _, b := range bufs {
		for _, v := range b {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// floatsOf reads little-endian float32s.
func floatsOf(data []byte) []float32 {
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}
