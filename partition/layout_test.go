package partition

import (
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// TestLayoutThroughShapeOps: the layout pass (convert-layout) carries the
// channels-last twins through Slice, Pad, a channel shuffle (Reshape to
// [N, G, C/G, H, W], a per-group scale, Transpose of the group axes,
// Reshape back), so that the only transposes left are the one where the
// chain begins (none where a Conv reads an image input: it reads it NCHW
// into a twin), the one the graph output needs and the shuffle's own
// permutation of the channel axes; a model's own Transpose to NHWC
// becomes the twin itself. The converted graph computes what the graph
// computes with the pass off.
func TestLayoutThroughShapeOps(t *testing.T) {
	conv := func(b *tg, out, x string, cin, cout int) string {
		return b.op(out, "Conv", []string{x, b.weight(out+".w", cout, cin, 1, 1)})
	}
	cases := []struct {
		name  string
		opset int
		build func(b *tg, x string) string
		want  string // the ops with the pass on
	}{
		{"slice", 13, func(b *tg, x string) string {
			s := b.op("s", "Slice", []string{conv(b, "c1", x, 8, 8), b.ints("st", 2, 1), b.ints("en", 6, 100), b.ints("ax", 1, -2), b.ints("sp", 1, 2)})
			return conv(b, "c2", s, 4, 4)
		}, "Transpose,Conv,Slice,Conv,Transpose"},
		{"slice without axes", 13, func(b *tg, x string) string {
			s := b.op("s", "Slice", []string{conv(b, "c1", x, 8, 8), b.ints("st", 0, 2), b.ints("en", 1, 6)})
			return conv(b, "c2", s, 4, 4)
		}, "Transpose,Conv,Slice,Conv,Transpose"},
		{"slice attributes", 9, func(b *tg, x string) string {
			s := b.op("s", "Slice", []string{conv(b, "c1", x, 8, 8)}, "starts", []int64{1, 1}, "ends", []int64{7, -1}, "axes", []int64{1, 3})
			return conv(b, "c2", s, 6, 4)
		}, "Transpose,Conv,Slice,Conv,Transpose"},
		{"pad", 13, func(b *tg, x string) string {
			p := b.op("p", "Pad", []string{conv(b, "c1", x, 8, 8), b.ints("pads", 0, 1, 1, 2, 0, 2, 2, 1), b.scalar("pv", 0.5)})
			return conv(b, "c2", p, 11, 4)
		}, "Transpose,Conv,Pad,Conv,Transpose"},
		{"pad reflect", 13, func(b *tg, x string) string {
			p := b.op("p", "Pad", []string{conv(b, "c1", x, 8, 8), b.ints("pads", 0, 0, 2, 1, 0, 0, 1, 2)})
			b.g.Nodes[len(b.g.Nodes)-1].Attrs["mode"] = graph.Attr{Kind: graph.AttrString, S: "reflect"}
			return conv(b, "c2", p, 8, 4)
		}, "Transpose,Conv,Pad,Conv,Transpose"},
		{"pad axes", 18, func(b *tg, x string) string {
			p := b.op("p", "Pad", []string{conv(b, "c1", x, 8, 8), b.ints("pads", 1, 0, 3, 2), "", b.ints("ax", -1, 1)})
			return conv(b, "c2", p, 10, 4)
		}, "Transpose,Conv,Pad,Conv,Transpose"},
		{"channel shuffle", 13, func(b *tg, x string) string {
			y := conv(b, "c1", x, 8, 8)
			g := b.op("g", "Reshape", []string{y, b.ints("gs", 1, 2, 4, 6, 6)})
			g = b.op("gm", "Mul", []string{g, b.weight("gw", 1, 2, 4, 1, 1)})
			s := b.op("sh", "Transpose", []string{g}, "perm", []int64{0, 2, 1, 3, 4})
			m := b.op("m", "Reshape", []string{s, b.ints("ms", 1, -1, 6, 6)})
			return conv(b, "c2", m, 8, 4)
		}, "Transpose,Conv,Reshape,Mul,Transpose,Reshape,Conv,Transpose"},
		{"model transposes to NHWC", 13, func(b *tg, x string) string {
			y := b.op("t", "Transpose", []string{conv(b, "c1", x, 8, 8)}, "perm", []int64{0, 2, 3, 1})
			return b.op("r", "Relu", []string{y})
		}, "Transpose,Conv,Relu"},
		// QuantizeLinear and DequantizeLinear between convolutions (a QDQ
		// model): layout-free per tensor, their axis renamed per channel;
		// no transposes around them.
		{"qdq per tensor", 13, func(b *tg, x string) string {
			b.g.AddConst("zp", &graph.Tensor{DType: graph.Uint8, Shape: []int{}, I64: []int64{120}})
			q := b.op("q", "QuantizeLinear", []string{conv(b, "c1", x, 8, 8), b.scalar("s", 0.02), "zp"})
			return conv(b, "c2", b.op("dq", "DequantizeLinear", []string{q, "s", "zp"}), 8, 4)
		}, "Transpose,Conv,QuantizeLinear,DequantizeLinear,Conv,Transpose"},
		{"qdq per channel", 13, func(b *tg, x string) string {
			b.g.AddConst("zp", &graph.Tensor{DType: graph.Int8, Shape: []int{8}, I64: []int64{-3, 0, 1, 7, -8, 2, 0, 5}})
			s := b.g.FreshName("s")
			b.g.AddConst(s, graph.Float32Tensor([]int{8}, []float32{0.01, 0.02, 0.015, 0.03, 0.011, 0.007, 0.02, 0.05}))
			q := b.op("q", "QuantizeLinear", []string{conv(b, "c1", x, 8, 8), s, "zp"}, "axis", 1)
			return conv(b, "c2", b.op("dq", "DequantizeLinear", []string{q, s, "zp"}, "axis", -3), 8, 4)
		}, "Transpose,Conv,QuantizeLinear,DequantizeLinear,Conv,Transpose"},
		// A Resize kept as arithmetic (ops/resize.go) is layout-free: its
		// scales are permuted with the axes; no transposes around it.
		{"resize bilinear", 13, func(b *tg, x string) string {
			b.g.AddConst("roi", graph.Float32Tensor([]int{0}, nil))
			b.g.AddConst("sc", graph.Float32Tensor([]int{4}, []float32{1, 1, 2, 1.5}))
			r := b.op("rs", "Resize", []string{conv(b, "c1", x, 8, 8), "roi", "sc"}, "mode", "linear")
			return conv(b, "c2", r, 8, 4)
		}, "Transpose,Conv,Resize,Conv,Transpose"},
		{"image input read NCHW", 13, func(b *tg, x string) string {
			b.g.Values[x].Shape = []int{1, 3, 6, 6}
			return conv(b, "c2", conv(b, "c1", x, 3, 8), 8, 4)
		}, "Conv,Conv,Transpose"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := func(layout bool) *graph.Graph {
				b := newTG(c.opset)
				b.g.Opsets[""] = c.opset
				x := b.input("x", 1, 8, 6, 6)
				y := c.build(b, x)
				return b.done(t, map[string]bool{"convert-layout": !layout}, y)
			}
			nchw, nhwc := build(false), build(true)
			var got []string
			for _, n := range nhwc.Nodes {
				got = append(got, n.OpType)
			}
			if s := strings.Join(got, ","); s != c.want {
				t.Errorf("ops %s, want %s", s, c.want)
			}
			for _, n := range nhwc.Nodes {
				if n.OpType == "Transpose" && n.Name == "sh" {
					if p, _ := n.Ints("perm"); len(p) != 5 || p[3] != 4 || p[4] != 3 {
						t.Errorf("the shuffle's twin permutes by %v, want [0 1 2 4 3]", p)
					}
				}
			}
			want, got2 := evalWhole(t, nchw), evalWhole(t, nhwc)
			for i := range want {
				if d := maxDiff(got2[i], want[i]); d > 1e-5 {
					t.Errorf("output %d differs by %g with the layout pass", i, d)
				}
			}
		})
	}
}

// TestLayoutAttributes: a node's data_layout and out_layout must name
// NCHW or NHWC, and only a Conv converts, from NCHW to NHWC; anything else
// is an error that names the node, not a kernel of the wrong layout.
func TestLayoutAttributes(t *testing.T) {
	for _, c := range []struct {
		op, in, out string
		want        string // "" for no error
	}{
		{"Conv", "NCHW", "NHWC", ""},
		{"Conv", "NHWC", "", ""},
		{"Conv", "NHWC", "NCHW", "only a Conv converts, and only from NCHW to NHWC"},
		{"MaxPool", "NCHW", "NHWC", "only a Conv converts"},
		{"Conv", "NCWH", "", `data_layout "NCWH" (NCHW or NHWC)`},
		{"Conv", "NCHW", "CHWN", `out_layout "CHWN" (NCHW or NHWC)`},
	} {
		t.Run(c.op+" "+c.in+" "+c.out, func(t *testing.T) {
			b := newTG(13)
			var in []string
			x := b.input("x", 1, 4, 6, 6) // NCHW, or NHWC of one size fewer
			if c.in == "NHWC" {
				b.g.Values[x].Shape = []int{1, 5, 5, 4}
			}
			if c.op == "Conv" {
				in = []string{x, b.weight("w", 4, 4, 3, 3)}
			} else {
				in = []string{x}
			}
			y := b.op("y", c.op, in, "kernel_shape", []int64{3, 3})
			n := b.g.Nodes[0]
			n.SetAttr(graph.LayoutAttr, graph.Attr{Kind: graph.AttrString, S: c.in})
			if c.out != "" {
				n.SetAttr(graph.OutLayoutAttr, graph.Attr{Kind: graph.AttrString, S: c.out})
			}
			b.g.Values[y].Shape = []int{1, 4, 4, 4} // NCHW, NHWC alike
			if c.in == "NHWC" {
				b.g.Values[y].Shape = []int{1, 3, 3, 4}
			}
			_, err := LowerNode(b.g, n, func(name string) (*te.Tensor, error) {
				if name == "w" {
					return te.Constant(name, 4, 4, 3, 3), nil
				}
				return te.Placeholder(name, b.g.Values[name].Shape...), nil
			})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "y")):
				t.Fatalf("error %v, want one naming node y and containing %q", err, c.want)
			}
		})
	}
}

// TestConvertingConvHasNoWinograd: a Conv from NCHW to NHWC that Winograd
// would otherwise take (16 channels, 3×3, stride 1) gets no alternative:
// the Winograd forms read and write one layout.
func TestConvertingConvHasNoWinograd(t *testing.T) {
	b := newTG(13)
	x := b.input("x", 1, 16, 8, 8)
	y := conv3x3(b, "c", x, 16, 16, false)
	g := b.done(t, nil, y)
	n := g.Nodes[0]
	n.SetAttr(graph.LayoutAttr, graph.Attr{Kind: graph.AttrString, S: "NCHW"})
	n.SetAttr(graph.OutLayoutAttr, graph.Attr{Kind: graph.AttrString, S: "NHWC"})
	g.Values[y].Shape = []int{1, 8, 8, 16}
	p, err := Extract(g, Options{Alternatives: true})
	if err != nil {
		t.Fatal(err)
	}
	if alts := p.Groups[0].Alternatives; len(alts) != 0 {
		t.Errorf("%d alternatives (%s), want none", len(alts), alts[0].Algorithm)
	}
}
