package ops

import (
	"fmt"
	"slices"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// Alternative is another compute definition of one node: the same outputs
// by other arithmetic (Winograd for a 3×3 convolution). Partition gives a
// group whose anchor has alternatives one more task per alternative, tuned
// like any task; the build runs whichever measured fastest.
type Alternative struct {
	// Name names the algorithm and its parameters: "winograd F(4×4,3×3)".
	Name string
	// Lower lowers the node by the algorithm, reading its operands (and
	// the constants the algorithm added to the graph) from src.
	Lower func(src TensorSource) ([]*te.Tensor, error)
}

// HasAlternatives reports whether node n's op has other compute
// definitions (for some nodes; AlternativesOf says which apply to n).
func HasAlternatives(n *graph.Node) bool {
	op := table[n.OpType]
	return op != nil && defaultDomain(n) && op.Alternatives != nil
}

// AlternativesOf returns the alternatives of node n of g (nil where its op
// has none, or none applies to n), adding to g the constants they read the
// first time they are asked for.
func AlternativesOf(g *graph.Graph, n *graph.Node) ([]Alternative, error) {
	if !HasAlternatives(n) {
		return nil, nil
	}
	alts, err := table[n.OpType].Alternatives(g, n)
	if err != nil {
		return nil, fmt.Errorf("%s at node %s: %w", n.OpType, n.Name, err)
	}
	return alts, nil
}

// The one alternative today is Winograd F(m×m, 3×3) for 3×3, stride-1,
// ungrouped 2-D convolutions with constant weights, dilated ones by phases
// (te.WinogradConv2DWith). Its weights are transformed once, when the
// alternative is made, into a new constant value of the graph
// (WinogradWeightsName), which the build stores in the weights file like
// any other.

// Winograd names the Winograd F(m×m, 3×3) algorithm.
func Winograd(m int) string { return fmt.Sprintf("winograd F(%d×%d,3×3)", m, m) }

// WinogradWeightsName is the graph value holding weights w transformed for
// F(m×m, 3×3).
func WinogradWeightsName(w string, m int) string { return fmt.Sprintf("%s.winograd%d", w, m) }

// minWinogradChannels is the fewest input and output channels for which a
// convolution gets a Winograd alternative: below it the transforms cost
// more than the multiplications they save.
const minWinogradChannels = 16

// convAlternatives returns the Winograd alternative of Conv node n, if it
// has one.
func convAlternatives(g *graph.Graph, n *graph.Node) ([]Alternative, error) {
	m := winogradTile(g, n)
	if m == 0 {
		return nil, nil
	}
	dil, err := winogradDilations(n) // checked by winogradTile
	if err != nil {
		return nil, err
	}
	pads, err := winogradPads(n, dil)
	if err != nil {
		return nil, err
	}
	nhwc, _, err := layouts(n) // winogradTile checked they agree
	if err != nil {
		return nil, err
	}
	wName := n.Inputs[1]
	uName := WinogradWeightsName(wName, m)
	if g.BF16 {
		uName = BFloat16WeightsName(uName)
	}
	if _, ok := g.Values[uName]; !ok {
		w := g.Values[wName]
		K, C := w.Shape[0], w.Shape[1]
		u, err := te.WinogradWeights(w.Const.F32, K, C, m)
		if err != nil {
			return nil, err
		}
		t := graph.Float32Tensor([]int{m + 2, m + 2, C, K}, u)
		if g.BF16 {
			// Transformed exactly, then rounded once: what the
			// pairs multiply.
			for i, f := range t.F32 {
				t.F32[i] = tir.RoundBFloat16(f)
			}
			t.DType = graph.BFloat16
		}
		g.AddConst(uName, t)
	}
	lower := func(src TensorSource) ([]*te.Tensor, error) {
		x, err := src(n.Inputs[0])
		if err != nil {
			return nil, err
		}
		u, err := src(uName)
		if err != nil {
			return nil, err
		}
		channel := 1
		if nhwc {
			channel = 3
		}
		if g.BF16 {
			u = floatView(uName+"_f32", u)
		}
		o := te.WinogradOptions{M: m, Pads: pads, Dilations: dil, NHWC: nhwc, Pairs: g.BF16}
		out, err := te.WinogradConv2DWith(n.Outputs[0]+"_winograd", x, u, o)
		if err != nil {
			return nil, n.Errorf("%v", err)
		}
		if b := n.Input(2); b != "" {
			bias, err := src(b)
			if err != nil {
				return nil, err
			}
			conv := out
			out = te.Compute(n.Outputs[0]+"_bias", conv.Shape, func(i []tir.Expr) tir.Expr {
				return tir.AddE(conv.At(i...), bias.At(i[channel]))
			})
		}
		return []*te.Tensor{out}, nil
	}
	return []Alternative{{Name: Winograd(m), Lower: lower}}, nil
}

// minBF16WinogradChannels is the fewest input and output channels for
// which a bf16 convolution gets its Winograd F(2×2) alternative: with 64
// (ResNet-18's 56×56 layers, Zen 5, one thread) the direct pairs measured
// 0.50–0.53 ms tuned against 0.54–0.58 for Winograd, whose transforms
// weigh more against a GEMM of few channels; with 128 to 512 Winograd ran
// 10% to 2× faster.
const minBF16WinogradChannels = 128

// winogradTile returns the m of the Winograd alternative of Conv node n, or
// 0 when n has none: 4 when both output sides are at least 8, else 2.
// Measured with default schedules on a Zen 5 (go run ./bench/conv -fused
// -cpu L -m M, ResNet-18's 56×56 3×3 Conv+Relu, one thread, against
// oneDNN at the same ISA), F(4×4) ran 1.6× F(2×2) natively (AVX-512:
// 1.97 vs 1.21) and 1.5× at x86-64-v3 (AVX2, 16 registers: 1.91 vs
// 1.27), though its 6×6 transforms hold more values than 16 registers:
// no level measured prefers the smaller tile where the larger fits.
//
// In a bf16 graph the alternative is F(2×2) on channels-last data of at
// least minBF16WinogradChannels, an even count (te.WinogradConv2DNHWCPairs: its GEMMs sum pairs of
// bfloat16 products, as the direct form's do): the transforms of F(2×2)
// add and subtract (Bᵀ, Aᵀ) and halve (G), so rounding the transformed
// data and weights to bfloat16 costs about what rounding the operands
// does; F(4×4)'s scale values by up to 10 and 19 before the rounding.
func winogradTile(g *graph.Graph, n *graph.Node) int {
	if len(n.Inputs) < 2 {
		return 0
	}
	x, w := g.Values[n.Inputs[0]], g.Values[n.Inputs[1]]
	out := g.Values[n.Outputs[0]]
	if x == nil || w == nil || out == nil || len(x.Shape) != 4 || len(out.Shape) != 4 {
		return 0
	}
	if w.Const == nil || w.Const.DType != graph.Float32 || !slices.Equal(w.Shape[2:], []int{3, 3}) {
		return 0
	}
	if w.Shape[0] < minWinogradChannels || w.Shape[1] < minWinogradChannels {
		return 0
	}
	if grp, err := n.Int("group", 1); err != nil || grp != 1 {
		return 0
	}
	if ap, err := n.Str("auto_pad", "NOTSET"); err != nil || (ap != "NOTSET" && ap != "") {
		return 0
	}
	if n.HasAttr("strides") {
		v, err := n.Ints("strides")
		if err != nil || slices.ContainsFunc(v, func(s int64) bool { return s != 1 }) {
			return 0
		}
	}
	dil, err := winogradDilations(n)
	if err != nil {
		return 0
	}
	if _, err := winogradPads(n, dil); err != nil {
		return 0
	}
	// A convolution that converts the layout has no Winograd form.
	in, nhwc, err := layouts(n)
	if err != nil || in != nhwc {
		return 0
	}
	oh, ow := out.Shape[2], out.Shape[3]
	if nhwc {
		oh, ow = out.Shape[1], out.Shape[2]
	}
	// A dilated convolution is computed by phases (te.WinogradOptions),
	// each an undilated convolution of the output's every d-th row and
	// column. A phase of fewer than minDilatedPhase rows or columns gets
	// no Winograd form; the others get F(4×4) (in float32), whose tiles of
	// a phase of 4 to 7 rows hold no more padding than F(2×2)'s and
	// transform fewer elements per output (36/16 against 16/4).
	// FCN-ResNet50's layer 4 at dilation 4 (phases of 7×7, 512 channels),
	// default schedules, one thread, Zen 5: F(2×2) 14.5–15.1 ms, F(4×4)
	// 10.3–12.4, the direct convolution 21.2.
	dilated := dil[0] > 1 || dil[1] > 1
	if dilated && ((oh+dil[0]-1)/dil[0] < minDilatedPhase || (ow+dil[1]-1)/dil[1] < minDilatedPhase) {
		return 0
	}
	if g.BF16 {
		if !nhwc || w.Shape[1]%2 != 0 || w.Shape[0] < minBF16WinogradChannels || w.Shape[1] < minBF16WinogradChannels {
			return 0
		}
		return 2
	}
	if dilated {
		return 4
	}
	if oh >= 8 && ow >= 8 {
		return 4
	}
	return 2
}

// minDilatedPhase is the fewest rows and columns a phase of a dilated
// convolution must have for its Winograd form. Where the dilation nears
// the map's size (DeepLab's ASPP: dilation 12 and 24 on a 33×33 map, 3
// and 2 rows a phase) most taps read padding: the direct convolution
// drops those taps (split-borders) and the tiles of so few rows would be
// half padding.
const minDilatedPhase = 4

// winogradDilations returns a 2-D Conv's dilations as [rows, columns].
func winogradDilations(n *graph.Node) ([]int, error) {
	if !n.HasAttr("dilations") {
		return []int{1, 1}, nil
	}
	v, err := n.Ints("dilations")
	if err != nil {
		return nil, err
	}
	if len(v) != 2 || v[0] < 1 || v[1] < 1 {
		return nil, fmt.Errorf("dilations %v", v)
	}
	return []int{int(v[0]), int(v[1])}, nil
}

// winogradPads returns a 2-D Conv's pads as [top, left, bottom, right],
// each 0 to 2·d along an axis of dilation d (what te.WinogradConv2DWith
// takes).
func winogradPads(n *graph.Node, dil []int) ([]int, error) {
	if !n.HasAttr("pads") {
		return []int{0, 0, 0, 0}, nil
	}
	v, err := n.Ints("pads")
	if err != nil {
		return nil, err
	}
	if len(v) != 4 {
		return nil, fmt.Errorf("pads %v", v)
	}
	for i, p := range v {
		if p < 0 || p > 2*int64(dil[i%2]) {
			return nil, fmt.Errorf("pads %v", v)
		}
	}
	return []int{int(v[0]), int(v[1]), int(v[2]), int(v[3])}, nil
}
