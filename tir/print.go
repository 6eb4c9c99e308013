package tir

import (
	"fmt"
	"strconv"
	"strings"
)

// ExprString prints e in a compact infix form, e.g. "A[i, (k + 1)]".
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case nil:
		b.WriteString("<nil>")
	case *Var:
		b.WriteString(e.Name)
	case *IntImm:
		b.WriteString(strconv.FormatInt(e.V, 10))
	case *FloatImm:
		b.WriteString(FormatFloat(e.V))
	case *Binary:
		switch e.Op {
		case FloorDiv, FloorMod, Min, Max:
			b.WriteString(e.Op.String())
			b.WriteByte('(')
			writeExpr(b, e.A)
			b.WriteString(", ")
			writeExpr(b, e.B)
			b.WriteByte(')')
		default:
			b.WriteByte('(')
			writeExpr(b, e.A)
			b.WriteString(" " + e.Op.String() + " ")
			writeExpr(b, e.B)
			b.WriteByte(')')
		}
	case *Compare:
		b.WriteByte('(')
		writeExpr(b, e.A)
		b.WriteString(" " + e.Op.String() + " ")
		writeExpr(b, e.B)
		b.WriteByte(')')
	case *And:
		b.WriteByte('(')
		writeExpr(b, e.A)
		b.WriteString(" && ")
		writeExpr(b, e.B)
		b.WriteByte(')')
	case *Or:
		b.WriteByte('(')
		writeExpr(b, e.A)
		b.WriteString(" || ")
		writeExpr(b, e.B)
		b.WriteByte(')')
	case *Not:
		b.WriteString("!")
		writeExpr(b, e.A)
	case *Select:
		b.WriteString("select(")
		writeExpr(b, e.Cond)
		b.WriteString(", ")
		writeExpr(b, e.T)
		b.WriteString(", ")
		writeExpr(b, e.F)
		b.WriteByte(')')
	case *Cast:
		b.WriteString(e.To.String())
		b.WriteByte('(')
		writeExpr(b, e.X)
		b.WriteByte(')')
	case *Load:
		b.WriteString(e.Buf.Name)
		writeIndices(b, e.Indices)
	case *Call:
		b.WriteString(e.Fn)
		b.WriteByte('(')
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, a)
		}
		b.WriteByte(')')
	default:
		fmt.Fprintf(b, "<%T>", e)
	}
}

func writeIndices(b *strings.Builder, idx []Expr) {
	b.WriteByte('[')
	for i, x := range idx {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, x)
	}
	b.WriteByte(']')
}

// FormatFloat prints a float32 value so that it reads back exactly.
func FormatFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 32)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

// StmtString prints s as an indented loop nest.
func StmtString(s Stmt) string {
	var b strings.Builder
	writeStmt(&b, s, 0)
	return b.String()
}

// String prints the function's signature and body.
func (f *PrimFunc) String() string {
	var b strings.Builder
	b.WriteString("func " + f.Name + "(")
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s%v", p.Name, p.Shape)
	}
	b.WriteString(") {\n")
	writeStmt(&b, f.Body, 1)
	b.WriteString("}\n")
	return b.String()
}

func writeStmt(b *strings.Builder, s Stmt, depth int) {
	ind := strings.Repeat("  ", depth)
	switch s := s.(type) {
	case nil:
	case *For:
		kind := ""
		if s.Kind != Serial {
			kind = " " + s.Kind.String()
			if s.Kind == ThreadBound {
				kind += "(" + s.Thread + ")"
			}
		}
		fmt.Fprintf(b, "%sfor %s in 0..%d%s {\n", ind, s.Var.Name, s.Extent, kind)
		writeStmt(b, s.Body, depth+1)
		b.WriteString(ind + "}\n")
	case *Store:
		b.WriteString(ind + s.Buf.Name)
		writeIndices(b, s.Indices)
		b.WriteString(" = ")
		writeExpr(b, s.Value)
		b.WriteByte('\n')
	case *Allocate:
		fmt.Fprintf(b, "%salloc %s%v %s\n", ind, s.Buf.Name, s.Buf.Shape, s.Buf.Scope)
		writeStmt(b, s.Body, depth)
	case *IfThenElse:
		b.WriteString(ind + "if ")
		writeExpr(b, s.Cond)
		b.WriteString(" {\n")
		writeStmt(b, s.Then, depth+1)
		if s.Else != nil {
			b.WriteString(ind + "} else {\n")
			writeStmt(b, s.Else, depth+1)
		}
		b.WriteString(ind + "}\n")
	case *Seq:
		for _, c := range s.Stmts {
			writeStmt(b, c, depth)
		}
	case *Let:
		b.WriteString(ind + "let " + s.Var.Name + " = ")
		writeExpr(b, s.Value)
		b.WriteByte('\n')
		writeStmt(b, s.Body, depth)
	case *Pragma:
		fmt.Fprintf(b, "%spragma %s=%d\n", ind, s.Key, s.Value)
		writeStmt(b, s.Body, depth)
	case *Barrier:
		b.WriteString(ind + "barrier\n")
	default:
		fmt.Fprintf(b, "%s<%T>\n", ind, s)
	}
}
