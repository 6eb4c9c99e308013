package te

import (
	"fmt"
	"math"
	"testing"
)

func TestReduceOps(t *testing.T) {
	type reduceFn func(name string, x *Tensor, a ReduceAttrs) (*Tensor, error)
	ops := []struct {
		name string
		op   reduceFn
		init float64
		acc  func(a, v float64) float64
		mean bool
	}{
		{"sum", ReduceSum, 0, func(a, v float64) float64 { return a + v }, false},
		{"mean", ReduceMean, 0, func(a, v float64) float64 { return a + v }, true},
		{"max", ReduceMax, math.Inf(-1), math.Max, false},
		{"min", ReduceMin, math.Inf(1), math.Min, false},
	}
	cases := []struct {
		x     []int
		attrs ReduceAttrs
		out   []int
	}{
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{1}, KeepDims: true}, []int{3, 1, 7}},
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{1}}, []int{3, 7}},
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{0, 2}, KeepDims: true}, []int{1, 5, 1}},
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{2, 0}}, []int{5}},
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{-1}, KeepDims: true}, []int{3, 5, 1}},
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{-3, -2}}, []int{7}},
		{[]int{3, 5, 7}, DefaultReduceAttrs(), []int{1, 1, 1}},
		{[]int{3, 5, 7}, ReduceAttrs{}, []int{}},
		{[]int{3, 5, 7}, ReduceAttrs{Axes: []int{0, 1, 2}}, []int{}},
		{[]int{4, 1024}, ReduceAttrs{Axes: []int{1}}, []int{4}},
		{[]int{6}, ReduceAttrs{Axes: []int{0}, KeepDims: true}, []int{1}},
		{[]int{2, 1, 3}, ReduceAttrs{Axes: []int{1}}, []int{2, 3}},
	}
	for _, o := range ops {
		for _, c := range cases {
			t.Run(fmt.Sprint(o.name, c.x, c.attrs), func(t *testing.T) {
				e := newEnv(20)
				x, xv := e.in("X", c.x...)
				got := e.run(t, res(o.op("", x, c.attrs)))
				axes := map[int]bool{}
				for _, a := range c.attrs.Axes {
					axes[(a+len(c.x))%len(c.x)] = true
				}
				if len(axes) == 0 {
					for i := range c.x {
						axes[i] = true
					}
				}
				want := zeros(c.out...)
				for i := range want.data {
					want.data[i] = o.init
				}
				count := zeros(c.out...)
				eachIndex(c.x, func(idx []int) {
					var oi []int
					for i, v := range idx {
						switch {
						case !axes[i]:
							oi = append(oi, v)
						case c.attrs.KeepDims:
							oi = append(oi, 0)
						}
					}
					k := offsetOf(c.out, oi)
					want.data[k] = o.acc(want.data[k], xv.at(idx...))
					count.data[k]++
				})
				if o.mean {
					for i := range want.data {
						want.data[i] /= count.data[i]
					}
				}
				expect(t, got, want)
			})
		}
	}
}

func TestReduceNoop(t *testing.T) {
	e := newEnv(21)
	x, xv := e.in("X", 3, 4)
	for _, op := range []func(string, *Tensor, ReduceAttrs) (*Tensor, error){ReduceSum, ReduceMean, ReduceMax, ReduceMin} {
		expect(t, e.run(t, res(op("", x, ReduceAttrs{NoopWithEmptyAxes: true, KeepDims: true}))), xv)
	}
	// a scalar reduces to itself
	s, sv := e.in("S")
	expect(t, e.run(t, res(ReduceSum("", s, DefaultReduceAttrs()))), sv)
}

func TestReduceStages(t *testing.T) {
	x := Placeholder("X", 3, 4)
	out, _ := ReduceMean("rm", x, ReduceAttrs{Axes: []int{1}})
	if got := stageNames(t, out); fmt.Sprint(got) != "[rm_sum rm]" {
		t.Fatalf("stages %v", got)
	}
	out, _ = ReduceSum("", x, ReduceAttrs{Axes: []int{1}})
	if got := stageNames(t, out); fmt.Sprint(got) != "[reduce_sum]" {
		t.Fatalf("stages %v", got)
	}
}

func TestReduceErrors(t *testing.T) {
	x := Placeholder("X", 3, 4)
	expectErr(t, "ReduceSum", res(ReduceSum("", x, ReduceAttrs{Axes: []int{2}})))
	expectErr(t, "ReduceMean", res(ReduceMean("", x, ReduceAttrs{Axes: []int{1, -1}})))
	expectErr(t, "ReduceMax", res(ReduceMax("", x, ReduceAttrs{Axes: []int{-3}})))
	expectErr(t, "ReduceMin", res(ReduceMin("", nil, ReduceAttrs{})))
}
