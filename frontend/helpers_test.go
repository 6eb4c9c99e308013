package frontend_test

import (
	. "github.com/tessera-ml/tessera/graph"
	"strings"
	"testing"
)

// in declares a float32 graph input for build.
type in struct {
	name  string
	shape []int
}

// node is shorthand for a node: "Op name in1,in2 -> out1,out2".
func node(spec string, attrs map[string]Attr) *Node {
	f := strings.Fields(spec)
	n := &Node{OpType: f[0], Name: f[1], Attrs: attrs}
	if attrs == nil {
		n.Attrs = map[string]Attr{}
	}
	split := func(s string) []string {
		if s == "_" {
			return nil
		}
		return strings.Split(s, ",")
	}
	n.Inputs = split(f[2])
	n.Outputs = split(f[4])
	for i, s := range n.Inputs {
		if s == "~" {
			n.Inputs[i] = ""
		}
	}
	return n
}

func ints(v ...int64) Attr     { return Attr{Kind: AttrInts, Ints: v} }
func intA(v int64) Attr        { return Attr{Kind: AttrInt, I: v} }
func floatA(v float32) Attr    { return Attr{Kind: AttrFloat, F: v} }
func i64(v ...int64) *Tensor   { return Int64Tensor([]int{len(v)}, v) }
func f32(v ...float32) *Tensor { return Float32Tensor([]int{len(v)}, v) }

// build makes a graph of opset 17 (or opset when > 0).
func build(t *testing.T, opset int, inputs []in, consts map[string]*Tensor, nodes []*Node, outputs ...string) *Graph {
	t.Helper()
	if opset == 0 {
		opset = 17
	}
	g := New("test", opset)
	for _, i := range inputs {
		g.AddInput(i.name, Float32, i.shape)
	}
	for name, c := range consts {
		g.AddConst(name, c)
	}
	for _, n := range nodes {
		g.AddNode(n)
	}
	g.Outputs = outputs
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g
}

// ops lists the op types of g's nodes.
func ops(g *Graph) string {
	var s []string
	for _, n := range g.Nodes {
		s = append(s, n.OpType)
	}
	return strings.Join(s, ",")
}
