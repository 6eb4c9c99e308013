package tsrt

import (
	"context"
	"fmt"
	"runtime"
)

// Running a built model as tune run does: on values whose shapes the
// manifest gives (RunFloat32: float32 values of any input dtype; RunFiles:
// tensor files), with the threads and the memory limit of RunOptions.
// Model.Run is the same run on tensors whose shapes the caller gives.
// Either way the values cross in their declared dtypes at the ABI: in
// this process, or in a child (OpenChild; the runner's protocol is in
// child.go).

// DefaultMaxMemory is the memory a run may take when RunOptions.MaxMemory
// is zero: 8 GiB, as one measurement may (measure.DefaultMaxMemory).
const DefaultMaxMemory = 8 << 30

// RunOptions control a run of the model. Zero fields take their defaults.
type RunOptions struct {
	Threads int // threads of the kernels; default runtime.NumCPU()
	// MaxMemory is the most bytes a run may take (Model.Footprint);
	// 0 means DefaultMaxMemory.
	MaxMemory int64
	// Batch is the batch Bench and Profile run a model built over a
	// dynamic batch at (Manifest.Batch); 0 means the range's largest. Run
	// takes the batch from its inputs.
	Batch int
	// Dim is the value of the dimension given at run time (Manifest.Dim, a
	// sequence length) RunFloat32, Bench and Profile run a model built
	// over one at; 0 means, for Bench and Profile, the range's largest,
	// and for RunFloat32 the value its inputs' sizes give (of a model that
	// also has a dynamic batch, Dim must be given: their sizes cannot tell
	// the two apart).
	Dim int
}

// threads returns the threads a run takes: Threads, or every core.
func (opts RunOptions) threads() int {
	if opts.Threads <= 0 {
		return runtime.NumCPU()
	}
	return opts.Threads
}

// RunFloat32 runs the model once on inputs (one per manifest input, in
// order, each of the input's size; a batched input of a model built over
// a dynamic batch holds the run's batch of samples) and returns the
// outputs. The values are converted to and from the tensors' dtypes:
// integers and bool exact within ±2^24, float32 values given to them
// rounded to the nearest.
func (m *Model) RunFloat32(ctx context.Context, inputs [][]float32, opts RunOptions) ([][]float32, error) {
	man, err := m.needManifest()
	if err != nil {
		return nil, err
	}
	at, err := m.checkInputs(convert(inputs, func(v []float32) int { return len(v) }), opts.Dim)
	if err != nil {
		return nil, err
	}
	in, err := m.typed(at.tensors(man.Inputs), inputs)
	if err != nil {
		return nil, err
	}
	outs, err := m.runWith(ctx, in, opts)
	if err != nil {
		return nil, err
	}
	return m.floats(man.Outputs, outs)
}

// runSized is Run on inputs in their dtypes (the manifest's) whose Shape
// is not read: their elements, in order, make the run's batch and value
// as RunFloat32's do; the outputs have their shapes in the run and their
// names. Raw tensor files give such inputs.
func (m *Model) runSized(ctx context.Context, inputs []Tensor, opts RunOptions) ([]Tensor, error) {
	man, err := m.needManifest()
	if err != nil {
		return nil, err
	}
	if len(inputs) != len(man.Inputs) {
		return nil, fmt.Errorf("%d inputs given, the model has %d (%s)", len(inputs), len(man.Inputs), TensorList(man.Inputs))
	}
	counts := make([]int, len(inputs))
	for i, t := range man.Inputs {
		if inputs[i].DType.String() != t.DType {
			return nil, fmt.Errorf("input %s: a tensor of %s, the model takes %s", t.Name, inputs[i].DType, t.DType)
		}
		counts[i] = len(inputs[i].Data) / inputs[i].DType.Size()
	}
	at, err := m.checkInputs(counts, opts.Dim)
	if err != nil {
		return nil, err
	}
	in := make([]Tensor, len(inputs))
	for i, t := range at.tensors(man.Inputs) {
		in[i] = Tensor{DType: inputs[i].DType, Shape: shape64(t.Shape), Data: inputs[i].Data}
	}
	return m.runWith(ctx, in, opts)
}

// runWith runs the model once on inputs of their dtypes and shapes with
// opts' threads and memory limit.
func (m *Model) runWith(ctx context.Context, in []Tensor, opts RunOptions) ([]Tensor, error) {
	if err := m.checkMemory(opts); err != nil {
		return nil, err
	}
	if err := m.SetThreads(opts.threads()); err != nil {
		return nil, err
	}
	outs, err := m.Run(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", m.dir, err)
	}
	return outs, nil
}

// needManifest returns the model's manifest, or an error for a library
// opened without one.
func (m *Model) needManifest() (*Manifest, error) {
	if m.manifest == nil {
		return nil, fmt.Errorf("%s: %w", m.dir, ErrNoManifest)
	}
	return m.manifest, nil
}

// runAt is where a run of a model is in its dynamic dimensions: its batch
// (1 for a model without one) and the value of its dimension given at run
// time (0 for a model without one).
type runAt struct{ batch, dim int }

// tensors returns the tensors' descriptions in a run there.
func (at runAt) tensors(ts []ManifestTensor) []ManifestTensor {
	out := make([]ManifestTensor, len(ts))
	for i, t := range ts {
		out[i] = t.At(at.batch).WithDim(at.dim)
	}
	return out
}

// checkInputs checks the number and sizes (elements) of a run's inputs
// and returns where the run is: of a model built over a dimension given
// at run time, its value dim, or where 0 the one the first input that has
// it holds (of a model without a batch); of a model built over a dynamic
// batch, the samples its first batched input holds.
func (m *Model) checkInputs(inputs []int, dim int) (runAt, error) {
	man := m.manifest
	at := runAt{batch: 1}
	if len(inputs) != len(man.Inputs) {
		return at, fmt.Errorf("%d inputs given, the model has %d (%s)", len(inputs), len(man.Inputs), TensorList(man.Inputs))
	}
	if d := man.Dim; d != nil {
		at.dim = dim
		for i, t := range man.Inputs {
			if at.dim != 0 || len(t.DimAxes) == 0 {
				continue
			}
			if man.Batch != nil {
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
	if b := man.Batch; b != nil {
		for i, t := range man.Inputs {
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
	for i, t := range at.tensors(man.Inputs) {
		if inputs[i] != t.Elems() {
			return at, fmt.Errorf("input %s: %d values, its shape takes %d", t, inputs[i], t.Elems())
		}
	}
	return at, nil
}

// Footprint returns the bytes a run of the model takes at least: its
// inputs and outputs (held by the caller and, typed, by the runtime), its
// weights and the arena of its intermediate tensors; 0 for a library
// without a manifest.
func (m *Model) Footprint() int64 {
	man := m.manifest
	if man == nil {
		return 0
	}
	var io int64
	batch := 1
	if man.Batch != nil {
		batch = man.Batch.Hi
	}
	for _, ts := range [][]ManifestTensor{man.Inputs, man.Outputs} {
		for _, t := range ts {
			io += 4 * int64(t.At(batch).Elems())
		}
	}
	return 2*io + man.Weights.Bytes + man.Memory.ArenaBytes
}

// checkMemory checks that a run fits in opts.MaxMemory: nothing sized by
// the run is allocated before.
func (m *Model) checkMemory(opts RunOptions) error {
	limit := opts.MaxMemory
	if limit <= 0 {
		limit = DefaultMaxMemory
	}
	if need := m.Footprint(); need > limit {
		return fmt.Errorf("%s: a run takes %s (inputs, outputs, weights and the arena), more than the %s allowed (--max-memory)",
			m.dir, byteSize(need), byteSize(limit))
	}
	return nil
}

// byteSize prints a byte count with a binary unit, as measure.Bytes does:
// "512 B", "3.0 KiB", "8.0 GiB", "4.0 TiB".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// typed converts float32 values to tensors of the dtypes and shapes ts
// declare (integers and bool exact within ±2^24, as the kernels compute
// them).
func (m *Model) typed(ts []ManifestTensor, vals [][]float32) ([]Tensor, error) {
	out := make([]Tensor, len(ts))
	for i, t := range ts {
		dt, err := ParseDType(t.DType)
		if err == nil {
			out[i], err = fromFloat32(dt, shape64(t.Shape), vals[i])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", m.dir, t.Name, err)
		}
	}
	return out, nil
}

// floats converts tensors to float32 values.
func (m *Model) floats(ts []ManifestTensor, tensors []Tensor) ([][]float32, error) {
	out := make([][]float32, len(tensors))
	for i, t := range tensors {
		var err error
		if out[i], err = float32sOf(t); err != nil {
			return nil, fmt.Errorf("%s: output %s: %w", m.dir, ts[i].Name, err)
		}
	}
	return out, nil
}
