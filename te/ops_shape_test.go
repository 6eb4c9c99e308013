package te

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

func TestTranspose(t *testing.T) {
	cases := []struct {
		x, perm, out []int
	}{
		{[]int{3, 5, 7}, []int{2, 0, 1}, []int{7, 3, 5}},
		{[]int{3, 5, 7}, nil, []int{7, 5, 3}},
		{[]int{3, 5, 7}, []int{0, 1, 2}, []int{3, 5, 7}},
		{[]int{2, 3, 4, 5}, []int{0, 2, 3, 1}, []int{2, 4, 5, 3}},
		{[]int{4, 6}, []int{-1, 0}, []int{6, 4}},
		{[]int{5}, nil, []int{5}},
	}
	for _, c := range cases {
		e := newEnv(30)
		x, xv := e.in("X", c.x...)
		got := e.run(t, res(Transpose("", x, c.perm)))
		perm := c.perm
		if perm == nil {
			for i := len(c.x) - 1; i >= 0; i-- {
				perm = append(perm, i)
			}
		}
		want := zeros(c.out...)
		eachIndex(c.out, func(idx []int) {
			in := make([]int, len(idx))
			for k, p := range perm {
				in[(p+len(c.x))%len(c.x)] = idx[k]
			}
			want.set(xv.at(in...), idx...)
		})
		expect(t, got, want)
	}
}

// reshapeLike checks an op that keeps the row-major data and changes the
// shape.
func reshapeLike(t *testing.T, in, out []int, op func(x *Tensor) (*Tensor, error)) {
	t.Helper()
	e := newEnv(31)
	x, xv := e.in("X", in...)
	got := e.run(t, res(op(x)))
	expect(t, got, &nd{shape: out, data: xv.data})
}

func TestReshape(t *testing.T) {
	cases := []struct {
		x, shape, out []int
	}{
		{[]int{3, 5, 7}, []int{5, -1}, []int{5, 21}},
		{[]int{3, 5, 7}, []int{0, -1}, []int{3, 35}},
		{[]int{3, 5, 7}, []int{7, 5, 3}, []int{7, 5, 3}},
		{[]int{3, 5, 7}, []int{105}, []int{105}},
		{[]int{3, 5, 7}, []int{-1}, []int{105}},
		{[]int{3, 5, 7}, []int{1, 3, 1, 35, 1}, []int{1, 3, 1, 35, 1}},
		{[]int{3, 5, 7}, []int{0, 0, 7, 1}, []int{3, 5, 7, 1}},
		{[]int{3, 5, 7}, []int{15, 7}, []int{15, 7}},
		{[]int{3, 5, 7}, []int{3, 7, 5}, []int{3, 7, 5}},
		{[]int{2, 6, 2}, []int{4, 3, 2}, []int{4, 3, 2}},
		{[]int{2, 6, 2}, []int{3, 8}, []int{3, 8}},
		{[]int{3, 1, 5}, []int{5, 3}, []int{5, 3}},
		{[]int{1, 1}, []int{}, []int{}},
		{[]int{}, []int{1, 1}, []int{1, 1}},
		{[]int{4, 9}, []int{6, 6}, []int{6, 6}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.x, c.shape), func(t *testing.T) {
			reshapeLike(t, c.x, c.out, func(x *Tensor) (*Tensor, error) { return Reshape("", x, c.shape, false) })
		})
	}
	// equal leading and trailing axes map one to one (affine reads)
	x := Placeholder("X", 2, 3, 4, 5)
	out, _ := Reshape("", x, []int{2, 12, 5}, false)
	s := tir.ExprString(out.Body)
	if !strings.HasPrefix(s, "X[i0, ") || !strings.HasSuffix(s, ", i2]") {
		t.Errorf("reshape reads %s", s)
	}
}

func TestFlattenSqueezeUnsqueeze(t *testing.T) {
	sh := []int{2, 3, 4}
	flat := []struct {
		axis int
		out  []int
	}{{0, []int{1, 24}}, {1, []int{2, 12}}, {2, []int{6, 4}}, {3, []int{24, 1}}, {-1, []int{6, 4}}, {-3, []int{1, 24}}}
	for _, c := range flat {
		reshapeLike(t, sh, c.out, func(x *Tensor) (*Tensor, error) { return Flatten("", x, c.axis) })
	}
	sq := []struct {
		x, axes, out []int
	}{
		{[]int{3, 1, 5, 1}, nil, []int{3, 5}},
		{[]int{3, 1, 5, 1}, []int{1}, []int{3, 5, 1}},
		{[]int{3, 1, 5, 1}, []int{-1}, []int{3, 1, 5}},
		{[]int{3, 1, 5, 1}, []int{3, 1}, []int{3, 5}},
		{[]int{1, 1}, nil, []int{}},
	}
	for _, c := range sq {
		reshapeLike(t, c.x, c.out, func(x *Tensor) (*Tensor, error) { return Squeeze("", x, c.axes) })
	}
	unsq := []struct {
		x, axes, out []int
	}{
		{[]int{3, 5}, []int{0}, []int{1, 3, 5}},
		{[]int{3, 5}, []int{-1}, []int{3, 5, 1}},
		{[]int{3, 5}, []int{1, 3}, []int{3, 1, 5, 1}},
		{[]int{3, 5}, []int{3, 1}, []int{3, 1, 5, 1}},
		{[]int{3, 5}, []int{-1, -4}, []int{1, 3, 5, 1}},
		{[]int{}, []int{0}, []int{1}},
	}
	for _, c := range unsq {
		reshapeLike(t, c.x, c.out, func(x *Tensor) (*Tensor, error) { return Unsqueeze("", x, c.axes) })
	}
}

func TestConcat(t *testing.T) {
	cases := []struct {
		shapes [][]int
		axis   int
		out    []int
	}{
		{[][]int{{2, 3, 5}, {2, 4, 5}, {2, 1, 5}}, 1, []int{2, 8, 5}},
		{[][]int{{2, 3}, {4, 3}}, 0, []int{6, 3}},
		{[][]int{{2, 3}, {2, 2}}, -1, []int{2, 5}},
		{[][]int{{2, 3, 1}, {2, 3, 2}}, -1, []int{2, 3, 3}},
		{[][]int{{3}}, 0, []int{3}},
		{[][]int{{1}, {2}, {3}, {4}}, 0, []int{10}},
	}
	for _, c := range cases {
		e := newEnv(32)
		var xs []*Tensor
		var vs []*nd
		for i, s := range c.shapes {
			x, v := e.in(fmt.Sprint("X", i), s...)
			xs = append(xs, x)
			vs = append(vs, v)
		}
		got := e.run(t, res(Concat("", c.axis, xs...)))
		axis := (c.axis + len(c.out)) % len(c.out)
		want := zeros(c.out...)
		eachIndex(c.out, func(idx []int) {
			j := append([]int(nil), idx...)
			k := 0
			for j[axis] >= vs[k].shape[axis] {
				j[axis] -= vs[k].shape[axis]
				k++
			}
			want.set(vs[k].at(j...), idx...)
		})
		expect(t, got, want)
	}
}

func TestSlice(t *testing.T) {
	const big = math.MaxInt64
	cases := []struct {
		name  string
		x     []int
		attrs SliceAttrs
		index [][]int // per axis, the input indices read (nil: all)
	}{
		{"step3", []int{10}, SliceAttrs{Starts: []int{2}, Ends: []int{8}, Steps: []int{3}}, [][]int{{2, 5}}},
		{"neg_step_to_begin", []int{10}, SliceAttrs{Starts: []int{-1}, Ends: []int{math.MinInt64}, Steps: []int{-2}}, [][]int{{9, 7, 5, 3, 1}}},
		{"neg_step_clamped", []int{10}, SliceAttrs{Starts: []int{100}, Ends: []int{-100}, Steps: []int{-3}}, [][]int{{9, 6, 3, 0}}},
		{"clamp_both", []int{10}, SliceAttrs{Starts: []int{-100}, Ends: []int{100}}, [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}},
		{"reverse_part", []int{10}, SliceAttrs{Starts: []int{8}, Ends: []int{2}, Steps: []int{-1}}, [][]int{{8, 7, 6, 5, 4, 3}}},
		{"end_max", []int{10}, SliceAttrs{Starts: []int{7}, Ends: []int{big}}, [][]int{{7, 8, 9}}},
		{"neg_end", []int{10}, SliceAttrs{Starts: []int{0}, Ends: []int{-1}, Steps: []int{4}}, [][]int{{0, 4, 8}}},
		{"2d_axes_reordered", []int{6, 7}, SliceAttrs{Starts: []int{1, -2}, Ends: []int{big, 0}, Axes: []int{-1, 0}, Steps: []int{2, -1}},
			[][]int{{4, 3, 2, 1}, {1, 3, 5}}},
		{"3d_one_axis", []int{4, 5, 6}, SliceAttrs{Starts: []int{1}, Ends: []int{4}, Axes: []int{1}}, [][]int{nil, {1, 2, 3}, nil}},
		{"default_axes", []int{4, 5, 6}, SliceAttrs{Starts: []int{1, 0}, Ends: []int{3, -2}}, [][]int{{1, 2}, {0, 1, 2}, nil}},
		{"full_reverse", []int{3, 4}, SliceAttrs{Starts: []int{-1}, Ends: []int{-big}, Axes: []int{1}, Steps: []int{-1}}, [][]int{nil, {3, 2, 1, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(33)
			x, xv := e.in("X", c.x...)
			got := e.run(t, res(Slice("", x, c.attrs)))
			index := make([][]int, len(c.x))
			out := make([]int, len(c.x))
			for ax := range c.x {
				if ax < len(c.index) && c.index[ax] != nil {
					index[ax] = c.index[ax]
				} else {
					for i := 0; i < c.x[ax]; i++ {
						index[ax] = append(index[ax], i)
					}
				}
				out[ax] = len(index[ax])
			}
			want := zeros(out...)
			eachIndex(out, func(idx []int) {
				in := make([]int, len(idx))
				for ax, i := range idx {
					in[ax] = index[ax][i]
				}
				want.set(xv.at(in...), idx...)
			})
			expect(t, got, want)
		})
	}
}

// padIndex is the reference for one axis of Pad: crop by negative pads,
// then map output position p of the padded axis to an index of x, or -1
// for the constant.
func padIndex(mode string, n, pb, pe, p int) int {
	lo := max(0, -pb)
	kept := n - lo - max(0, -pe)
	j := p - max(0, pb)
	if j >= 0 && j < kept {
		return lo + j
	}
	switch mode {
	case "edge":
		j = min(max(j, 0), kept-1)
	case "reflect":
		if kept == 1 {
			j = 0
		}
		for j < 0 || j >= kept {
			if j < 0 {
				j = -j
			} else {
				j = 2*(kept-1) - j
			}
		}
	case "wrap":
		j = ((j % kept) + kept) % kept
	default:
		return -1
	}
	return lo + j
}

func TestPad(t *testing.T) {
	cases := []struct {
		name  string
		x     []int
		attrs PadAttrs
		out   []int
	}{
		{"constant", []int{3, 4}, PadAttrs{Pads: []int{1, 2, 0, 3}, Value: 1.5}, []int{4, 9}},
		{"constant_default_mode", []int{3, 4}, PadAttrs{Mode: "", Pads: []int{0, 1, 2, 0}}, []int{5, 5}},
		{"constant_crop", []int{3, 4}, PadAttrs{Mode: "constant", Pads: []int{-1, 1, 1, -2}, Value: -3}, []int{3, 3}},
		{"constant_nchw", []int{1, 2, 3, 4}, PadAttrs{Mode: "constant", Pads: []int{0, 0, 1, 2, 0, 0, 2, 1}}, []int{1, 2, 6, 7}},
		{"edge", []int{3, 4}, PadAttrs{Mode: "edge", Pads: []int{2, 1, 1, 3}}, []int{6, 8}},
		{"edge_crop", []int{3, 5}, PadAttrs{Mode: "edge", Pads: []int{0, -1, 2, 2}}, []int{5, 6}},
		{"reflect", []int{3, 4}, PadAttrs{Mode: "reflect", Pads: []int{2, 1, 1, 3}}, []int{6, 8}},
		{"reflect_crop", []int{4, 5}, PadAttrs{Mode: "reflect", Pads: []int{-1, 2, 2, -1}}, []int{5, 6}},
		{"reflect_large", []int{3, 2}, PadAttrs{Mode: "reflect", Pads: []int{4, 3, 5, 2}}, []int{12, 7}},
		{"reflect_one", []int{1, 3}, PadAttrs{Mode: "reflect", Pads: []int{1, 0, 2, 0}}, []int{4, 3}},
		{"wrap", []int{3, 4}, PadAttrs{Mode: "wrap", Pads: []int{1, 2, 2, 1}}, []int{6, 7}},
		{"wrap_large_crop", []int{3, 4}, PadAttrs{Mode: "wrap", Pads: []int{4, -1, 0, 5}}, []int{7, 8}},
		{"axes", []int{2, 3, 4}, PadAttrs{Mode: "edge", Axes: []int{-1, 0}, Pads: []int{1, 0, 2, 1}}, []int{3, 3, 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(34)
			x, xv := e.in("X", c.x...)
			got := e.run(t, res(Pad("", x, c.attrs)))
			rank := len(c.x)
			pb, pe := make([]int, rank), make([]int, rank)
			axes := c.attrs.Axes
			if axes == nil {
				for i := 0; i < rank; i++ {
					axes = append(axes, i)
				}
			}
			for k, a := range axes {
				a = (a + rank) % rank
				pb[a], pe[a] = c.attrs.Pads[k], c.attrs.Pads[k+len(axes)]
			}
			mode := c.attrs.Mode
			want := zeros(c.out...)
			eachIndex(c.out, func(idx []int) {
				in := make([]int, rank)
				for ax, p := range idx {
					in[ax] = padIndex(mode, c.x[ax], pb[ax], pe[ax], p)
					if in[ax] < 0 {
						want.set(float64(c.attrs.Value), idx...)
						return
					}
				}
				want.set(xv.at(in...), idx...)
			})
			expect(t, got, want)
		})
	}
}

func TestPadKnown(t *testing.T) {
	// ONNX Pad's reflect and edge examples
	e := newEnv(35)
	x, _ := e.feed("X", &nd{shape: []int{3, 2}, data: []float64{1, 1.2, 2.3, 3.4, 4.5, 5.7}})
	got := e.run(t, res(Pad("", x, PadAttrs{Mode: "reflect", Pads: []int{0, 2, 0, 0}})))
	expect(t, got, &nd{shape: []int{3, 4}, data: []float64{1, 1.2, 1, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7}})
	got = e.run(t, res(Pad("", x, PadAttrs{Mode: "edge", Pads: []int{0, 2, 0, 0}})))
	expect(t, got, &nd{shape: []int{3, 4}, data: []float64{1, 1, 1, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7}})
}

func TestShapeErrors(t *testing.T) {
	x := Placeholder("X", 3, 4)
	cases := []struct {
		op string
		r  result
	}{
		{"Transpose", res(Transpose("", x, []int{0}))},
		{"Transpose", res(Transpose("", x, []int{1, 1}))},
		{"Reshape", res(Reshape("", x, []int{-1, -1}, false))},
		{"Reshape", res(Reshape("", x, []int{5, 2}, false))},
		{"Reshape", res(Reshape("", x, []int{5, -1}, false))},
		{"Reshape", res(Reshape("", x, []int{3, 4, 0}, false))},
		{"Reshape", res(Reshape("", x, []int{0, 12}, true))},
		{"Reshape", res(Reshape("", x, []int{-2, 6}, false))},
		{"Flatten", res(Flatten("", x, 3))},
		{"Squeeze", res(Squeeze("", x, []int{0}))},
		{"Squeeze", res(Squeeze("", x, []int{2}))},
		{"Unsqueeze", res(Unsqueeze("", x, nil))},
		{"Unsqueeze", res(Unsqueeze("", x, []int{0, 0}))},
		{"Unsqueeze", res(Unsqueeze("", x, []int{4}))},
		{"Concat", res(Concat("", 0))},
		{"Concat", res(Concat("", 0, x, Placeholder("Y", 3, 5)))},
		{"Concat", res(Concat("", 2, x, x))},
		{"Concat", res(Concat("", 0, x, Placeholder("Y", 3)))},
		{"Slice", res(Slice("", x, SliceAttrs{Starts: []int{0}, Ends: []int{2}, Steps: []int{0}}))},
		{"Slice", res(Slice("", x, SliceAttrs{Starts: []int{3}, Ends: []int{1}}))},
		{"Slice", res(Slice("", x, SliceAttrs{Starts: []int{0}, Ends: []int{1, 2}}))},
		{"Slice", res(Slice("", x, SliceAttrs{Starts: []int{0, 0}, Ends: []int{1, 2}, Axes: []int{1, 1}}))},
		{"Slice", res(Slice("", x, SliceAttrs{Starts: []int{0}, Ends: []int{1}, Axes: []int{2}}))},
		{"Pad", res(Pad("", x, PadAttrs{Pads: []int{1, 1}}))},
		{"Pad", res(Pad("", x, PadAttrs{Mode: "symmetric", Pads: []int{1, 1, 1, 1}}))},
		{"Pad", res(Pad("", x, PadAttrs{Pads: []int{-2, 0, -1, 0}}))},
		{"Pad", res(Pad("", x, PadAttrs{Pads: []int{1}, Axes: []int{5}}))},
	}
	for _, c := range cases {
		expectErr(t, c.op, c.r)
	}
}
