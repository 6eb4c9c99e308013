package assemble

import (
	"bytes"
	"context"
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
	"sync"
	"time"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// Running a built model: in this process, through tessera/tsrt (the
// library's C ABI, loaded with dlopen; no compiler needed), or, for a
// library built for another architecture (RunOptions.Exec: an emulator),
// in a child, the runtime's runner (tsrt/c/runner.c), compiled once per
// compiler into the build cache by measure.Builder.BuildProgram:
//
//	inputs ──raw file, each in its dtype──▶ runner LIB DIR IN OUT WARMUP REPEAT
//	       ◀──raw file─────────────────── outputs of the first run
//	       ◀──stdout───────────────────── "tessera time S" per timed run, "tessera done"
//
// Either way the values cross in their declared dtypes at the ABI; Run
// takes and returns them as float32, RunTensors in those dtypes.

// Model is a build directory opened for running.
type Model struct {
	Dir      string
	Manifest *Manifest

	mu      sync.Mutex
	rt      *tsrt.Model // the library in this process, once loaded
	checked bool        // the manifest was found to agree with the library
}

// Open reads the build directory dir: its manifest, and its weights file,
// which must match the manifest (ErrCorruptWeights otherwise).
func Open(dir string) (*Model, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if !m.Weights.Embedded { // else inside the library (--single-file), which checks them
		if err := VerifyWeights(filepath.Join(dir, m.Weights.File), m.Weights); err != nil {
			return nil, err
		}
	}
	return &Model{Dir: dir, Manifest: m}, nil
}

// Close frees the model loaded into this process, if it was.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rt == nil {
		return nil
	}
	err := m.rt.Close()
	m.rt = nil
	return err
}

// RunOptions control a run of the model. Zero fields take their defaults.
type RunOptions struct {
	Threads int           // threads of the kernels; default runtime.NumCPU()
	Timeout time.Duration // a run in a child process (Exec); default 10 minutes
	// MaxMemory is the most bytes a run may take (Model.Footprint);
	// 0 means measure.DefaultMaxMemory.
	MaxMemory int64
	// Exec, when set, is the command a child runner runs under: an
	// emulator for a model built for another architecture (qemu-aarch64
	// -L /usr/aarch64-linux-gnu), whose runner Builder compiles.
	Exec    []string
	Builder *measure.Builder // compiles the runner for Exec; nil means a zero Builder
	// Batch is the batch Bench and Profile run a model built over a
	// dynamic batch at (Manifest.Batch); 0 means the range's largest. Run
	// takes the batch from its inputs.
	Batch int
	// Dim is the value of the dimension given at run time (Manifest.Dim, a
	// sequence length) Run, Bench and Profile run a model built over one
	// at; 0 means, for Bench and Profile, the range's largest, and for Run
	// the value its inputs' sizes give (of a model that also has a
	// dynamic batch, Dim must be given: their sizes cannot tell the two
	// apart).
	Dim int
}

// Run runs the model once on inputs (one per manifest input, in order,
// each of the input's size; a batched input of a model built over a
// dynamic batch holds the run's batch of samples) and returns the
// outputs.
func (m *Model) Run(ctx context.Context, inputs [][]float32, opts RunOptions) ([][]float32, error) {
	at, err := m.checkInputs(convert(inputs, func(v []float32) int { return len(v) }), opts.Dim)
	if err != nil {
		return nil, err
	}
	in, err := m.typed(at.tensors(m.Manifest.Inputs), inputs)
	if err != nil {
		return nil, err
	}
	outs, err := m.run(ctx, in, at, opts)
	if err != nil {
		return nil, err
	}
	return m.floats(m.Manifest.Outputs, outs)
}

// RunTensors is Run with inputs and outputs in their dtypes (the
// manifest's): integers stay exact end to end. An input's Shape is not
// read: its elements, in order, make the run's batch and value as
// Run's do; the outputs have their shapes in the run and their names.
func (m *Model) RunTensors(ctx context.Context, inputs []tsrt.Tensor, opts RunOptions) ([]tsrt.Tensor, error) {
	if len(inputs) != len(m.Manifest.Inputs) {
		return nil, fmt.Errorf("%d inputs given, the model has %d (%s)", len(inputs), len(m.Manifest.Inputs), TensorList(m.Manifest.Inputs))
	}
	counts := make([]int, len(inputs))
	for i, t := range m.Manifest.Inputs {
		if inputs[i].DType.String() != t.DType {
			return nil, fmt.Errorf("input %s: a tensor of %s, the model takes %s", t.Name, inputs[i].DType, t.DType)
		}
		counts[i] = len(inputs[i].Data) / inputs[i].DType.Size()
	}
	at, err := m.checkInputs(counts, opts.Dim)
	if err != nil {
		return nil, err
	}
	in := make([]tsrt.Tensor, len(inputs))
	for i, t := range at.tensors(m.Manifest.Inputs) {
		in[i] = tsrt.Tensor{DType: inputs[i].DType, Shape: shape64(t.Shape), Data: inputs[i].Data}
	}
	return m.run(ctx, in, at, opts)
}

// run runs the model once on inputs of their dtypes and shapes at at,
// in this process or, with opts.Exec, in a child.
func (m *Model) run(ctx context.Context, in []tsrt.Tensor, at runAt, opts RunOptions) ([]tsrt.Tensor, error) {
	if len(opts.Exec) > 0 {
		runner, err := m.prepareChild(ctx, opts)
		if err != nil {
			return nil, err
		}
		outs, _, err := m.child(ctx, runner, in, at, true, 0, 0, false, opts)
		return outs, err
	}
	rt, err := m.load(opts)
	if err != nil {
		return nil, err
	}
	outs, err := rt.Run(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", m.Dir, err)
	}
	return outs, nil
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
	at, err := m.benchAt(opts)
	if err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ins := at.tensors(m.Manifest.Inputs)
	inputs := make([][]float32, len(ins))
	for i, t := range ins {
		inputs[i] = make([]float32, t.Elems())
		for k := range inputs[i] {
			inputs[i][k] = float32(rng.Float64()*2 - 1)
		}
	}
	in, err := m.typed(ins, inputs)
	if err != nil {
		return nil, nil, err
	}
	if len(opts.Exec) > 0 {
		runner, err := m.prepareChild(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		_, res, err := m.child(ctx, runner, in, at, false, warmup, repeat, profile, opts)
		return res.times, res.steps, err
	}
	rt, err := m.load(opts)
	if err != nil {
		return nil, nil, err
	}
	outs := make([]tsrt.Tensor, len(rt.Outputs()))
	for i, o := range rt.Outputs() {
		o = o.At(int64(at.batch)).WithDim(int64(at.dim))
		outs[i] = tsrt.Tensor{DType: o.DType, Shape: o.Shape, Data: make([]byte, o.Elems()*o.DType.Size())}
	}
	run := func() error {
		if err := rt.RunInto(ctx, in, outs); err != nil {
			return fmt.Errorf("running %s: %w", m.Dir, err)
		}
		return nil
	}
	for range 1 + warmup {
		if err := run(); err != nil {
			return nil, nil, err
		}
	}
	if profile {
		steps = make([]float64, len(rt.Steps()))
		if err := rt.Profile(steps); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.Dir, err)
		}
		defer rt.Profile(nil)
	}
	for range repeat {
		t0 := time.Now()
		if err := run(); err != nil {
			return nil, nil, err
		}
		times = append(times, time.Since(t0).Seconds())
	}
	if profile {
		if err := rt.Profile(nil); err != nil {
			return nil, nil, err
		}
		for i := range steps {
			steps[i] /= float64(repeat)
		}
	}
	return times, steps, nil
}

// runAt is where a run of a model is in its dynamic dimensions: its batch
// (1 for a model without one) and the value of its dimension given at run
// time (0 for a model without one).
type runAt struct{ batch, dim int }

// tensors returns the tensors' descriptions in a run there.
func (at runAt) tensors(ts []TensorInfo) []TensorInfo {
	out := make([]TensorInfo, len(ts))
	for i, t := range ts {
		out[i] = t.At(at.batch).WithDim(at.dim)
	}
	return out
}

// benchAt returns the batch and value Bench runs at: opts.Batch and
// opts.Dim, or the ranges' largest.
func (m *Model) benchAt(opts RunOptions) (runAt, error) {
	batch, err := m.benchValue(m.Manifest.Batch, opts.Batch, 1, "batch")
	if err != nil {
		return runAt{}, err
	}
	dim, err := m.benchValue(m.Manifest.Dim, opts.Dim, 0, "value of a dimension given at run time")
	return runAt{batch: batch, dim: dim}, err
}

// benchValue returns the value Bench runs a dynamic dimension of range r
// at: want, or the range's largest where want is 0. A model without the
// dimension (r nil) runs at none, and want must be 0 or none.
func (m *Model) benchValue(r *BatchInfo, want, none int, what string) (int, error) {
	if r == nil {
		if want != 0 && want != none {
			return 0, fmt.Errorf("%s: a %s of %d: the model was built without one (tune build --range builds it over one)", m.Dir, what, want)
		}
		return none, nil
	}
	v := r.Hi
	if want != 0 {
		v = want
	}
	if v < r.Lo || v > r.Hi {
		return 0, fmt.Errorf("%s: %s %s=%d is outside the range %d..%d the model was built for", m.Dir, what, r.Name, v, r.Lo, r.Hi)
	}
	return v, nil
}

// Footprint returns the bytes a run of the model takes at least: its
// inputs and outputs (held by the caller and, typed, by the runtime), its
// weights and the arena of its intermediate tensors.
func (m *Model) Footprint() int64 {
	var io int64
	batch := 1
	if m.Manifest.Batch != nil {
		batch = m.Manifest.Batch.Hi
	}
	for _, ts := range [][]TensorInfo{m.Manifest.Inputs, m.Manifest.Outputs} {
		for _, t := range ts {
			io += 4 * int64(t.At(batch).Elems())
		}
	}
	return 2*io + m.Manifest.Weights.Bytes + m.Manifest.Memory.ArenaBytes
}

// checkMemory checks that a run fits in opts.MaxMemory: nothing sized by
// the model is allocated before.
func (m *Model) checkMemory(opts RunOptions) error {
	limit := opts.MaxMemory
	if limit <= 0 {
		limit = measure.DefaultMaxMemory
	}
	if need := m.Footprint(); need > limit {
		return fmt.Errorf("%s: a run takes %s (inputs, outputs, weights and the arena), more than the %s allowed (--max-memory)",
			m.Dir, measure.Bytes(need), measure.Bytes(limit))
	}
	return nil
}

// load opens the library in this process (once per Model) and checks the
// manifest against it; opts.Threads sets its threads.
func (m *Model) load(opts RunOptions) (*tsrt.Model, error) {
	if err := m.checkMemory(opts); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rt == nil {
		rt, err := tsrt.Open(filepath.Join(m.Dir, m.Manifest.Library))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Dir, err)
		}
		lib := make(map[string][]libTensor)
		for _, t := range rt.Inputs() {
			lib["input"] = append(lib["input"], libTensor{t.Name, t.DType.String(), t.At(1).WithDim(1).Elems()})
		}
		for _, t := range rt.Outputs() {
			lib["output"] = append(lib["output"], libTensor{t.Name, t.DType.String(), t.At(1).WithDim(1).Elems()})
		}
		if b := rt.Batch(); (b.Name != "") != (m.Manifest.Batch != nil) {
			rt.Close()
			return nil, fmt.Errorf("%s: %s and the library %s disagree on the model's batch (%v, %+v): the manifest does not belong to this library", m.Dir, ManifestFile, m.Manifest.Library, m.Manifest.Batch, b)
		}
		if d := rt.Dim(); (d.Name != "") != (m.Manifest.Dim != nil) {
			rt.Close()
			return nil, fmt.Errorf("%s: %s and the library %s disagree on the model's dimensions (%v, %+v): the manifest does not belong to this library", m.Dir, ManifestFile, m.Manifest.Library, m.Manifest.Dim, d)
		}
		if err := m.checkLibrary(lib); err != nil {
			rt.Close()
			return nil, err
		}
		m.rt = rt
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if err := m.rt.SetThreads(threads); err != nil {
		return nil, err
	}
	return m.rt, nil
}

// prepareChild checks the memory a run takes, compiles the runner and
// checks the manifest against the library (once per Model); it returns
// the runner's path.
func (m *Model) prepareChild(ctx context.Context, opts RunOptions) (string, error) {
	if err := m.checkMemory(opts); err != nil {
		return "", err
	}
	b := opts.Builder
	if b == nil {
		b = &measure.Builder{}
	}
	runner, err := b.BuildProgram(ctx, "runner", measure.Source{Code: tsrt.Runner, Files: map[string]string{"tessera.h": tsrt.Header, "tessera_load.h": tsrt.Loader}},
		[]string{"-O2", "-std=gnu11"}, []string{"-ldl"})
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.checked {
		lib, err := m.describe(ctx, runner, opts)
		if err != nil {
			return "", err
		}
		if err := m.checkLibrary(lib); err != nil {
			return "", err
		}
		m.checked = true
	}
	return runner, nil
}

// libTensor is what a library says of one of its tensors.
type libTensor struct {
	name, dtype string
	elems       int
}

// describe asks the runner what the library's tensors are.
func (m *Model) describe(ctx context.Context, runner string, opts RunOptions) (map[string][]libTensor, error) {
	lib, err := filepath.Abs(filepath.Join(m.Dir, m.Manifest.Library))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := opts.command(cctx, runner, "--describe", lib, m.Dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s: reading the library %s: %s", m.Dir, m.Manifest.Library, msg)
	}
	out := map[string][]libTensor{}
	done := false
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "tessera" && f[1] == "done" {
			done = true
			continue
		}
		bad := fmt.Errorf("%s: the runner's description of %s: bad line %q", m.Dir, m.Manifest.Library, strings.TrimSpace(line))
		if len(f) != 5 || f[0] != "tessera" || (f[1] != "input" && f[1] != "output") {
			return nil, bad
		}
		dt, err1 := strconv.Atoi(f[2])
		n, err2 := strconv.Atoi(f[3])
		name, err3 := hex.DecodeString(strings.TrimPrefix(f[4], "-"))
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, bad
		}
		out[f[1]] = append(out[f[1]], libTensor{string(name), tsrt.DType(dt).String(), n})
	}
	if !done {
		return nil, fmt.Errorf("%s: the runner's description of %s is incomplete", m.Dir, m.Manifest.Library)
	}
	return out, nil
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

// checkLibrary compares the inputs and outputs the manifest lists (names,
// dtypes, element counts) with those the library was compiled with
// (lib["input"], lib["output"]): the library is the truth, and a manifest
// that disagrees was edited or belongs to another build.
func (m *Model) checkLibrary(lib map[string][]libTensor) error {
	for _, c := range []struct {
		what string
		man  []TensorInfo
	}{{"input", m.Manifest.Inputs}, {"output", m.Manifest.Outputs}} {
		got := lib[c.what]
		if len(got) != len(c.man) {
			names := make([]string, len(got))
			for i, t := range got {
				names[i] = strconv.Quote(t.name)
			}
			return fmt.Errorf("%s: %s lists %d %ss, the library %s has %d (%s): the manifest does not belong to this library",
				m.Dir, ManifestFile, len(c.man), c.what, m.Manifest.Library, len(got), strings.Join(names, ", "))
		}
		for i, t := range c.man {
			t = t.WithDim(1) // as the library describes it: at batch 1 and value 1
			if t.Name != got[i].name || t.Elems() != got[i].elems || t.DType != got[i].dtype {
				return fmt.Errorf("%s: %s says %s %d is %q%s (%s, %d elements), the library %s has %q (%s, %d elements): the manifest does not belong to this library",
					m.Dir, ManifestFile, c.what, i, t.Name, t.dims(), t.DType, t.Elems(), m.Manifest.Library, got[i].name, got[i].dtype, got[i].elems)
			}
		}
	}
	return nil
}

// checkInputs checks the number and sizes (elements) of a run's inputs
// and returns where the run is: of a model built over a dimension given
// at run time, its value dim, or where 0 the one the first input that has
// it holds (of a model without a batch); of a model built over a dynamic
// batch, the samples its first batched input holds.
func (m *Model) checkInputs(inputs []int, dim int) (runAt, error) {
	at := runAt{batch: 1}
	if len(inputs) != len(m.Manifest.Inputs) {
		return at, fmt.Errorf("%d inputs given, the model has %d (%s)", len(inputs), len(m.Manifest.Inputs), TensorList(m.Manifest.Inputs))
	}
	if d := m.Manifest.Dim; d != nil {
		at.dim = dim
		for i, t := range m.Manifest.Inputs {
			if at.dim != 0 || len(t.DimAxes) == 0 {
				continue
			}
			if m.Manifest.Batch != nil {
				return at, fmt.Errorf("the value of %s: raw inputs of a model over a batch and %s cannot tell the two apart; give it (tune run --dim, RunOptions.Dim) or use .npy inputs", d.Name, d.Name)
			}
			per := t.WithDim(1).Elems()
			if inputs[i]%per != 0 {
				return at, fmt.Errorf("input %s: %d values, not a whole multiple of %d, its size at %s=1", t.Name, inputs[i], per, d.Name)
			}
			at.dim = inputs[i] / per
		}
		if at.dim < d.Lo || at.dim > d.Hi {
			return at, fmt.Errorf("%s=%d is outside the range %d..%d the model was built for", d.Name, at.dim, d.Lo, d.Hi)
		}
	} else if dim != 0 {
		return at, fmt.Errorf("a value %d of a dimension given at run time: the model has none", dim)
	}
	if b := m.Manifest.Batch; b != nil {
		for i, t := range m.Manifest.Inputs {
			if !t.Batched {
				continue
			}
			per := t.WithDim(at.dim).Elems()
			if inputs[i]%per != 0 {
				return at, fmt.Errorf("input %s: %d values, not a whole number of samples of %d", t.Name, inputs[i], per)
			}
			at.batch = inputs[i] / per
			if at.batch < b.Lo || at.batch > b.Hi {
				return at, fmt.Errorf("input %s: %d values, %d samples: batch %s=%d is outside the range %d..%d the model was built for", t.Name, inputs[i], at.batch, b.Name, at.batch, b.Lo, b.Hi)
			}
			break
		}
	}
	for i, t := range at.tensors(m.Manifest.Inputs) {
		if inputs[i] != t.Elems() {
			return at, fmt.Errorf("input %s: %d values, its shape takes %d", t, inputs[i], t.Elems())
		}
	}
	return at, nil
}

// TensorList prints "name[d0,d1] name2[...]".
func TensorList(ts []TensorInfo) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, " ")
}

// child runs the runner (built by prepare) once on inputs of their dtypes
// and shapes at at.
func (m *Model) child(ctx context.Context, runner string, in []tsrt.Tensor, at runAt, wantOutputs bool, warmup, repeat int, profile bool, opts RunOptions) ([]tsrt.Tensor, runnerResult, error) {
	var none runnerResult
	tmp, err := measure.TempDir("tessera-model-run")
	if err != nil {
		return nil, none, err
	}
	defer os.RemoveAll(tmp)
	inPath, outPath := filepath.Join(tmp, "in.bin"), "-"
	var inBytes []byte
	for _, t := range in {
		inBytes = append(inBytes, t.Data...)
	}
	if err := os.WriteFile(inPath, inBytes, 0o644); err != nil {
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
	args := []string{lib, m.Dir, inPath, outPath, strconv.Itoa(warmup), strconv.Itoa(repeat)}
	if profile {
		args = append(args, "profile")
	}
	cmd := opts.command(cctx, runner, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OMP_NUM_THREADS=")
	}), "OMP_NUM_THREADS="+strconv.Itoa(threads), "TESSERA_RUNNER_BATCH="+strconv.Itoa(at.batch), "TESSERA_RUNNER_DIM="+strconv.Itoa(max(at.dim, 1)))
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
	outInfo := at.tensors(m.Manifest.Outputs)
	outs := make([]tsrt.Tensor, len(outInfo))
	for i, t := range outInfo {
		dt, err := tsrt.ParseDType(t.DType)
		if err != nil {
			return nil, none, fmt.Errorf("%s: output %s: %w", m.Dir, t.Name, err)
		}
		outs[i] = tsrt.Tensor{DType: dt, Shape: shape64(t.Shape), Name: t.Name}
		want += t.Elems() * dt.Size()
	}
	if len(data) != want {
		return nil, none, fmt.Errorf("the runner wrote %d bytes of outputs, the manifest's outputs take %d", len(data), want)
	}
	for i := range outs {
		n := outInfo[i].Elems() * outs[i].DType.Size()
		outs[i].Data, data = data[:n], data[n:]
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
	r := tsrt.ParseReport(out)
	var err error
	if res.times, err = r.Seconds("time"); err != nil {
		return res, fmt.Errorf("runner output: %w", err)
	}
	if res.steps, err = r.Steps(); err != nil {
		return res, fmt.Errorf("runner output: %w", err)
	}
	if !r.Done || len(res.times) != repeat {
		return res, fmt.Errorf("runner output: incomplete (%d of %d times)", len(res.times), repeat)
	}
	return res, nil
}

// typed converts float32 values to tensors of the dtypes ts declare
// (integers and bool exact within ±2^24, as the kernels compute them).
func (m *Model) typed(ts []TensorInfo, vals [][]float32) ([]tsrt.Tensor, error) {
	out := make([]tsrt.Tensor, len(ts))
	for i, t := range ts {
		dt, err := tsrt.ParseDType(t.DType)
		if err == nil {
			out[i], err = fromFloat32(dt, shape64(t.Shape), vals[i])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", m.Dir, t.Name, err)
		}
	}
	return out, nil
}

// floats converts tensors to float32 values.
func (m *Model) floats(ts []TensorInfo, tensors []tsrt.Tensor) ([][]float32, error) {
	out := make([][]float32, len(tensors))
	for i, t := range tensors {
		var err error
		if out[i], err = float32sOf(t); err != nil {
			return nil, fmt.Errorf("%s: output %s: %w", m.Dir, ts[i].Name, err)
		}
	}
	return out, nil
}

// rounded is vals as a tensor of integers, each rounded to the nearest.
func rounded[T int64 | int32 | int16 | int8 | uint8 | uint16 | uint32](shape []int64, vals []float32) tsrt.Tensor {
	return tsrt.NewTensor(shape, convert(vals, func(x float32) T { return T(math.RoundToEven(float64(x))) }))
}

func convert[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

func shape64(shape []int) []int64 {
	out := make([]int64, len(shape))
	for i, d := range shape {
		out[i] = int64(d)
	}
	return out
}
