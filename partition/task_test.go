package partition

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/ops"
)

var update = flag.Bool("update", false, "rewrite testdata/keys.golden")

// keyCases are small graphs of one task each, built with every name
// prefixed by p (names must not change keys).
var keyCases = []struct {
	name  string
	build func(t *testing.T, p string) *graph.Graph
}{
	{"matmul", func(t *testing.T, p string) *graph.Graph {
		b := newTG(17)
		return b.done(t, nil, b.op(p+"y", "MatMul", []string{b.input(p+"a", 32, 64), b.weight(p+"b", 64, 16)}))
	}},
	{"conv+bias+relu", func(t *testing.T, p string) *graph.Graph {
		b := newTG(17)
		y := conv3x3(b, p+"conv", b.input(p+"x", 1, 3, 16, 16), 3, 8, true)
		return b.done(t, map[string]bool{"convert-layout": true}, b.op(p+"relu", "Relu", []string{y}))
	}},
	{"softmax", func(t *testing.T, p string) *graph.Graph {
		b := newTG(17)
		return b.done(t, nil, b.op(p+"y", "Softmax", []string{b.input(p+"x", 4, 100)}, "axis", -1))
	}},
	{"gemm+bias+relu", func(t *testing.T, p string) *graph.Graph {
		b := newTG(17)
		y := b.op(p+"fc", "Gemm", []string{b.input(p+"x", 1, 256), b.weight(p+"w", 10, 256), b.weight(p+"b", 10)}, "transB", 1)
		return b.done(t, nil, b.op(p+"relu", "Relu", []string{y}))
	}},
	{"layernorm", func(t *testing.T, p string) *graph.Graph {
		b := newTG(17)
		return b.done(t, nil, b.op(p+"y", "LayerNormalization",
			[]string{b.input(p+"x", 1, 8, 32), b.weight(p+"s", 32), b.weight(p+"b", 32)}, "axis", -1, "epsilon", float32(1e-5)))
	}},
}

// TestKeysGolden pins the workload keys of a few DAGs: a change that
// alters keys (and so orphans every stored record) must update
// testdata/keys.golden on purpose (go test ./partition -run KeysGolden -update).
func TestKeysGolden(t *testing.T) {
	var b bytes.Buffer
	for _, c := range keyCases {
		p, err := Extract(c.build(t, ""), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(p.Tasks) != 1 {
			t.Fatalf("%s: %d tasks (%s), want 1", c.name, len(p.Tasks), opsOf(p))
		}
		fmt.Fprintf(&b, "%s %s\n", c.name, p.Tasks[0].Key)
	}
	path := filepath.Join("testdata", "keys.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("workload keys changed; if on purpose, run go test ./partition -run KeysGolden -update\ngot:\n%swant:\n%s", got, want)
	}
}

func opsOf(p *Plan) string {
	var ops []string
	for _, grp := range p.Groups {
		ops = append(ops, grp.Ops())
	}
	return strings.Join(ops, ", ")
}

// Names of values and nodes do not enter keys.
func TestKeysIgnoreNames(t *testing.T) {
	for _, c := range keyCases {
		p1, err := Extract(c.build(t, ""), Options{})
		if err != nil {
			t.Fatal(err)
		}
		p2, err := Extract(c.build(t, "/model/other.scope/"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if k1, k2 := p1.Tasks[0].Key, p2.Tasks[0].Key; k1 != k2 {
			t.Errorf("%s: key %s with plain names, %s with prefixed ones", c.name, k1, k2)
		}
	}
}

// Equal groups of one graph are one task; groups differing in a shape,
// an op or the wiring of their inputs are not.
func TestTasksDedupe(t *testing.T) {
	b := newTG(17)
	x, y := b.input("x", 2, 16), b.input("y", 2, 16)
	branch := func(name, act string, n int) string {
		return b.op(name, act, []string{b.op(name+".mm", "MatMul", []string{x, b.weight(name+".w", 16, n)})})
	}
	outs := []string{
		branch("a", "Relu", 16),
		branch("b", "Relu", 16),
		branch("c", "Relu", 8),     // another shape
		branch("d", "Sigmoid", 16), // another op
		b.op("xx", "Add", []string{x, x}),
		b.op("xy", "Add", []string{x, y}), // another wiring
		b.op("yx", "Add", []string{y, x}), // the same wiring
	}
	p, err := Extract(b.done(t, nil, outs...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range p.Tasks {
		got = append(got, fmt.Sprintf("%s×%d", task.Ops(), task.Weight))
	}
	want := "MatMul+Relu×2 MatMul+Relu×1 MatMul+Sigmoid×1 Add×1 Add×2"
	if strings.Join(got, " ") != want {
		t.Errorf("tasks %q, want %q", strings.Join(got, " "), want)
	}
	for _, task := range p.Tasks {
		for _, grp := range task.Groups {
			if grp.Key != task.Key || grp.Task != task {
				t.Errorf("group %d: key %s, task key %s", grp.ID, grp.Key, task.Key)
			}
		}
	}
	// The Add of y and x reads y first: its inputs are in the DAG's order.
	yx := p.Groups[len(p.Groups)-1]
	if got := strings.Join(yx.Inputs, ","); got != "y,x" {
		t.Errorf("inputs of y+x: %s", got)
	}
}

// TestWinogradAlternative: a 3×3 stride-1 convolution of 16 channels gets a
// Winograd alternative task (m=4 on a 12×12 output, m=2 on 6×6), the two
// are rivals, Choose keeps the faster, and the alternative computes what
// the direct group does (checkComputes); a dilated one by phases, m=4
// (16 rows at dilation 2: phases of 8; at 4: of 4); a strided or narrow
// convolution, a dilated one of phases under 4 rows, or without
// Options.Alternatives, gets none.
func TestWinogradAlternative(t *testing.T) {
	cases := []struct {
		name   string
		cin, h int
		stride int64
		want   string // the alternative's algorithm, "" for none
		opts   Options
		nchw   bool  // with convert-layout off
		dil    int64 // 0: 1
	}{
		{"dilated 2", 16, 16, 1, ops.Winograd(4), Options{Alternatives: true}, true, 2},
		{"dilated 2 NHWC", 16, 16, 1, ops.Winograd(4), Options{Alternatives: true}, false, 2},
		{"dilated 4", 16, 16, 1, ops.Winograd(4), Options{Alternatives: true}, false, 4},
		{"dilated 6", 16, 16, 1, "", Options{Alternatives: true}, false, 6},
		{"12x12", 16, 12, 1, ops.Winograd(4), Options{Alternatives: true}, true, 1},
		{"6x6", 16, 6, 1, ops.Winograd(2), Options{Alternatives: true}, true, 1},
		{"12x12 NHWC", 16, 12, 1, ops.Winograd(4), Options{Alternatives: true}, false, 1},
		{"6x6 NHWC", 16, 6, 1, ops.Winograd(2), Options{Alternatives: true}, false, 1},
		{"strided", 16, 12, 2, "", Options{Alternatives: true}, true, 1},
		{"narrow", 8, 12, 1, "", Options{Alternatives: true}, true, 1},
		{"direct only", 16, 12, 1, "", Options{}, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newTG(5)
			x := b.input("x", 1, c.cin, c.h, c.h)
			d := max(c.dil, 1)
			y := b.op("conv", "Conv", []string{x, b.weight("conv.w", 16, c.cin, 3, 3), b.weight("conv.b", 16)},
				"pads", []int64{d, d, d, d}, "strides", []int64{c.stride, c.stride}, "dilations", []int64{d, d})
			disabled := map[string]bool{"convert-layout": c.nchw}
			g := b.done(t, disabled, b.op("relu", "Relu", []string{y}))
			p, err := Extract(g, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			// NHWC adds a transpose back to NCHW for the graph output.
			conv := p.Groups[0]
			alts := conv.Alternatives
			if c.want == "" {
				if len(alts) != 0 || len(p.Tasks) != len(p.Groups) {
					t.Fatalf("%d alternatives, %d tasks", len(alts), len(p.Tasks))
				}
				return
			}
			if len(alts) != 1 || alts[0].Algorithm != c.want || len(p.Tasks) != len(p.Groups)+1 {
				t.Fatalf("alternatives %v, %d tasks", alts, len(p.Tasks))
			}
			if r := p.Rivals(); fmt.Sprint(r[:2]) != "[[1] [0]]" {
				t.Errorf("rivals %v", r)
			}
			if !strings.Contains(p.Tasks[1].Ops(), c.want) {
				t.Errorf("task 1 ops %q", p.Tasks[1].Ops())
			}
			checkComputes(t, g, c.opts)
			for _, winogradFaster := range []bool{true, false} {
				chosen := p.Choose(func(task *Task) (float64, bool) {
					if (task.Groups[0].Algorithm != "") == winogradFaster {
						return 1, true
					}
					return 2, true
				})
				if len(chosen.Tasks) != len(p.Groups) || chosen.Groups[0].Task != chosen.Tasks[0] ||
					(chosen.Groups[0].Algorithm != "") != winogradFaster || chosen.Tasks[0].Weight != 1 {
					t.Errorf("winograd faster %v: chose %+v", winogradFaster, chosen.Groups[0])
				}
			}
			if none := p.Choose(func(*Task) (float64, bool) { return 0, false }); none.Groups[0].Algorithm != "" {
				t.Errorf("without costs, chose %s", none.Groups[0].Algorithm)
			}
		})
	}
}

// TestExtractFoldOnlyHint: an op that never reaches a kernel (Shape, an
// ops.FoldOnly op) left in the graph because constant folding is off
// gets an error that says so; another unsupported op does not.
func TestExtractFoldOnlyHint(t *testing.T) {
	for _, c := range []struct {
		op   string
		hint bool
	}{{"Shape", true}, {"NonZero", false}} {
		g := graph.New("test", 17)
		g.AddInput("x", graph.Float32, []int{2, 3})
		g.AddNode(mkNode(c.op, "n", []string{"x"}, []string{"s"}, nil))
		g.AddNode(mkNode("Cast", "c", []string{"s"}, []string{"y"}, map[string]graph.Attr{"to": {Kind: graph.AttrInt, I: int64(graph.Float32)}}))
		g.Outputs = []string{"y"}
		off := map[string]bool{}
		for _, p := range frontend.PassNames() {
			off[p] = true
		}
		err := frontend.RunPasses(g, off)
		if err == nil {
			_, err = Extract(g, Options{})
		}
		if err == nil {
			t.Fatalf("%s: no error", c.op)
		}
		if got := strings.Contains(err.Error(), "must be folded away"); got != c.hint {
			t.Errorf("%s: hint %v: %v", c.op, got, err)
		}
	}
}
