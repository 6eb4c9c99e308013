package te

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

func TestMatMul(t *testing.T) {
	cases := []struct{ a, b, out []int }{
		{[]int{17, 13}, []int{13, 19}, []int{17, 19}},
		{[]int{13}, []int{13, 19}, []int{19}},
		{[]int{17, 13}, []int{13}, []int{17}},
		{[]int{13}, []int{13}, []int{}},
		{[]int{2, 3, 4, 5}, []int{5, 6}, []int{2, 3, 4, 6}},
		{[]int{4, 5}, []int{2, 5, 6}, []int{2, 4, 6}},
		{[]int{3, 1, 4, 5}, []int{2, 5, 6}, []int{3, 2, 4, 6}},
		{[]int{5}, []int{2, 5, 6}, []int{2, 6}},
		{[]int{2, 4, 5}, []int{5}, []int{2, 4}},
		{[]int{1, 1, 5}, []int{1, 5, 1}, []int{1, 1, 1}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.a, c.b), func(t *testing.T) {
			e := newEnv(10)
			a, av := e.in("A", c.a...)
			b, bv := e.in("B", c.b...)
			got := e.run(t, res(MatMul("", a, b)))
			// promote to >= 2-D, broadcast the batch by hand, then drop
			// the promoted axes (a pure reshape of the row-major data)
			pa, pb := c.a, c.b
			if len(pa) == 1 {
				pa = []int{1, pa[0]}
			}
			if len(pb) == 1 {
				pb = []int{pb[0], 1}
			}
			rank := max(len(pa), len(pb))
			for len(pa) < rank {
				pa = append([]int{1}, pa...)
			}
			for len(pb) < rank {
				pb = append([]int{1}, pb...)
			}
			full := make([]int, rank)
			for i := 0; i < rank-2; i++ {
				full[i] = max(pa[i], pb[i])
			}
			M, K, N := pa[rank-2], pa[rank-1], pb[rank-1]
			full[rank-2], full[rank-1] = M, N
			want := zeros(full...)
			eachIndex(full, func(idx []int) {
				ai, bi := make([]int, rank), make([]int, rank)
				for i := 0; i < rank-2; i++ {
					if pa[i] > 1 {
						ai[i] = idx[i]
					}
					if pb[i] > 1 {
						bi[i] = idx[i]
					}
				}
				s := 0.0
				for k := 0; k < K; k++ {
					ai[rank-2], ai[rank-1] = idx[rank-2], k
					bi[rank-2], bi[rank-1] = k, idx[rank-1]
					s += av.data[offsetOf(pa, ai)] * bv.data[offsetOf(pb, bi)]
				}
				want.set(s, idx...)
			})
			want.shape = c.out
			expect(t, got, want)
		})
	}
}

func offsetOf(shape, idx []int) int {
	o := 0
	for i, d := range shape {
		o = o*d + idx[i]
	}
	return o
}

func TestGemm(t *testing.T) {
	const M, K, N = 5, 7, 6
	cases := []struct {
		c     []int // nil: no C
		attrs GemmAttrs
	}{
		{nil, DefaultGemmAttrs()},
		{[]int{M, N}, DefaultGemmAttrs()},
		{[]int{N}, GemmAttrs{Alpha: 0.25, Beta: 0.35, TransA: true}},
		{[]int{1, N}, GemmAttrs{Alpha: 1, Beta: 1, TransB: true}},
		{[]int{M, 1}, GemmAttrs{Alpha: 2, Beta: 1, TransA: true, TransB: true}},
		{[]int{}, GemmAttrs{Alpha: 1, Beta: -1}},
		{[]int{1}, GemmAttrs{Alpha: 1, Beta: 0}},
		{nil, GemmAttrs{Alpha: 0.5, Beta: 1}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.c, c.attrs), func(t *testing.T) {
			e := newEnv(11)
			sa, sb := []int{M, K}, []int{K, N}
			if c.attrs.TransA {
				sa = []int{K, M}
			}
			if c.attrs.TransB {
				sb = []int{N, K}
			}
			a, av := e.in("A", sa...)
			b, bv := e.in("B", sb...)
			var ct *Tensor
			var cv *nd
			if c.c != nil {
				ct, cv = e.in("C", c.c...)
			}
			got := e.run(t, res(Gemm("", a, b, ct, c.attrs)))
			want := zeros(M, N)
			for m := 0; m < M; m++ {
				for n := 0; n < N; n++ {
					s := 0.0
					for k := 0; k < K; k++ {
						x, y := av.data[m*K+k], bv.data[k*N+n]
						if c.attrs.TransA {
							x = av.data[k*M+m]
						}
						if c.attrs.TransB {
							y = bv.data[n*K+k]
						}
						s += x * y
					}
					s *= float64(c.attrs.Alpha)
					if cv != nil {
						s += float64(c.attrs.Beta) * cv.at(bcastIndex(c.c, []int{m, n})...)
					}
					want.set(s, m, n)
				}
			}
			expect(t, got, want)
		})
	}
}

// convCase describes a convolution with its expected output shape and the
// explicit pads (begin..., end...) the reference uses.
type convCase struct {
	name    string
	x, w    []int
	bias    bool
	attrs   ConvAttrs
	out     []int
	refPads []int
}

func TestConv(t *testing.T) {
	cases := []convCase{
		{"2d_pad1", []int{1, 3, 7, 9}, []int{4, 3, 3, 3}, false, ConvAttrs{Pads: []int{1, 1, 1, 1}}, []int{1, 4, 7, 9}, []int{1, 1, 1, 1}},
		{"2d_no_pad_bias", []int{2, 3, 5, 6}, []int{4, 3, 3, 2}, true, ConvAttrs{}, []int{2, 4, 3, 5}, nil},
		{"2d_asym_pads_stride2", []int{2, 3, 7, 9}, []int{5, 3, 3, 2}, true,
			ConvAttrs{Pads: []int{1, 0, 2, 1}, Strides: []int{2, 2}, KernelShape: []int{3, 2}}, []int{2, 5, 4, 5}, []int{1, 0, 2, 1}},
		{"2d_dilation2", []int{1, 2, 9, 8}, []int{3, 2, 3, 3}, false, ConvAttrs{Dilations: []int{2, 2}}, []int{1, 3, 5, 4}, nil},
		{"2d_dilation_stride_pads", []int{1, 2, 9, 8}, []int{3, 2, 3, 2}, true,
			ConvAttrs{Dilations: []int{2, 3}, Strides: []int{3, 2}, Pads: []int{2, 1, 0, 3}}, []int{1, 3, 3, 5}, []int{2, 1, 0, 3}},
		{"2d_group2", []int{1, 4, 6, 6}, []int{6, 2, 3, 3}, true, ConvAttrs{Group: 2, Pads: []int{1, 1, 1, 1}}, []int{1, 6, 6, 6}, []int{1, 1, 1, 1}},
		{"2d_group3_stride", []int{2, 6, 5, 5}, []int{9, 2, 3, 3}, false,
			ConvAttrs{Group: 3, Strides: []int{1, 2}, Pads: []int{0, 1, 1, 0}}, []int{2, 9, 4, 2}, []int{0, 1, 1, 0}},
		{"depthwise", []int{1, 5, 7, 7}, []int{5, 1, 3, 3}, true,
			ConvAttrs{Group: 5, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}, []int{1, 5, 4, 4}, []int{1, 1, 1, 1}},
		{"depthwise_multiplier", []int{1, 3, 6, 5}, []int{6, 1, 3, 3}, false, ConvAttrs{Group: 3}, []int{1, 6, 4, 3}, nil},
		{"depthwise_same_lower_dilated", []int{1, 4, 6, 6}, []int{4, 1, 3, 3}, false,
			ConvAttrs{Group: 4, AutoPad: "SAME_LOWER", Dilations: []int{2, 2}}, []int{1, 4, 6, 6}, []int{2, 2, 2, 2}},
		{"1x1", []int{1, 8, 5, 5}, []int{4, 8, 1, 1}, true, ConvAttrs{}, []int{1, 4, 5, 5}, nil},
		{"1d", []int{2, 3, 11}, []int{4, 3, 3}, true,
			ConvAttrs{Strides: []int{2}, Pads: []int{2, 1}, Dilations: []int{2}}, []int{2, 4, 5}, []int{2, 1}},
		{"1d_plain", []int{1, 2, 10}, []int{3, 2, 4}, false, ConvAttrs{}, []int{1, 3, 7}, nil},
		{"1d_depthwise", []int{1, 3, 10}, []int{3, 1, 3}, false, ConvAttrs{Group: 3, AutoPad: "SAME_UPPER"}, []int{1, 3, 10}, []int{1, 1}},
		{"same_upper", []int{1, 2, 7, 8}, []int{3, 2, 4, 3}, false,
			ConvAttrs{AutoPad: "SAME_UPPER", Strides: []int{2, 2}}, []int{1, 3, 4, 4}, []int{1, 0, 2, 1}},
		{"same_lower", []int{1, 2, 7, 8}, []int{3, 2, 4, 3}, false,
			ConvAttrs{AutoPad: "SAME_LOWER", Strides: []int{2, 2}}, []int{1, 3, 4, 4}, []int{2, 1, 1, 0}},
		{"valid", []int{1, 2, 7, 8}, []int{3, 2, 3, 3}, true,
			ConvAttrs{AutoPad: "VALID", Strides: []int{2, 2}}, []int{1, 3, 3, 3}, nil},
		{"notset_explicit", []int{1, 2, 5, 5}, []int{1, 2, 3, 3}, false,
			ConvAttrs{AutoPad: "NOTSET", Pads: []int{0, 2, 1, 0}}, []int{1, 1, 4, 5}, []int{0, 2, 1, 0}},
		{"3d", []int{1, 2, 4, 5, 3}, []int{3, 2, 2, 3, 2}, true,
			ConvAttrs{Pads: []int{1, 1, 1, 1, 1, 1}}, []int{1, 3, 5, 5, 4}, []int{1, 1, 1, 1, 1, 1}},
		// ASPP's rates on small maps: the outer taps read only padding
		// (window.liveTaps leaves them out), on one axis or both.
		{"dilation_past_the_map", []int{1, 2, 5, 5}, []int{3, 2, 3, 3}, true,
			ConvAttrs{Dilations: []int{6, 6}, Pads: []int{6, 6, 6, 6}}, []int{1, 3, 5, 5}, []int{6, 6, 6, 6}},
		{"dilation_past_one_axis", []int{1, 2, 4, 9}, []int{3, 2, 3, 3}, false,
			ConvAttrs{Dilations: []int{5, 2}, Pads: []int{5, 2, 5, 2}}, []int{1, 3, 4, 9}, []int{5, 2, 5, 2}},
		{"dilation_strided_partly_dead", []int{1, 2, 6, 6}, []int{2, 2, 3, 3}, true,
			ConvAttrs{Dilations: []int{4, 4}, Pads: []int{4, 0, 4, 8}, Strides: []int{2, 2}}, []int{1, 2, 3, 3}, []int{4, 0, 4, 8}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(12)
			x, xv := e.in("X", c.x...)
			w, wv := e.in("W", c.w...)
			var b *Tensor
			var bv *nd
			if c.bias {
				b, bv = e.in("B", c.w[0])
			}
			got := e.run(t, res(Conv("", x, w, b, c.attrs)))
			expect(t, got, refConv(xv, wv, bv, c))
		})
	}
}

func refConv(x, w, b *nd, c convCase) *nd {
	nsp := len(x.shape) - 2
	strides, dil := c.attrs.Strides, c.attrs.Dilations
	if strides == nil {
		strides = slices.Repeat([]int{1}, nsp)
	}
	if dil == nil {
		dil = slices.Repeat([]int{1}, nsp)
	}
	pads := c.refPads
	if pads == nil {
		pads = make([]int, 2*nsp)
	}
	G := max(c.attrs.Group, 1)
	M, Cg := w.shape[0], w.shape[1]
	out := zeros(c.out...)
	ksz := w.shape[2:]
	eachIndex(c.out, func(o []int) {
		n, m := o[0], o[1]
		g := m / (M / G)
		s := 0.0
		for ci := 0; ci < Cg; ci++ {
			eachIndex(ksz, func(k []int) {
				xi := []int{n, g*Cg + ci}
				for d := 0; d < nsp; d++ {
					p := o[2+d]*strides[d] + k[d]*dil[d] - pads[d]
					if p < 0 || p >= x.shape[2+d] {
						return
					}
					xi = append(xi, p)
				}
				s += x.at(xi...) * w.at(append([]int{m, ci}, k...)...)
			})
		}
		if b != nil {
			s += b.data[m]
		}
		out.set(s, o...)
	})
	return out
}

func TestConvStages(t *testing.T) {
	x, w, b := Placeholder("X", 1, 3, 7, 9), Placeholder("W", 4, 3, 3, 3), Placeholder("B", 4)
	out, err := Conv("conv1", x, w, b, ConvAttrs{Pads: []int{1, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := stageNames(t, out); !slices.Equal(got, []string{"conv1_pad", "conv1", "conv1_bias"}) {
		t.Fatalf("stages %v", got)
	}
	d, _ := NewDAG(out)
	var conv *Tensor
	for _, x := range d.Tensors {
		if x.Name == "conv1" {
			conv = x
		}
	}
	if !d.NeedsMultiLevelTiling(conv) {
		t.Error("conv reduction does not need multi-level tiling")
	}
	if !d.IsStrictlyInlineable(d.Producers(conv)[0]) {
		t.Error("pad stage is not strictly inlineable")
	}
	// affine reads: no floordiv/floormod for an ungrouped conv
	for _, a := range d.Reads(conv) {
		for _, ix := range a.Indices {
			if s := tir.ExprString(ix); strings.Contains(s, "floor") {
				t.Errorf("non-affine index %s", s)
			}
		}
	}
	// no pad stage without padding
	out, _ = Conv("", x, w, nil, ConvAttrs{})
	if got := stageNames(t, out); !slices.Equal(got, []string{"conv"}) {
		t.Fatalf("stages %v", got)
	}
	// depthwise: no channel reduce axis
	xd, wd := Placeholder("X", 1, 6, 5, 5), Placeholder("W", 6, 1, 3, 3)
	out, _ = Conv("", xd, wd, nil, ConvAttrs{Group: 6})
	if len(out.ReduceAxis) != 2 {
		t.Fatalf("depthwise reduce axes %d, want 2", len(out.ReduceAxis))
	}
}

// poolCase describes a pooling with its expected output shape and the pads
// the reference uses.
type poolCase struct {
	name    string
	x       []int
	attrs   PoolAttrs
	out     []int
	refPads []int
	known   []float64 // expected values for input 1, 2, 3, ... (optional)
}

func TestMaxPool(t *testing.T) {
	cases := []poolCase{
		{"2d_k3_s2_p1", []int{1, 2, 9, 11}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}},
			[]int{1, 2, 5, 6}, []int{1, 1, 1, 1}, nil},
		{"2d_default", []int{2, 3, 6, 5}, PoolAttrs{KernelShape: []int{2, 2}}, []int{2, 3, 5, 4}, nil, nil},
		{"ceil", []int{1, 1, 4, 4}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, CeilMode: true},
			[]int{1, 1, 2, 2}, nil, []float64{11, 12, 15, 16}},
		{"ceil_reduce_by_one", []int{1, 1, 2, 2}, PoolAttrs{KernelShape: []int{1, 1}, Strides: []int{2, 2}, CeilMode: true},
			[]int{1, 1, 1, 1}, nil, []float64{1}},
		{"ceil_pads", []int{1, 2, 7, 6}, PoolAttrs{KernelShape: []int{3, 2}, Strides: []int{2, 3}, Pads: []int{1, 0, 1, 1}, CeilMode: true},
			[]int{1, 2, 4, 2}, []int{1, 0, 1, 1}, nil},
		{"dilations", []int{1, 1, 4, 4}, PoolAttrs{KernelShape: []int{2, 2}, Dilations: []int{2, 2}},
			[]int{1, 1, 2, 2}, nil, []float64{11, 12, 15, 16}},
		{"dilation_stride_pads", []int{1, 2, 8, 9}, PoolAttrs{KernelShape: []int{3, 2}, Dilations: []int{2, 3}, Strides: []int{2, 1}, Pads: []int{2, 1, 1, 0}},
			[]int{1, 2, 4, 7}, []int{2, 1, 1, 0}, nil},
		{"pads_k5", []int{1, 1, 5, 5}, PoolAttrs{KernelShape: []int{5, 5}, Pads: []int{2, 2, 2, 2}}, []int{1, 1, 5, 5}, []int{2, 2, 2, 2},
			[]float64{13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25}},
		{"1d_asym", []int{2, 3, 10}, PoolAttrs{KernelShape: []int{3}, Strides: []int{2}, Pads: []int{2, 1}}, []int{2, 3, 6}, []int{2, 1}, nil},
		{"same_upper", []int{1, 2, 5, 6}, PoolAttrs{KernelShape: []int{2, 3}, Strides: []int{2, 2}, AutoPad: "SAME_UPPER"},
			[]int{1, 2, 3, 3}, []int{0, 0, 1, 1}, nil},
		{"same_lower", []int{1, 2, 5, 6}, PoolAttrs{KernelShape: []int{2, 3}, Strides: []int{2, 2}, AutoPad: "SAME_LOWER"},
			[]int{1, 2, 3, 3}, []int{1, 1, 0, 0}, nil},
		{"valid", []int{1, 1, 7, 7}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, AutoPad: "VALID"}, []int{1, 1, 3, 3}, nil, nil},
		{"3d", []int{1, 1, 4, 5, 6}, PoolAttrs{KernelShape: []int{2, 2, 3}, Pads: []int{1, 0, 1, 0, 1, 1}}, []int{1, 1, 4, 5, 6}, []int{1, 0, 1, 0, 1, 1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(13)
			var x *Tensor
			var xv *nd
			if c.known != nil {
				x, xv = e.feed("X", seq(c.x...))
			} else {
				x, xv = e.in("X", c.x...)
			}
			got := e.run(t, res(MaxPool("", x, c.attrs)))
			want := refPool(xv, c, false)
			expect(t, got, want)
			if c.known != nil {
				expect(t, got, &nd{shape: c.out, data: c.known})
			}
		})
	}
}

func TestAveragePool(t *testing.T) {
	cases := []poolCase{
		{"2d_k3_s2_p1_exclude", []int{1, 2, 9, 10}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}},
			[]int{1, 2, 5, 5}, []int{1, 1, 1, 1}, nil},
		{"2d_k3_s2_p1_include", []int{1, 2, 9, 10}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}, CountIncludePad: true},
			[]int{1, 2, 5, 5}, []int{1, 1, 1, 1}, nil},
		{"2d_default", []int{1, 3, 5, 5}, PoolAttrs{KernelShape: []int{2, 2}}, []int{1, 3, 4, 4}, nil, nil},
		{"ceil", []int{1, 1, 4, 4}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, CeilMode: true},
			[]int{1, 1, 2, 2}, nil, []float64{6, 7.5, 12, 13.5}},
		{"ceil_pads_include", []int{1, 1, 6, 7}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}, CeilMode: true, CountIncludePad: true},
			[]int{1, 1, 4, 4}, []int{1, 1, 1, 1}, nil},
		{"ceil_pads_exclude", []int{1, 1, 6, 7}, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}, CeilMode: true},
			[]int{1, 1, 4, 4}, []int{1, 1, 1, 1}, nil},
		{"pads_include_known", []int{1, 1, 3, 3}, PoolAttrs{KernelShape: []int{2, 2}, Pads: []int{1, 1, 1, 1}, CountIncludePad: true},
			[]int{1, 1, 4, 4}, []int{1, 1, 1, 1},
			[]float64{0.25, 0.75, 1.25, 0.75, 1.25, 3, 4, 2.25, 2.75, 6, 7, 3.75, 1.75, 3.75, 4.25, 2.25}},
		{"1d_include_asym", []int{1, 2, 7}, PoolAttrs{KernelShape: []int{3}, Pads: []int{2, 0}, CountIncludePad: true}, []int{1, 2, 7}, []int{2, 0}, nil},
		{"1d_exclude_asym", []int{1, 2, 7}, PoolAttrs{KernelShape: []int{3}, Pads: []int{2, 0}}, []int{1, 2, 7}, []int{2, 0}, nil},
		{"dilation_exclude", []int{1, 1, 7, 7}, PoolAttrs{KernelShape: []int{3, 3}, Dilations: []int{2, 2}, Strides: []int{2, 2}, Pads: []int{2, 2, 2, 2}},
			[]int{1, 1, 4, 4}, []int{2, 2, 2, 2}, nil},
		{"dilation_include", []int{1, 1, 7, 8}, PoolAttrs{KernelShape: []int{3, 2}, Dilations: []int{2, 3}, Strides: []int{2, 1}, Pads: []int{2, 1, 1, 2}, CountIncludePad: true},
			[]int{1, 1, 3, 8}, []int{2, 1, 1, 2}, nil},
		{"dilation_ceil_exclude", []int{1, 1, 8, 8}, PoolAttrs{KernelShape: []int{2, 2}, Dilations: []int{2, 2}, Strides: []int{4, 4}, Pads: []int{1, 1, 0, 0}, CeilMode: true},
			[]int{1, 1, 3, 3}, []int{1, 1, 0, 0}, nil},
		{"same_upper", []int{1, 1, 5, 5}, PoolAttrs{KernelShape: []int{2, 2}, Strides: []int{2, 2}, AutoPad: "SAME_UPPER"},
			[]int{1, 1, 3, 3}, []int{0, 0, 1, 1}, nil},
		{"same_lower_include", []int{1, 1, 5, 5}, PoolAttrs{KernelShape: []int{2, 2}, Strides: []int{2, 2}, AutoPad: "SAME_LOWER", CountIncludePad: true},
			[]int{1, 1, 3, 3}, []int{1, 1, 0, 0}, nil},
		{"3d", []int{1, 2, 4, 5, 3}, PoolAttrs{KernelShape: []int{2, 3, 2}, Pads: []int{0, 1, 1, 1, 1, 0}}, []int{1, 2, 4, 5, 3}, []int{0, 1, 1, 1, 1, 0}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(14)
			var x *Tensor
			var xv *nd
			if c.known != nil {
				x, xv = e.feed("X", seq(c.x...))
			} else {
				x, xv = e.in("X", c.x...)
			}
			got := e.run(t, res(AveragePool("", x, c.attrs)))
			expect(t, got, refPool(xv, c, true))
			if c.known != nil {
				expect(t, got, &nd{shape: c.out, data: c.known})
			}
		})
	}
}

// refPool pools x by visiting every tap of every window. Average pooling
// divides by the taps inside the input, or with count_include_pad by the
// taps inside the explicitly padded input.
func refPool(x *nd, c poolCase, avg bool) *nd {
	nsp := len(x.shape) - 2
	a := c.attrs
	strides, dil := a.Strides, a.Dilations
	if strides == nil {
		strides = slices.Repeat([]int{1}, nsp)
	}
	if dil == nil {
		dil = slices.Repeat([]int{1}, nsp)
	}
	pads := c.refPads
	if pads == nil {
		pads = make([]int, 2*nsp)
	}
	out := zeros(c.out...)
	eachIndex(c.out, func(o []int) {
		mx, sum, n, npad := math.Inf(-1), 0.0, 0, 0
		eachIndex(a.KernelShape, func(k []int) {
			xi := []int{o[0], o[1]}
			inside, inPadded := true, true
			for d := 0; d < nsp; d++ {
				p := o[2+d]*strides[d] + k[d]*dil[d] - pads[d]
				if p < 0 || p >= x.shape[2+d] {
					inside = false
				}
				if p < -pads[d] || p >= x.shape[2+d]+pads[nsp+d] {
					inPadded = false
				}
				xi = append(xi, p)
			}
			if inPadded {
				npad++
			}
			if inside {
				v := x.at(xi...)
				mx = math.Max(mx, v)
				sum += v
				n++
			}
		})
		switch {
		case !avg:
			out.set(mx, o...)
		case a.CountIncludePad:
			out.set(sum/float64(npad), o...)
		default:
			out.set(sum/float64(n), o...)
		}
	})
	return out
}

func TestPoolStages(t *testing.T) {
	x := Placeholder("X", 1, 2, 9, 9)
	out, _ := AveragePool("ap", x, PoolAttrs{KernelShape: []int{3, 3}, Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}})
	if got := stageNames(t, out); !slices.Equal(got, []string{"ap_pad", "ap_sum", "ap"}) {
		t.Fatalf("stages %v", got)
	}
	out, _ = MaxPool("mp", x, PoolAttrs{KernelShape: []int{3, 3}, Strides: []int{2, 2}})
	if got := stageNames(t, out); !slices.Equal(got, []string{"mp"}) {
		t.Fatalf("stages %v", got)
	}
	// a constant count divides by a constant
	out, _ = AveragePool("ap", x, PoolAttrs{KernelShape: []int{3, 3}, Pads: []int{1, 1, 1, 1}, CountIncludePad: true})
	if s := tir.ExprString(out.Body); strings.Contains(s, "float32(") {
		t.Errorf("constant count computed per element: %s", s)
	}
}

func TestGlobalPools(t *testing.T) {
	for _, shape := range [][]int{{2, 3, 5, 7}, {2, 3, 5}, {1, 2, 3, 2, 2}} {
		e := newEnv(15)
		x, xv := e.in("X", shape...)
		outShape := []int{shape[0], shape[1]}
		for range shape[2:] {
			outShape = append(outShape, 1)
		}
		n := 1
		for _, d := range shape[2:] {
			n *= d
		}
		wantAvg, wantMax := zeros(outShape...), zeros(outShape...)
		for i := 0; i < shape[0]*shape[1]; i++ {
			s, m := 0.0, math.Inf(-1)
			for _, v := range xv.data[i*n : (i+1)*n] {
				s += v
				m = math.Max(m, v)
			}
			wantAvg.data[i], wantMax.data[i] = s/float64(n), m
		}
		expect(t, e.run(t, res(GlobalAveragePool("", x))), wantAvg)
		expect(t, e.run(t, res(GlobalMaxPool("", x))), wantMax)
	}
}

func TestBatchNormalization(t *testing.T) {
	for _, shape := range [][]int{{2, 3, 4, 5}, {2, 3}, {1, 4, 7}} {
		for _, eps := range []float32{1e-5, 0.5} {
			e := newEnv(16)
			x, xv := e.in("X", shape...)
			C := shape[1]
			sc, scv := e.in("scale", C)
			b, bv := e.in("B", C)
			mean, mv := e.in("mean", C)
			vr, vv := e.feed("var", e.random(0, 2, C))
			got := e.run(t, res(BatchNormalization("", x, sc, b, mean, vr, eps)))
			want := zeros(shape...)
			eachIndex(shape, func(idx []int) {
				c := idx[1]
				v := (xv.at(idx...)-mv.data[c])/math.Sqrt(vv.data[c]+float64(eps))*scv.data[c] + bv.data[c]
				want.set(v, idx...)
			})
			expect(t, got, want)
		}
	}
}

func TestLayerNormalization(t *testing.T) {
	cases := []struct {
		x           []int
		axis        int
		scale, bias []int // bias nil: absent
	}{
		{[]int{2, 3, 4, 5}, -1, []int{5}, []int{5}},
		{[]int{2, 3, 4, 5}, 2, []int{4, 5}, []int{4, 5}},
		{[]int{2, 3, 4, 5}, 1, []int{3, 4, 5}, nil},
		{[]int{2, 3, 4, 5}, 0, []int{2, 3, 4, 5}, []int{2, 3, 4, 5}},
		{[]int{2, 3, 4, 5}, -3, []int{3, 4, 5}, []int{1, 1, 5}},
		{[]int{4, 6}, -2, []int{4, 6}, []int{6}},
		{[]int{7}, 0, []int{7}, []int{7}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.x, c.axis), func(t *testing.T) {
			e := newEnv(17)
			x, xv := e.in("X", c.x...)
			sc, scv := e.in("scale", c.scale...)
			var b *Tensor
			var bv *nd
			if c.bias != nil {
				b, bv = e.in("B", c.bias...)
			}
			const eps = 1e-5
			got := e.run(t, res(LayerNormalization("", x, sc, b, c.axis, eps)))
			axis := c.axis
			if axis < 0 {
				axis += len(c.x)
			}
			n := 1
			for _, d := range c.x[axis:] {
				n *= d
			}
			want := zeros(c.x...)
			for g := 0; g < len(xv.data)/n; g++ {
				row := xv.data[g*n : (g+1)*n]
				mean, vr := 0.0, 0.0
				for _, v := range row {
					mean += v
				}
				mean /= float64(n)
				for _, v := range row {
					vr += (v - mean) * (v - mean)
				}
				vr /= float64(n)
				for j := range row {
					want.data[g*n+j] = (row[j] - mean) / math.Sqrt(vr+eps)
				}
			}
			eachIndex(c.x, func(idx []int) {
				v := want.at(idx...) * scv.at(bcastIndex(c.scale, idx)...)
				if bv != nil {
					v += bv.at(bcastIndex(c.bias, idx)...)
				}
				want.set(v, idx...)
			})
			expect(t, got, want)
		})
	}
}

func TestSoftmax(t *testing.T) {
	cases := []struct {
		shape []int
		axis  int
		scale float64
	}{
		{[]int{3, 4, 5}, -1, 1},
		{[]int{3, 4, 5}, 0, 1},
		{[]int{3, 4, 5}, 1, 1},
		{[]int{3, 4, 5}, 2, 1},
		{[]int{3, 4, 5}, -3, 1},
		{[]int{7}, 0, 1},
		{[]int{2, 6}, -1, 500}, // large values: needs the max subtraction
	}
	for _, c := range cases {
		for _, logSoftmax := range []bool{false, true} {
			t.Run(fmt.Sprint(c.shape, c.axis, logSoftmax), func(t *testing.T) {
				e := newEnv(18)
				xv := e.random(-2*c.scale, 2*c.scale, c.shape...)
				x, _ := e.feed("X", xv)
				var got *nd
				if logSoftmax {
					got = e.run(t, res(LogSoftmax("", x, c.axis)))
				} else {
					got = e.run(t, res(Softmax("", x, c.axis)))
				}
				axis := c.axis
				if axis < 0 {
					axis += len(c.shape)
				}
				want := zeros(c.shape...)
				eachIndex(c.shape, func(idx []int) {
					if idx[axis] != 0 {
						return
					}
					j := append([]int(nil), idx...)
					mx := math.Inf(-1)
					for k := 0; k < c.shape[axis]; k++ {
						j[axis] = k
						mx = math.Max(mx, xv.at(j...))
					}
					sum := 0.0
					for k := 0; k < c.shape[axis]; k++ {
						j[axis] = k
						sum += math.Exp(xv.at(j...) - mx)
					}
					for k := 0; k < c.shape[axis]; k++ {
						j[axis] = k
						if logSoftmax {
							want.set(xv.at(j...)-mx-math.Log(sum), j...)
						} else {
							want.set(math.Exp(xv.at(j...)-mx)/sum, j...)
						}
					}
				})
				expect(t, got, want)
			})
		}
	}
}

func TestSoftmaxStages(t *testing.T) {
	x := Placeholder("X", 4, 9)
	out, _ := Softmax("sm", x, -1)
	if got := stageNames(t, out); !slices.Equal(got, []string{"sm_max", "sm_exp", "sm_sum", "sm"}) {
		t.Fatalf("stages %v", got)
	}
	out, _ = LayerNormalization("ln", x, Placeholder("s", 9), nil, -1, 1e-5)
	if got := stageNames(t, out); !slices.Equal(got, []string{"ln_mean", "ln_var", "ln_rstd", "ln"}) {
		t.Fatalf("stages %v", got)
	}
}

func TestNNErrors(t *testing.T) {
	P := Placeholder
	x4 := P("X", 1, 4, 5, 5)
	cases := []struct {
		op string
		r  result
	}{
		{"MatMul", res(MatMul("", P("A", 3, 4), P("B", 5, 6)))},
		{"MatMul", res(MatMul("", P("A", 2, 3, 4), P("B", 3, 4, 6)))},
		{"MatMul", res(MatMul("", P("A"), P("B", 3)))},
		{"Gemm", res(Gemm("", P("A", 3, 4), P("B", 5, 6), nil, DefaultGemmAttrs()))},
		{"Gemm", res(Gemm("", P("A", 3, 4), P("B", 4, 6), P("C", 3), DefaultGemmAttrs()))},
		{"Gemm", res(Gemm("", P("A", 3, 4, 1), P("B", 4, 6), nil, DefaultGemmAttrs()))},
		{"Conv", res(Conv("", x4, P("W", 6, 3, 3, 3), nil, ConvAttrs{}))},
		{"Conv", res(Conv("", x4, P("W", 6, 3, 3, 3), nil, ConvAttrs{Group: 2}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 3, 3), P("B", 5), ConvAttrs{}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 7, 3), nil, ConvAttrs{}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 3, 3), nil, ConvAttrs{Pads: []int{1, 1}}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 3, 3), nil, ConvAttrs{Strides: []int{0, 1}}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 3, 3), nil, ConvAttrs{AutoPad: "SAME"}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 3, 3), nil, ConvAttrs{KernelShape: []int{2, 2}}))},
		{"Conv", res(Conv("", x4, P("W", 6, 4, 3, 3), nil, ConvAttrs{Pads: []int{-1, 0, 0, 0}}))},
		{"Conv", res(Conv("", P("X", 4, 5), P("W", 4, 5), nil, ConvAttrs{}))},
		{"Conv", res(Conv("", x4, nil, nil, ConvAttrs{}))},
		{"MaxPool", res(MaxPool("", x4, PoolAttrs{}))},
		{"MaxPool", res(MaxPool("", x4, PoolAttrs{KernelShape: []int{3}}))},
		{"MaxPool", res(MaxPool("", P("X", 4, 5), PoolAttrs{KernelShape: []int{3}}))},
		{"AveragePool", res(AveragePool("", x4, PoolAttrs{KernelShape: []int{6, 6}}))},
		{"GlobalAveragePool", res(GlobalAveragePool("", P("X", 3, 4)))},
		{"GlobalMaxPool", res(GlobalMaxPool("", P("X", 3)))},
		{"BatchNormalization", res(BatchNormalization("", x4, P("s", 4), P("b", 4), P("m", 3), P("v", 4), 1e-5))},
		{"LayerNormalization", res(LayerNormalization("", x4, P("s", 4), nil, 4, 1e-5))},
		{"LayerNormalization", res(LayerNormalization("", x4, P("s", 4), nil, -1, 1e-5))},
		{"Softmax", res(Softmax("", x4, 4))},
		{"Softmax", res(Softmax("", P("X"), 0))},
		{"LogSoftmax", res(LogSoftmax("", x4, -5))},
	}
	for _, c := range cases {
		expectErr(t, c.op, c.r)
	}
}

// TestConvDropsPaddingTaps: a tap that reads padding for every output is
// left out of the reduction (window.liveTaps), NCHW and NHWC alike: a
// 3×3 of dilation 6 on a 5×5 map reduces over the channels alone (a 1×1),
// one of dilation 2 keeps its 3×3, one of dilation (5, 2) on a 4×9 map is
// 1×3. The numbers are TestConv's.
func TestConvDropsPaddingTaps(t *testing.T) {
	for _, c := range []struct {
		name       string
		x          []int
		dil, pads  []int
		nchw, nhwc []int // the reduce extents
	}{
		{"past the map", []int{1, 4, 5, 5}, []int{6, 6}, []int{6, 6, 6, 6}, []int{4, 1, 1}, []int{4}},
		{"inside the map", []int{1, 4, 5, 5}, []int{2, 2}, []int{2, 2, 2, 2}, []int{4, 3, 3}, []int{3, 3, 4}},
		{"past one axis", []int{1, 4, 4, 9}, []int{5, 2}, []int{5, 2, 5, 2}, []int{4, 1, 3}, []int{3, 4}},
	} {
		a := ConvAttrs{Dilations: c.dil, Pads: c.pads}
		x, w := Placeholder("X", c.x...), Constant("W", 8, c.x[1], 3, 3)
		conv, err := Conv("conv", x, w, nil, a)
		if err != nil {
			t.Fatal(err)
		}
		nhwcIn := Placeholder("Xh", c.x[0], c.x[2], c.x[3], c.x[1])
		convH, err := ConvNHWC("convh", nhwcIn, w, nil, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			layout string
			t      *Tensor
			want   []int
		}{{"NCHW", conv, c.nchw}, {"NHWC", convH, c.nhwc}} {
			var got []int
			for _, ax := range r.t.ReduceAxis {
				got = append(got, ax.Extent)
			}
			if !slices.Equal(got, r.want) {
				t.Errorf("%s %s: reduce extents %v, want %v", c.name, r.layout, got, r.want)
			}
		}
	}
}
