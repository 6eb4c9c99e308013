package tir

// Work counts the work a kernel does, statically: every Store's
// operations, math calls and loads (not index arithmetic), times the extents of
// the loops around it, as if every loop ran to its extent. Two schedules
// of one computation differ in it only by what one computes again (a
// stage attached below a loop its region does not depend on, an expensive
// stage inlined into a consumer that reads each element many times).
func Work(f *PrimFunc) float64 {
	return work(f.Body, 1)
}

func work(s Stmt, times float64) float64 {
	switch s := s.(type) {
	case *For:
		return work(s.Body, times*float64(s.Extent))
	case *Allocate:
		return work(s.Body, times)
	case *IfThenElse:
		return work(s.Then, times) + work(s.Else, times)
	case *Seq:
		total := 0.0
		for _, c := range s.Stmts {
			total += work(c, times)
		}
		return total
	case *Let:
		return work(s.Body, times)
	case *Pragma:
		return work(s.Body, times)
	case *Store:
		return times * float64(exprOps(s.Value))
	}
	return 0
}

// exprOps counts e's operations, math calls and loads, not the
// arithmetic of the loads' indices.
func exprOps(e Expr) int {
	n := 0
	var walk func(e Expr)
	walk = func(e Expr) {
		switch e := e.(type) {
		case *Binary:
			n++
			walk(e.A)
			walk(e.B)
		case *Call:
			n++
			for _, a := range e.Args {
				walk(a)
			}
		case *Select:
			n++
			walk(e.Cond)
			walk(e.T)
			walk(e.F)
		case *Cast:
			walk(e.X)
		case *Compare:
			n++
			walk(e.A)
			walk(e.B)
		case *Load:
			n++
		}
	}
	walk(e)
	return n
}
