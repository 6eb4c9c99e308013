package frontend_test

import (
	"github.com/tessera-ml/tessera/frontend"
	. "github.com/tessera-ml/tessera/graph"
	"strings"
	"testing"
)

// runOnly runs RunPasses with every pass but the named ones disabled.
func runOnly(t *testing.T, g *Graph, names ...string) {
	t.Helper()
	off := map[string]bool{}
	for _, p := range frontend.PassNames() {
		off[p] = true
	}
	for _, n := range names {
		delete(off, n)
	}
	if err := frontend.RunPasses(g, off); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRunPassesUnknownPass(t *testing.T) {
	g := build(t, 0, []in{{"x", []int{2}}}, nil, []*Node{node("Relu r x -> y", nil)}, "y")
	err := frontend.RunPasses(g, map[string]bool{"fold-everything": true})
	if err == nil || !strings.Contains(err.Error(), "unknown pass") || !strings.Contains(err.Error(), "fold-constants") {
		t.Errorf("error %v", err)
	}
}

func TestRunPassesPipeline(t *testing.T) {
	// Every pass has something to do; the fixed point is a single Conv.
	g := build(t, 13, []in{{"x", []int{1, 2, 4, 4}}}, map[string]*Tensor{
		"w":     Float32Tensor([]int{2, 2, 1, 1}, []float32{1, 2, 3, 4}),
		"scale": f32(1, 2), "bias": f32(0, 1), "mean": f32(0, 0), "var": f32(1, 1),
		"unused": f32(7),
	}, []*Node{
		node("Conv c x,w -> c1", nil),
		node("Identity i c1 -> c2", nil),
		node("BatchNormalization bn c2,scale,bias,mean,var -> y", nil),
		node("Relu dead y -> d", nil),
		node("Shape s x -> shp", nil),
		node("Reshape r y,shp -> y2", nil),
	}, "y2")
	// convert-layout has its own tests (pass_layout_test.go).
	if err := frontend.RunPasses(g, map[string]bool{"convert-layout": true}); err != nil {
		t.Fatal(err)
	}
	if got := ops(g); got != "Conv" {
		t.Errorf("after passes: %s, want Conv", got)
	}
	if g.Nodes[0].Outputs[0] != "y2" {
		t.Errorf("the Conv writes %s, want the graph output y2", g.Nodes[0].Outputs[0])
	}
	if len(g.ConstNames()) != 2 {
		t.Errorf("constants left: %v", g.ConstNames())
	}
}
