package ops

import (
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Sliding-window ops: convolution and pooling. Their window geometry
// (strides, dilations, pads, auto_pad, ceil mode) is te's alone.
//
// Conv, MaxPool and GlobalAveragePool also take Tessera's own attribute
// data_layout (as Relay's conv2d does): "NHWC" when the graph's layout pass
// (graph.ConvertLayout) made their activations channels-last. Conv also
// takes out_layout (Relay's too): data_layout "NCHW" with out_layout
// "NHWC" reads an NCHW input and writes a channels-last output, the first
// convolution of a model. They never come from a model file: an ONNX node
// that carries them is refused.

// DataLayout and OutLayout are the attributes the layout pass sets.
const (
	DataLayout = graph.LayoutAttr
	OutLayout  = graph.OutLayoutAttr
)

// nhwc reports whether the node's input and output are channels-last
// (layouts).
func (c *lowerCtx) nhwc() (in, out bool, err error) { return layouts(c.n) }

// layouts reports whether node n's input and its output are channels-last:
// data_layout, NCHW (the default) or NHWC, and out_layout, which defaults
// to data_layout. Any other value is an error, and so is an out_layout
// that differs from data_layout anywhere but NCHW to NHWC on a Conv.
func layouts(n *graph.Node) (in, out bool, err error) {
	parse := func(attr, def string) (bool, error) {
		l, err := n.Str(attr, def)
		if err != nil {
			return false, err
		}
		switch l {
		case "NCHW":
			return false, nil
		case "NHWC":
			return true, nil
		}
		return false, n.Errorf("%s %q (NCHW or NHWC)", attr, l)
	}
	if in, err = parse(DataLayout, "NCHW"); err != nil {
		return false, false, err
	}
	def := "NCHW"
	if in {
		def = "NHWC"
	}
	if out, err = parse(OutLayout, def); err != nil {
		return false, false, err
	}
	if in != out && (in || n.OpType != "Conv" && n.OpType != "QLinearConv") {
		return false, false, n.Errorf("%s %s with %s %s: only a Conv converts, and only from NCHW to NHWC",
			DataLayout, layoutName(in), OutLayout, layoutName(out))
	}
	return in, out, nil
}

func layoutName(channelsLast bool) string {
	if channelsLast {
		return "NHWC"
	}
	return "NCHW"
}

func init() {
	define(
		&Op{Name: "Conv", MinIn: 2, MaxIn: 3, Pattern: OutEWiseFusable, Layout: LayoutChannelsLast, Lower: lowerConv, Alternatives: convAlternatives},
		&Op{Name: "ConvTranspose", MinIn: 2, MaxIn: 3, Pattern: OutEWiseFusable, Lower: lowerConvTranspose},
		&Op{Name: "MaxPool", MinIn: 1, MaxIn: 1, Pattern: OutEWiseFusable, Layout: LayoutChannelsLast, Lower: lowerPool},
		&Op{Name: "AveragePool", MinIn: 1, MaxIn: 1, Pattern: OutEWiseFusable, Layout: LayoutChannelsLast, Lower: lowerPool},
		&Op{Name: "GlobalAveragePool", MinIn: 1, MaxIn: 1, Pattern: OutEWiseFusable, Layout: LayoutChannelsLast, Lower: lowerGlobalPool},
		&Op{Name: "GlobalMaxPool", MinIn: 1, MaxIn: 1, Pattern: OutEWiseFusable, Lower: lowerGlobalPool},
	)
}

// convOperands returns the data, weights and optional bias of Conv and
// ConvTranspose (rounded to bfloat16 where the product sums in pairs),
// their auto_pad and group, and fills the integer list attributes named
// in ints.
func (c *lowerCtx) convOperands(pairs bool, ints map[string]*[]int) (x, w, b *te.Tensor, autoPad string, group int, err error) {
	if x, err = c.operand(0, pairs); err != nil {
		return
	}
	if w, err = c.operand(1, pairs); err != nil {
		return
	}
	if b, err = c.opt(2); err != nil {
		return
	}
	if autoPad, err = c.n.Str("auto_pad", "NOTSET"); err != nil {
		return
	}
	g, err := c.n.Int("group", 1)
	if err != nil {
		return
	}
	for attr, dst := range ints {
		if *dst, err = c.ints(attr); err != nil {
			return
		}
	}
	return x, w, b, autoPad, int(g), nil
}

func lowerConv(c *lowerCtx) ([]*te.Tensor, error) {
	in, out, err := c.nhwc()
	if err != nil {
		return nil, err
	}
	if !in && out && c.tapPairs() {
		return lowerTapPairs(c)
	}
	ws := c.inShape(1)
	pairs := in && len(ws) > 1 && c.pairs(ws[1])
	var a te.ConvAttrs
	x, w, b, autoPad, group, err := c.convOperands(pairs, map[string]*[]int{"dilations": &a.Dilations, "kernel_shape": &a.KernelShape, "pads": &a.Pads, "strides": &a.Strides})
	if err != nil {
		return nil, err
	}
	a.AutoPad, a.Group = autoPad, group
	switch {
	case pairs:
		return one(te.ConvNHWCDot(c.name(0), x, w, b, a, 2))
	case in:
		return one(te.ConvNHWC(c.name(0), x, w, b, a))
	case out:
		return one(te.ConvToNHWC(c.name(0), x, w, b, a))
	}
	return one(te.Conv(c.name(0), x, w, b, a))
}

// lowerTapPairs lowers a bf16 graph's NCHW-to-NHWC Conv whose W taps sum
// in pairs (lowerCtx.tapPairs): the input rounded to bfloat16 as the
// convolution pads it (te.ConvToNHWCDotW), the weights rounded and padded
// (tapPairWeights).
func lowerTapPairs(c *lowerCtx) ([]*te.Tensor, error) {
	a, err := convAttrsOf(c.n)
	if err != nil {
		return nil, err
	}
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	w, err := c.tapPairWeights()
	if err != nil {
		return nil, err
	}
	b, err := c.opt(2)
	if err != nil {
		return nil, err
	}
	return one(te.ConvToNHWCDotW(c.name(0), x, w, b, a, 2, true))
}

func lowerConvTranspose(c *lowerCtx) ([]*te.Tensor, error) {
	var a te.ConvTransposeAttrs
	x, w, b, autoPad, group, err := c.convOperands(false, map[string]*[]int{"dilations": &a.Dilations, "kernel_shape": &a.KernelShape, "pads": &a.Pads, "strides": &a.Strides,
		"output_padding": &a.OutputPadding, "output_shape": &a.OutputShape})
	if err != nil {
		return nil, err
	}
	a.AutoPad, a.Group = autoPad, group
	return one(te.ConvTranspose(c.name(0), x, w, b, a))
}

// lowerPool lowers MaxPool and AveragePool (output Y only: shape inference
// rejects a used Indices output). Dilations exist for MaxPool from opset
// 10 and AveragePool from 19; ceil_mode from 10.
func lowerPool(c *lowerCtx) ([]*te.Tensor, error) {
	if c.n.Output(1) != "" {
		return nil, graph.Unsupportedf("%s at node %s: output 1 (Indices)", c.n.OpType, c.n.Name)
	}
	if so, _ := c.n.Int("storage_order", 0); so != 0 {
		return nil, graph.Unsupportedf("%s at node %s: storage_order 1", c.n.OpType, c.n.Name)
	}
	// MaxPool on an integer tensor (a quantized MaxPool) takes the integers
	// themselves: the maximum is one of them.
	in := c.in
	if c.n.OpType == "MaxPool" {
		in = c.raw
	}
	x, err := in(0)
	if err != nil {
		return nil, err
	}
	var a te.PoolAttrs
	if a.AutoPad, err = c.n.Str("auto_pad", "NOTSET"); err != nil {
		return nil, err
	}
	ceil, err := c.n.Int("ceil_mode", 0)
	if err != nil {
		return nil, err
	}
	cip, err := c.n.Int("count_include_pad", 0)
	if err != nil {
		return nil, err
	}
	a.CeilMode, a.CountIncludePad = ceil != 0, cip != 0
	for attr, dst := range map[string]*[]int{"dilations": &a.Dilations, "kernel_shape": &a.KernelShape, "pads": &a.Pads, "strides": &a.Strides} {
		if *dst, err = c.ints(attr); err != nil {
			return nil, err
		}
	}
	nhwc, _, err := c.nhwc()
	if err != nil {
		return nil, err
	}
	if nhwc && c.n.OpType == "MaxPool" {
		return one(te.MaxPoolNHWC(c.name(0), x, a))
	}
	if nhwc {
		return one(te.AveragePoolNHWC(c.name(0), x, a))
	}
	if c.n.OpType == "MaxPool" {
		return one(te.MaxPool(c.name(0), x, a))
	}
	return one(te.AveragePool(c.name(0), x, a))
}

func lowerGlobalPool(c *lowerCtx) ([]*te.Tensor, error) {
	x, err := c.in(0)
	if err != nil {
		return nil, err
	}
	nhwc, _, err := c.nhwc()
	if err != nil {
		return nil, err
	}
	switch {
	case nhwc && c.n.OpType == "GlobalAveragePool":
		return one(te.GlobalAveragePoolNHWC(c.name(0), x))
	case nhwc:
		return nil, c.n.Errorf("%s has no NHWC form", c.n.OpType)
	case c.n.OpType == "GlobalMaxPool":
		return one(te.GlobalMaxPool(c.name(0), x))
	}
	return one(te.GlobalAveragePool(c.name(0), x))
}
