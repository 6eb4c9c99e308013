package tsrt

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A model in a child process: a library this process cannot load (one
// built for another architecture) runs in the runtime's runner,
// c/runner.c, under an emulator. The runner is C: this package needs no
// compiler, so the caller compiles it (package assemble: Emulate, with
// measure.Builder) and OpenChild runs it:
//
//	inputs ──raw file, each in its dtype──▶ runner LIB DIR IN OUT WARMUP REPEAT [profile]
//	       ◀──raw file─────────────────── outputs of the first run
//	       ◀──stdout───────────────────── "tessera time S" per timed run,
//	                                       "tessera step I S" per step, "tessera done"
//
// The run's batch and value of a dimension given at run time travel in
// TESSERA_RUNNER_BATCH and TESSERA_RUNNER_DIM, its threads in
// OMP_NUM_THREADS. OpenChild first asks the runner what the library's
// tensors are (runner --describe LIB DIR) and checks the manifest against
// them, as Open checks it against a library it loads.

// Child is how OpenChild runs a model.
type Child struct {
	// Runner is the runtime's runner (Runner, c/runner.c) compiled for
	// this machine.
	Runner string
	// Exec is the command the runner runs under: an emulator for a model
	// built for another architecture (qemu-aarch64 -L
	// /usr/aarch64-linux-gnu). Empty runs the runner itself.
	Exec []string
	// Timeout bounds one run; 0 means 10 minutes.
	Timeout time.Duration
}

// child is a Model's runner.
type child struct {
	Child
	threads atomic.Int32 // SetThreads'; 0 means every core
}

// OpenChild opens the build folder dir to run its library in a child
// process, the runner c.Runner under c.Exec: it reads the manifest
// (ReadManifest) and checks it against what the runner says of the
// library, which the runner opens (and so checks the weights). The model's Inputs,
// Outputs, Target, Batch and Dim are the manifest's; it has no Steps, and
// SetProfile is an error (Profile times the steps in the child).
func OpenChild(ctx context.Context, dir string, c Child) (*Model, error) {
	man, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	m := &Model{path: dir, dir: dir, manifest: man, child: &child{Child: c}, target: man.Target}
	for _, side := range []struct {
		ts  []ManifestTensor
		out *[]TensorInfo
	}{{man.Inputs, &m.inputs}, {man.Outputs, &m.outputs}} {
		for _, t := range side.ts {
			info, err := t.info()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", dir, ManifestFile, err)
			}
			*side.out = append(*side.out, info)
		}
	}
	if b := man.Batch; b != nil {
		m.batch = Batch{Name: b.Name, Lo: int64(b.Lo), Hi: int64(b.Hi)}
	}
	if d := man.Dim; d != nil {
		m.dim = Batch{Name: d.Name, Lo: int64(d.Lo), Hi: int64(d.Hi)}
	}
	lib, err := m.child.describe(ctx, m)
	if err != nil {
		return nil, err
	}
	if err := man.checkLibrary(dir, lib); err != nil {
		return nil, err
	}
	return m, nil
}

// info is the tensor as the library describes it: its dtype parsed, -1
// for its batch and -2 for a dimension given at run time.
func (t ManifestTensor) info() (TensorInfo, error) {
	dt, err := ParseDType(t.DType)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("%s %s: %w", t.Name, t.DType, err)
	}
	info := TensorInfo{Name: t.Name, DType: dt, Shape: shape64(t.Shape)}
	for _, a := range t.DimAxes {
		info.Shape[a] = -2
	}
	if t.Batched {
		info.Shape[0] = -1
	}
	return info, nil
}

// command returns the runner's command: runner args, under c.Exec.
func (c *child) command(ctx context.Context, args ...string) *exec.Cmd {
	runner := c.Runner
	if len(c.Exec) > 0 {
		args = append(append(slices.Clone(c.Exec[1:]), runner), args...)
		runner = c.Exec[0]
	}
	cmd := exec.CommandContext(ctx, runner, args...)
	dieWithParent(cmd)
	return cmd
}

// library returns the absolute path of m's library: dlopen searches the
// library path for a bare name.
func (m *Model) libraryPath() (string, error) {
	return filepath.Abs(filepath.Join(m.dir, m.manifest.Library))
}

// describe asks the runner what the library's tensors are.
func (c *child) describe(ctx context.Context, m *Model) (map[string][]libTensor, error) {
	lib, err := m.libraryPath()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := c.command(cctx, "--describe", lib, m.dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s: reading the library %s: %s", m.dir, m.manifest.Library, msg)
	}
	out := map[string][]libTensor{}
	done := false
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "tessera" && f[1] == "done" {
			done = true
			continue
		}
		bad := fmt.Errorf("%s: the runner's description of %s: bad line %q", m.dir, m.manifest.Library, strings.TrimSpace(line))
		if len(f) != 5 || f[0] != "tessera" || (f[1] != "input" && f[1] != "output") {
			return nil, bad
		}
		dt, err1 := strconv.Atoi(f[2])
		n, err2 := strconv.Atoi(f[3])
		name, err3 := hex.DecodeString(strings.TrimPrefix(f[4], "-"))
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, bad
		}
		out[f[1]] = append(out[f[1]], libTensor{string(name), DType(dt).String(), n})
	}
	if !done {
		return nil, fmt.Errorf("%s: the runner's description of %s is incomplete", m.dir, m.manifest.Library)
	}
	return out, nil
}

// runInto is RunInto in the child: the inputs and outputs are checked
// here (the runner reads and writes bytes), and the outputs copied.
func (c *child) runInto(ctx context.Context, m *Model, inputs, outputs []Tensor) error {
	batch, dim, err := m.shapeOf(inputs)
	if err != nil {
		return err
	}
	for _, side := range []struct {
		what  string
		ts    []Tensor
		infos []TensorInfo
	}{{"input", inputs, m.inputs}, {"output", outputs, m.outputs}} {
		if len(side.ts) != len(side.infos) {
			return errorf(InvalidArgument, "tessera: run: %d %ss given, the model has %d", len(side.ts), side.what, len(side.infos))
		}
		for i, t := range side.ts {
			want := side.infos[i].At(batch).WithDim(dim)
			if t.DType != want.DType {
				return errorf(DTypeMismatch, "tessera: run: %s %d (%s) is %s, the model takes %s", side.what, i, want.Name, t.DType, want.DType)
			}
			if !slices.Equal(t.Shape, want.Shape) {
				return errorf(ShapeMismatch, "tessera: run: %s %d (%s) has shape %v, the model takes %v", side.what, i, want.Name, t.Shape, want.Shape)
			}
			if n := want.Elems() * want.DType.Size(); len(t.Data) < n {
				return errorf(InvalidArgument, "tessera: run: %s %d has %d bytes of data, its dtype and shape need %d", side.what, i, len(t.Data), n)
			}
		}
	}
	at := runAt{batch: int(batch)}
	if m.dim.Name != "" {
		at.dim = int(dim)
	}
	threads := int(c.threads.Load())
	if threads <= 0 {
		threads = RunOptions{}.threads()
	}
	outs, _, err := c.run(ctx, m, inputs, at, true, 0, 0, false, threads)
	if err != nil {
		return err
	}
	for i := range outputs {
		copy(outputs[i].Data, outs[i].Data)
	}
	return nil
}

// runnerResult is what the runner prints: the seconds of every timed run
// and, when profiling, the mean seconds of every step.
type runnerResult struct {
	times, steps []float64
}

// run runs the runner once on inputs of their dtypes and shapes at at:
// it returns the outputs of the first run (with wantOutputs) and the
// times of warmup untimed and repeat timed runs after it, with every
// step's (with profile).
func (c *child) run(ctx context.Context, m *Model, in []Tensor, at runAt, wantOutputs bool, warmup, repeat int, profile bool, threads int) ([]Tensor, runnerResult, error) {
	var none runnerResult
	tmp, err := os.MkdirTemp("", "tessera-model-run-")
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
	lib, err := m.libraryPath()
	if err != nil {
		return nil, none, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{lib, m.dir, inPath, outPath, strconv.Itoa(warmup), strconv.Itoa(repeat)}
	if profile {
		args = append(args, "profile")
	}
	cmd := c.command(cctx, args...)
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
		return nil, none, errors.New(msg)
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
	outInfo := at.tensors(m.manifest.Outputs)
	outs := make([]Tensor, len(outInfo))
	for i, t := range outInfo {
		dt, err := ParseDType(t.DType)
		if err != nil {
			return nil, none, fmt.Errorf("%s: output %s: %w", m.dir, t.Name, err)
		}
		outs[i] = Tensor{DType: dt, Shape: shape64(t.Shape), Name: t.Name}
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

// parseRunner reads the runner's result lines.
func parseRunner(out string, repeat int) (runnerResult, error) {
	var res runnerResult
	r := ParseReport(out)
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
