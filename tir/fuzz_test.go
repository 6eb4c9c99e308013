// FuzzSimplify: the fuzz input chooses a domain and an expression tree; the
// properties are those of TestRandomProperties (see property_test.go).

package tir

import "testing"

func FuzzSimplify(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 1, 4, 7, 2, 9, 9, 1, 0, 8, 3, 2, 6, 5})
	f.Add([]byte{1, 1, 5, 2, 17, 4, 6, 0, 3, 14, 9, 2, 1, 7, 7, 0, 12, 4})
	f.Add([]byte("floordiv(floormod(x, 8) + 3, 4) * 4"))
	f.Add([]byte{2, 0, 6, 1, 4, 3, 17, 2, 0, 5, 11, 12, 13, 1, 8, 9, 0, 4, 4, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteChoice{data: data}
		vars, dom := propDomain(r)
		g := &propGen{r: r, vars: vars}
		e := g.intExpr(1 + r.IntN(6))
		b := g.boolExpr(r.IntN(4))
		checkProps(t, e, b, vars, dom, r)
	})
}
