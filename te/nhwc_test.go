package te

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// toNHWC transposes row-major [N, C, H, W] data to [N, H, W, C].
func toNHWC(v []float32, n, c, h, w int) []float32 {
	out := make([]float32, len(v))
	for b := range n {
		for ch := range c {
			for y := range h {
				for x := range w {
					out[((b*h+y)*w+x)*c+ch] = v[((b*c+ch)*h+y)*w+x]
				}
			}
		}
	}
	return out
}

// evalOne evaluates the DAG of t on inputs given by name.
func evalOne(t *testing.T, out *Tensor, inputs map[string][]float32) []float32 {
	t.Helper()
	d, err := NewDAG(out)
	if err != nil {
		t.Fatal(err)
	}
	in := make([][]float32, len(d.Inputs))
	for i, p := range d.Inputs {
		in[i] = inputs[p.Name]
	}
	got, err := d.Eval(in)
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

// TestNHWCMatchesNCHW computes the channels-last ops and their NCHW
// originals on the same data, transposed (ConvToNHWC on the NCHW data
// itself), and compares the results: the
// sums run in the same order, so they agree to the last bit but for
// Winograd, which meets its tolerance.
func TestNHWCMatchesNCHW(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	type convCase struct {
		n, c, h, w, m, k int
		a                ConvAttrs
	}
	convs := []convCase{
		{1, 3, 9, 7, 4, 3, ConvAttrs{Pads: []int{1, 1, 1, 1}}},
		{2, 4, 8, 8, 6, 3, ConvAttrs{Strides: []int{2, 2}, Pads: []int{0, 1, 2, 1}}},
		{1, 6, 7, 7, 6, 3, ConvAttrs{Group: 6, Pads: []int{1, 1, 1, 1}}}, // depthwise
		{1, 4, 6, 5, 8, 1, ConvAttrs{}},                                  // 1×1
		{1, 4, 9, 9, 4, 3, ConvAttrs{Group: 2, Dilations: []int{2, 2}, AutoPad: "SAME_UPPER"}},
		{1, 4, 5, 5, 6, 3, ConvAttrs{Dilations: []int{6, 6}, Pads: []int{6, 6, 6, 6}}}, // ASPP past the map: a 1×1
		{1, 4, 4, 9, 6, 3, ConvAttrs{Dilations: []int{5, 2}, Pads: []int{5, 2, 5, 2}}}, // past one axis
	}
	for _, c := range convs {
		t.Run(fmt.Sprintf("conv%v", c), func(t *testing.T) {
			xv := randomData(rng, c.n*c.c*c.h*c.w)
			wv := randomData(rng, c.m*(c.c/max(c.a.Group, 1))*c.k*c.k)
			bv := randomData(rng, c.m)
			w, b := Constant("w", c.m, c.c/max(c.a.Group, 1), c.k, c.k), Constant("b", c.m)
			ref, err := Conv("ref", Placeholder("x", c.n, c.c, c.h, c.w), w, b, c.a)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ConvNHWC("got", Placeholder("x", c.n, c.h, c.w, c.c), w, b, c.a)
			if err != nil {
				t.Fatal(err)
			}
			from, err := ConvToNHWC("from", Placeholder("x", c.n, c.c, c.h, c.w), w, b, c.a)
			if err != nil {
				t.Fatal(err)
			}
			want := evalOne(t, ref, map[string][]float32{"x": xv, "w": wv, "b": bv})
			wantNHWC := toNHWC(want, ref.Shape[0], ref.Shape[1], ref.Shape[2], ref.Shape[3])
			have := evalOne(t, got, map[string][]float32{"x": toNHWC(xv, c.n, c.c, c.h, c.w), "w": wv, "b": bv})
			checkClose(t, have, wantNHWC, 1e-5)
			// The NCHW input read as it is, into a channels-last output.
			checkClose(t, evalOne(t, from, map[string][]float32{"x": xv, "w": wv, "b": bv}), wantNHWC, 1e-5)
		})
	}
	t.Run("maxpool", func(t *testing.T) {
		xv := randomData(rng, 2*3*9*9)
		a := PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}
		ref, _ := MaxPool("ref", Placeholder("x", 2, 3, 9, 9), a)
		got, err := MaxPoolNHWC("got", Placeholder("x", 2, 9, 9, 3), a)
		if err != nil {
			t.Fatal(err)
		}
		want := evalOne(t, ref, map[string][]float32{"x": xv})
		have := evalOne(t, got, map[string][]float32{"x": toNHWC(xv, 2, 3, 9, 9)})
		checkClose(t, have, toNHWC(want, 2, 3, 5, 5), 0)
	})
	for _, a := range []PoolAttrs{
		{KernelShape: []int{2, 2}, Strides: []int{2, 2}}, // DenseNet's transition
		{KernelShape: []int{3, 3}, Pads: []int{1, 1, 1, 1}},
		{KernelShape: []int{3, 3}, Pads: []int{1, 1, 1, 1}, CountIncludePad: true}, // Inception's
		{KernelShape: []int{3, 2}, Strides: []int{2, 2}, Pads: []int{0, 1, 1, 0}, CeilMode: true},
	} {
		t.Run(fmt.Sprintf("average pool %+v", a), func(t *testing.T) {
			xv := randomData(rng, 2*3*9*8)
			ref, err := AveragePool("ref", Placeholder("x", 2, 3, 9, 8), a)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AveragePoolNHWC("got", Placeholder("x", 2, 9, 8, 3), a)
			if err != nil {
				t.Fatal(err)
			}
			want := evalOne(t, ref, map[string][]float32{"x": xv})
			have := evalOne(t, got, map[string][]float32{"x": toNHWC(xv, 2, 3, 9, 8)})
			checkClose(t, have, toNHWC(want, ref.Shape[0], ref.Shape[1], ref.Shape[2], ref.Shape[3]), 0)
		})
	}
	t.Run("global average pool", func(t *testing.T) {
		xv := randomData(rng, 2*5*4*3)
		ref, _ := GlobalAveragePool("ref", Placeholder("x", 2, 5, 4, 3))
		got, err := GlobalAveragePoolNHWC("got", Placeholder("x", 2, 4, 3, 5))
		if err != nil {
			t.Fatal(err)
		}
		want := evalOne(t, ref, map[string][]float32{"x": xv})
		have := evalOne(t, got, map[string][]float32{"x": toNHWC(xv, 2, 5, 4, 3)})
		checkClose(t, have, want, 1e-6) // [N, C, 1, 1] and [N, 1, 1, C] are the same data
	})
	for _, m := range WinogradTileSizes() {
		t.Run(fmt.Sprintf("winograd F%d", m), func(t *testing.T) {
			n, c, h, w, k := 2, 5, 7, 9, 3
			pads := []int{1, 1, 1, 0}
			xv := randomData(rng, n*c*h*w)
			uv, err := WinogradWeights(randomData(rng, k*c*9), k, c, m)
			if err != nil {
				t.Fatal(err)
			}
			u := Constant("u", m+2, m+2, c, k)
			ref, err := WinogradConv2D("ref", Placeholder("x", n, c, h, w), u, m, pads)
			if err != nil {
				t.Fatal(err)
			}
			got, err := WinogradConv2DNHWC("got", Placeholder("x", n, h, w, c), u, m, pads)
			if err != nil {
				t.Fatal(err)
			}
			want := evalOne(t, ref, map[string][]float32{"x": xv, "u": uv})
			have := evalOne(t, got, map[string][]float32{"x": toNHWC(xv, n, c, h, w), "u": uv})
			checkClose(t, have, toNHWC(want, ref.Shape[0], ref.Shape[1], ref.Shape[2], ref.Shape[3]), 1e-5)
		})
	}
	if _, err := ConvNHWC("bad", Placeholder("x", 1, 4, 4), Constant("w", 2, 4, 3, 3), nil, ConvAttrs{}); err == nil {
		t.Error("3-D NHWC input accepted")
	}
}

func checkClose(t *testing.T, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("element %d: got %v, want %v", i, got[i], want[i])
		}
	}
}
