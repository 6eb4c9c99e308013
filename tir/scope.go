package tir

import "fmt"

// CheckScopes reports the first buffer that f reads or writes outside
// its scope: neither a parameter of f nor allocated by an Allocate around
// the access. A schedule that computes a stage at a loop before the
// stage its indices read (a gather's index, attached deeper) lowers so.
func CheckScopes(f *PrimFunc) error {
	scope := map[*Buffer]bool{}
	for _, p := range f.Params {
		scope[p] = true
	}
	return checkScopes(f.Body, scope)
}

func checkScopes(s Stmt, scope map[*Buffer]bool) error {
	var err error
	check := func(e Expr) {
		WalkExpr(e, func(x Expr) bool {
			if l, ok := x.(*Load); ok && err == nil && !scope[l.Buf] {
				err = fmt.Errorf("buffer %s is read outside its scope", l.Buf.Name)
			}
			return err == nil
		})
	}
	switch s := s.(type) {
	case *For:
		return checkScopes(s.Body, scope)
	case *Allocate:
		had := scope[s.Buf]
		scope[s.Buf] = true
		err = checkScopes(s.Body, scope)
		scope[s.Buf] = had
	case *IfThenElse:
		if check(s.Cond); err == nil {
			if err = checkScopes(s.Then, scope); err == nil && s.Else != nil {
				err = checkScopes(s.Else, scope)
			}
		}
	case *Seq:
		for _, c := range s.Stmts {
			if err = checkScopes(c, scope); err != nil {
				break
			}
		}
	case *Let:
		if check(s.Value); err == nil {
			err = checkScopes(s.Body, scope)
		}
	case *Pragma:
		return checkScopes(s.Body, scope)
	case *Store:
		if !scope[s.Buf] {
			return fmt.Errorf("buffer %s is written outside its scope", s.Buf.Name)
		}
		for _, i := range s.Indices {
			check(i)
		}
		check(s.Value)
	}
	return err
}
