package quantize

import (
	"math"
	"slices"
	"testing"
)

// TestScaleZeroPoint checks onnxruntime's compute_scale_zp: the range
// widened to 0, symmetric ranges, rounding half to even in float64, and
// the degenerate range's scale 1 and zero point 0. The expected values are
// numpy's (float32 scale of the float64 quotient).
func TestScaleZeroPoint(t *testing.T) {
	for _, c := range []struct {
		name       string
		lo, hi     float32
		qmin, qmax int64
		sym        bool
		want       Params
	}{
		{"uint8 [-1,1]: zero point 127.5 rounds to even", -1, 1, 0, 255, false, Params{0.007843137718737125, 128}},
		{"uint8 [2,10] widened to [0,10]", 2, 10, 0, 255, false, Params{0.03921568766236305, 0}},
		{"uint8 [-10,-2] widened to [-10,0]", -10, -2, 0, 255, false, Params{0.03921568766236305, 255}},
		{"uint8 [3,3] is [0,3], not degenerate", 3, 3, 0, 255, false, Params{0.0117647061124444, 0}},
		{"uint8 [-0.3,1.5]", -0.3, 1.5, 0, 255, false, Params{0.0070588234812021255, 43}},
		{"uint8 [0,0] is degenerate", 0, 0, 0, 255, false, Params{1, 0}},
		{"uint8 below float32's smallest normal is degenerate", 0, 1e-40, 0, 255, false, Params{1, 0}},
		{"int8 symmetric [-0.5,0.25]", -0.5, 0.25, -127, 127, true, Params{0.003937007859349251, 0}},
		{"int8 symmetric [0.1,0.5] widened", 0.1, 0.5, -127, 127, true, Params{0.003937007859349251, 0}},
		{"int8 symmetric of zeros is degenerate", 0, 0, -127, 127, true, Params{1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ScaleZeroPoint(c.lo, c.hi, c.qmin, c.qmax, c.sym)
			if got != c.want {
				t.Errorf("ScaleZeroPoint(%g, %g) = %+v, want %+v", c.lo, c.hi, got, c.want)
			}
			if got.Scale == 0 || math.IsInf(float64(got.Scale), 0) {
				t.Errorf("scale %g", got.Scale)
			}
			// 0 is exactly representable.
			if q := got.Quantize(0, c.qmin, c.qmax); got.Dequantize(q) != 0 {
				t.Errorf("0 quantizes to %d, which is %g", q, got.Dequantize(q))
			}
		})
	}
}

// TestQuantizeValue checks QuantizeLinear's arithmetic: the float32
// quotient rounded half to even, the zero point added, saturated.
func TestQuantizeValue(t *testing.T) {
	p := Params{Scale: 0.5, ZeroPoint: 10}
	for _, c := range []struct {
		x    float32
		want int64
	}{
		{0, 10}, {0.25, 10}, {0.75, 12}, {-0.25, 10}, {-0.75, 8}, // 0.5 and 1.5 round to even
		{1, 12}, {200, 255}, {-200, 0},
	} {
		if got := p.Quantize(c.x, 0, 255); got != c.want {
			t.Errorf("Quantize(%g) = %d, want %d", c.x, got, c.want)
		}
	}
	if got := (Params{Scale: 1}).Quantize(-200, int8Min, int8Max); got != -127 {
		t.Errorf("int8 saturates at %d, want -127 (the symmetric range)", got)
	}
}

// TestWeightParams checks per-channel symmetric int8 weights: one scale
// per slice along the axis, zero points 0, the quantized values within
// half a step.
func TestWeightParams(t *testing.T) {
	shape := []int{2, 3}
	data := []float32{1, -2, 0.5, 0.25, 0, -0.125}
	for _, c := range []struct {
		axis   int
		scales []float32
	}{
		{0, []float32{2.0 / 127, 0.25 / 127}},
		{1, []float32{1.0 / 127, 2.0 / 127, 0.5 / 127}},
		{-1, []float32{2.0 / 127}},
	} {
		ps := WeightParams(shape, data, c.axis)
		var got []float32
		for _, p := range ps {
			got = append(got, p.Scale)
			if p.ZeroPoint != 0 {
				t.Errorf("axis %d: zero point %d", c.axis, p.ZeroPoint)
			}
		}
		for i := range got {
			if math.Abs(float64(got[i]-c.scales[i])) > 1e-9 {
				t.Errorf("axis %d: scales %v, want %v", c.axis, got, c.scales)
				break
			}
		}
		q := QuantizeData(shape, data, c.axis, ps, int8Min, int8Max)
		_, of := channels(shape, c.axis)
		for i, v := range data {
			p := ps[of(i)]
			if d := math.Abs(float64(p.Dequantize(q[i]) - v)); d > float64(p.Scale)/2+1e-9 {
				t.Errorf("axis %d: element %d = %g comes back as %g", c.axis, i, v, p.Dequantize(q[i]))
			}
		}
	}
	// The largest magnitude of each channel is exactly ±127.
	if q := QuantizeData(shape, data, 0, WeightParams(shape, data, 0), int8Min, int8Max); q[1] != -127 || q[3] != 127 {
		t.Errorf("quantized %v: want -127 at 1 and 127 at 3", q)
	}
}

// TestQuantizeBias checks int32 biases: scale input × weight, rounding
// half to even, and the saturation of values int32 cannot hold (what
// onnxruntime does, with a warning, when bias/scale is too large).
func TestQuantizeBias(t *testing.T) {
	scales := BiasScales(0.5, []Params{{Scale: 0.25}, {Scale: 1e-9}}, 1)
	if !slices.Equal(scales, []float32{0.125, 0.5e-9}) {
		t.Fatalf("bias scales %v", scales)
	}
	q, clipped := QuantizeBias([]float32{0.1875, 3}, scales)
	// 0.1875/0.125 = 1.5 → 2; 3/5e-10 = 6e9 > int32.
	if q[0] != 2 || q[1] != math.MaxInt32 || clipped != 1 {
		t.Errorf("QuantizeBias = %v, %d clipped; want [2 %d], 1", q, clipped, math.MaxInt32)
	}
	q, clipped = QuantizeBias([]float32{-3, 0.0625}, []float32{0x1p-30})
	if q[0] != math.MinInt32 || q[1] != 1<<26 || clipped != 1 {
		t.Errorf("QuantizeBias = %v, %d clipped; want [%d %d], 1", q, clipped, math.MinInt32, 1<<26)
	}
}

// TestAdjustForBias checks that a weight scale too small for its bias is
// raised as onnxruntime raises it, so that the bias fits int32 and comes
// back within one step; a scale large enough is left alone.
func TestAdjustForBias(t *testing.T) {
	const input = 0.05
	bias := []float32{5, -4.5}
	for _, c := range []struct {
		name   string
		ws     []Params
		raised []int
	}{
		{"per channel, both too small", []Params{{Scale: 1e-10}, {Scale: 2e-10}}, []int{0, 1}},
		{"per channel, one too small", []Params{{Scale: 1e-10}, {Scale: 0.01}}, []int{0}},
		{"per tensor", []Params{{Scale: 1e-10}}, []int{0}},
		{"large enough", []Params{{Scale: 0.01}, {Scale: 0.02}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := slices.Clone(c.ws)
			raised := AdjustForBias(input, ws, bias)
			if !slices.Equal(raised, c.raised) {
				t.Errorf("raised %v, want %v", raised, c.raised)
			}
			scales := BiasScales(input, ws, 1)
			q, clipped := QuantizeBias(bias, scales)
			if clipped != 0 {
				t.Errorf("%d values still clipped: %v", clipped, q)
			}
			for i, b := range bias {
				s := scales[0]
				if len(scales) > 1 {
					s = scales[i]
				}
				if d := math.Abs(float64(q[i])*float64(s) - float64(b)); d > float64(s) {
					t.Errorf("bias %g comes back as %g", b, float64(q[i])*float64(s))
				}
			}
		})
	}
}

// TestPercentile checks the percentile range against onnxruntime's
// definition: a lone outlier beyond the percentile is cut, the range
// never exceeds the values', samples count as one histogram.
func TestPercentile(t *testing.T) {
	v := make([]float32, 10000)
	for i := range v {
		v[i] = float32(i) / 10000 // [0, 1)
	}
	v = append(v, 100)
	collect := func(pass ...[]float32) *stats {
		s := &stats{}
		for _, p := range pass {
			if err := s.add(p); err != nil {
				t.Fatal(err)
			}
		}
		s.startHistogram(percentileBins)
		for _, p := range pass {
			s.addHistogram(p)
		}
		return s
	}
	s := collect(v)
	if r := s.minMax(); r != (Range{0, 100}) {
		t.Errorf("minmax %v", r)
	}
	// 10000 of 10001 values lie in the first 21 bins of width 100/2048:
	// the 99.99th percentile is the left edge of bin 20.
	r := s.percentile(99.99)
	if want := float32(20 * 100.0 / 2048); r.Min != 0 || r.Max != want {
		t.Errorf("percentile 99.99: %v, want [0, %g]", r, want)
	}
	// At 100 the threshold is the left edge of the last bin, which holds
	// the largest |x| (onnxruntime's definition: not the largest itself).
	if r := s.percentile(100); r.Max != float32(2047*100.0/2048) {
		t.Errorf("percentile 100: %v, want max %g", r, float32(2047*100.0/2048))
	}
	// Two samples give the histogram of both together.
	s2 := collect(v[:5000], v[5000:])
	if r2 := s2.percentile(99.99); r2 != r {
		t.Errorf("in two samples: %v, in one: %v", r2, r)
	}
	// Symmetric |x|: a negative outlier is cut as well, and the range
	// stays within [min, max].
	neg := append(slices.Clone(v[:10000]), -100)
	r = collect(neg).percentile(99.99)
	if r.Min >= 0 || r.Min < -1 || r.Max > 1 {
		t.Errorf("percentile of a negative outlier: %v", r)
	}
	// Constant data: the histogram is widened by ±0.5 and the range is
	// the data's.
	if r := collect([]float32{0, 0, 0}).percentile(99.999); r != (Range{0, 0}) {
		t.Errorf("zeros: %v", r)
	}
	if err := (&stats{}).add([]float32{1, float32(math.NaN())}); err == nil {
		t.Error("a NaN was taken")
	}
}
