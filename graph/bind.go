package graph

import (
	"fmt"
	"slices"
	"sort"
)

// Bind gives the graph inputs their static shapes: dims maps an input name
// to its full shape (what `--input name=1,3,224,224` says). A bound shape
// must agree with the model's static dimensions and rank. Inputs left out
// keep the model's shape. After binding, every input must be static: the
// error then lists each dynamic dimension still unbound (an
// *UnboundDimsError).
func (g *Graph) Bind(dims map[string][]int) error {
	names := make([]string, 0, len(dims))
	for name := range dims {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shape := dims[name]
		if !g.IsInput(name) {
			return fmt.Errorf("graph %s: cannot bind %s: not a graph input (inputs: %v)", g.Name, name, g.Inputs)
		}
		v := g.Values[name]
		if v.Shape != nil && len(v.Shape) != len(shape) {
			return fmt.Errorf("graph %s: cannot bind %s to %v: the model gives it rank %d (%s)", g.Name, name, shape, len(v.Shape), shapeString(v))
		}
		for i, d := range shape {
			if d < 0 {
				return fmt.Errorf("graph %s: cannot bind %s to %v: dimension %d is negative", g.Name, name, shape, i)
			}
			if v.Shape != nil && v.Shape[i] >= 0 && v.Shape[i] != d {
				return fmt.Errorf("graph %s: cannot bind %s to %v: the model fixes dimension %d to %d", g.Name, name, shape, i, v.Shape[i])
			}
		}
		v.Shape = slices.Clone(shape)
		v.DimParams = nil
	}
	return g.CheckBound()
}

// CheckBound returns an *UnboundDimsError listing the dynamic dimensions
// of the graph inputs, or nil when every input is static.
func (g *Graph) CheckBound() error {
	var e UnboundDimsError
	for _, name := range g.Inputs {
		v := g.Values[name]
		if v.Shape == nil {
			e.Dims = append(e.Dims, UnboundDim{Input: name, Index: -1, Param: "unknown rank"})
			continue
		}
		for i, d := range v.Shape {
			if d < 0 {
				p := ""
				if i < len(v.DimParams) {
					p = v.DimParams[i]
				}
				e.Dims = append(e.Dims, UnboundDim{Input: name, Index: i, Param: p})
			}
		}
	}
	if len(e.Dims) > 0 {
		return &e
	}
	return nil
}

// Freeze turns graph input name into a constant with contents t: the input
// disappears from Inputs and every op reading it sees t. Freezing the
// inputs that carry shapes, axes or bounds makes a model with such inputs
// static. t's dtype must match the input's, and its shape the input's
// static dimensions.
func (g *Graph) Freeze(name string, t *Tensor) error {
	i := slices.Index(g.Inputs, name)
	if i < 0 {
		return fmt.Errorf("graph %s: cannot freeze %s: not a graph input", g.Name, name)
	}
	v := g.Values[name]
	if v.DType != t.DType {
		return fmt.Errorf("graph %s: cannot freeze %s (%s) to a %s tensor", g.Name, name, v.DType, t.DType)
	}
	if v.Shape != nil {
		if len(v.Shape) != len(t.Shape) {
			return fmt.Errorf("graph %s: cannot freeze %s (%s) to a tensor of shape %v", g.Name, name, shapeString(v), t.Shape)
		}
		for k, d := range v.Shape {
			if d >= 0 && d != t.Shape[k] {
				return fmt.Errorf("graph %s: cannot freeze %s (%s) to a tensor of shape %v", g.Name, name, shapeString(v), t.Shape)
			}
		}
	}
	if err := t.Check(); err != nil {
		return fmt.Errorf("graph %s: cannot freeze %s: %v", g.Name, name, err)
	}
	g.Inputs = slices.Delete(g.Inputs, i, i+1)
	v.Shape, v.DimParams, v.Const = slices.Clone(t.Shape), nil, t
	return nil
}

// Check verifies the tensor invariant.
func (t *Tensor) Check() error {
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in shape %v", t.Shape)
		}
	}
	n := t.Len()
	switch t.DType {
	case Float32, Float16, BFloat16:
		if len(t.F32) != n {
			return fmt.Errorf("%s tensor of shape %v has %d elements", t.DType, t.Shape, len(t.F32))
		}
	case Int64, Int32, Int16, Int8, Uint8, Uint16, Uint32, Bool:
		if len(t.I64) != n {
			return fmt.Errorf("%s tensor of shape %v has %d elements", t.DType, t.Shape, len(t.I64))
		}
	default:
		return fmt.Errorf("tensor of undefined dtype")
	}
	return nil
}

func shapeString(v *Value) string {
	if v.Shape == nil {
		return "unknown shape"
	}
	s := "["
	for i, d := range v.Shape {
		if i > 0 {
			s += ", "
		}
		switch {
		case d >= 0:
			s += fmt.Sprint(d)
		case i < len(v.DimParams) && v.DimParams[i] != "":
			s += v.DimParams[i]
		default:
			s += "?"
		}
	}
	return s + "]"
}
