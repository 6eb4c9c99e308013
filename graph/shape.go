package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxElems caps the element count of any value's static shape.
const MaxElems = 1 << 40

// CheckDeclared compares every output, its shape inferred, with the type
// the model declares for it (Declared): a declared static dimension or
// dtype that the graph does not compute means the file contradicts itself
// (or tessera misreads an op), and nothing built from it could be trusted.
func (g *Graph) CheckDeclared() error {
	for _, name := range g.Outputs {
		d, ok := g.Declared[name]
		v := g.Values[name]
		if !ok || v == nil {
			continue
		}
		if d.DType != Undefined && v.DType != Undefined && d.DType != v.DType {
			return fmt.Errorf("output %s is declared %s, but the graph computes %s", name, d.DType, v.DType)
		}
		if d.Shape == nil || v.Shape == nil {
			continue
		}
		bad := len(d.Shape) != len(v.Shape)
		for i := 0; !bad && i < len(d.Shape); i++ {
			bad = d.Shape[i] >= 0 && d.Shape[i] != v.Shape[i]
		}
		if bad {
			return fmt.Errorf("output %s is declared with shape %s, but the graph computes %s", name, dimsString(d.Shape), dimsString(v.Shape))
		}
	}
	return nil
}

// dimsString prints a shape as [d0,d1,...], "?" for a dynamic dimension.
func dimsString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			parts[i] = "?"
		} else {
			parts[i] = strconv.Itoa(d)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}
