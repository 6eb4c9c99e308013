package graph_test

import (
	"strings"
	"testing"

	. "github.com/tessera-ml/tessera/graph"
)

// node is shorthand for a node: "Op name in1,in2 -> out1,out2".
func node(spec string) *Node {
	f := strings.Fields(spec)
	return &Node{OpType: f[0], Name: f[1], Inputs: strings.Split(f[2], ","), Outputs: strings.Split(f[4], ","), Attrs: map[string]Attr{}}
}

// branch makes a subgraph of the given nodes and outputs; its nodes may
// read values of the enclosing graph.
func branch(name string, nodes []*Node, outputs ...string) *Graph {
	g := New(name, 17)
	for _, n := range nodes {
		g.AddNode(n)
	}
	g.Outputs = outputs
	return g
}

func ifNode(name, cond string, then, els *Graph, outs ...string) *Node {
	return &Node{Name: name, OpType: "If", Inputs: []string{cond}, Outputs: outs, Attrs: map[string]Attr{
		"then_branch": {Kind: AttrGraph, G: then}, "else_branch": {Kind: AttrGraph, G: els}}}
}

func TestValidateOuterScope(t *testing.T) {
	g := New("scope", 17)
	g.AddInput("x", Float32, []int{2})
	g.AddInput("c", Bool, []int{})
	// The branch reads y, which the outer graph defines after the If.
	g.AddNode(ifNode("if", "c", branch("b", []*Node{node("Neg n y -> o")}, "o"),
		branch("b2", nil, "x"), "r"))
	g.AddNode(node("Neg late x -> y"))
	g.Outputs = []string{"r"}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "reads y, which is not defined before it") {
		t.Fatalf("got %v, want an error about the branch reading y", err)
	}
}
