package ops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/graph"
)

// The recurrent ops LSTM, GRU and RNN expand into the ops of their cells,
// unrolled over the sequence, whose length is static once the inputs are
// bound: one MatMul of the whole input sequence by the input weights, then
// per step a MatMul of the hidden state by the recurrence weights, the
// gates' slices, activations and elementwise updates. The steps' groups
// are equal but for the step each reads its projection at (a constant
// index, which partition reads from memory for them to share one task),
// so they are tuned once and weighted by the sequence length. Weights that are constants fold (their transposes and
// slices are computed once); weights given at run time work the same way.
//
// sequence_lens, constant or not, masks each batch entry's steps past its
// length: the state is carried through unchanged and Y is 0 there, which
// is ONNX's semantics in both directions.

func init() {
	define(
		&Op{Name: "LSTM", MinIn: 3, MaxIn: 8, Expand: expandRecurrent(lstmCell)},
		&Op{Name: "GRU", MinIn: 3, MaxIn: 6, Expand: expandRecurrent(gruCell)},
		&Op{Name: "RNN", MinIn: 3, MaxIn: 6, Expand: expandRecurrent(rnnCell)},
	)
}

// cell describes one recurrent op: its gate count, its activations (with
// the defaults), and one step of it.
type cell struct {
	op       string
	gates    int
	defaults []string
	// step computes one time step of direction d: xw is the input's
	// projection at this step ([B, gates·H], input bias added), h (and c
	// for LSTM) the state before it. It returns the new h and c.
	step func(e *expander, r *recurrence, d int, xw, h, c string) (string, string)
}

// recurrence is what the expansion of one recurrent node knows.
type recurrence struct {
	cell              cell
	T, B, I, H, D     int
	layout            int64
	acts              [][]activation // per direction, per function
	clip              float32        // 0: none
	linearBeforeReset bool           // GRU
	rt                []string       // per direction: R transposed, [H, gates·H]
	rb                []string       // per direction: the recurrence bias [gates·H], or ""
	p                 []string       // LSTM per direction: the peephole weights [3H], or ""
	memo              map[string]string
}

// once returns the value f makes for key, made the first time only: a
// slice of the weights every step reads is one value, not one per step
// (each folded into a constant of its own, T copies in the weights, every
// step reading another).
func (r *recurrence) once(key string, f func() string) string {
	if v, ok := r.memo[key]; ok {
		return v
	}
	if r.memo == nil {
		r.memo = map[string]string{}
	}
	v := f()
	r.memo[key] = v
	return v
}

var lstmCell = cell{op: "LSTM", gates: 4, defaults: []string{"Sigmoid", "Tanh", "Tanh"}, step: lstmStep}
var gruCell = cell{op: "GRU", gates: 3, defaults: []string{"Sigmoid", "Tanh"}, step: gruStep}
var rnnCell = cell{op: "RNN", gates: 1, defaults: []string{"Tanh"}, step: rnnStep}

func expandRecurrent(cl cell) func(c *InferCtx) ([]*graph.Node, error) {
	return func(c *InferCtx) ([]*graph.Node, error) {
		nodes, err := expandRecurrentNode(c, cl)
		if err != nil {
			if strings.Contains(err.Error(), c.N.Name) {
				return nil, err
			}
			return nil, fmt.Errorf("%s (opset %d) at node %s: %w", c.N.OpType, c.Opset, c.N.Name, err)
		}
		return nodes, nil
	}
}

func expandRecurrentNode(c *InferCtx, cl cell) ([]*graph.Node, error) {
	n := c.N
	if c.Opset < 7 {
		return nil, graph.Unsupportedf("%s before opset 7", cl.op)
	}
	for i := range c.In {
		if c.Has(i) && i != 4 && c.DType(i) != graph.Float32 {
			return nil, fmt.Errorf("input %d (%s) is %s, want float32", i, n.Inputs[i], c.DType(i))
		}
	}
	x, w, rr := c.Shape(0), c.Shape(1), c.Shape(2)
	if len(x) != 3 || len(w) != 3 || len(rr) != 3 {
		return nil, fmt.Errorf("X %v, W %v and R %v must have rank 3", x, w, rr)
	}
	r := &recurrence{cell: cl}
	var err error
	if r.layout, err = n.Int("layout", 0); err != nil {
		return nil, err
	}
	if r.layout != 0 && r.layout != 1 {
		return nil, fmt.Errorf("layout %d", r.layout)
	}
	r.T, r.B, r.I = x[0], x[1], x[2]
	if r.layout == 1 {
		r.T, r.B = x[1], x[0]
	}
	r.D, r.H = w[0], rr[2]
	dir, err := n.Str("direction", "forward")
	if err != nil {
		return nil, err
	}
	switch dir {
	case "forward", "reverse":
		if r.D != 1 {
			return nil, fmt.Errorf("direction %s with W of %d directions", dir, r.D)
		}
	case "bidirectional":
		if r.D != 2 {
			return nil, fmt.Errorf("direction %s with W of %d directions", dir, r.D)
		}
	default:
		return nil, fmt.Errorf("direction %q", dir)
	}
	if hs, err := n.Int("hidden_size", int64(r.H)); err != nil || hs != int64(r.H) {
		return nil, fmt.Errorf("hidden_size %d, R %v (%v)", hs, rr, err)
	}
	g := cl.gates * r.H
	if w[1] != g || w[2] != r.I || rr[0] != r.D || rr[1] != g {
		return nil, fmt.Errorf("W %v and R %v do not fit X %v with %d gates of hidden size %d", w, rr, x, cl.gates, r.H)
	}
	if r.clip, err = n.Float("clip", 0); err != nil {
		return nil, err
	}
	if r.clip < 0 {
		return nil, fmt.Errorf("clip %g", r.clip)
	}
	if f, err := n.Int("input_forget", 0); err != nil || f != 0 {
		return nil, graph.Unsupportedf("input_forget %d (coupled input and forget gates)", f)
	}
	lbr, err := n.Int("linear_before_reset", 0)
	if err != nil {
		return nil, err
	}
	r.linearBeforeReset = lbr != 0
	if r.acts, err = activations(n, cl, r.D); err != nil {
		return nil, err
	}
	if len(n.Outputs) > 3 || (cl.op != "LSTM" && n.Output(2) != "") {
		return nil, fmt.Errorf("%d outputs", len(n.Outputs))
	}
	shapes := map[int][]int{3: {r.D, 2 * g}, 4: {r.B}, 5: {r.D, r.B, r.H}, 6: {r.D, r.B, r.H}, 7: {r.D, 3 * r.H}}
	if r.layout == 1 {
		shapes[5], shapes[6] = []int{r.B, r.D, r.H}, []int{r.B, r.D, r.H}
	}
	for i, want := range shapes {
		if c.Has(i) && !slices.Equal(c.Shape(i), want) {
			return nil, fmt.Errorf("input %d (%s) has shape %v, want %v", i, n.Inputs[i], c.Shape(i), want)
		}
	}

	e := newExpander(c)
	xs := n.Inputs[0]
	if r.layout == 1 {
		xs = e.transpose(xs, 1, 0, 2)
	}
	mask, err := r.masks(e, c)
	if err != nil {
		return nil, err
	}
	var ys, hs, cs []string // per direction
	for d := range r.D {
		// The input projection of every step at once: [T, B, gates·H].
		xw := e.op("MatMul", nil, xs, e.transpose(e.take(n.Inputs[1], 0, d), 1, 0))
		r.rt = append(r.rt, e.transpose(e.take(n.Inputs[2], 0, d), 1, 0))
		rb := ""
		if c.Has(3) {
			b := e.take(n.Inputs[3], 0, d)
			xw = e.op("Add", nil, xw, e.slice(b, 0, 0, g))
			rb = e.slice(b, 0, g, 2*g)
		}
		r.rb = append(r.rb, rb)
		p := ""
		if c.Has(7) {
			p = e.take(n.Inputs[7], 0, d)
		}
		r.p = append(r.p, p)
		stateAxis := 0
		if r.layout == 1 {
			stateAxis = 1
		}
		h := e.zeros(r.B, r.H)
		if c.Has(5) {
			h = e.take(n.Inputs[5], stateAxis, d)
		}
		cc := ""
		if cl.op == "LSTM" {
			cc = e.zeros(r.B, r.H)
			if c.Has(6) {
				cc = e.take(n.Inputs[6], stateAxis, d)
			}
		}
		reverse := dir == "reverse" || d == 1
		ts := make([]string, r.T) // the output of each time step, in time order
		for s := range r.T {
			t := s
			if reverse {
				t = r.T - 1 - s
			}
			hn, cn := cl.step(e, r, d, e.take(xw, 0, t), h, cc)
			if mask != nil {
				ts[t] = e.op("Where", nil, mask[t], hn, e.zeros(r.B, r.H))
				hn = e.op("Where", nil, mask[t], hn, h)
				if cn != "" {
					cn = e.op("Where", nil, mask[t], cn, cc)
				}
			} else {
				ts[t] = hn
			}
			h, cc = hn, cn
		}
		if n.Output(0) != "" {
			steps := make([]string, r.T)
			for t, y := range ts {
				steps[t] = e.unsqueeze(y, 0)
			}
			ys = append(ys, e.unsqueeze(e.concat(0, steps...), 1)) // [T, 1, B, H]
		}
		hs = append(hs, e.unsqueeze(h, 0))
		if cc != "" {
			cs = append(cs, e.unsqueeze(cc, 0))
		}
	}
	// Y: [T, D, B, H] (layout 1: [B, T, D, H]); Y_h and Y_c: [D, B, H]
	// (layout 1: [B, D, H]).
	if out := n.Output(0); out != "" {
		y := e.concat(1, ys...)
		if r.layout == 1 {
			y = e.transpose(y, 2, 0, 1, 3)
		}
		e.write(out, "Identity", nil, y)
	}
	for k, states := range map[int][]string{1: hs, 2: cs} {
		if out := n.Output(k); out != "" {
			s := e.concat(0, states...)
			if r.layout == 1 {
				s = e.transpose(s, 1, 0, 2)
			}
			e.write(out, "Identity", nil, s)
		}
	}
	return e.nodes, nil
}

// masks returns, per time step, a [B, 1] bool mask of the batch entries
// whose sequence is longer than the step, or nil when every sequence
// spans all T steps (sequence_lens omitted, or constant and equal to T).
func (r *recurrence) masks(e *expander, c *InferCtx) ([]string, error) {
	if !c.Has(4) {
		return nil, nil
	}
	lens := c.N.Inputs[4]
	if dt := c.DType(4); dt != graph.Int32 && dt != graph.Int64 {
		return nil, fmt.Errorf("sequence_lens is %s, want int32", dt)
	}
	if t := c.G.ConstOf(lens); t != nil {
		full := true
		for _, v := range t.Int64s() {
			if v < 0 || v > int64(r.T) {
				return nil, fmt.Errorf("sequence_lens %v outside [0, %d]", t.Int64s(), r.T)
			}
			full = full && v == int64(r.T)
		}
		if full {
			return nil, nil
		}
	}
	col := e.unsqueeze(lens, 1) // [B, 1]
	out := make([]string, r.T)
	for t := range out {
		k := e.constant(&graph.Tensor{DType: c.DType(4), Shape: []int{}, I64: []int64{int64(t)}})
		out[t] = e.op("Less", nil, k, col)
	}
	return out, nil
}

// gate returns the pre-activation of gate k: xw's and hr's slices k added
// (hr may be ""), clipped when the op has a clip.
func (r *recurrence) gate(e *expander, xw, hr string, k int) string {
	v := e.slice(xw, 1, k*r.H, (k+1)*r.H)
	if hr != "" {
		v = e.op("Add", nil, v, e.slice(hr, 1, k*r.H, (k+1)*r.H))
	}
	return r.clipped(e, v)
}

func (r *recurrence) clipped(e *expander, v string) string {
	if r.clip == 0 {
		return v
	}
	return e.op("Max", nil, e.op("Min", nil, v, e.scalar(r.clip)), e.scalar(-r.clip))
}

// recur is h · Rᵀ (+ the recurrence bias) for direction d: [B, gates·H].
func (r *recurrence) recur(e *expander, d int, h string) string {
	hr := e.op("MatMul", nil, h, r.rt[d])
	if r.rb[d] != "" {
		hr = e.op("Add", nil, hr, r.rb[d])
	}
	return hr
}

// lstmStep: gates i, o, f, c (ONNX's order); peepholes P = [Pi, Po, Pf].
func lstmStep(e *expander, r *recurrence, d int, xw, h, c string) (string, string) {
	hr := r.recur(e, d, h)
	f, g, hAct := r.acts[d][0], r.acts[d][1], r.acts[d][2]
	peep := func(k int, state, v string) string {
		if r.p[d] == "" {
			return v
		}
		pk := r.once(fmt.Sprint("p", d, ",", k), func() string { return e.slice(r.p[d], 0, k*r.H, (k+1)*r.H) })
		return e.op("Add", nil, v, e.op("Mul", nil, pk, state))
	}
	// A peephole term is added before the clip, as the gate's other terms.
	pre := func(k, pk int, state string) string {
		v := e.slice(xw, 1, k*r.H, (k+1)*r.H)
		v = e.op("Add", nil, v, e.slice(hr, 1, k*r.H, (k+1)*r.H))
		if pk >= 0 {
			v = peep(pk, state, v)
		}
		return r.clipped(e, v)
	}
	it := f.apply(e, pre(0, 0, c))
	ft := f.apply(e, pre(2, 2, c))
	ct := g.apply(e, pre(3, -1, ""))
	cn := e.op("Add", nil, e.op("Mul", nil, ft, c), e.op("Mul", nil, it, ct))
	ot := f.apply(e, pre(1, 1, cn))
	hn := e.op("Mul", nil, ot, hAct.apply(e, cn))
	return hn, cn
}

// gruStep: gates z, r, h (ONNX's order).
func gruStep(e *expander, r *recurrence, d int, xw, h, _ string) (string, string) {
	f, g := r.acts[d][0], r.acts[d][1]
	H := r.H
	var zt, rt, ht string
	if r.linearBeforeReset {
		hr := r.recur(e, d, h)
		zt = f.apply(e, r.gate(e, xw, hr, 0))
		rt = f.apply(e, r.gate(e, xw, hr, 1))
		rh := e.op("Mul", nil, rt, e.slice(hr, 1, 2*H, 3*H))
		ht = g.apply(e, r.clipped(e, e.op("Add", nil, e.slice(xw, 1, 2*H, 3*H), rh)))
	} else {
		// z and r read h · R[z, r]ᵀ; the candidate reads (r ⊙ h) · R[h]ᵀ.
		key := fmt.Sprint(d)
		hr := e.op("MatMul", nil, h, r.once("rzr"+key, func() string { return e.slice(r.rt[d], 1, 0, 2*H) }))
		if r.rb[d] != "" {
			hr = e.op("Add", nil, hr, r.once("bzr"+key, func() string { return e.slice(r.rb[d], 0, 0, 2*H) }))
		}
		zt = f.apply(e, r.gate(e, xw, hr, 0))
		rt = f.apply(e, r.gate(e, xw, hr, 1))
		rh := e.op("MatMul", nil, e.op("Mul", nil, rt, h), r.once("rh"+key, func() string { return e.slice(r.rt[d], 1, 2*H, 3*H) }))
		if r.rb[d] != "" {
			rh = e.op("Add", nil, rh, r.once("bh"+key, func() string { return e.slice(r.rb[d], 0, 2*H, 3*H) }))
		}
		ht = g.apply(e, r.clipped(e, e.op("Add", nil, e.slice(xw, 1, 2*H, 3*H), rh)))
	}
	// H = (1 - z) ⊙ h̃ + z ⊙ H₋₁ = h̃ + z ⊙ (H₋₁ - h̃)
	hn := e.op("Add", nil, ht, e.op("Mul", nil, zt, e.op("Sub", nil, h, ht)))
	return hn, ""
}

func rnnStep(e *expander, r *recurrence, d int, xw, h, _ string) (string, string) {
	return r.acts[d][0].apply(e, r.gate(e, xw, r.recur(e, d, h), 0)), ""
}

// activation is one of the functions the recurrent ops name, with its
// parameters.
type activation struct {
	name        string
	alpha, beta float32
}

// activationParams lists, per function the recurrent ops accept, whether
// it takes alpha and beta and their defaults (those of the ONNX op of the
// same name; 1 and 0 for Affine, 1 and 1 for ScaledTanh).
var activationParams = map[string]struct {
	alpha, beta       bool
	defAlpha, defBeta float32
}{
	"Relu": {}, "Tanh": {}, "Sigmoid": {}, "Softsign": {}, "Softplus": {},
	"Affine":          {true, true, 1, 0},
	"LeakyRelu":       {true, false, 0.01, 0},
	"ThresholdedRelu": {true, false, 1, 0},
	"ScaledTanh":      {true, true, 1, 1},
	"HardSigmoid":     {true, true, 0.2, 0.5},
	"Elu":             {true, false, 1, 0},
}

// activations reads the activations attribute (per direction, defaults
// when absent) with activation_alpha and activation_beta consumed in order
// by the functions that take them.
func activations(n *graph.Node, cl cell, dirs int) ([][]activation, error) {
	names := cl.defaults
	if a, ok := n.Attrs["activations"]; ok {
		if a.Kind != graph.AttrStrings {
			return nil, fmt.Errorf("attribute activations is a %s, want strings", a.Kind)
		}
		names = a.Strings
	}
	k := len(cl.defaults)
	switch len(names) {
	case k * dirs:
	case k:
		for range dirs - 1 {
			names = append(names, names[:k]...)
		}
	default:
		return nil, fmt.Errorf("%d activations, want %d per direction", len(names), k)
	}
	alphas, err := n.Floats("activation_alpha")
	if err != nil {
		return nil, err
	}
	betas, err := n.Floats("activation_beta")
	if err != nil {
		return nil, err
	}
	out := make([][]activation, dirs)
	for i, name := range names {
		canon := ""
		for known := range activationParams {
			if strings.EqualFold(known, name) {
				canon = known
			}
		}
		if canon == "" {
			return nil, graph.Unsupportedf("activation %q", name)
		}
		p := activationParams[canon]
		a := activation{name: canon, alpha: p.defAlpha, beta: p.defBeta}
		if p.alpha && len(alphas) > 0 {
			a.alpha, alphas = alphas[0], alphas[1:]
		}
		if p.beta && len(betas) > 0 {
			a.beta, betas = betas[0], betas[1:]
		}
		out[i/k] = append(out[i/k], a)
	}
	return out, nil
}

// apply appends the nodes of the activation on x.
func (a activation) apply(e *expander, x string) string {
	switch a.name {
	case "Affine":
		return e.op("Add", nil, e.op("Mul", nil, x, e.scalar(a.alpha)), e.scalar(a.beta))
	case "ScaledTanh":
		return e.op("Mul", nil, e.op("Tanh", nil, e.op("Mul", nil, x, e.scalar(a.beta))), e.scalar(a.alpha))
	case "LeakyRelu", "ThresholdedRelu", "Elu":
		return e.op(a.name, map[string]graph.Attr{"alpha": floatAttr(a.alpha)}, x)
	case "HardSigmoid":
		return e.op(a.name, map[string]graph.Attr{"alpha": floatAttr(a.alpha), "beta": floatAttr(a.beta)}, x)
	}
	return e.op(a.name, nil, x)
}
