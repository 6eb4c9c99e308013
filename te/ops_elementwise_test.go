package te

import (
	"math"
	"testing"
)

func TestUnaryOps(t *testing.T) {
	lo, hi := float32(-0.5), float32(1.25)
	bad := float32(-1)
	clampRef := func(l, h *float32) func(float64) float64 {
		return func(x float64) float64 {
			if l != nil {
				x = math.Max(x, float64(*l))
			}
			if h != nil {
				x = math.Min(x, float64(*h))
			}
			return x
		}
	}
	hsig := func(a, b float64) func(float64) float64 {
		return func(x float64) float64 { return math.Max(0, math.Min(1, a*x+b)) }
	}
	cases := []struct {
		name     string
		op       func(x *Tensor) (*Tensor, error)
		ref      func(float64) float64
		positive bool
	}{
		{"relu", func(x *Tensor) (*Tensor, error) { return Relu("", x) }, func(x float64) float64 { return math.Max(x, 0) }, false},
		{"leaky_relu", func(x *Tensor) (*Tensor, error) { return LeakyRelu("", x, 0.1) },
			func(x float64) float64 {
				if x < 0 {
					return float64(float32(0.1)) * x
				}
				return x
			}, false},
		{"leaky_relu_default", func(x *Tensor) (*Tensor, error) { return LeakyRelu("", x, 0.01) },
			func(x float64) float64 { return math.Max(x, 0) + float64(float32(0.01))*math.Min(x, 0) }, false},
		{"sigmoid", func(x *Tensor) (*Tensor, error) { return Sigmoid("", x) }, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, false},
		{"hard_sigmoid", func(x *Tensor) (*Tensor, error) { return HardSigmoid("", x, 0.2, 0.5) }, hsig(0.2, 0.5), false},
		{"hard_sigmoid_attrs", func(x *Tensor) (*Tensor, error) { return HardSigmoid("", x, 0.5, 0.6) }, hsig(0.5, 0.6), false},
		{"hard_swish", func(x *Tensor) (*Tensor, error) { return HardSwish("", x) },
			func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }, false},
		{"tanh", func(x *Tensor) (*Tensor, error) { return Tanh("", x) }, math.Tanh, false},
		{"exp", func(x *Tensor) (*Tensor, error) { return Exp("", x) }, math.Exp, false},
		{"log", func(x *Tensor) (*Tensor, error) { return Log("", x) }, math.Log, true},
		{"sqrt", func(x *Tensor) (*Tensor, error) { return Sqrt("", x) }, math.Sqrt, true},
		{"erf", func(x *Tensor) (*Tensor, error) { return Erf("", x) }, math.Erf, false},
		{"gelu", func(x *Tensor) (*Tensor, error) { return Gelu("", x, "") },
			func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt(2))) }, false},
		{"gelu_none", func(x *Tensor) (*Tensor, error) { return Gelu("", x, "none") },
			func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt(2))) }, false},
		{"gelu_tanh", func(x *Tensor) (*Tensor, error) { return Gelu("", x, "tanh") },
			func(x float64) float64 {
				return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
			}, false},
		{"clip", func(x *Tensor) (*Tensor, error) { return Clip("", x, &lo, &hi) }, clampRef(&lo, &hi), false},
		{"clip_min_only", func(x *Tensor) (*Tensor, error) { return Clip("", x, &lo, nil) }, clampRef(&lo, nil), false},
		{"clip_max_only", func(x *Tensor) (*Tensor, error) { return Clip("", x, nil, &hi) }, clampRef(nil, &hi), false},
		{"clip_none", func(x *Tensor) (*Tensor, error) { return Clip("", x, nil, nil) }, clampRef(nil, nil), false},
		{"clip_min_above_max", func(x *Tensor) (*Tensor, error) { return Clip("", x, &hi, &bad) },
			func(float64) float64 { return -1 }, false},
		{"neg", func(x *Tensor) (*Tensor, error) { return Neg("", x) }, func(x float64) float64 { return -x }, false},
		{"abs", func(x *Tensor) (*Tensor, error) { return Abs("", x) }, math.Abs, false},
		{"reciprocal", func(x *Tensor) (*Tensor, error) { return Reciprocal("", x) }, func(x float64) float64 { return 1 / x }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, shape := range [][]int{{3, 5, 7}, {}, {11}} {
				e := newEnv(1)
				var v *nd
				if c.positive {
					v = e.random(0.01, 4, shape...)
				} else {
					v = e.random(-4, 4, shape...)
				}
				x, _ := e.feed("X", v)
				got := e.run(t, res(c.op(x)))
				want := zeros(shape...)
				for i, a := range v.data {
					want.data[i] = c.ref(a)
				}
				expect(t, got, want)
			}
		})
	}
}

func TestUnaryNaN(t *testing.T) {
	e := newEnv(2)
	v := &nd{shape: []int{4}, data: []float64{math.NaN(), -1, 0, math.Inf(1)}}
	x, _ := e.feed("X", v)
	got := e.run(t, res(Relu("", x)))
	expect(t, got, &nd{shape: []int{4}, data: []float64{math.NaN(), 0, 0, math.Inf(1)}})
	got = e.run(t, res(LeakyRelu("", x, 0.5)))
	expect(t, got, &nd{shape: []int{4}, data: []float64{math.NaN(), -0.5, 0, math.Inf(1)}})
}

func TestBinaryOps(t *testing.T) {
	ops := []struct {
		name     string
		op       func(a, b *Tensor) (*Tensor, error)
		ref      func(a, b float64) float64
		positive bool // base of Pow
	}{
		{"add", func(a, b *Tensor) (*Tensor, error) { return Add("", a, b) }, func(a, b float64) float64 { return a + b }, false},
		{"sub", func(a, b *Tensor) (*Tensor, error) { return Sub("", a, b) }, func(a, b float64) float64 { return a - b }, false},
		{"mul", func(a, b *Tensor) (*Tensor, error) { return Mul("", a, b) }, func(a, b float64) float64 { return a * b }, false},
		{"div", func(a, b *Tensor) (*Tensor, error) { return Div("", a, b) }, func(a, b float64) float64 { return a / b }, false},
		{"pow", func(a, b *Tensor) (*Tensor, error) { return Pow("", a, b) }, math.Pow, true},
		{"max", func(a, b *Tensor) (*Tensor, error) { return Max("", a, b) }, math.Max, false},
		{"min", func(a, b *Tensor) (*Tensor, error) { return Min("", a, b) }, math.Min, false},
	}
	shapes := []struct{ a, b, out []int }{
		{[]int{3, 4, 5}, []int{3, 4, 5}, []int{3, 4, 5}},
		{[]int{3, 1, 5}, []int{4, 1}, []int{3, 4, 5}},
		{[]int{5}, []int{2, 3, 5}, []int{2, 3, 5}},
		{[]int{}, []int{2, 3}, []int{2, 3}},
		{[]int{2, 3}, []int{}, []int{2, 3}},
		{[]int{2, 1}, []int{1, 3}, []int{2, 3}},
		{[]int{1}, []int{3, 1, 1}, []int{3, 1, 1}},
		{[]int{2, 1, 4, 1}, []int{3, 1, 5}, []int{2, 3, 4, 5}},
	}
	for _, o := range ops {
		for _, s := range shapes {
			t.Run(o.name, func(t *testing.T) {
				e := newEnv(3)
				var av *nd
				if o.positive {
					av = e.random(0.1, 3, s.a...)
				} else {
					av = e.random(-3, 3, s.a...)
				}
				a, _ := e.feed("A", av)
				b, bv := e.in("B", s.b...)
				got := e.run(t, res(o.op(a, b)))
				want := zeros(s.out...)
				eachIndex(s.out, func(idx []int) {
					want.set(o.ref(av.at(bcastIndex(s.a, idx)...), bv.at(bcastIndex(s.b, idx)...)), idx...)
				})
				expect(t, got, want)
			})
		}
	}
}

func TestPowNegativeBase(t *testing.T) {
	e := newEnv(4)
	a, _ := e.feed("A", &nd{shape: []int{4}, data: []float64{-2, -1.5, 3, -3}})
	b, _ := e.feed("B", &nd{shape: []int{4}, data: []float64{2, 3, 0.5, 0}})
	expect(t, e.run(t, res(Pow("", a, b))), &nd{shape: []int{4}, data: []float64{4, -3.375, math.Sqrt(3), 1}})
}

func TestVariadicMaxMin(t *testing.T) {
	cases := []struct {
		shapes [][]int
		out    []int
	}{
		{[][]int{{3, 4}}, []int{3, 4}},
		{[][]int{{3, 4}, {3, 4}}, []int{3, 4}},
		{[][]int{{3, 1, 5}, {4, 1}, {5}}, []int{3, 4, 5}},
		{[][]int{{2, 3}, {}, {1, 3}, {2, 1}}, []int{2, 3}},
	}
	for _, c := range cases {
		e := newEnv(5)
		var xs []*Tensor
		var vs []*nd
		for i, s := range c.shapes {
			x, v := e.in(string(rune('A'+i)), s...)
			xs = append(xs, x)
			vs = append(vs, v)
		}
		for _, isMax := range []bool{true, false} {
			var out *Tensor
			var err error
			if isMax {
				out, err = Max("", xs...)
			} else {
				out, err = Min("", xs...)
			}
			got := e.run(t, result{out, err})
			want := zeros(c.out...)
			eachIndex(c.out, func(idx []int) {
				acc := vs[0].at(bcastIndex(c.shapes[0], idx)...)
				for k := 1; k < len(vs); k++ {
					v := vs[k].at(bcastIndex(c.shapes[k], idx)...)
					if isMax {
						acc = math.Max(acc, v)
					} else {
						acc = math.Min(acc, v)
					}
				}
				want.set(acc, idx...)
			})
			expect(t, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	cases := []struct{ in, shape, out []int }{
		{[]int{3, 1}, []int{2, 1, 6}, []int{2, 3, 6}},
		{[]int{3, 1}, []int{3, 4}, []int{3, 4}},
		{[]int{1, 4}, []int{1}, []int{1, 4}},
		{[]int{}, []int{2, 2}, []int{2, 2}},
	}
	for _, c := range cases {
		e := newEnv(6)
		x, v := e.in("X", c.in...)
		got := e.run(t, res(Expand("", x, c.shape)))
		want := zeros(c.out...)
		eachIndex(c.out, func(idx []int) { want.set(v.at(bcastIndex(c.in, idx)...), idx...) })
		expect(t, got, want)
	}
}

func TestElementwiseErrors(t *testing.T) {
	a, b := Placeholder("A", 3, 4), Placeholder("B", 3, 5)
	expectErr(t, "Add", res(Add("", a, b)))
	expectErr(t, "Max", res(Max("", a, Placeholder("C", 4), b)))
	expectErr(t, "Min", res(Min("")))
	expectErr(t, "Gelu", res(Gelu("", a, "fast")))
	expectErr(t, "Relu", res(Relu("", nil)))
	expectErr(t, "Pow", res(Pow("", a, nil)))
	expectErr(t, "Expand", res(Expand("", a, []int{2, 3})))
}

func TestElementwiseNames(t *testing.T) {
	x := Placeholder("X", 2)
	r, _ := Relu("", x)
	s, _ := Sigmoid("act", x)
	if r.Name != "relu" || s.Name != "act" {
		t.Fatalf("names %q %q", r.Name, s.Name)
	}
}
