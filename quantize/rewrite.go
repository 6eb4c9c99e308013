package quantize

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/graph"
)

// The rewrite: which tensors of which ops get QuantizeLinear →
// DequantizeLinear, following onnxruntime's QDQ quantizer (its
// QDQRegistry and the ops its QLinear registry adds, with
// QuantFormat.QDQ, per_channel=True, uint8 activations and int8
// weights). It works in two steps: plan marks the tensors to quantize,
// op by op in topological order, as onnxruntime's op quantizers do; emit
// then writes the quantized constants and the Q/DQ nodes.

// opKind says how an op's tensors are quantized.
type opKind int

const (
	// generic: every float input and output gets a Q/DQ pair of its own
	// range (onnxruntime's QDQOperatorBase); a constant operand becomes a
	// uint8 constant and a DequantizeLinear.
	generic opKind = iota + 1
	// weighted: the data input and the output are activations, the
	// weight an int8 constant per output channel, the bias an int32
	// constant (QDQConv, QDQGemm).
	weighted
	// matmul: constant operands are int8 weights per column (axis 1),
	// the others activations, and so the output (QDQMatMul).
	matmul
	// removable: Relu and Clip. When the op before writes only to it,
	// the op is dropped and the op before writes its output, whose Q then
	// clamps as the op did (QDQRemovableActivation); otherwise input and
	// output are activations. Nothing happens when the input is not
	// quantized.
	removable
	// direct: an op that moves data; its output shares its input's scale
	// and zero point, when the input is quantized (QDQDirect8BitOp).
	direct
	// normalization: LayerNormalization and InstanceNormalization. The
	// input and the outputs are activations, the scale an int8 weight (per
	// tensor: onnxruntime's channel axis 1 is out of a 1-D scale's rank),
	// the bias an int32 constant of scale input × weight
	// (QDQNormalization).
	normalization
)

// opKinds are the ops quantized, by kind. onnxruntime's registries hold
// more (Split, Pad, Resize, Gather, Where, BatchNormalization, TopK, ...):
// those stay float here, their inputs read dequantized values.
var opKinds = map[string]opKind{
	"Conv": weighted, "Gemm": weighted, "MatMul": matmul,
	"Relu": removable, "Clip": removable,
	"MaxPool": direct, "AveragePool": direct, "Reshape": direct, "Transpose": direct,
	"Squeeze": direct, "Unsqueeze": direct, "Slice": direct,
	"Add": generic, "Mul": generic, "Concat": generic, "GlobalAveragePool": generic,
	"Softmax": generic, "Sigmoid": generic, "LeakyRelu": generic,
	"LayerNormalization": normalization, "InstanceNormalization": normalization,
}

// Ops lists the op types the quantizer quantizes, sorted.
func Ops() []string { return slices.Sorted(maps.Keys(opKinds)) }

// kindOf returns n's kind, 0 for an op that is not quantized.
func kindOf(n *graph.Node) opKind {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return 0
	}
	return opKinds[n.OpType]
}

// markKind is what a marked tensor becomes.
type markKind int

const (
	activation markKind = iota + 1 // Q/DQ of its calibrated range; a constant: uint8 and DQ
	weight                         // an int8 constant and DQ, per channel along axis
	shared                         // Q/DQ with the scale and zero point of provider
)

type mark struct {
	kind     markKind
	axis     int    // weight: the channel axis, -1 per tensor
	provider string // shared
}

// biasMark is a bias to quantize to int32 with the scale input scale ×
// weight scale × beta.
type biasMark struct {
	node                *graph.Node
	bias, input, weight string
	beta                float32
}

// plan is what the marking step decided for a graph.
type plan struct {
	g          *graph.Graph
	marks      map[string]*mark
	order      []string // marked tensors, in marking order
	biases     []*biasMark
	biasOf     map[string]*biasMark
	removed    map[*graph.Node]bool // Relu and Clip nodes folded away
	nodes      map[*graph.Node]bool // nodes quantized (for the report)
	notes      []string
	calibrated map[string]bool // the tensors onnxruntime calibrates
	// reduceRange: weights to 7 bits (Options.ReduceRange).
	reduceRange bool
}

// isFloat reports whether name is a float32 value of g.
func isFloat(g *graph.Graph, name string) bool {
	v := g.Values[name]
	return name != "" && v != nil && v.DType == graph.Float32
}

// isConst reports whether name is a constant of g.
func isConst(g *graph.Graph, name string) bool {
	v := g.Values[name]
	return v != nil && v.Const != nil
}

// act marks a float tensor as an activation, unless it is marked already.
func (p *plan) act(name string) {
	if !isFloat(p.g, name) {
		return
	}
	if _, ok := p.marks[name]; ok {
		return
	}
	p.marks[name] = &mark{kind: activation}
	p.order = append(p.order, name)
}

// weight marks a constant float tensor as an int8 weight per channel
// along axis (per tensor when axis is out of its rank); a tensor computed
// at run time is an activation instead.
func (p *plan) weight(name string, axis int) {
	if !isFloat(p.g, name) {
		return
	}
	if !isConst(p.g, name) {
		p.act(name)
		return
	}
	if axis >= len(p.g.Values[name].Shape) {
		axis = -1
	}
	if _, ok := p.marks[name]; !ok {
		p.order = append(p.order, name)
	}
	p.marks[name] = &mark{kind: weight, axis: axis}
}

// share marks out to take in's scale and zero point.
func (p *plan) share(out, in string) {
	if !isFloat(p.g, out) || isConst(p.g, out) {
		return
	}
	if _, ok := p.marks[out]; !ok {
		p.order = append(p.order, out)
	}
	p.marks[out] = &mark{kind: shared, provider: in}
}

// unmark forgets a marked tensor.
func (p *plan) unmark(name string) {
	if _, ok := p.marks[name]; !ok {
		return
	}
	delete(p.marks, name)
	p.order = slices.DeleteFunc(p.order, func(s string) bool { return s == name })
}

// quantized reports whether a tensor is marked (onnxruntime's
// is_tensor_quantized).
func (p *plan) quantized(name string) bool {
	_, ok := p.marks[name]
	return ok || p.biasOf[name] != nil
}

// bias marks node n's bias input k to be quantized to int32, when it is
// a float constant; a bias shared with a node quantized before gets a
// copy of its own (its scale depends on the node's input and weight).
func (p *plan) bias(n *graph.Node, k int, beta float32) {
	b := n.Input(k)
	if !isFloat(p.g, b) || !isConst(p.g, b) {
		if b != "" && isFloat(p.g, b) {
			p.notes = append(p.notes, fmt.Sprintf("%s node %s: its bias %s is computed at run time, not a constant: left float", n.OpType, n.Name, b))
		}
		return
	}
	if p.biasOf[b] != nil {
		c := p.g.FreshName(b)
		p.g.AddConst(c, p.g.Values[b].Const)
		n.Inputs[k] = c
		b = c
	}
	m := &biasMark{node: n, bias: b, input: n.Input(0), weight: n.Input(1), beta: beta}
	p.biases = append(p.biases, m)
	p.biasOf[b] = m
}

// planGraph marks the tensors of g to quantize; it folds Relu and Clip
// into the op before them in g (g is the copy to rewrite).
func planGraph(g *graph.Graph) (*plan, error) {
	p := &plan{g: g, marks: map[string]*mark{}, biasOf: map[string]*biasMark{},
		removed: map[*graph.Node]bool{}, nodes: map[*graph.Node]bool{}, calibrated: map[string]bool{}}
	// onnxruntime calibrates the float tensors, constants aside, that the
	// ops it quantizes read or write; an activation's range must be one
	// of them.
	for _, n := range g.Nodes {
		if kindOf(n) == 0 {
			continue
		}
		for _, name := range slices.Concat(n.Inputs, n.Outputs) {
			if isFloat(g, name) && !isConst(g, name) {
				p.calibrated[name] = true
			}
		}
	}
	consumers, producers := g.Consumers(), g.Producers()
	for _, n := range slices.Clone(g.Nodes) {
		switch kindOf(n) {
		case generic:
			for _, name := range slices.Concat(n.Inputs, n.Outputs) {
				p.act(name)
			}
			p.nodes[n] = true
		case weighted:
			p.act(n.Input(0))
			p.act(n.Output(0))
			axis, beta := 0, float32(1)
			if n.OpType == "Gemm" {
				if tb, err := n.Int("transB", 0); err != nil {
					return nil, err
				} else if tb == 0 {
					axis = 1
				}
				b, err := n.Float("beta", 1)
				if err != nil {
					return nil, err
				}
				beta = b
			}
			p.weight(n.Input(1), axis)
			p.bias(n, 2, beta)
			p.nodes[n] = true
		case matmul:
			for _, name := range n.Inputs {
				if isConst(g, name) {
					p.weight(name, 1)
				} else {
					p.act(name)
				}
			}
			p.act(n.Output(0))
			p.nodes[n] = true
		case normalization:
			p.act(n.Input(0))
			p.weight(n.Input(1), 1)
			p.bias(n, 2, 1)
			for _, o := range n.Outputs {
				p.act(o)
			}
			p.nodes[n] = true
		case removable:
			in, out := n.Input(0), n.Output(0)
			if !p.quantized(in) {
				continue
			}
			if up := producers[in]; up != nil && p.calibrated[out] && len(consumers[in]) == 1 && !g.IsOutput(in) && !g.IsInput(in) {
				// The op before writes the Relu's output; the Q of that
				// output's range clamps as the Relu did.
				for k, o := range up.Outputs {
					if o == in {
						up.Outputs[k] = out
					}
				}
				p.unmark(in)
				delete(g.Values, in)
				p.removed[n] = true
			} else {
				p.act(in)
			}
			p.act(out)
			p.nodes[n] = true
		case direct:
			if p.quantized(n.Input(0)) {
				p.share(n.Output(0), n.Input(0))
				p.nodes[n] = true
			}
		}
	}
	if len(p.removed) > 0 {
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n *graph.Node) bool { return p.removed[n] })
	}
	return p, nil
}

// toCalibrate lists the tensors whose range the marks need: the
// activations computed at run time or given as inputs, in marking order.
func (p *plan) toCalibrate() []string {
	var out []string
	for _, name := range p.order {
		if p.marks[name].kind == activation && !isConst(p.g, name) {
			out = append(out, name)
		}
	}
	return out
}

// adjustRanges makes the ranges what onnxruntime quantizes with: the input
// of a Relu or Clip it did not fold takes the output's range when the op
// is its only reader (the Q clamps as the op would); a Softmax's output is
// [0, 1]. orig is the graph before folding.
func adjustRanges(orig *graph.Graph, ranges map[string]Range) {
	consumers := orig.Consumers()
	for _, n := range orig.Nodes {
		switch {
		case kindOf(n) == removable:
			in, out := n.Input(0), n.Output(0)
			r, ok := ranges[out]
			if _, has := ranges[in]; has && ok && len(consumers[in]) == 1 {
				ranges[in] = r
			}
		case kindOf(n) == generic && n.OpType == "Softmax":
			if _, ok := ranges[n.Output(0)]; ok {
				ranges[n.Output(0)] = Range{0, 1}
			}
		}
	}
}

// qinfo is a quantized tensor's parameters: per tensor (one) or per
// channel along axis, and the constants that hold them once written.
type qinfo struct {
	ps          []Params
	axis        int // -1 per tensor
	dtype       graph.DType
	lo, hi      int64  // a weight's integer range (both 0: the dtype's)
	scale, zero string // the names of the scale and zero-point constants
}

// Report says what Quantize did.
type Report struct {
	Nodes       map[string]int // quantized nodes by op type
	Activations int            // Q/DQ pairs of their own range
	Shared      int            // Q/DQ pairs with the scale of the op's input
	Folded      int            // Relu and Clip nodes folded into the Q before them
	Weights     int            // int8 weights (PerChannel of them per channel)
	PerChannel  int
	Constants   int      // other constants quantized to uint8
	Biases      int      // int32 biases
	Raised      int      // weight channels whose scale was raised for an int32 bias
	Clipped     int      // bias values saturated to int32
	Degenerate  []string // tensors of an all-zero range: scale 1, zero point 0
	Samples     int      // calibration samples
	Notes       []string // what a user should know
	// Outputs are the quantized graph outputs' scales and zero points:
	// one step of an output is its scale.
	Outputs []Output
}

// Output is a quantized graph output's scale and zero point.
type Output struct {
	Name string
	Params
}

// NodeSummary is "Conv×20 Relu×17 ...", the quantized nodes by op type.
func (r *Report) NodeSummary() string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(r.Nodes)) {
		parts = append(parts, fmt.Sprintf("%s×%d", op, r.Nodes[op]))
	}
	return strings.Join(parts, " ")
}

// emit writes the plan into g: quantized constants, Q/DQ nodes, readers
// rewired; ranges are the calibrated (and adjusted) ranges.
func (p *plan) emit(ranges map[string]Range, rep *Report) error {
	info, err := p.params(ranges, rep)
	if err != nil {
		return err
	}
	// The weights' scales, raised where an int32 bias would overflow.
	for _, b := range p.biases {
		in, w := info[b.input], info[b.weight]
		if in == nil || w == nil || len(in.ps) != 1 || w.dtype != graph.Int8 {
			continue
		}
		rep.Raised += len(AdjustForBias(in.ps[0].Scale, w.ps, p.g.Values[b.bias].Const.F32))
	}
	e := &emission{
		plan:   p,
		info:   info,
		rep:    rep,
		after:  map[string][]*graph.Node{},
		before: map[string]*graph.Node{},
		rename: map[string]string{},
	}
	e.tensors()
	e.quantizeBiases()
	e.rewire()
	for n := range p.nodes {
		rep.Nodes[n.OpType]++
	}
	rep.Folded = len(p.removed)
	rep.Notes = append(rep.Notes, p.notes...)
	return nil
}

// params are the quantization parameters of every marked tensor:
// activations from their ranges, constants from their data, shared
// tensors from their providers. A shared tensor whose provider is a
// weight or is not quantized after all loses its mark; the model's
// quantized outputs go into rep.
func (p *plan) params(ranges map[string]Range, rep *Report) (map[string]*qinfo, error) {
	g := p.g
	info := map[string]*qinfo{}
	for _, name := range p.order {
		m := p.marks[name]
		v := g.Values[name]
		switch {
		case m.kind == weight:
			lo, hi := int64(int8Min), int64(int8Max)
			if p.reduceRange {
				lo, hi = reducedMin, reducedMax
			}
			info[name] = &qinfo{ps: dataParams(v.Const.Shape, v.Const.F32, m.axis, lo, hi, true), axis: m.axis, dtype: graph.Int8, lo: lo, hi: hi}
		case m.kind == activation && v.Const != nil:
			info[name] = &qinfo{ps: []Params{ConstParams(v.Const.F32)}, axis: -1, dtype: graph.Uint8}
		case m.kind == activation:
			r, ok := ranges[name]
			if !ok {
				return nil, fmt.Errorf("quantize: tensor %s has no calibrated range", name)
			}
			ps := ScaleZeroPoint(r.Min, r.Max, uint8Min, uint8Max, false)
			if ps.Degenerate() && r.Min == 0 && r.Max == 0 {
				rep.Degenerate = append(rep.Degenerate, name)
			}
			info[name] = &qinfo{ps: []Params{ps}, axis: -1, dtype: graph.Uint8}
		}
	}
	for _, name := range p.order {
		m := p.marks[name]
		if m.kind != shared {
			continue
		}
		root := m.provider
		for p.marks[root] != nil && p.marks[root].kind == shared {
			root = p.marks[root].provider
		}
		pi := info[root]
		if pi == nil || pi.axis >= 0 || pi.dtype != graph.Uint8 {
			// The input is a weight or not quantized after all: no Q/DQ.
			delete(p.marks, name)
			continue
		}
		info[name] = pi
	}
	p.order = slices.DeleteFunc(p.order, func(s string) bool { return p.marks[s] == nil })
	for _, o := range g.Outputs {
		if qi := info[o]; qi != nil && p.marks[o] != nil && len(qi.ps) == 1 {
			rep.Outputs = append(rep.Outputs, Output{Name: o, Params: qi.ps[0]})
		}
	}
	return info, nil
}

// emission is emit's work in progress: the nodes it makes, where they go,
// and the reads it redirects. Q/DQ pairs follow the node that writes
// their tensor (graph inputs: first); a constant's DequantizeLinear
// precedes its first reader.
type emission struct {
	*plan
	info   map[string]*qinfo
	rep    *Report
	after  map[string][]*graph.Node // value → the Q/DQ nodes that follow its producer
	first  []*graph.Node            // Q/DQ of graph inputs
	before map[string]*graph.Node   // value → the DQ node that writes it (constants)
	rename map[string]string        // reads of a value → reads of its DQ output
}

// addConst adds a constant named after base and returns its name.
func (e *emission) addConst(base string, t *graph.Tensor) string {
	name := e.g.FreshName(base)
	e.g.AddConst(name, t)
	return name
}

// paramConsts adds qi's scale and zero-point constants, named after base.
func (e *emission) paramConsts(base string, qi *qinfo) {
	shape := []int{}
	if qi.axis >= 0 {
		shape = []int{len(qi.ps)}
	}
	sc := &graph.Tensor{DType: graph.Float32, Shape: shape}
	zp := &graph.Tensor{DType: qi.dtype, Shape: slices.Clone(shape)}
	for _, ps := range qi.ps {
		sc.F32 = append(sc.F32, ps.Scale)
		zp.I64 = append(zp.I64, ps.ZeroPoint)
	}
	qi.scale = e.addConst(base+"_scale", sc)
	qi.zero = e.addConst(base+"_zero_point", zp)
}

// tensors makes the nodes of every marked tensor: a constant's quantized
// values and a DequantizeLinear, an activation's Q → DQ after its
// producer.
func (e *emission) tensors() {
	g, rep := e.g, e.rep
	producers := g.Producers()
	for _, name := range e.order {
		m, qi, v := e.marks[name], e.info[name], g.Values[name]
		if v.Const != nil {
			c := v.Const
			e.paramConsts(name, qi)
			lo, hi := int64(uint8Min), int64(uint8Max)
			switch {
			case qi.lo != 0 || qi.hi != 0:
				lo, hi = qi.lo, qi.hi
			case qi.dtype == graph.Int8:
				lo, hi = int8Min, int8Max
			}
			q := &graph.Tensor{DType: qi.dtype, Shape: slices.Clone(c.Shape), I64: QuantizeData(c.Shape, c.F32, qi.axis, qi.ps, lo, hi)}
			qname := e.addConst(name+"_quantized", q)
			out := e.fresh(name+"_DequantizeLinear_Output", graph.Float32, c.Shape)
			dq := &graph.Node{Name: name + "_DequantizeLinear", OpType: "DequantizeLinear", Inputs: []string{qname, qi.scale, qi.zero}, Outputs: []string{out}, Attrs: map[string]graph.Attr{}}
			if qi.axis >= 0 {
				dq.Attrs["axis"] = graph.Attr{Kind: graph.AttrInt, I: int64(qi.axis)}
			}
			e.before[out] = dq
			e.rename[name] = out
			if m.kind == weight {
				rep.Weights++
				if qi.axis >= 0 {
					rep.PerChannel++
				}
			} else {
				rep.Constants++
			}
			continue
		}
		if m.kind == shared {
			rep.Shared++
		} else {
			e.paramConsts(name, qi)
			rep.Activations++
		}
		qin, dqout := name, name
		prod := producers[name]
		if g.IsOutput(name) && prod != nil {
			// The model's output keeps its name: the producer writes the
			// Q's input, the DQ writes the output.
			qin = e.fresh(name+"_QuantizeLinear_Input", graph.Float32, v.Shape)
			for k, o := range prod.Outputs {
				if o == name {
					prod.Outputs[k] = qin
				}
			}
		} else {
			dqout = e.fresh(name+"_DequantizeLinear_Output", graph.Float32, v.Shape)
			e.rename[name] = dqout
		}
		qout := e.fresh(name+"_QuantizeLinear_Output", graph.Uint8, v.Shape)
		pair := []*graph.Node{
			{Name: name + "_QuantizeLinear", OpType: "QuantizeLinear", Inputs: []string{qin, qi.scale, qi.zero}, Outputs: []string{qout}, Attrs: map[string]graph.Attr{}},
			{Name: name + "_DequantizeLinear", OpType: "DequantizeLinear", Inputs: []string{qout, qi.scale, qi.zero}, Outputs: []string{dqout}, Attrs: map[string]graph.Attr{}},
		}
		if prod == nil {
			e.first = append(e.first, pair...)
		} else {
			e.after[qin] = append(e.after[qin], pair...)
		}
	}
}

// quantizeBiases makes each bias int32 with the scale input × weight, written
// under the bias's own name by a DequantizeLinear; a bias that cannot be
// is left float, with a note.
func (e *emission) quantizeBiases() {
	g, rep := e.g, e.rep
	for _, b := range e.biases {
		in, w := e.info[b.input], e.info[b.weight]
		c := g.Values[b.bias].Const
		if in == nil || w == nil || len(in.ps) != 1 {
			e.notes = append(e.notes, fmt.Sprintf("%s node %s: its input or weight is not quantized: bias %s left float", b.node.OpType, b.node.Name, b.bias))
			continue
		}
		if len(w.ps) > 1 && (len(c.Shape) != 1 || c.Shape[0] != len(w.ps)) {
			e.notes = append(e.notes, fmt.Sprintf("%s node %s: bias %s of shape %v does not match the %d weight channels: left float", b.node.OpType, b.node.Name, b.bias, c.Shape, len(w.ps)))
			continue
		}
		scales := BiasScales(in.ps[0].Scale, w.ps, b.beta)
		if slices.Contains(scales, 0) {
			e.notes = append(e.notes, fmt.Sprintf("%s node %s: input scale × weight scale underflows float32: bias %s left float", b.node.OpType, b.node.Name, b.bias))
			continue
		}
		vals := c.F32
		if b.beta != 1 {
			// The bias's DequantizeLinear gives beta·bias, and the Gemm
			// adds it with beta 1.
			vals = make([]float32, len(c.F32))
			for i, x := range c.F32 {
				vals[i] = b.beta * x
			}
			b.node.SetAttr("beta", graph.Attr{Kind: graph.AttrFloat, F: 1})
		}
		q, clipped := QuantizeBias(vals, scales)
		rep.Clipped += clipped
		if clipped > 0 {
			e.notes = append(e.notes, fmt.Sprintf("%s node %s: %d values of bias %s exceed int32 at scale input × weight: saturated", b.node.OpType, b.node.Name, clipped, b.bias))
		}
		qname := e.addConst(b.bias+"_quantized", &graph.Tensor{DType: graph.Int32, Shape: slices.Clone(c.Shape), I64: q})
		sc := e.addConst(b.bias+"_quantized_scale", graph.Float32Tensor([]int{len(scales)}, scales))
		zp := e.addConst(b.bias+"_quantized_zero_point", &graph.Tensor{DType: graph.Int32, Shape: []int{len(scales)}, I64: make([]int64, len(scales))})
		dq := &graph.Node{Name: b.bias + "_DequantizeLinear", OpType: "DequantizeLinear", Inputs: []string{qname, sc, zp}, Outputs: []string{b.bias}, Attrs: map[string]graph.Attr{}}
		if len(scales) > 1 {
			dq.Attrs["axis"] = graph.Attr{Kind: graph.AttrInt, I: 0}
		}
		v := g.Values[b.bias]
		v.Const, v.Known = nil, nil
		e.before[b.bias] = dq
		rep.Biases++
	}
}

// rewire points the readers of a quantized tensor at its DequantizeLinear's
// output, puts the new nodes in their places, and drops the float
// constants no node reads any more (the weights) and the values nothing
// writes or reads (a folded Relu's input).
func (e *emission) rewire() {
	g := e.g
	for _, n := range g.Nodes {
		for k, in := range n.Inputs {
			if r, ok := e.rename[in]; ok {
				n.Inputs[k] = r
			}
		}
	}
	nodes := slices.Clone(e.first)
	emitted := map[*graph.Node]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if dq := e.before[in]; dq != nil && !emitted[dq] {
				nodes = append(nodes, dq)
				emitted[dq] = true
			}
		}
		nodes = append(nodes, n)
		for _, o := range n.Outputs {
			nodes = append(nodes, e.after[o]...)
		}
	}
	g.Nodes = nodes
	used := map[string]bool{}
	for _, n := range g.Nodes {
		for _, name := range slices.Concat(n.Inputs, n.Outputs) {
			used[name] = true
		}
	}
	for name := range g.Values {
		if !used[name] && !g.IsInput(name) && !g.IsOutput(name) {
			delete(g.Values, name)
		}
	}
}

// fresh returns a new value name from base with the given type.
func (p *plan) fresh(base string, dt graph.DType, shape []int) string {
	name := p.g.FreshName(base)
	v := p.g.Values[name]
	v.DType, v.Shape = dt, slices.Clone(shape)
	return name
}
