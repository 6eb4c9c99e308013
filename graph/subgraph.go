package graph

import (
	"fmt"
	"slices"
	"strconv"
)

// Subgraphs (If's branches, Loop's body) are graphs held by a node's
// attribute (Attr.G). Their nodes may read the values of the enclosing
// graphs; Inline copies one into its enclosing graph, which is how an If
// whose condition is known becomes the nodes of its taken branch.

// FreshName returns base when g has no value of that name, else base_1,
// base_2, ...; the name is reserved (an empty value is created), so that
// successive calls never return the same name.
func (g *Graph) FreshName(base string) string {
	name := base
	for k := 1; g.Values[name] != nil; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	g.Value(name)
	return name
}

// Inline copies subgraph sub into g, for a node of g that holds it: sub's
// constants become constants of g, its inputs read the values of g that
// bind names (sub input → value of g), and its nodes are returned, to be
// placed where the node was. A value that sub defines keeps its name unless
// g already has one of that name, in which case it is renamed (FreshName),
// reads of it included, in nested subgraphs too. outputs are the names in g
// of sub's outputs.
func (g *Graph) Inline(sub *Graph, bind map[string]string) (nodes []*Node, outputs []string, err error) {
	rename := map[string]string{}
	for _, in := range sub.Inputs {
		to, ok := bind[in]
		if !ok {
			return nil, nil, fmt.Errorf("graph %s: input %s is not bound", sub.Name, in)
		}
		rename[in] = to
	}
	for _, name := range sub.ConstNames() {
		if _, isInput := rename[name]; isInput {
			continue
		}
		to := g.FreshName(name)
		g.AddConst(to, sub.Values[name].Const)
		rename[name] = to
	}
	for _, n := range sub.Nodes {
		c := &Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Attrs: make(map[string]Attr, len(n.Attrs))}
		c.Inputs = make([]string, len(n.Inputs))
		for i, in := range n.Inputs {
			c.Inputs[i] = renamed(rename, in)
		}
		for k, a := range n.Attrs {
			if a.Kind == AttrGraph && a.G != nil {
				a.G = a.G.substitute(rename)
			}
			c.Attrs[k] = a
		}
		c.Outputs = make([]string, len(n.Outputs))
		for i, o := range n.Outputs {
			if o == "" {
				continue
			}
			to := g.FreshName(o)
			rename[o] = to
			c.Outputs[i] = to
		}
		nodes = append(nodes, c)
	}
	for _, o := range sub.Outputs {
		outputs = append(outputs, renamed(rename, o))
	}
	return nodes, outputs, nil
}

func renamed(m map[string]string, name string) string {
	if to, ok := m[name]; ok {
		return to
	}
	return name
}

// substitute returns sub with every read of a name it does not define
// itself (an outer-scope reference) renamed by m; sub itself is returned
// when nothing changes.
func (sub *Graph) substitute(m map[string]string) *Graph {
	free := map[string]string{}
	for from, to := range m {
		if from != to && !sub.defines(from) {
			free[from] = to
		}
	}
	if len(free) == 0 {
		return sub
	}
	c := sub.Clone()
	for _, n := range c.Nodes {
		for i, in := range n.Inputs {
			n.Inputs[i] = renamed(free, in)
		}
		for k, a := range n.Attrs {
			if a.Kind == AttrGraph && a.G != nil {
				a.G = a.G.substitute(free)
				n.Attrs[k] = a
			}
		}
	}
	for i, o := range c.Outputs {
		c.Outputs[i] = renamed(free, o)
	}
	return c
}

// defines reports whether name is an input, a constant or a node output of
// g itself.
func (g *Graph) defines(name string) bool {
	if v := g.Values[name]; v != nil && v.Const != nil {
		return true
	}
	if slices.Contains(g.Inputs, name) {
		return true
	}
	for _, n := range g.Nodes {
		if slices.Contains(n.Outputs, name) {
			return true
		}
	}
	return false
}
