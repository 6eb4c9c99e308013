package partition

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
)

// TestFitPoly: the polynomials of degree one in each symbol come back from
// their values at the grid of SamplePoints, and are checked at the point
// after it; a value of higher degree, or a fraction, is refused.
func TestFitPoly(t *testing.T) {
	one := []Symbol{{"N", 1, 16}}
	two := []Symbol{{"B", 1, 8}, {"S", 16, 256}}
	cases := []struct {
		syms []Symbol
		f    func(v map[string]int) float64
		want string // "" for no fit
	}{
		{one, func(v map[string]int) float64 { return 49 * float64(v["N"]) }, "49·N"},
		{one, func(v map[string]int) float64 { return 100 - float64(v["N"]) }, "-N + 100"},
		{one, func(v map[string]int) float64 { return 7 }, "7"},
		{one, func(v map[string]int) float64 { return float64(v["N"] * v["N"]) }, ""},
		{one, func(v map[string]int) float64 { return float64((v["N"] + 1) / 2) }, ""},
		{two, func(v map[string]int) float64 { return float64(64*v["B"]*v["S"] + 1) }, "64·B·S + 1"},
		{two, func(v map[string]int) float64 { return float64(2*v["B"] + 3*v["S"]) }, "2·B + 3·S"},
		{two, func(v map[string]int) float64 { return float64(v["B"] * v["S"] * v["S"]) }, ""},
	}
	for _, c := range cases {
		points, err := SamplePoints(c.syms)
		if err != nil {
			t.Fatal(err)
		}
		grid := 1 << len(c.syms)
		p, err := fitAll(c.syms, points, grid, func(i int) (float64, bool) { return c.f(points[i]), true })
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%v: fitted %s, want an error", c.syms, p)
		case c.want != "" && err != nil:
			t.Errorf("%v: %v, want %s", c.syms, err, c.want)
		case c.want != "" && p.String() != c.want:
			t.Errorf("%v: fitted %s, want %s", c.syms, p, c.want)
		}
	}
}

// TestSamplePoints: three values per symbol, all above 1, then the
// corners of the ranges; a range without three values above 1 is refused
// with the advice to bind the dimension.
func TestSamplePoints(t *testing.T) {
	points, err := SamplePoints([]Symbol{{"B", 1, 8}, {"S", 16, 256}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range points {
		got = append(got, valuesString([]Symbol{{Name: "B"}, {Name: "S"}}, p))
	}
	want := []string{"B=2, S=16", "B=3, S=16", "B=2, S=17", "B=3, S=17", "B=4, S=18", "B=1, S=16", "B=8, S=16", "B=1, S=256", "B=8, S=256"}
	if !slices.Equal(got, want) {
		t.Errorf("points %q, want %q", got, want)
	}
	if _, err := SamplePoints([]Symbol{{"N", 1, 3}}); err == nil || !strings.Contains(err.Error(), "bind N to each value") {
		t.Errorf("N=1..3: %v", err)
	}
}

// TestTokens: numbers are cut out of a canonical form, the digits of
// names (T3, i0) are not, and floats keep their fraction and exponent.
func TestTokens(t *testing.T) {
	var nums []string
	for _, tok := range tokens("T3[1, 49] = sum[3] (T0[i0, r0]*5e-05) + 0.25 - x1y2\n") {
		if tok.number {
			nums = append(nums, tok.text)
		}
	}
	if want := []string{"1", "49", "3", "5e-05", "0.25"}; !slices.Equal(nums, want) {
		t.Errorf("numbers %q, want %q", nums, want)
	}
	var text strings.Builder
	for _, tok := range tokens("T3[1, 49] = x") {
		text.WriteString(tok.text)
	}
	if text.String() != "T3[1, 49] = x" {
		t.Errorf("tokens join to %q", text.String())
	}
}

// samplePlans extracts the plan of build at every sample point of syms.
func samplePlans(t *testing.T, syms []Symbol, build func(b *tg, v map[string]int) string) []Sample {
	t.Helper()
	points, err := SamplePoints(syms)
	if err != nil {
		t.Fatal(err)
	}
	var samples []Sample
	for _, p := range points {
		b := newTG(13)
		g := b.done(t, map[string]bool{}, build(b, p))
		plan, err := Extract(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, Sample{Values: p, Plan: plan})
	}
	return samples
}

// TestSymbolic: a small CNN on a batch of N images has the same tasks at
// every N, their output shapes [N, ...], their keys the same from one
// model to another and different for another range; a convolution of
// stride 2 along a dynamic height is refused, naming its group, and so is
// a graph whose fusion changes with N, or whose shapes do at N=1.
func TestSymbolic(t *testing.T) {
	cnn := func(b *tg, v map[string]int) string {
		x := b.input("x", v["N"], 3, 8, 8)
		y := b.op("r", "Relu", []string{conv3x3(b, "c", x, 3, 8, true)})
		p := b.op("p", "GlobalAveragePool", []string{y})
		f := b.op("f", "Flatten", []string{p}, "axis", 1)
		return b.op("fc", "Gemm", []string{f, b.weight("fc.w", 4, 8)}, "transB", 1)
	}
	syms := []Symbol{{"N", 1, 16}}
	sp, err := Symbolic(syms, samplePlans(t, syms, cnn))
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, st := range sp.Tasks {
		dims := make([]string, len(st.Output))
		for i, p := range st.Output {
			dims[i] = p.String()
		}
		outs = append(outs, st.Ops+" ["+strings.Join(dims, ",")+"]")
		if !st.Dynamic() || !strings.Contains(st.Form, "⟨N⟩") {
			t.Errorf("task %s: form without ⟨N⟩:\n%s", st.Ops, st.Form)
		}
	}
	// The image has 3 channels: the Conv reads it NCHW into channels-last.
	want := []string{"Conv+Relu [N,8,8,8]", "GlobalAveragePool [N,1,1,8]", "Reshape+Gemm [N,4]"}
	if !slices.Equal(outs, want) {
		t.Errorf("tasks %q, want %q", outs, want)
	}
	if len(sp.Groups) != 3 {
		t.Errorf("groups %v", sp.Groups)
	}
	again, err := Symbolic(syms, samplePlans(t, syms, cnn))
	if err != nil || again.Tasks[0].Key != sp.Tasks[0].Key {
		t.Errorf("the same model again: %v, key %s against %s", err, again.Tasks[0].Key, sp.Tasks[0].Key)
	}
	wider := []Symbol{{"N", 1, 32}}
	if other, err := Symbolic(wider, samplePlans(t, wider, cnn)); err != nil || other.Tasks[0].Key == sp.Tasks[0].Key {
		t.Errorf("another range: %v, the same key %s", err, sp.Tasks[0].Key)
	}

	strided := func(b *tg, v map[string]int) string {
		x := b.input("x", 1, 3, v["H"], 8)
		return b.op("c", "Conv", []string{x, b.weight("c.w", 8, 3, 3, 3)}, "strides", []int64{2, 2})
	}
	hs := []Symbol{{"H", 8, 64}}
	if _, err := Symbolic(hs, samplePlans(t, hs, strided)); err == nil || !strings.Contains(err.Error(), "group 0 (Conv)") || !strings.Contains(err.Error(), "not a polynomial") {
		t.Errorf("stride 2 along H: %v", err)
	}

	changing := func(b *tg, v map[string]int) string {
		x := b.input("x", v["N"], 4)
		if v["N"] > 3 {
			return b.op("y", "Relu", []string{b.op("s", "Sigmoid", []string{x})})
		}
		return b.op("y", "Relu", []string{x})
	}
	if _, err := Symbolic(syms, samplePlans(t, syms, changing)); err == nil || !strings.Contains(err.Error(), "N=4") {
		t.Errorf("a plan that changes with N: %v", err)
	}

	// Squeeze without axes drops the batch axis too at N=1: the corner
	// N=1 writes [4], not [N,4].
	squeeze := func(b *tg, v map[string]int) string {
		x := b.input("x", v["N"], 1, 4)
		b.g.AddNode(&graph.Node{Name: "sq", OpType: "Squeeze", Inputs: []string{x}, Outputs: []string{"sq"}})
		return b.op("y", "Relu", []string{"sq"})
	}
	if _, err := Symbolic(syms, samplePlans(t, syms, squeeze)); err == nil || !strings.Contains(err.Error(), "writes [4] at N=1") {
		t.Errorf("Squeeze at N=1: %v", err)
	}
}

// FuzzTokens: the tokens of any text join back to it, and every number
// token is a float's syntax (1e700 too, out of float64's range).
func FuzzTokens(f *testing.F) {
	f.Add("T3[1, 49] = sum[3] (T0[i0, r0]*5e-05) + 0.25\n")
	f.Add("1e+2x 3.5.6 _9 a1b2 7E-")
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		for _, tok := range tokens(s) {
			b.WriteString(tok.text)
			if tok.number {
				if _, err := strconv.ParseFloat(tok.text, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
					t.Errorf("number token %q of %q: %v", tok.text, s, err)
				}
			}
		}
		if b.String() != s {
			t.Errorf("tokens of %q join to %q", s, b.String())
		}
	})
}
