// Package quantize is static post-training quantization: it turns a float
// ONNX model into the QDQ model onnxruntime's quantize_static writes with
// QuantFormat.QDQ and its CPU settings (uint8 activations, int8 weights
// per channel, int32 biases).
//
// The model is first simplified by the graph passes that keep it standard
// ONNX (constant folding, BatchNormalization folded into its Conv,
// Identity and Dropout removed, CSE, DCE: onnxruntime's quant_pre_process
// does the like). The float model then runs on the calibration samples
// and every tensor that will be quantized gets its range: the smallest
// and largest value over all samples (MinMax), or a percentile of |x|
// (Percentile). The rewrite follows onnxruntime's QDQ quantizer op by op
// (see opKinds):
//
//   - Conv, Gemm and MatMul read an activation through QuantizeLinear →
//     DequantizeLinear (uint8, asymmetric: scale and zero point from the
//     range, which always contains 0), a weight through DequantizeLinear
//     of an int8 constant (symmetric, zero point 0, one scale per output
//     channel: axis 0 of a Conv's weight, of a Gemm's with transB, else
//     axis 1, as of a MatMul's [K, N] weight), and their bias through
//     DequantizeLinear of an int32 constant with scale input scale ×
//     weight scale and zero point 0; their output gets a Q/DQ pair.
//   - A Relu or Clip that is the only reader of such an output is folded
//     into it: the op before writes the Relu's output, whose Q clamps.
//   - Add, Mul, Concat, GlobalAveragePool, Softmax, Sigmoid and LeakyRelu
//     get a Q/DQ pair on every input and output, each of its own range (a
//     constant operand becomes a uint8 constant of its own range).
//   - LayerNormalization and InstanceNormalization quantize their input
//     and outputs, their scale as an int8 weight and their bias as int32.
//   - MaxPool, AveragePool, Reshape, Transpose, Squeeze, Unsqueeze and
//     Slice of a quantized tensor give their output a Q/DQ pair with the
//     input's scale and zero point.
//
// Every other op stays float and reads dequantized values. Scales and zero
// points are computed as onnxruntime computes them (params.go), a
// degenerate range included (scale 1, zero point 0, never scale 0), and so
// a bias that int32 cannot hold at scale input × weight: the weight's scale
// is raised first, as onnxruntime does, and what still overflows is
// saturated.
//
// The float model runs through a Runner: BuildRunner compiles it with
// Tessera's default schedules (package assemble) with every tensor to
// calibrate as an output, fast enough for ResNet-18 with a handful of
// samples; ReferenceRunner uses the reference evaluator (te), for small
// graphs.
package quantize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// PrepPasses are the graph passes run before quantizing: those whose
// result is standard ONNX of the model's own opset. The others (Tessera's
// fused LayerNormalization and Gelu, the channels-last layout, ...) make
// graphs for Tessera's kernels, not for a model file.
var PrepPasses = []string{"fold-constants", "remove-noops", "merge-reshapes", "fold-batchnorm", "cse", "dce"}

// MinOpset is the lowest opset quantized: per-axis QuantizeLinear and
// DequantizeLinear (the weights' per-channel scales) came with opset 13.
const MinOpset = 13

// Load reads the model at path and prepares it for Quantize: its inputs
// bound (inputs: name → static shape, for dynamic dimensions), shapes
// inferred, PrepPasses run. notes say what a user should know of how the
// model was read.
func Load(path string, inputs map[string][]int) (g *graph.Graph, notes []string, err error) {
	noPass := map[string]bool{}
	for _, name := range frontend.PassNames() {
		if !slices.Contains(PrepPasses, name) {
			noPass[name] = true
		}
	}
	l, err := frontend.Load(path, frontend.LoadOptions{Inputs: inputs, NoPass: noPass})
	if err != nil {
		return nil, nil, err
	}
	return l.Graph, l.Notes, nil
}

// Options configure Quantize.
type Options struct {
	// Method is how ranges are calibrated; "" means MinMax.
	Method Method
	// Percentile is the percentile of Method Percentile, in [0, 100];
	// 0 means DefaultPercentile.
	Percentile float64
	// Samples are the calibration inputs: per sample, one tensor per
	// graph input in order (CheckSample). Required.
	Samples [][]*graph.Tensor
	// Run runs the float model on the samples; nil means BuildRunner's
	// with all CPUs.
	Run Runner
	// ReduceRange quantizes weights to 7 bits, [-64, 64], as
	// onnxruntime's reduce_range does: on a CPU without VNNI, the sums of
	// two u8×s8 products then fit int16, which the vpmaddubsw kernels
	// need to be exact (ops' pairsFitInt16), at some cost in accuracy.
	ReduceRange bool
}

// Runner runs the float graph g on each sample and calls each with the
// values of g's outputs, in order (every value as float32). g's shapes
// are inferred and its outputs are the tensors to calibrate.
type Runner func(ctx context.Context, g *graph.Graph, samples [][]*graph.Tensor, each func(k int, outputs [][]float32) error) error

// Quantize returns the QDQ model of g (from Load; g is not changed) with
// ranges calibrated on opts.Samples, and a report of what it did.
func Quantize(ctx context.Context, g *graph.Graph, opts Options) (*graph.Graph, *Report, error) {
	if g.Opset < MinOpset {
		return nil, nil, fmt.Errorf("the model is opset %d: per-channel QuantizeLinear and DequantizeLinear need opset %d or later (convert it first, e.g. onnx.version_converter)", g.Opset, MinOpset)
	}
	method := opts.Method
	if method == "" {
		method = MinMax
	}
	pct := opts.Percentile
	if pct == 0 {
		pct = DefaultPercentile
	}
	if method != MinMax && method != Percentile {
		return nil, nil, fmt.Errorf("calibration method %q: want %s or %s", method, MinMax, Percentile)
	}
	if method == Percentile && (pct < 0 || pct > 100) {
		return nil, nil, fmt.Errorf("percentile %g: want a number in [0, 100]", pct)
	}
	if len(opts.Samples) == 0 {
		return nil, nil, errors.New("no calibration samples")
	}
	for k, s := range opts.Samples {
		if err := CheckSample(g, s, func(i int) string { return fmt.Sprintf("sample %d, input %d", k, i) }); err != nil {
			return nil, nil, err
		}
	}
	q := g.Clone()
	p, err := planGraph(q)
	if err != nil {
		return nil, nil, err
	}
	if len(p.marks) == 0 {
		return nil, nil, fmt.Errorf("no op to quantize: the quantized ops are %s; the model's are %s", strings.Join(Ops(), ", "), opsOf(g))
	}
	names := p.toCalibrate()
	run := opts.Run
	if run == nil {
		run = BuildRunner(0)
	}
	ranges, err := calibrate(ctx, g, names, opts.Samples, method, pct, run)
	if err != nil {
		return nil, nil, err
	}
	adjustRanges(g, ranges)
	rep := &Report{Nodes: map[string]int{}, Samples: len(opts.Samples)}
	p.reduceRange = opts.ReduceRange
	if err := p.emit(ranges, rep); err != nil {
		return nil, nil, err
	}
	if err := frontend.InferShapes(q); err != nil {
		return nil, nil, fmt.Errorf("quantize: the quantized graph does not check: %w", err)
	}
	return q, rep, nil
}

// opsOf lists g's op types, sorted.
func opsOf(g *graph.Graph) string {
	ops := map[string]bool{}
	for _, n := range g.Nodes {
		ops[n.OpType] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(ops)), ", ")
}

// calibrate returns the ranges of names in g over the samples: graph
// inputs from the samples themselves, the others from running g with
// them as its outputs.
func calibrate(ctx context.Context, g *graph.Graph, names []string, samples [][]*graph.Tensor, method Method, pct float64, run Runner) (map[string]Range, error) {
	st := map[string]*stats{}
	var computed []string
	inputAt := map[string]int{}
	for i, in := range g.Inputs {
		inputAt[in] = i
	}
	for _, name := range names {
		st[name] = &stats{}
		if _, ok := inputAt[name]; !ok {
			computed = append(computed, name)
		}
	}
	pass := func(each func(name string, v []float32) error) error {
		for _, name := range names {
			i, ok := inputAt[name]
			if !ok {
				continue
			}
			for _, s := range samples {
				v, err := s[i].KernelData()
				if err != nil {
					return fmt.Errorf("input %s: %w", name, err)
				}
				if err := each(name, v); err != nil {
					return err
				}
			}
		}
		if len(computed) == 0 {
			return nil
		}
		c := g.Clone()
		c.Outputs = slices.Clone(computed)
		return run(ctx, c, samples, func(k int, outs [][]float32) error {
			if len(outs) != len(computed) {
				return fmt.Errorf("quantize: the runner gave %d outputs for %d tensors", len(outs), len(computed))
			}
			for j, name := range computed {
				if err := each(name, outs[j]); err != nil {
					return fmt.Errorf("%w (calibration sample %d)", err, k)
				}
			}
			return nil
		})
	}
	if err := pass(func(name string, v []float32) error {
		if err := st[name].add(v); err != nil {
			return fmt.Errorf("calibration: tensor %s: %w", name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ranges := map[string]Range{}
	if method == MinMax {
		for name, s := range st {
			ranges[name] = s.minMax()
		}
		return ranges, nil
	}
	for _, s := range st {
		s.startHistogram(percentileBins)
	}
	if err := pass(func(name string, v []float32) error { st[name].addHistogram(v); return nil }); err != nil {
		return nil, err
	}
	for name, s := range st {
		ranges[name] = s.percentile(pct)
	}
	return ranges, nil
}

// Write writes g to path as an ONNX model, whole or not at all: into a
// temporary file beside it that is decoded again before it is renamed.
// It returns the size of the file written, in bytes.
func Write(path string, g *graph.Graph) (int64, error) {
	data, err := onnx.Encode(g)
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, there is nothing there
	if _, err := f.Write(data); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	back, err := onnx.DecodeFile(tmp)
	if err != nil {
		return 0, fmt.Errorf("the quantized model does not decode again: %w", err)
	}
	if back.Opset != g.Opset || len(back.Nodes) != len(g.Nodes) {
		return 0, fmt.Errorf("the quantized model decodes as opset %d with %d nodes, not opset %d with %d", back.Opset, len(back.Nodes), g.Opset, len(g.Nodes))
	}
	return int64(len(data)), os.Rename(tmp, path)
}

// SameFile reports whether paths a and b name the same file (b need not
// exist).
func SameFile(a, b string) bool {
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			return os.SameFile(sa, sb)
		}
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// WriteReport writes the report as the lines tune quantize prints.
func (r *Report) WriteReport(w io.Writer) {
	fmt.Fprintf(w, "quantized nodes: %s\n", r.NodeSummary())
	fmt.Fprintf(w, "activations: %d Q/DQ pairs of their own range, %d sharing their input's; %d Relu/Clip folded into the Q before them\n", r.Activations, r.Shared, r.Folded)
	fmt.Fprintf(w, "weights: %d int8 (%d per channel), %d biases int32, %d other constants uint8\n", r.Weights, r.PerChannel, r.Biases, r.Constants)
	for _, o := range r.Outputs {
		fmt.Fprintf(w, "output %s: scale %.9g, zero point %d\n", o.Name, o.Scale, o.ZeroPoint)
	}
	if r.Raised > 0 {
		fmt.Fprintf(w, "weight scales raised so that the int32 bias fits: %d channels\n", r.Raised)
	}
	if r.Clipped > 0 {
		fmt.Fprintf(w, "bias values saturated to int32: %d\n", r.Clipped)
	}
	for _, name := range r.Degenerate {
		fmt.Fprintf(w, "warning: tensor %s is 0 in every calibration sample: scale 1, zero point 0 (onnxruntime's rule for an empty range)\n", name)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
