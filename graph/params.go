package graph

// Operands that ONNX gives either as an input or, in older opsets, as an
// attribute; the op rules of package ops read them through these.

// IntsParam returns an integer list operand of node n given either as input
// i (in the opsets where it is an input) or as attribute attr (in the older
// opsets where it is an attribute): ok is false when neither is given. An
// input must be constant (else a *NotConstantError); what names it in
// errors.
func IntsParam(g *Graph, n *Node, i int, attr, what string) (vals []int64, ok bool, err error) {
	if name := n.Input(i); name != "" {
		t := g.ConstOf(name)
		if t == nil {
			return nil, false, &NotConstantError{Value: name, Node: n.Name, Op: n.OpType, What: what}
		}
		if t.DType != Int64 && t.DType != Int32 {
			return nil, false, n.Errorf("%s input %s is %s, want int64", what, name, t.DType)
		}
		return t.I64, true, nil
	}
	if attr == "" || !n.HasAttr(attr) {
		return nil, false, nil
	}
	v, err := n.Ints(attr)
	return v, err == nil, err
}

// FloatParam returns a scalar float operand of node n given either as input
// i or as attribute attr; ok is false when neither is given.
func FloatParam(g *Graph, n *Node, i int, attr, what string) (v float32, ok bool, err error) {
	if name := n.Input(i); name != "" {
		t := g.ConstOf(name)
		if t == nil {
			return 0, false, &NotConstantError{Value: name, Node: n.Name, Op: n.OpType, What: what}
		}
		if t.Len() != 1 {
			return 0, false, n.Errorf("%s input %s has shape %v, want a scalar", what, name, t.Shape)
		}
		return float32(t.Float64s()[0]), true, nil
	}
	if attr == "" || !n.HasAttr(attr) {
		return 0, false, nil
	}
	v, err = n.Float(attr, 0)
	return v, err == nil, err
}
