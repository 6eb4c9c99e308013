package quantize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/tsrt"
)

// Calibration: the range of every tensor that gets a QuantizeLinear, from
// the float model run on the calibration samples.

// Method is how a tensor's range is taken from its calibration values.
type Method string

// Describe says how m calibrates, with percentile its percentile (for
// Percentile), as tune quantize reports it.
func (m Method) Describe(percentile float64) string {
	if m == Percentile {
		return fmt.Sprintf("percentile %g of |x|", percentile)
	}
	return string(m)
}

const (
	// MinMax takes the smallest and the largest value over all samples
	// (onnxruntime's CalibrationMethod.MinMax).
	MinMax Method = "minmax"
	// Percentile takes, from a histogram of |x| over all samples (2048
	// bins from min |x| to max |x|), the left edge t of the bin where the
	// cumulative share first reaches the percentile, and the range
	// [max(−t, min x), min(t, max x)] (onnxruntime's
	// CalibrationMethod.Percentile with its default symmetric histogram).
	Percentile Method = "percentile"
)

// DefaultPercentile is onnxruntime's default percentile.
const DefaultPercentile = 99.999

// percentileBins is the number of bins of the |x| histogram (onnxruntime's
// default num_bins for the percentile method).
const percentileBins = 2048

// Range is a calibrated real range.
type Range struct {
	Min, Max float32
}

// stats accumulates one tensor's values over the samples: min and max
// of x and of |x|, and in a second pass, the histogram of |x|.
type stats struct {
	n            int
	lo, hi       float32 // of x
	absLo, absHi float32 // of |x|
	hist         []int64 // of |x| between absLo and absHi (second pass)
	edges        []float64
}

// add takes one sample's values of the tensor into the first pass. It
// fails on NaN and infinities, which no range can hold.
func (s *stats) add(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("element %d is %v", i, x)
		}
		a := float32(math.Abs(float64(x)))
		if s.n == 0 {
			s.lo, s.hi, s.absLo, s.absHi = x, x, a, a
		} else {
			s.lo, s.hi = min(s.lo, x), max(s.hi, x)
			s.absLo, s.absHi = min(s.absLo, a), max(s.absHi, a)
		}
		s.n++
	}
	return nil
}

// startHistogram sets up the bins of the second pass as numpy's
// histogram(|x|, bins) does over all samples at once: bins+1 edges
// evenly spaced from min |x| to max |x| (float64), widened by ±0.5 when
// the two are equal.
func (s *stats) startHistogram(bins int) {
	first, last := float64(s.absLo), float64(s.absHi)
	if first == last {
		first, last = first-0.5, last+0.5
	}
	s.edges = make([]float64, bins+1)
	step := (last - first) / float64(bins)
	for i := range s.edges {
		s.edges[i] = float64(i)*step + first
	}
	s.edges[bins] = last
	s.hist = make([]int64, bins)
}

// addHistogram counts one sample's |x| into the bins, numpy's way: the
// index computed from the scaled offset, then corrected against the edges;
// the last bin holds its right edge.
func (s *stats) addHistogram(v []float32) {
	bins := len(s.hist)
	first, last := s.edges[0], s.edges[bins]
	for _, x := range v {
		a := math.Abs(float64(x))
		if a < first || a > last {
			continue
		}
		i := int((a - first) / (last - first) * float64(bins))
		if i == bins {
			i--
		}
		if a < s.edges[i] {
			i--
		} else if a >= s.edges[i+1] && i != bins-1 {
			i++
		}
		s.hist[i]++
	}
}

// minMax is the MinMax range.
func (s *stats) minMax() Range { return Range{s.lo, s.hi} }

// percentile is the Percentile range for p in [0, 100]: the threshold is
// the float32 left edge of the first bin whose cumulative share (the
// running sum of each bin's count over the total, in float64) reaches p/100,
// the range ±threshold cut to the values' own min and max.
func (s *stats) percentile(p float64) Range {
	var total int64
	for _, c := range s.hist {
		total += c
	}
	idx, cdf := len(s.hist), 0.0
	for i, c := range s.hist {
		cdf += float64(c) / float64(total)
		if cdf >= p/100 {
			idx = i
			break
		}
	}
	t := float32(s.edges[idx])
	r := Range{-t, t}
	if r.Min < s.lo {
		r.Min = s.lo
	}
	if r.Max > s.hi {
		r.Max = s.hi
	}
	return r
}

// RandomSamples returns n samples of random inputs for g: float values
// uniform in [−1, 1), integers and bools 0 or 1 (valid token ids and
// masks), from seed (the same seed, the same samples).
func RandomSamples(g *graph.Graph, n int, seed uint64) ([][]*graph.Tensor, error) {
	rng := rand.New(rand.NewPCG(seed, 0x7e55e7a))
	out := make([][]*graph.Tensor, n)
	for k := range out {
		for _, name := range g.Inputs {
			v := g.Values[name]
			if slices.Contains(v.Shape, -1) {
				return nil, fmt.Errorf("input %s has the dynamic shape %v: bind it with --input %s=d0,d1,...", name, v.Shape, name)
			}
			t := &graph.Tensor{DType: v.DType, Shape: slices.Clone(v.Shape)}
			size := graph.NumElems(v.Shape)
			switch {
			case v.DType == graph.Float32:
				t.F32 = make([]float32, size)
				for i := range t.F32 {
					t.F32[i] = float32(2*rng.Float64() - 1)
				}
			case v.DType.IsInt():
				t.I64 = make([]int64, size)
				for i := range t.I64 {
					t.I64[i] = int64(rng.IntN(2))
				}
			default:
				return nil, fmt.Errorf("input %s is %s: no random values for it", name, v.DType)
			}
			out[k] = append(out[k], t)
		}
	}
	return out, nil
}

// CheckSample checks that sample holds one tensor per input of g, of the
// input's dtype and shape; what names each tensor's origin in errors
// (a file name).
func CheckSample(g *graph.Graph, sample []*graph.Tensor, what func(i int) string) error {
	if len(sample) != len(g.Inputs) {
		return fmt.Errorf("%d tensors for the %d inputs %v", len(sample), len(g.Inputs), g.Inputs)
	}
	for i, t := range sample {
		v := g.Values[g.Inputs[i]]
		if t.DType != v.DType {
			return fmt.Errorf("%s: %s values, input %s is %s", what(i), t.DType, v.Name, v.DType)
		}
		if !slices.Equal(t.Shape, v.Shape) {
			return fmt.Errorf("%s: shape %v, input %s takes %v", what(i), t.Shape, v.Name, v.Shape)
		}
	}
	return nil
}

// ReadSamples reads calibration files as samples, one tensor per graph
// input (ReadSample): a NAME=FILE goes to input NAME, a bare FILE to the
// inputs in order, round after round; every input needs as many files.
// nil when no file is given.
func ReadSamples(g *graph.Graph, files []string) ([][]*graph.Tensor, error) {
	if len(files) == 0 {
		return nil, nil
	}
	byInput := make([][]string, len(g.Inputs))
	named, bare := 0, 0
	for _, f := range files {
		if name, file, ok := strings.Cut(f, "="); ok && slices.Contains(g.Inputs, name) {
			i := slices.Index(g.Inputs, name)
			byInput[i] = append(byInput[i], file)
			named++
			continue
		}
		byInput[bare%len(g.Inputs)] = append(byInput[bare%len(g.Inputs)], f)
		bare++
	}
	if named > 0 && bare > 0 {
		return nil, fmt.Errorf("give every file as name=FILE or every file bare, in the order of the inputs (%s)", strings.Join(g.Inputs, ", "))
	}
	for i, fs := range byInput {
		if len(fs) != len(byInput[0]) {
			return nil, fmt.Errorf("%d files for input %s, %d for %s: every input needs one file per sample", len(byInput[0]), g.Inputs[0], len(fs), g.Inputs[i])
		}
	}
	samples := make([][]*graph.Tensor, len(byInput[0]))
	for i, fs := range byInput {
		for k, f := range fs {
			t, err := ReadSample(f, g.Values[g.Inputs[i]]) // its errors name the file
			if err != nil {
				return nil, err
			}
			samples[k] = append(samples[k], t)
		}
	}
	return samples, nil
}

// ReadSample reads a calibration file for graph input v with the reader
// of tune run (tsrt.ReadTensorFile): a .npy file, or an ONNX TensorProto
// .pb, or raw float32. Its shape and dtype must be the input's: a file of
// another dtype is refused, not converted.
func ReadSample(path string, v *graph.Value) (*graph.Tensor, error) {
	t, err := tsrt.ReadTensorFile(path, tsrt.ManifestTensor{Name: "input " + v.Name, Shape: v.Shape})
	if err != nil {
		return nil, err // it names the file
	}
	if t.DType.String() != v.DType.String() {
		return nil, fmt.Errorf("%s: %s values, input %s is %s", path, t.DType, v.Name, v.DType)
	}
	dt, _ := graph.DTypeFromONNX(int32(t.DType))
	g := &graph.Tensor{DType: dt, Shape: make([]int, len(t.Shape))}
	for i, d := range t.Shape {
		g.Shape[i] = int(d)
	}
	switch t.DType {
	case tsrt.Float32:
		v, err := tsrt.Values[float32](t)
		g.F32 = slices.Clone(v)
		return g, err
	case tsrt.Int64:
		g.I64, err = widen[int64](t)
	case tsrt.Int32:
		g.I64, err = widen[int32](t)
	case tsrt.Int16:
		g.I64, err = widen[int16](t)
	case tsrt.Int8:
		g.I64, err = widen[int8](t)
	case tsrt.Uint8:
		g.I64, err = widen[uint8](t)
	case tsrt.Uint16:
		g.I64, err = widen[uint16](t)
	case tsrt.Uint32:
		g.I64, err = widen[uint32](t)
	case tsrt.Bool:
		var b []bool
		if b, err = tsrt.Values[bool](t); err == nil {
			for _, x := range b {
				g.I64 = append(g.I64, map[bool]int64{false: 0, true: 1}[x])
			}
		}
	default:
		return nil, fmt.Errorf("%s: %s values: no input of that type", path, t.DType)
	}
	return g, err
}

// widen returns an integer tensor's values as int64.
func widen[T int64 | int32 | int16 | int8 | uint8 | uint16 | uint32](t tsrt.Tensor) ([]int64, error) {
	v, err := tsrt.Values[T](t)
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out, err
}
