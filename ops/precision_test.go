package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestBF16Products: in a bf16 graph, a product whose reduction sums in
// pairs (a channels-last convolution of an even channel count, a MatMul
// or Gemm of an even inner dimension) reads its weights rounded to
// bfloat16 (a .bf16 constant) and its data through a rounding stage, and
// its value differs from float32's (an NCHW image's stem pairs its W
// taps); one without pairs (an NHWC input of 3 channels, a stem whose W
// taps are dilated, a depthwise convolution, an odd inner dimension,
// ConvTranspose, a MatMul of two computed operands) is float32's exactly,
// with no rounding and no bf16 weights. A Gemm's pairs are summed in its body (GemmAttrs.Dot), as a
// MatMul's are.
func TestBF16Products(t *testing.T) {
	ints := func(v ...int64) graph.Attr { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
	str := func(s string) graph.Attr { return graph.Attr{Kind: graph.AttrString, S: s} }
	one := func(v int64) graph.Attr { return graph.Attr{Kind: graph.AttrInt, I: v} }
	conv3 := map[string]graph.Attr{"kernel_shape": ints(3, 3), "pads": ints(1, 1, 1, 1)}
	with := func(base map[string]graph.Attr, kv ...any) map[string]graph.Attr {
		m := map[string]graph.Attr{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(graph.Attr)
		}
		return m
	}
	for _, c := range []struct {
		name        string
		op          string
		x, w, out   []int
		attrs       map[string]graph.Attr
		wantRounded bool
		sum         string // the product's reduction where checked: pairs sum k/2 terms
		computedW   bool   // w is computed (a graph input here), as attention's operands
	}{
		{"conv NHWC 4 channels", "Conv", []int{1, 5, 5, 4}, []int{8, 4, 3, 3}, []int{1, 5, 5, 8}, with(conv3, DataLayout, str("NHWC")), true, "", false},
		{"stem NCHW to NHWC 3 channels", "Conv", []int{1, 3, 5, 5}, []int{8, 3, 3, 3}, []int{1, 5, 5, 8}, with(conv3, DataLayout, str("NCHW"), OutLayout, str("NHWC")), true, "", false},
		{"stem of a dilated W", "Conv", []int{1, 3, 5, 5}, []int{8, 3, 3, 3}, []int{1, 5, 5, 8}, with(conv3, DataLayout, str("NCHW"), OutLayout, str("NHWC"), "dilations", ints(1, 2), "pads", ints(1, 2, 1, 2)), false, "", false},
		{"NHWC 3 channels", "Conv", []int{1, 5, 5, 3}, []int{8, 3, 3, 3}, []int{1, 5, 5, 8}, with(conv3, DataLayout, str("NHWC")), false, "", false},
		{"depthwise", "Conv", []int{1, 5, 5, 4}, []int{4, 1, 3, 3}, []int{1, 5, 5, 4}, with(conv3, DataLayout, str("NHWC"), "group", one(4)), false, "", false},
		{"grouped, 2 channels a group", "Conv", []int{1, 5, 5, 4}, []int{4, 2, 3, 3}, []int{1, 5, 5, 4}, with(conv3, DataLayout, str("NHWC"), "group", one(2)), true, "", false},
		{"NCHW", "Conv", []int{1, 4, 5, 5}, []int{8, 4, 3, 3}, []int{1, 8, 5, 5}, conv3, false, "", false},
		{"ConvTranspose", "ConvTranspose", []int{1, 4, 3, 3}, []int{4, 2, 2, 2}, []int{1, 2, 6, 6}, map[string]graph.Attr{"strides": ints(2, 2)}, false, "", false},
		{"MatMul k=4", "MatMul", []int{3, 4}, []int{4, 5}, []int{3, 5}, nil, true, "sum(r0:2)", false},
		{"MatMul k=3", "MatMul", []int{3, 3}, []int{3, 5}, []int{3, 5}, nil, false, "", false},
		{"Gemm k=4 transB", "Gemm", []int{1, 4}, []int{6, 4}, []int{1, 6}, map[string]graph.Attr{"transB": one(1)}, true, "sum(r0:2)", false},
		{"Gemm k=4 transA", "Gemm", []int{4, 2}, []int{4, 6}, []int{2, 6}, map[string]graph.Attr{"transA": one(1)}, true, "sum(r0:2)", false},
		{"Gemm k=5", "Gemm", []int{2, 5}, []int{5, 6}, []int{2, 6}, nil, false, "sum(r0:5)", false},
		{"MatMul k=4 of two computed operands", "MatMul", []int{3, 4}, []int{4, 5}, []int{3, 5}, nil, false, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			randoms := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			x := randoms(graph.NumElems(c.x))
			w := randoms(graph.NumElems(c.w))
			build := func(bf16 bool) *graph.Graph {
				g := graph.New("bf16", 17)
				g.BF16 = bf16
				g.AddInput("x", graph.Float32, c.x)
				if c.computedW {
					g.AddInput("w", graph.Float32, c.w)
				} else {
					g.AddConst("w", graph.Float32Tensor(c.w, slices.Clone(w)))
				}
				g.AddNode(&graph.Node{Name: "p", OpType: c.op, Inputs: []string{"x", "w"}, Outputs: []string{"y"}, Attrs: c.attrs})
				g.Values["y"] = &graph.Value{Name: "y", DType: graph.Float32, Shape: c.out}
				g.Outputs = []string{"y"}
				return g
			}
			g := build(true)
			outs, err := LowerNode(g, g.Nodes[0], func(name string) (*te.Tensor, error) { return Placeholder(g, name), nil })
			if err != nil {
				t.Fatal(err)
			}
			d, err := te.NewDAG(outs...)
			if err != nil {
				t.Fatal(err)
			}
			dag := d.String()
			_, weights := g.Values[BFloat16WeightsName("w")]
			if _, padded := g.Values[BFloat16WeightsName("w")+"_w2"]; padded {
				weights = true // an image's stem: its W taps padded to pairs
			}
			if rounded := strings.Contains(dag, "bfloat16(x"); rounded != c.wantRounded || weights != c.wantRounded {
				t.Errorf("data rounded %v, bf16 weights %v; want both %v\n%s", rounded, weights, c.wantRounded, dag)
			}
			if c.sum != "" && !strings.Contains(dag, c.sum) {
				t.Errorf("no %s in\n%s", c.sum, dag)
			}
			inputs := map[string][]float32{"x": x}
			if c.computedW {
				inputs["w"] = w
			}
			got, err := EvalGraph(build(true), inputs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := EvalGraph(build(false), inputs)
			if err != nil {
				t.Fatal(err)
			}
			if equal := slices.Equal(got[0], want[0]); equal == c.wantRounded {
				t.Errorf("bf16 equal to float32: %v, want %v", equal, !c.wantRounded)
			}
		})
	}
}

// TestBF16StemPairs: an NCHW image's first convolution in a bf16 graph
// (pairs of W taps, te.ConvToNHWCDotW: 3 and 7 taps padded to 4 and 8,
// strides 1 and 2, with a bias) equals float32's convolution of the
// operands rounded to bfloat16 (whose products float32 holds exactly)
// within float32's error of a sum taken in another order.
func TestBF16StemPairs(t *testing.T) {
	ints := func(v ...int64) graph.Attr { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
	str := func(s string) graph.Attr { return graph.Attr{Kind: graph.AttrString, S: s} }
	for _, c := range []struct {
		name         string
		x, w, out    []int
		pads, stride []int64
	}{
		{"3x3", []int{1, 3, 6, 7}, []int{8, 3, 3, 3}, []int{1, 6, 7, 8}, []int64{1, 1, 1, 1}, []int64{1, 1}},
		{"7x7 stride 2", []int{1, 3, 16, 15}, []int{16, 3, 7, 7}, []int{1, 8, 8, 16}, []int64{3, 3, 3, 3}, []int64{2, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(len(c.name))))
			randoms := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			x, w, bias := randoms(graph.NumElems(c.x)), randoms(graph.NumElems(c.w)), randoms(c.w[0])
			k := c.w[2:]
			attrs := map[string]graph.Attr{"kernel_shape": ints(int64(k[0]), int64(k[1])), "pads": ints(c.pads...), "strides": ints(c.stride...),
				DataLayout: str("NCHW"), OutLayout: str("NHWC")}
			build := func(bf16 bool, w []float32) *graph.Graph {
				g := graph.New("stem", 17)
				g.BF16 = bf16
				g.AddInput("x", graph.Float32, c.x)
				g.AddConst("w", graph.Float32Tensor(c.w, slices.Clone(w)))
				g.AddConst("b", graph.Float32Tensor([]int{c.w[0]}, slices.Clone(bias)))
				g.AddNode(&graph.Node{Name: "stem", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"y"}, Attrs: attrs})
				g.Values["y"] = &graph.Value{Name: "y", DType: graph.Float32, Shape: c.out}
				g.Outputs = []string{"y"}
				return g
			}
			round := func(v []float32) []float32 {
				r := make([]float32, len(v))
				for i, f := range v {
					r[i] = tir.RoundBFloat16(f)
				}
				return r
			}
			got, err := EvalGraph(build(true, w), map[string][]float32{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			want, err := EvalGraph(build(false, round(w)), map[string][]float32{"x": round(x)})
			if err != nil {
				t.Fatal(err)
			}
			g := build(true, w)
			if _, err := LowerNode(g, g.Nodes[0], func(name string) (*te.Tensor, error) { return Placeholder(g, name), nil }); err != nil {
				t.Fatal(err)
			}
			if _, ok := g.Values[BFloat16WeightsName("w")+"_w2"]; !ok {
				t.Errorf("no W-pair weights %s_w2: the stem did not take pairs of W taps", BFloat16WeightsName("w"))
			}
			for i := range want[0] {
				if d := math.Abs(float64(got[0][i] - want[0][i])); d > 1e-4*(1+math.Abs(float64(want[0][i]))) {
					t.Fatalf("y[%d] = %g, want %g (float32 of the rounded operands)", i, got[0][i], want[0][i])
				}
			}
		})
	}
}

// TestBF16WinogradAlternative: in a bf16 graph a channels-last 3×3
// convolution of an even channel count from 128 on has one alternative, Winograd
// F(2×2) whose transformed weights are stored as bfloat16 and whose GEMMs
// sum pairs (te.WinogradConv2DNHWCPairs), within 2⁻⁶ of the largest
// float32 output; an NCHW one, one of an odd channel count or of 64
// channels has none, and a float32 graph keeps F(4×4).
func TestBF16WinogradAlternative(t *testing.T) {
	ints := func(v ...int64) graph.Attr { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
	str := func(s string) graph.Attr { return graph.Attr{Kind: graph.AttrString, S: s} }
	rng := rand.New(rand.NewPCG(5, 6))
	randoms := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, c := range []struct {
		name   string
		bf16   bool
		layout string
		ch     int
		want   string // the alternative's name, "" for none
		dil    int64  // 0: 1
	}{
		{"bf16 NHWC", true, "NHWC", 128, Winograd(2), 0},
		{"bf16 NCHW", true, "NCHW", 128, "", 0},
		{"bf16 NHWC odd channels", true, "NHWC", 129, "", 0},
		{"bf16 NHWC 64 channels", true, "NHWC", 64, "", 0},
		{"float32 NHWC", false, "NHWC", 16, Winograd(4), 0},
		// by phases: of 4 rows at dilation 2, of 2 at dilation 4 (none)
		{"bf16 NHWC dilated 2", true, "NHWC", 128, Winograd(2), 2},
		{"bf16 NHWC dilated 4", true, "NHWC", 128, "", 4},
		{"float32 NHWC dilated 2", false, "NHWC", 16, Winograd(4), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, y := []int{1, 8, 8, c.ch}, []int{1, 8, 8, c.ch}
			if c.layout == "NCHW" {
				x, y = []int{1, c.ch, 8, 8}, []int{1, c.ch, 8, 8}
			}
			xv, wv := randoms(graph.NumElems(x)), randoms(c.ch*c.ch*9)
			dl := max(c.dil, 1)
			g := graph.New("wino", 17)
			g.BF16 = c.bf16
			g.AddInput("x", graph.Float32, x)
			g.AddConst("w", graph.Float32Tensor([]int{c.ch, c.ch, 3, 3}, wv))
			g.AddNode(&graph.Node{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"y"},
				Attrs: map[string]graph.Attr{"kernel_shape": ints(3, 3), "pads": ints(dl, dl, dl, dl), "dilations": ints(dl, dl), DataLayout: str(c.layout)}})
			g.Values["y"] = &graph.Value{Name: "y", DType: graph.Float32, Shape: y}
			g.Outputs = []string{"y"}
			alts, err := AlternativesOf(g, g.Nodes[0])
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if len(alts) != 0 {
					t.Fatalf("alternatives %v, want none", alts[0].Name)
				}
				return
			}
			if len(alts) != 1 || alts[0].Name != c.want {
				t.Fatalf("%d alternatives, want one %s", len(alts), c.want)
			}
			if !c.bf16 {
				return
			}
			u := g.Values[BFloat16WeightsName(WinogradWeightsName("w", 2))]
			if u == nil || u.Const.DType != graph.BFloat16 {
				t.Fatalf("no bfloat16 transformed weights %s", BFloat16WeightsName(WinogradWeightsName("w", 2)))
			}
			outs, err := alts[0].Lower(func(name string) (*te.Tensor, error) { return Placeholder(g, name), nil })
			if err != nil {
				t.Fatal(err)
			}
			d, err := te.NewDAG(outs...)
			if err != nil {
				t.Fatal(err)
			}
			ins := make([][]float32, len(d.Inputs))
			for i, in := range d.Inputs {
				if in.Name == "x" {
					ins[i] = xv
					continue
				}
				if ins[i], _, err = ConstSlots(g, in.Name); err != nil {
					t.Fatal(err)
				}
			}
			got, err := d.Eval(ins)
			if err != nil {
				t.Fatal(err)
			}
			f := graph.New("direct", 17)
			f.AddInput("x", graph.Float32, x)
			f.AddConst("w", graph.Float32Tensor([]int{c.ch, c.ch, 3, 3}, wv))
			f.AddNode(g.Nodes[0])
			f.Values["y"] = g.Values["y"]
			f.Outputs = []string{"y"}
			want, err := EvalGraph(f, map[string][]float32{"x": xv})
			if err != nil {
				t.Fatal(err)
			}
			scale, worst := 0.0, 0.0
			for i := range want[0] {
				scale = max(scale, math.Abs(float64(want[0][i])))
				worst = max(worst, math.Abs(float64(got[0][i]-want[0][i])))
			}
			if !(worst <= scale/64) || worst == 0 {
				t.Errorf("largest difference %.3g of %.3g: want within 2^-6 and not 0 (rounded)", worst, scale)
			}
		})
	}
}
