package tir

import "reflect"

// DynamicLoops returns the variables of f's loops whose extents differ
// from those of the same loops of others: the same kernel lowered at other
// values of a dimension that varies at run time. A kernel of others whose
// statements differ from f's in kind or number is passed over: its loops
// do not correspond to f's.
func DynamicLoops(f *PrimFunc, others ...*PrimFunc) map[*Var]bool {
	flat := func(g *PrimFunc) []Stmt {
		var out []Stmt
		WalkStmt(g.Body, func(s Stmt) bool {
			out = append(out, s)
			return true
		})
		return out
	}
	mine := flat(f)
	dyn := map[*Var]bool{}
	for _, g := range others {
		theirs := flat(g)
		if len(theirs) != len(mine) {
			continue
		}
		same := true
		for i := range mine {
			if reflect.TypeOf(mine[i]) != reflect.TypeOf(theirs[i]) {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		for i, s := range mine {
			if a, ok := s.(*For); ok && a.Var != nil && a.Extent != theirs[i].(*For).Extent {
				dyn[a.Var] = true
			}
		}
	}
	return dyn
}
