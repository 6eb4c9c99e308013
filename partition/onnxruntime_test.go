package partition

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/te"
)

// TestAgainstOnnxruntime checks ops against onnxruntime-node where ONNX
// 1.12's backend tests leave them out: CumSum and Einsum (whose tests are
// float64 only), Resize's later opsets and legacy rounding, ConvTranspose's
// groups with dilations and output_shape, the scatters' reductions,
// GatherND's batch dimensions, and the recurrent ops' rarer attributes
// (onnxruntime has no batch-major layout for them).
// Each case is a one-node model with a float32 input x (its other operands
// constants), evaluated by Tessera's reference evaluator and by
// bench/ort/run.mjs. scripts/deps.sh installs node and onnxruntime-node.
func TestAgainstOnnxruntime(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found: scripts/deps.sh installs nodejs and onnxruntime-node (bench/ort)")
	}
	if _, err := os.Stat("../bench/ort/node_modules/onnxruntime-node/package.json"); err != nil {
		t.Skip("onnxruntime-node not installed: scripts/deps.sh installs it into bench/ort/node_modules")
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	sem := make(chan bool, 2)
	for _, c := range ortCases() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- true
			defer func() { <-sem }()
			if msg := c.check(dir); msg != "" {
				t.Errorf("%s: %s", c.name, msg)
			}
		}()
	}
	wg.Wait()
}

type ortCase struct {
	name   string
	opset  int
	op     string
	x      []int // the input's shape
	consts map[string]*graph.Tensor
	ins    []string // the inputs after x ("" omits one)
	attrs  map[string]graph.Attr
	nout   int // outputs (1 when 0)
}

func sAttr(v string) graph.Attr       { return graph.Attr{Kind: graph.AttrString, S: v} }
func fsAttr(v ...float32) graph.Attr  { return graph.Attr{Kind: graph.AttrFloats, Floats: v} }
func f32s(v ...float32) *graph.Tensor { return graph.Float32Tensor([]int{len(v)}, v) }
func i64s(v ...int64) *graph.Tensor   { return graph.Int64Tensor([]int{len(v)}, v) }
func scaled(t *graph.Tensor, k float32) *graph.Tensor {
	for i := range t.F32 {
		t.F32[i] *= k
	}
	return t
}
func shaped(t *graph.Tensor, shape ...int) *graph.Tensor {
	t.Shape = shape
	return t
}

// randT is a float32 tensor of values in [-1, 1) from a fixed seed.
func randT(seed int64, shape ...int) *graph.Tensor {
	rng := rand.New(rand.NewSource(seed))
	v := make([]float32, graph.NumElems(shape))
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return graph.Float32Tensor(shape, v)
}

func ortCases() []ortCase {
	empty := graph.Float32Tensor([]int{0}, nil)
	type attrs = map[string]graph.Attr
	type consts = map[string]*graph.Tensor
	cases := []ortCase{
		// CumSum
		{"cumsum_exclusive_reverse", 14, "CumSum", []int{7}, consts{"a": i64s(0)}, []string{"a"}, attrs{"exclusive": intA(1), "reverse": intA(1)}, 0},
		{"cumsum_3d_negative_axis", 14, "CumSum", []int{2, 5, 3}, consts{"a": shaped(i64s(-2))}, []string{"a"}, nil, 0},
		// Einsum
		{"einsum_batch_matmul", 12, "Einsum", []int{2, 3, 4}, consts{"b": randT(1, 2, 4, 5)}, []string{"b"}, attrs{"equation": sAttr("bij,bjk->bik")}, 0},
		{"einsum_attention_scores", 12, "Einsum", []int{1, 2, 3, 4}, consts{"k": randT(2, 1, 2, 5, 4)}, []string{"k"}, attrs{"equation": sAttr("bhqd,bhkd->bhqk")}, 0},
		{"einsum_diagonal", 12, "Einsum", []int{3, 4, 4}, nil, nil, attrs{"equation": sAttr("...ii ->...i")}, 0},
		{"einsum_transpose", 12, "Einsum", []int{3, 4}, nil, nil, attrs{"equation": sAttr("ij->ji")}, 0},
		{"einsum_sum_all", 12, "Einsum", []int{3, 4}, nil, nil, attrs{"equation": sAttr("ij->")}, 0},
		{"einsum_outer", 12, "Einsum", []int{3}, consts{"v": randT(3, 4)}, []string{"v"}, attrs{"equation": sAttr("i,j->ij")}, 0},
		{"einsum_implicit", 12, "Einsum", []int{3, 4}, consts{"m": randT(4, 4, 2)}, []string{"m"}, attrs{"equation": sAttr("ij,jk")}, 0},
		{"einsum_ellipsis_broadcast", 12, "Einsum", []int{2, 3, 4}, consts{"m": randT(5, 1, 4, 2)}, []string{"m"}, attrs{"equation": sAttr("...ij,...jk->...ik")}, 0},
		// Resize beyond the backend tests
		{"resize19_half_pixel_symmetric", 19, "Resize", []int{1, 1, 5, 4}, consts{"roi": empty, "sc": f32s(1, 1, 0.6, 1.7)}, []string{"roi", "sc"}, attrs{"mode": sAttr("linear"), "coordinate_transformation_mode": sAttr("half_pixel_symmetric")}, 0},
		{"resize18_axes_not_larger_cubic", 18, "Resize", []int{1, 2, 5, 4}, consts{"sz": i64s(3, 7)}, []string{"", "", "sz"}, attrs{"mode": sAttr("cubic"), "axes": ints(2, 3), "keep_aspect_ratio_policy": sAttr("not_larger")}, 0},
		{"resize18_not_smaller_nearest", 18, "Resize", []int{1, 1, 5, 4}, consts{"sz": i64s(1, 1, 3, 7)}, []string{"", "", "sz"}, attrs{"keep_aspect_ratio_policy": sAttr("not_smaller")}, 0},
		{"resize10_nearest_down", 10, "Resize", []int{1, 1, 6, 5}, consts{"sc": f32s(1, 1, 0.5, 0.6)}, []string{"sc"}, nil, 0},
		{"resize10_linear_up", 10, "Resize", []int{1, 1, 3, 4}, consts{"sc": f32s(1, 1, 2, 1.5)}, []string{"sc"}, attrs{"mode": sAttr("linear")}, 0},
		{"resize13_crop_scales_extrapolation", 13, "Resize", []int{1, 1, 4, 5}, consts{"roi": f32s(0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), "sc": f32s(1, 1, 1.5, 0.8)}, []string{"roi", "sc"},
			attrs{"mode": sAttr("linear"), "coordinate_transformation_mode": sAttr("tf_crop_and_resize"), "extrapolation_value": floatA(10)}, 0},
		{"resize11_round_prefer_ceil_down", 11, "Resize", []int{1, 1, 7, 5}, consts{"roi": empty, "sc": f32s(1, 1, 0.43, 0.7)}, []string{"roi", "sc"}, attrs{"nearest_mode": sAttr("round_prefer_ceil")}, 0},
		{"resize13_cubic_exclude_outside_asymmetric", 13, "Resize", []int{1, 1, 3, 4}, consts{"sc": f32s(1, 1, 2.5, 2)}, []string{"", "sc"},
			attrs{"mode": sAttr("cubic"), "exclude_outside": intA(1), "coordinate_transformation_mode": sAttr("asymmetric"), "cubic_coeff_a": floatA(-0.5)}, 0},
		{"upsample9_linear", 9, "Upsample", []int{1, 1, 3, 4}, consts{"sc": f32s(1, 1, 2, 2)}, []string{"sc"}, attrs{"mode": sAttr("linear")}, 0},
		{"upsample7_nearest", 7, "Upsample", []int{1, 2, 3, 2}, nil, nil, attrs{"scales": fsAttr(1, 1, 3, 2)}, 0},
		// ConvTranspose
		{"convtranspose_group_dilation_output_padding", 11, "ConvTranspose", []int{1, 4, 5, 6}, consts{"w": randT(6, 4, 3, 3, 3), "b": randT(7, 6)}, []string{"w", "b"},
			attrs{"group": intA(2), "strides": ints(2, 2), "dilations": ints(1, 2), "pads": ints(1, 0, 1, 1), "output_padding": ints(1, 0)}, 0},
		{"convtranspose_output_shape_same_lower", 11, "ConvTranspose", []int{1, 2, 4, 3}, consts{"w": randT(8, 2, 3, 2, 2)}, []string{"w"},
			attrs{"strides": ints(2, 3), "output_shape": ints(8, 9), "auto_pad": sAttr("SAME_LOWER")}, 0},
		{"convtranspose3d", 11, "ConvTranspose", []int{1, 2, 3, 3, 2}, consts{"w": randT(9, 2, 2, 2, 3, 2)}, []string{"w"}, attrs{"strides": ints(1, 2, 2)}, 0},
		// Scatter and GatherND
		{"scatter_elements_max", 18, "ScatterElements", []int{4, 5}, consts{"i": shaped(i64s(1, 3, 1, 0, -1, 2), 2, 3), "u": randT(10, 2, 3)}, []string{"i", "u"}, attrs{"axis": intA(1), "reduction": sAttr("max")}, 0},
		{"scatter_elements_min_axis0", 18, "ScatterElements", []int{4, 3}, consts{"i": shaped(i64s(1, 1, 3, 1, 0, 3), 2, 3), "u": randT(11, 2, 3)}, []string{"i", "u"}, attrs{"reduction": sAttr("min")}, 0},
		{"scatternd_mul", 16, "ScatterND", []int{4, 3, 2}, consts{"i": shaped(i64s(1, 0, 3, 2, 1, 0), 3, 2), "u": randT(12, 3, 2)}, []string{"i", "u"}, attrs{"reduction": sAttr("mul")}, 0},
		{"gathernd_batch_dims", 13, "GatherND", []int{2, 3, 4}, consts{"i": shaped(i64s(1, 3, 2, 0, 0, 1, 2, 2), 2, 2, 2)}, []string{"i"}, attrs{"batch_dims": intA(1)}, 0},
		// DFT and STFT
		{"dft_onesided_padded", 17, "DFT", []int{2, 6, 1}, consts{"n": graph.Int64Tensor([]int{}, []int64{9})}, []string{"n"}, attrs{"onesided": intA(1)}, 0},
		{"dft_inverse_complex_axis2", 17, "DFT", []int{1, 3, 5, 2}, nil, nil, attrs{"inverse": intA(1), "axis": intA(2)}, 0},
		{"stft_window_twosided", 17, "STFT", []int{2, 20, 1}, consts{"s": graph.Int64Tensor([]int{}, []int64{3}), "w": randT(28, 8)}, []string{"s", "w"}, attrs{"onesided": intA(0)}, 0},
		// GridSample
		{"gridsample_nearest_border_align_corners", 16, "GridSample", []int{1, 2, 4, 5}, consts{"g": randT(25, 1, 3, 3, 2)}, []string{"g"},
			attrs{"mode": sAttr("nearest"), "padding_mode": sAttr("border"), "align_corners": intA(1)}, 0},
		{"gridsample_bicubic_reflection", 16, "GridSample", []int{1, 1, 4, 5}, consts{"g": scaled(randT(26, 1, 3, 4, 2), 1.6)}, []string{"g"},
			attrs{"mode": sAttr("bicubic"), "padding_mode": sAttr("reflection")}, 0},
		{"gridsample_bilinear_zeros", 16, "GridSample", []int{2, 2, 3, 4}, consts{"g": scaled(randT(27, 2, 2, 5, 2), 1.3)}, []string{"g"}, nil, 0},
		// Recurrent ops
		{"lstm_bidirectional_clip_peepholes", 14, "LSTM", []int{3, 2, 3}, consts{"W": randT(13, 2, 16, 3), "R": randT(14, 2, 16, 4), "B": randT(15, 2, 32), "P": randT(16, 2, 12)},
			[]string{"W", "R", "B", "", "", "", "P"}, attrs{"hidden_size": intA(4), "direction": sAttr("bidirectional"), "clip": floatA(0.7)}, 3},
		{"gru_linear_before_reset_reverse", 14, "GRU", []int{4, 2, 3}, consts{"W": randT(17, 1, 9, 3), "R": randT(18, 1, 9, 3), "B": randT(19, 1, 18)},
			[]string{"W", "R", "B"}, attrs{"hidden_size": intA(3), "direction": sAttr("reverse"), "linear_before_reset": intA(1)}, 2},
		{"rnn_bidirectional_relu_initial_h", 14, "RNN", []int{2, 3, 3}, consts{"W": randT(20, 2, 4, 3), "R": randT(21, 2, 4, 4), "h": randT(22, 2, 3, 4)},
			[]string{"W", "R", "", "", "h"}, attrs{"hidden_size": intA(4), "direction": sAttr("bidirectional"), "activations": {Kind: graph.AttrStrings, Strings: []string{"Relu", "Relu"}}}, 2},
		{"lstm_activations_with_parameters", 14, "LSTM", []int{2, 1, 2}, consts{"W": randT(23, 1, 12, 2), "R": randT(24, 1, 12, 3)}, []string{"W", "R"},
			attrs{"hidden_size": intA(3), "activations": {Kind: graph.AttrStrings, Strings: []string{"HardSigmoid", "LeakyRelu", "Softsign"}},
				"activation_alpha": fsAttr(0.3, 0.05), "activation_beta": fsAttr(0.4)}, 2},
	}
	// Resize as index arithmetic (ops/resize.go), every coordinate mode
	// and every interpolation, up and down by simple ratios.
	for _, mode := range []string{"nearest", "linear", "cubic"} {
		for _, coord := range []string{"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"} {
			if coord == "tf_half_pixel_for_nn" && mode != "nearest" {
				continue
			}
			for k, sc := range [][]float32{{1, 1, 2, 3}, {1, 1, 0.5, 0.75}, {1, 1, 1.5, 4}} {
				cases = append(cases, ortCase{fmt.Sprintf("resize19_%s_%s_%d", mode, coord, k), 19, "Resize", []int{1, 2, 8, 8}, consts{"roi": empty, "sc": f32s(sc...)}, []string{"roi", "sc"},
					attrs{"mode": sAttr(mode), "coordinate_transformation_mode": sAttr(coord)}, 0})
			}
		}
	}
	return cases
}

// check runs the case both ways and returns what differs ("" when they
// agree at rtol 1e-4, atol 1e-5).
func (c ortCase) check(dir string) string {
	g := graph.New(c.name, c.opset)
	g.AddInput("x", graph.Float32, c.x)
	for k, v := range c.consts {
		g.AddConst(k, v)
	}
	nout := max(c.nout, 1)
	outs := []string{}
	for k := range nout {
		outs = append(outs, "y"+string(rune('0'+k)))
	}
	attrs := c.attrs
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	g.AddNode(&graph.Node{Name: "n", OpType: c.op, Inputs: append([]string{"x"}, c.ins...), Outputs: outs, Attrs: attrs})
	g.Outputs = outs
	return checkAgainstOnnxruntime(dir, c.name, g, randT(int64(len(c.name)), c.x...), false, func(string) float64 { return 1e-5 })
}

// checkAgainstOnnxruntime runs model g on input x with onnxruntime and
// with Tessera's reference evaluator (on integer kernels where integer),
// and returns what differs ("" when every output agrees at rtol 1e-4 and
// atol(output)).
func checkAgainstOnnxruntime(dir, name string, g *graph.Graph, x *graph.Tensor, integer bool, atol func(output string) float64) string {
	outs := g.Outputs
	data, err := onnx.Encode(g)
	if err != nil {
		return err.Error()
	}
	model := filepath.Join(dir, name+".onnx")
	raw := make([]byte, 4*len(x.F32))
	for k, v := range x.F32 {
		binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(v))
	}
	xfile := filepath.Join(dir, name+".x.bin")
	if err := os.WriteFile(model, data, 0o644); err != nil {
		return err.Error()
	}
	if err := os.WriteFile(xfile, raw, 0o644); err != nil {
		return err.Error()
	}
	outDir := filepath.Join(dir, name+".ort")
	if b, err := exec.Command("node", "../bench/ort/run.mjs", model, outDir, "--input", "x="+xfile).CombinedOutput(); err != nil {
		return "onnxruntime: " + err.Error() + ": " + string(b)
	}

	h, err := onnx.Decode(data, name)
	if err != nil {
		return err.Error()
	}
	h.Integer = integer
	if err := frontend.RunPasses(h, nil); err != nil {
		return err.Error()
	}
	l, err := Lower(h)
	if err != nil {
		return err.Error()
	}
	d, err := te.NewDAG(l.Outputs...)
	if err != nil {
		return err.Error()
	}
	feed, err := l.Feed(d, map[string][]float32{"x": x.F32})
	if err != nil {
		return err.Error()
	}
	got, err := d.Eval(feed)
	if err != nil {
		return err.Error()
	}
	for k, o := range outs {
		b, err := os.ReadFile(filepath.Join(outDir, o+".bin"))
		if err != nil {
			return err.Error()
		}
		want := make([]float32, len(b)/4)
		for i := range want {
			want[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		if msg := compare(got[k], l.Outputs[k].Shape, graph.Float32Tensor(h.Values[o].Shape, want), atol(o)); msg != "" {
			return o + ": " + msg
		}
		if graph.NumElems(h.Values[o].Shape) != len(want) {
			return o + ": onnxruntime's output has another size"
		}
	}
	return ""
}
