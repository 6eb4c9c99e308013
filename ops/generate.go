package ops

import (
	"math"

	"github.com/tessera-ml/tessera/graph"
)

// Ops that generate constants from shapes or constant parameters: EyeLike
// (from its input's shape alone), the window functions BlackmanWindow,
// HammingWindow and HannWindow, and MelWeightMatrix. Like Shape, they never
// reach a kernel: constant folding computes their outputs (in float64,
// rounded once), so their parameters must be known at compile time.

func init() {
	define(
		&Op{Name: "EyeLike", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferEyeLike, Eval: evalEyeLike, ShapesOnly: true},
		&Op{Name: "BlackmanWindow", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferWindow, Eval: evalWindow(func(x float64) float64 {
			return 0.42 - 0.5*math.Cos(x) + 0.08*math.Cos(2*x)
		})},
		&Op{Name: "HammingWindow", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferWindow, Eval: evalWindow(func(x float64) float64 {
			return 25.0/46 - 21.0/46*math.Cos(x)
		})},
		&Op{Name: "HannWindow", MinIn: 1, MaxIn: 1, Pattern: Opaque, Infer: inferWindow, Eval: evalWindow(func(x float64) float64 {
			return 0.5 - 0.5*math.Cos(x)
		})},
		&Op{Name: "MelWeightMatrix", MinIn: 5, MaxIn: 5, Pattern: Opaque, Infer: inferMel, Eval: evalMel},
	)
}

// dtypeAttr reads a data type attribute (an ONNX TensorProto type number),
// def when absent.
func (c *InferCtx) dtypeAttr(name string, def graph.DType) (graph.DType, error) {
	v, err := c.N.Int(name, int64(def.ONNX()))
	if err != nil {
		return 0, err
	}
	dt, ok := graph.DTypeFromONNX(int32(v))
	if !ok {
		return 0, graph.Unsupportedf("%s at node %s: %s %d", c.N.OpType, c.N.Name, name, v)
	}
	return dt, nil
}

// tensorOf makes a tensor of dtype dt from float64 values.
func tensorOf(dt graph.DType, shape []int, v []float64) *graph.Tensor {
	t := &graph.Tensor{DType: dt, Shape: shape}
	for _, x := range v {
		if dt == graph.Float32 {
			t.F32 = append(t.F32, float32(x))
		} else {
			t.I64 = append(t.I64, dt.Wrap(int64(x)))
		}
	}
	return t
}

func inferEyeLike(c *InferCtx) error {
	if len(c.Shape(0)) != 2 {
		return c.Errorf("input %v is not 2-D", c.Shape(0))
	}
	dt, err := c.dtypeAttr("dtype", c.DType(0))
	if err != nil {
		return err
	}
	c.Set(0, dt, c.Shape(0))
	return nil
}

// evalEyeLike: ones on diagonal k (column − row = k), zeros elsewhere.
func evalEyeLike(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	k, err := c.N.Int("k", 0)
	if err != nil {
		return nil, err
	}
	s := c.Shape(0)
	v := make([]float64, s[0]*s[1])
	for i := range s[0] {
		if j := int64(i) + k; j >= 0 && j < int64(s[1]) {
			v[i*s[1]+int(j)] = 1
		}
	}
	return []*graph.Tensor{tensorOf(c.Out[0].DType, s, v)}, nil
}

// windowSize returns the window functions' size input.
func (c *InferCtx) windowSize() (int, error) {
	t, err := c.Constant(0, "size")
	if err != nil {
		return 0, err
	}
	if t.Len() != 1 || !t.DType.IsInt() {
		return 0, c.Errorf("size is %s, want an integer scalar", t)
	}
	n := t.I64[0]
	if n <= 0 || n > MaxFoldElems {
		return 0, c.Errorf("size %d", n)
	}
	return int(n), nil
}

func inferWindow(c *InferCtx) error {
	n, err := c.windowSize()
	if err != nil {
		return err
	}
	dt, err := c.dtypeAttr("output_datatype", graph.Float32)
	if err != nil {
		return err
	}
	c.Set(0, dt, []int{n})
	return nil
}

// evalWindow evaluates w(2πk/N) for k < size, N the size when periodic
// (the default), size − 1 when symmetric.
func evalWindow(w func(x float64) float64) func(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	return func(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
		n, err := c.windowSize()
		if err != nil {
			return nil, err
		}
		periodic, err := c.N.Int("periodic", 1)
		if err != nil {
			return nil, err
		}
		den := float64(n)
		if periodic == 0 {
			den = float64(n - 1)
		}
		v := make([]float64, n)
		for k := range v {
			v[k] = w(2 * math.Pi * float64(k) / den)
		}
		return []*graph.Tensor{tensorOf(c.Out[0].DType, []int{n}, v)}, nil
	}
}

// melParams reads MelWeightMatrix's inputs: mel bins, DFT length, sample
// rate, and the band's lower and upper edges in hertz.
func (c *InferCtx) melParams() (bins, dft, rate int, lo, hi float64, err error) {
	var v [5]float64
	for i, what := range []string{"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"} {
		t, err := c.Constant(i, what)
		if err != nil {
			return 0, 0, 0, 0, 0, err
		}
		if t.Len() != 1 {
			return 0, 0, 0, 0, 0, c.Errorf("%s has shape %v, want a scalar", what, t.Shape)
		}
		v[i] = t.Float64s()[0]
	}
	bins, dft, rate = int(v[0]), int(v[1]), int(v[2])
	if bins <= 0 || dft <= 0 || rate <= 0 || bins > 1<<16 || dft > 1<<20 {
		return 0, 0, 0, 0, 0, c.Errorf("num_mel_bins %d, dft_length %d, sample_rate %d", bins, dft, rate)
	}
	return bins, dft, rate, v[3], v[4], nil
}

func inferMel(c *InferCtx) error {
	bins, dft, _, _, _, err := c.melParams()
	if err != nil {
		return err
	}
	dt, err := c.dtypeAttr("output_datatype", graph.Float32)
	if err != nil {
		return err
	}
	c.Set(0, dt, []int{dft/2 + 1, bins})
	return nil
}

// evalMel builds the triangular filters of the mel bins over the DFT's
// bins, as ONNX's reference does: bins+2 points equally spaced in mel
// between the edges, mapped to DFT bins, each filter rising from its left
// point to its center and falling to its right one.
func evalMel(c *InferCtx, _ []*graph.Tensor) ([]*graph.Tensor, error) {
	bins, dft, rate, lo, hi, err := c.melParams()
	if err != nil {
		return nil, err
	}
	mel := func(hz float64) float64 { return 2595 * math.Log10(1+hz/700) }
	lowMel, highMel := mel(lo), mel(hi)
	step := (highMel - lowMel) / float64(bins+2)
	points := make([]int, bins+2)
	for i := range points {
		hz := 700 * (math.Pow(10, (float64(i)*step+lowMel)/2595) - 1)
		points[i] = int(math.Floor(float64(dft+1) * hz / float64(rate)))
	}
	rows := dft/2 + 1
	v := make([]float64, rows*bins)
	set := func(j, i int, x float64) error {
		if j < 0 || j >= rows {
			return c.Errorf("mel bin %d reaches DFT bin %d of %d (edges %g to %g Hz at %d Hz)", i, j, rows, lo, hi, rate)
		}
		v[j*bins+i] = x
		return nil
	}
	for i := range bins {
		left, center, right := points[i], points[i+1], points[i+2]
		if up := center - left; up == 0 {
			if err := set(center, i, 1); err != nil {
				return nil, err
			}
		} else {
			for j := left; j <= center; j++ {
				if err := set(j, i, float64(j-left)/float64(up)); err != nil {
					return nil, err
				}
			}
		}
		if down := right - center; down > 0 {
			for j := center; j < right; j++ {
				if err := set(j, i, float64(right-j)/float64(down)); err != nil {
					return nil, err
				}
			}
		}
	}
	return []*graph.Tensor{tensorOf(c.Out[0].DType, []int{rows, bins}, v)}, nil
}
