package te

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestIntConvDot: grouping the channel reduction (IntConvOptions.Dot)
// changes the shape of the sum, not its value: every output equals the
// convolution's one channel at a time, for plain and grouped convolutions,
// strides, padding and signed or unsigned inputs.
func TestIntConvDot(t *testing.T) {
	cases := []struct {
		name       string
		x, w       []int
		xdt        tir.DType
		a          ConvAttrs
		dot, zeroX int64
	}{
		{"3x3 pad", []int{1, 6, 7, 8}, []int{12, 8, 3, 3}, tir.Uint8, ConvAttrs{Pads: []int{1, 1, 1, 1}}, 4, 37},
		{"1x1 stride", []int{2, 5, 5, 4}, []int{8, 4, 1, 1}, tir.Int8, ConvAttrs{Strides: []int{2, 2}}, 4, -3},
		{"pairs", []int{1, 4, 4, 6}, []int{5, 6, 3, 1}, tir.Uint8, ConvAttrs{Pads: []int{1, 0, 1, 0}}, 2, 128},
		{"grouped", []int{1, 5, 6, 16}, []int{8, 8, 3, 3}, tir.Uint8, ConvAttrs{Group: 2, Pads: []int{1, 1, 1, 1}}, 4, 5},
	}
	for _, c := range cases {
		x := TypedPlaceholder("x", c.xdt, c.x...)
		w := TypedPlaceholder("w", tir.Int8, c.w...)
		w.Const = true
		eval := func(dot int) []int64 {
			y, err := IntConv("y", x, w, c.zeroX, c.a, IntConvOptions{NHWC: true, Dot: dot})
			if err != nil {
				t.Fatalf("%s: Dot %d: %v", c.name, dot, err)
			}
			return evalInts(t, y, false)
		}
		want, got := eval(1), eval(int(c.dot))
		if !slices.Equal(want, got) {
			t.Errorf("%s: Dot %d differs from one channel at a time", c.name, c.dot)
		}
	}
	x := TypedPlaceholder("x", tir.Uint8, 1, 4, 4, 6)
	w := TypedPlaceholder("w", tir.Int8, 4, 6, 3, 3)
	if _, err := IntConv("y", x, w, 0, ConvAttrs{}, IntConvOptions{NHWC: true, Dot: 4}); err == nil {
		t.Error("Dot 4 over 6 channels: no error")
	}
	if _, err := IntConv("y", x, w, 0, ConvAttrs{}, IntConvOptions{Dot: 2}); err == nil {
		t.Error("Dot without NHWC: no error")
	}
}

// TestIntConvDotW: an NCHW input's convolution summing its W taps in
// saturated groups of four (IntConvOptions.DotW, the weights padded with
// zeros to 8 taps) equals the one tap at a time form on the unpadded
// weights, for 7-bit weights (no pair saturates), strides and padding; and
// a kernel with a W tap reading only padding, or dilated along W, is
// refused (DotWFits).
func TestIntConvDotW(t *testing.T) {
	for _, c := range []struct {
		name  string
		x     []int
		k     []int
		a     ConvAttrs
		zeroX int64
	}{
		{"7x7 stride 2", []int{1, 3, 13, 15}, []int{7, 7}, ConvAttrs{Strides: []int{2, 2}, Pads: []int{3, 3, 3, 3}}, 127},
		{"5 taps, uneven pads", []int{2, 2, 9, 11}, []int{3, 5}, ConvAttrs{Strides: []int{1, 2}, Pads: []int{1, 2, 0, 1}}, 3},
		{"4 taps, none padded", []int{1, 3, 6, 9}, []int{2, 4}, ConvAttrs{}, 0},
	} {
		M, C := 8, c.x[1]
		kwp := (c.k[1] + 3) / 4 * 4
		rng := rand.New(rand.NewPCG(3, uint64(len(c.name))))
		xs := make([]float32, c.x[0]*C*c.x[2]*c.x[3])
		for i := range xs {
			xs[i] = tir.IntSlot(rng.Int64N(256))
		}
		w := make([]int64, M*C*c.k[0]*c.k[1])
		for i := range w {
			w[i] = rng.Int64N(129) - 64
		}
		ws, wp := make([]float32, len(w)), make([]float32, len(w)/c.k[1]*kwp)
		for i := range wp {
			wp[i] = tir.IntSlot(0)
		}
		for i, v := range w {
			ws[i] = tir.IntSlot(v)
			wp[i/c.k[1]*kwp+i%c.k[1]] = tir.IntSlot(v)
		}
		run := func(wShape []int, wdata []float32, o IntConvOptions, a ConvAttrs) []int64 {
			x := TypedPlaceholder("x", tir.Uint8, c.x...)
			wt := TypedPlaceholder("w", tir.Int8, wShape...)
			wt.Const = true
			y, err := IntConv("y", x, wt, c.zeroX, a, o)
			if err != nil {
				t.Fatalf("%s: %+v: %v", c.name, o, err)
			}
			d, err := NewDAG(y)
			if err != nil {
				t.Fatal(err)
			}
			ins := make([][]float32, len(d.Inputs))
			for i, in := range d.Inputs {
				ins[i] = xs
				if in == wt {
					ins[i] = wdata
				}
			}
			return evalDAGInts(t, d, ins)
		}
		want := run([]int{M, C, c.k[0], c.k[1]}, ws, IntConvOptions{NHWC: true, FromNCHW: true}, c.a)
		a := c.a
		a.KernelShape = c.k
		got := run([]int{M, C, c.k[0], kwp}, wp, IntConvOptions{NHWC: true, FromNCHW: true, Dot: 4, DotW: true, SaturatePairs: true}, a)
		if !slices.Equal(want, got) {
			t.Errorf("%s: W taps in groups of four differ from one tap at a time", c.name)
		}
	}
	for _, c := range []struct {
		name string
		x    []int
		a    ConvAttrs
	}{
		{"a W tap reads only padding", []int{1, 3, 6, 2}, ConvAttrs{Pads: []int{0, 2, 0, 2}, KernelShape: []int{1, 5}}},
		{"dilated along W", []int{1, 3, 6, 9}, ConvAttrs{Dilations: []int{1, 2}, KernelShape: []int{1, 5}}},
	} {
		x := TypedPlaceholder("x", tir.Uint8, c.x...)
		w := TypedPlaceholder("w", tir.Int8, 4, 3, 1, 8)
		if _, err := IntConv("y", x, w, 0, c.a, IntConvOptions{NHWC: true, FromNCHW: true, Dot: 4, DotW: true}); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestIntMatMulDot: IntMatMul with k in groups (IntMatMulOptions.Dot)
// equals it one k at a time, batched or not; saturated pairs equal it
// where no pair leaves int16 (weights of magnitude ≤ 64).
func TestIntMatMulDot(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []int
		sat  bool
	}{
		{"2-D", []int{5, 12}, []int{12, 7}, false},
		{"batched", []int{2, 3, 8}, []int{8, 4}, false},
		{"saturated, 7-bit weights", []int{6, 16}, []int{16, 9}, true},
	} {
		a := TypedPlaceholder("a", tir.Uint8, c.a...)
		b := TypedPlaceholder("b", tir.Int8, c.b...)
		b.Const = true
		eval := func(o IntMatMulOptions) []int64 {
			y, err := IntMatMul("y", a, b, o)
			if err != nil {
				t.Fatalf("%s: %+v: %v", c.name, o, err)
			}
			return evalInts(t, y, c.sat)
		}
		want, got := eval(IntMatMulOptions{}), eval(IntMatMulOptions{Dot: 4, SaturatePairs: c.sat})
		if !slices.Equal(want, got) {
			t.Errorf("%s: groups of 4 differ from one k at a time", c.name)
		}
	}
	a := TypedPlaceholder("a", tir.Uint8, 3, 6)
	b := TypedPlaceholder("b", tir.Int8, 6, 2)
	if _, err := IntMatMul("y", a, b, IntMatMulOptions{Dot: 4}); err == nil {
		t.Error("groups of 4 over k = 6: no error")
	}
}

// evalInts evaluates int32 tensor y on random inputs, the same for every
// form of y (seeded by input position), int8 ones halved to 7 bits with
// sevenBit, and returns its values.
func evalInts(t *testing.T, y *Tensor, sevenBit bool) []int64 {
	t.Helper()
	d, err := NewDAG(y)
	if err != nil {
		t.Fatal(err)
	}
	ins := make([][]float32, len(d.Inputs))
	for i, in := range d.Inputs {
		ins[i] = make([]float32, in.Size())
		RandomSlots(in.DType(), ins[i], rand.New(rand.NewPCG(uint64(i), 7)).Float64)
		if in.DType() == tir.Int8 && sevenBit {
			for k, f := range ins[i] {
				ins[i][k] = tir.IntSlot(tir.SlotInt(tir.Int8, f) / 2) // |w| ≤ 64
			}
		}
	}
	return evalDAGInts(t, d, ins)
}

// evalDAGInts evaluates d on inputs ins and returns its int32 output.
func evalDAGInts(t *testing.T, d *DAG, ins [][]float32) []int64 {
	t.Helper()
	out, err := d.Eval(ins)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int64, len(out[0]))
	for i, f := range out[0] {
		got[i] = tir.SlotInt(tir.Int32, f)
	}
	return got
}
