package partition

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
)

// TestRecurrentExpansion checks LSTM, GRU and RNN, expanded into their
// cells (package ops), against a direct implementation of ONNX's
// equations, on what the backend tests leave out: both directions,
// batch-major layout, clip, custom activations with their parameters,
// linear_before_reset, and sequence_lens, constant and at run time.
func TestRecurrentExpansion(t *testing.T) {
	cases := []recurrentCase{
		{op: "LSTM", T: 3, B: 2, I: 3, H: 4, dir: "bidirectional", bias: true, init: true, peep: true, clip: 0.8, lens: []int{3, 1}},
		{op: "LSTM", T: 3, B: 2, I: 2, H: 3, dir: "reverse", layout: 1, lens: []int{2, 3}, lensAtRunTime: true,
			acts: []string{"HardSigmoid", "Tanh", "ScaledTanh"}, alpha: []float32{0.3, 0.7}, beta: []float32{0.4, 1.5}, weightsAtRunTime: true},
		{op: "GRU", T: 4, B: 2, I: 3, H: 3, dir: "bidirectional", bias: true, init: true, lbr: true, lens: []int{4, 2}, lensAtRunTime: true},
		{op: "GRU", T: 2, B: 3, I: 2, H: 2, dir: "forward", bias: true, clip: 0.5, acts: []string{"LeakyRelu", "Affine"}, alpha: []float32{0.2, 0.5}, beta: []float32{0.1}},
		{op: "RNN", T: 3, B: 2, I: 3, H: 2, dir: "bidirectional", layout: 1, init: true, acts: []string{"Relu", "Softsign"}},
		{op: "RNN", T: 2, B: 1, I: 2, H: 3, dir: "reverse", bias: true, acts: []string{"Elu"}, alpha: []float32{0.5}},
	}
	for _, rc := range cases {
		t.Run(rc.String(), func(t *testing.T) {
			g, inputs, want := rc.build(rand.New(rand.NewSource(1)))
			got := evalGraph(t, g, nil, inputs)
			for k, name := range g.Outputs {
				if !approxEqual(got[k], want[k], 1e-5) {
					t.Errorf("%s = %v\nwant %v", name, got[k], want[k])
				}
			}
		})
	}
}

type recurrentCase struct {
	op                    string
	T, B, I, H            int
	dir                   string
	layout                int
	bias, init, peep, lbr bool
	clip                  float32
	acts                  []string
	alpha, beta           []float32
	lens                  []int // nil: no sequence_lens
	lensAtRunTime         bool
	weightsAtRunTime      bool
}

func (rc recurrentCase) String() string {
	return fmt.Sprintf("%s_%s_layout%d_T%d", rc.op, rc.dir, rc.layout, rc.T)
}

func (rc recurrentCase) gates() int {
	return map[string]int{"LSTM": 4, "GRU": 3, "RNN": 1}[rc.op]
}

func (rc recurrentCase) dirs() int {
	if rc.dir == "bidirectional" {
		return 2
	}
	return 1
}

// build returns the graph of one recurrent node, its run-time inputs and
// the expected outputs (Y, Y_h, and Y_c for LSTM).
func (rc recurrentCase) build(rng *rand.Rand) (*graph.Graph, map[string][]float32, [][]float32) {
	D, G, T, B, I, H := rc.dirs(), rc.gates(), rc.T, rc.B, rc.I, rc.H
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	g := graph.New("rec", 17)
	inputs := map[string][]float32{}
	add := func(name string, shape []int, v []float32, runTime bool) string {
		if runTime {
			g.AddInput(name, graph.Float32, shape)
			inputs[name] = v
		} else {
			g.AddConst(name, graph.Float32Tensor(shape, v))
		}
		return name
	}
	xShape := []int{T, B, I}
	stateShape := []int{D, B, H}
	if rc.layout == 1 {
		xShape, stateShape = []int{B, T, I}, []int{B, D, H}
	}
	x := rnd(T * B * I)
	w, r := rnd(D*G*H*I), rnd(D*G*H*H)
	var b, h0, c0, p []float32
	ins := []string{add("X", xShape, x, true), add("W", []int{D, G * H, I}, w, rc.weightsAtRunTime), add("R", []int{D, G * H, H}, r, rc.weightsAtRunTime), "", "", "", "", ""}
	if rc.bias {
		b = rnd(D * 2 * G * H)
		ins[3] = add("B", []int{D, 2 * G * H}, b, rc.weightsAtRunTime)
	}
	if rc.lens != nil {
		l := make([]int64, B)
		for i, v := range rc.lens {
			l[i] = int64(v)
		}
		if rc.lensAtRunTime {
			g.AddInput("lens", graph.Int32, []int{B})
			inputs["lens"] = make([]float32, B)
			for i, v := range rc.lens {
				inputs["lens"][i] = float32(v)
			}
		} else {
			g.AddConst("lens", &graph.Tensor{DType: graph.Int32, Shape: []int{B}, I64: l})
		}
		ins[4] = "lens"
	}
	if rc.init {
		h0 = rnd(D * B * H)
		ins[5] = add("h0", stateShape, h0, true)
		if rc.op == "LSTM" {
			c0 = rnd(D * B * H)
			ins[6] = add("c0", stateShape, c0, true)
		}
	}
	if rc.peep {
		p = rnd(D * 3 * H)
		ins[7] = add("P", []int{D, 3 * H}, p, false)
	}
	for len(ins) > 0 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1]
	}
	attrs := map[string]graph.Attr{"hidden_size": intA(int64(H)), "direction": {Kind: graph.AttrString, S: rc.dir}}
	if rc.layout != 0 {
		attrs["layout"] = intA(int64(rc.layout))
	}
	if rc.clip != 0 {
		attrs["clip"] = floatA(rc.clip)
	}
	if rc.lbr {
		attrs["linear_before_reset"] = intA(1)
	}
	if rc.acts != nil {
		attrs["activations"] = graph.Attr{Kind: graph.AttrStrings, Strings: rc.acts}
	}
	if rc.alpha != nil {
		attrs["activation_alpha"] = graph.Attr{Kind: graph.AttrFloats, Floats: rc.alpha}
	}
	if rc.beta != nil {
		attrs["activation_beta"] = graph.Attr{Kind: graph.AttrFloats, Floats: rc.beta}
	}
	outs := []string{"Y", "Y_h"}
	if rc.op == "LSTM" {
		outs = append(outs, "Y_c")
	}
	g.AddNode(mkNode(rc.op, "rec", ins, outs, attrs))
	g.Outputs = outs

	// The reference works batch-minor (layout 0); convert on the way in
	// and out.
	at := func(v []float32, layout1 bool, d0, d1, d2, i, j, k int) float64 {
		if layout1 {
			return float64(v[(j*d0+i)*d2+k])
		}
		return float64(v[(i*d1+j)*d2+k])
	}
	lens := rc.lens
	if lens == nil {
		lens = make([]int, B)
		for i := range lens {
			lens[i] = T
		}
	}
	Y := make([]float64, T*D*B*H)
	Yh := make([]float64, D*B*H)
	Yc := make([]float64, D*B*H)
	names := rc.acts
	if names == nil {
		names = refDefaults(rc.op)
	}
	fs := refActivations(names, rc.alpha, rc.beta)
	clip := func(v float64) float64 {
		if rc.clip == 0 {
			return v
		}
		return math.Max(-float64(rc.clip), math.Min(float64(rc.clip), v))
	}
	for d := range D {
		fd := fs // one list for both directions, or one per direction
		if k := len(refDefaults(rc.op)); len(fs) == 2*k && d == 1 {
			fd = fs[k:]
		}
		f := fd[0]
		gAct, hAct := f, f
		if len(fd) > 1 {
			gAct = fd[1]
		}
		if len(fd) > 2 {
			hAct = fd[2]
		}
		h := make([][]float64, B)
		c := make([][]float64, B)
		for bi := range B {
			h[bi], c[bi] = make([]float64, H), make([]float64, H)
			for j := range H {
				if h0 != nil {
					h[bi][j] = at(h0, rc.layout == 1, D, B, H, d, bi, j)
				}
				if c0 != nil {
					c[bi][j] = at(c0, rc.layout == 1, D, B, H, d, bi, j)
				}
			}
		}
		bias := func(k, j int, rec bool) float64 {
			if b == nil {
				return 0
			}
			off := 0
			if rec {
				off = G * H
			}
			return float64(b[d*2*G*H+off+k*H+j])
		}
		xw := func(t, bi, k, j int) float64 { // X·Wᵀ + Wb for gate k, unit j
			s := bias(k, j, false)
			for i := range I {
				s += at(x, rc.layout == 1, T, B, I, t, bi, i) * float64(w[(d*G*H+k*H+j)*I+i])
			}
			return s
		}
		hr := func(hv []float64, k, j int) float64 { // hv·Rᵀ (no bias)
			s := 0.0
			for m := range H {
				s += hv[m] * float64(r[(d*G*H+k*H+j)*H+m])
			}
			return s
		}
		for s := range T {
			tt := s
			if rc.dir == "reverse" || d == 1 {
				tt = T - 1 - s
			}
			for bi := range B {
				if tt >= lens[bi] {
					continue // Y stays 0, the state carries through
				}
				hp, cp := h[bi], c[bi]
				hn, cn := make([]float64, H), make([]float64, H)
				switch rc.op {
				case "LSTM":
					peep := func(k, j int) float64 {
						if p == nil {
							return 0
						}
						return float64(p[d*3*H+k*H+j])
					}
					for j := range H {
						pre := func(k int) float64 { return xw(tt, bi, k, j) + hr(hp, k, j) + bias(k, j, true) }
						it := f(clip(pre(0) + peep(0, j)*cp[j]))
						ft := f(clip(pre(2) + peep(2, j)*cp[j]))
						ct := gAct(clip(pre(3)))
						cn[j] = ft*cp[j] + it*ct
						ot := f(clip(pre(1) + peep(1, j)*cn[j]))
						hn[j] = ot * hAct(cn[j])
					}
				case "GRU":
					z, rr := make([]float64, H), make([]float64, H)
					for j := range H {
						z[j] = f(clip(xw(tt, bi, 0, j) + hr(hp, 0, j) + bias(0, j, true)))
						rr[j] = f(clip(xw(tt, bi, 1, j) + hr(hp, 1, j) + bias(1, j, true)))
					}
					rh := make([]float64, H)
					for m := range H {
						rh[m] = rr[m] * hp[m]
					}
					for j := range H {
						var v float64
						if rc.lbr {
							v = xw(tt, bi, 2, j) + rr[j]*(hr(hp, 2, j)+bias(2, j, true))
						} else {
							v = xw(tt, bi, 2, j) + hr(rh, 2, j) + bias(2, j, true)
						}
						ht := gAct(clip(v))
						hn[j] = (1-z[j])*ht + z[j]*hp[j]
					}
				case "RNN":
					for j := range H {
						hn[j] = f(clip(xw(tt, bi, 0, j) + hr(hp, 0, j) + bias(0, j, true)))
					}
				}
				h[bi], c[bi] = hn, cn
				for j := range H {
					Y[((tt*D+d)*B+bi)*H+j] = hn[j]
				}
			}
		}
		for bi := range B {
			for j := range H {
				Yh[(d*B+bi)*H+j] = h[bi][j]
				Yc[(d*B+bi)*H+j] = c[bi][j]
			}
		}
	}
	toLayout := func(v []float64, shape []int, perm []int) []float32 {
		// v has shape 'shape'; return it transposed by perm as float32.
		out := make([]float32, len(v))
		st := graph.Strides(shape)
		ns := make([]int, len(perm))
		for i, p := range perm {
			ns[i] = shape[p]
		}
		idx := make([]int, len(perm))
		for k := range out {
			rem := k
			for i := len(ns) - 1; i >= 0; i-- {
				idx[i] = rem % ns[i]
				rem /= ns[i]
			}
			src := 0
			for i, p := range perm {
				src += idx[i] * st[p]
			}
			out[k] = float32(v[src])
		}
		return out
	}
	want := [][]float32{toLayout(Y, []int{T, D, B, H}, []int{0, 1, 2, 3}), toLayout(Yh, []int{D, B, H}, []int{0, 1, 2})}
	if rc.layout == 1 {
		want = [][]float32{toLayout(Y, []int{T, D, B, H}, []int{2, 0, 1, 3}), toLayout(Yh, []int{D, B, H}, []int{1, 0, 2})}
	}
	if rc.op == "LSTM" {
		perm := []int{0, 1, 2}
		if rc.layout == 1 {
			perm = []int{1, 0, 2}
		}
		want = append(want, toLayout(Yc, []int{D, B, H}, perm))
	}
	return g, inputs, want
}

func refDefaults(op string) []string {
	return map[string][]string{"LSTM": {"Sigmoid", "Tanh", "Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "RNN": {"Tanh"}}[op]
}

// refActivations returns the functions named, alpha and beta consumed in
// order by those that take them.
func refActivations(names []string, alpha, beta []float32) []func(float64) float64 {
	next := func(v *[]float32, def float64) float64 {
		if len(*v) == 0 {
			return def
		}
		x := float64((*v)[0])
		*v = (*v)[1:]
		return x
	}
	var out []func(float64) float64
	for _, n := range names {
		switch n {
		case "Sigmoid":
			out = append(out, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) })
		case "Tanh":
			out = append(out, math.Tanh)
		case "Relu":
			out = append(out, func(x float64) float64 { return math.Max(x, 0) })
		case "Softsign":
			out = append(out, func(x float64) float64 { return x / (1 + math.Abs(x)) })
		case "HardSigmoid":
			a, b := next(&alpha, 0.2), next(&beta, 0.5)
			out = append(out, func(x float64) float64 { return math.Max(0, math.Min(1, a*x+b)) })
		case "ScaledTanh":
			a, b := next(&alpha, 1), next(&beta, 1)
			out = append(out, func(x float64) float64 { return a * math.Tanh(b*x) })
		case "LeakyRelu":
			a := next(&alpha, 0.01)
			out = append(out, func(x float64) float64 { return math.Max(x, a*x) })
		case "Affine":
			a, b := next(&alpha, 1), next(&beta, 0)
			out = append(out, func(x float64) float64 { return a*x + b })
		case "Elu":
			a := next(&alpha, 1)
			out = append(out, func(x float64) float64 {
				if x < 0 {
					return a * (math.Exp(x) - 1)
				}
				return x
			})
		default:
			panic("no reference for activation " + n)
		}
	}
	return out
}

// TestRecurrentStepsShareTasks: the unrolled steps of a recurrent layer
// read their input projection at a constant step index each, and share
// one task with the index read from memory (shareIndexedGroups) instead
// of a task per step, computing what the whole graph computes.
func TestRecurrentStepsShareTasks(t *testing.T) {
	for _, rc := range []recurrentCase{
		{op: "GRU", T: 8, B: 1, I: 3, H: 4, dir: "forward", bias: true, init: true},
		{op: "LSTM", T: 8, B: 2, I: 3, H: 4, dir: "bidirectional", bias: true},
	} {
		t.Run(rc.String(), func(t *testing.T) {
			g, _, _ := rc.build(rand.New(rand.NewSource(1)))
			if err := frontend.RunPasses(g, nil); err != nil {
				t.Fatal(err)
			}
			checkComputes(t, g, Options{})
			p, err := Extract(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			gathers, most := 0, 0
			for _, task := range p.Tasks {
				if strings.Contains(task.Groups[0].Ops(), "Gather") {
					gathers++
					most = max(most, task.Weight)
				}
			}
			// A step apart from the others: the first (its state a
			// constant) and the last (it writes Y) of each direction.
			if want := rc.dirs() * (rc.T - 2); most < want || gathers > 3*rc.dirs() {
				t.Errorf("%d tasks read a step's projection, the most shared by %d groups; want at most %d tasks, one shared by %d or more", gathers, most, 3*rc.dirs(), want)
			}
			// The steps read their recurrence weights warm from the step
			// before (te.Tensor.Reused, measured without evicting them),
			// in both directions of a bidirectional layer, whose steps
			// share one task but read a matrix per direction.
			reused := 0
			for _, task := range p.Tasks {
				for _, in := range task.DAG.Inputs {
					if !in.Reused {
						continue
					}
					reused++
					if !in.Const || task.Weight < rc.T-2 || !strings.Contains(task.Ops(), "MatMul") {
						t.Errorf("task %s (%s, weight %d): input %s marked reused", task.Key, task.Ops(), task.Weight, in.Name)
					}
				}
			}
			if reused == 0 {
				t.Error("no task's input is marked reused; want the steps' recurrence weights")
			}
		})
	}
}

// TestTiedWeightsReused: equal groups that read weights of their own
// (two convolutions of one shape) read them cold; with one weight (tied),
// the second finds it warm (te.Tensor.Reused). The recurrent case is in
// TestRecurrentStepsShareTasks.
func TestTiedWeightsReused(t *testing.T) {
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("convolutions tied=%v", tied), func(t *testing.T) {
			b := newTG(17)
			x := b.input("x", 1, 8, 6, 6)
			w := b.weight("w0", 8, 8, 3, 3)
			y := b.op("y", "Conv", []string{x, w}, "pads", []int64{1, 1, 1, 1})
			if !tied {
				w = b.weight("w1", 8, 8, 3, 3)
			}
			z := b.op("z", "Conv", []string{y, w}, "pads", []int64{1, 1, 1, 1})
			p, err := Extract(b.done(t, nil, z), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Tasks) != 1 {
				t.Fatalf("%d tasks, want the two convolutions' one", len(p.Tasks))
			}
			for _, in := range p.Tasks[0].DAG.Inputs {
				if in.Reused != (tied && in.Const) {
					t.Errorf("input %s (constant %v): reused %v, want %v", in.Name, in.Const, in.Reused, tied && in.Const)
				}
			}
		})
	}
}
