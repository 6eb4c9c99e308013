// Package tir is Tessera's low-level IR: scalar expressions (expr.go) with a
// simplifier (simplify.go) and interval analysis (bound.go), and the loop-nest
// statements a schedule lowers to (stmt.go), gathered in a PrimFunc.
//
// Nodes are immutable after construction and are shared freely; a *Var is
// identified by its pointer, never by its name. Every pass that changes a tree
// builds a new one (see Mutate and Substitute in visit.go).
package tir

import (
	"fmt"
	"math"

	"github.com/x448/float16"
)

// DType is the scalar type of an expression or buffer element.
type DType uint8

const (
	Float32 DType = iota // IEEE single precision; the element type of every tensor
	Int                  // 64-bit signed integer; indices and loop variables
	Bool                 // result of comparisons and logic
)

func (t DType) String() string {
	switch t {
	case Float32:
		return "float32"
	case Int:
		return "int"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// Expr is a side-effect-free scalar expression. The family is closed: the
// concrete types are the ones in this file.
type Expr interface {
	Type() DType
	isExpr()
}

// Var is a scalar variable: a loop variable or a symbolic index. Two Vars
// are the same variable only if they are the same pointer.
type Var struct {
	Name string
	T    DType
}

// IntImm is an integer constant.
type IntImm struct{ V int64 }

// FloatImm is a float32 constant (kept in a float64 for printing; the value
// is always representable as a float32).
type FloatImm struct{ V float64 }

// BinOp is an arithmetic operator on two operands of the same type.
type BinOp uint8

const (
	Add BinOp = iota
	Sub
	Mul
	Div      // floating-point division; never used on integers
	FloorDiv // integer division rounding toward negative infinity
	FloorMod // remainder of FloorDiv, with the sign of the divisor
	Min
	Max
)

var binOpNames = [...]string{"+", "-", "*", "/", "floordiv", "floormod", "min", "max"}

func (op BinOp) String() string { return binOpNames[op] }

// Binary applies an arithmetic operator; A and B have the same type.
type Binary struct {
	Op   BinOp
	A, B Expr
}

// CmpOp is a comparison operator.
type CmpOp uint8

const (
	EQ CmpOp = iota
	NE
	LT
	LE
	GT
	GE
)

var cmpOpNames = [...]string{"==", "!=", "<", "<=", ">", ">="}

func (op CmpOp) String() string { return cmpOpNames[op] }

// Compare compares two operands of the same type; its type is Bool.
type Compare struct {
	Op   CmpOp
	A, B Expr
}

// And, Or and Not are boolean logic.
type And struct{ A, B Expr }
type Or struct{ A, B Expr }
type Not struct{ A Expr }

// Select is Cond ? T : F. Only the chosen branch is evaluated, so a branch may
// read out of bounds when its condition is false (padding relies on this).
type Select struct{ Cond, T, F Expr }

// Cast converts X to type To.
type Cast struct {
	To DType
	X  Expr
}

// Load reads one element of a buffer.
type Load struct {
	Buf     *Buffer
	Indices []Expr
}

// Call applies a pure math function by its C name (see MathFuncs).
type Call struct {
	Fn   string
	Args []Expr
}

// MathFunc is a pure float32 function a Call may name: its arity, its C
// spelling, and its value in float64 for the interpreters (te.Eval and
// this package's), which round the result to float32 as the C code does.
type MathFunc struct {
	Arity int
	C     string
	Eval  func(args ...float64) float64
	// Vector says that the CPU code generator computes it on whole
	// vectors (a polynomial or a bit mask), not with a call per lane: a
	// loop of it gains from vectorization (package sketch's annotation).
	Vector bool
}

// MathFuncs lists the functions a Call may name, by name: the one table of
// math functions for the evaluators, code generation and features.
var MathFuncs = map[string]MathFunc{
	"exp":     vectorMath(unaryMath("expf", math.Exp)),
	"log":     unaryMath("logf", math.Log),
	"sqrt":    unaryMath("sqrtf", math.Sqrt),
	"tanh":    vectorMath(unaryMath("tanhf", math.Tanh)),
	"erf":     vectorMath(unaryMath("erff", math.Erf)),
	"fabs":    vectorMath(unaryMath("fabsf", math.Abs)),
	"floor":   unaryMath("floorf", math.Floor),
	"ceil":    unaryMath("ceilf", math.Ceil),
	"trunc":   unaryMath("truncf", math.Trunc),
	"rint":    unaryMath("rintf", math.RoundToEven), // round half to even
	"sigmoid": vectorMath(unaryMath("tsr_sigmoidf", func(v float64) float64 { return 1 / (1 + math.Exp(-v)) })),
	"sin":     unaryMath("sinf", math.Sin),
	"cos":     unaryMath("cosf", math.Cos),
	"tan":     unaryMath("tanf", math.Tan),
	"asin":    unaryMath("asinf", math.Asin),
	"acos":    unaryMath("acosf", math.Acos),
	"atan":    unaryMath("atanf", math.Atan),
	"sinh":    unaryMath("sinhf", math.Sinh),
	"cosh":    unaryMath("coshf", math.Cosh),
	"asinh":   unaryMath("asinhf", math.Asinh),
	"acosh":   unaryMath("acoshf", math.Acosh),
	"atanh":   unaryMath("atanhf", math.Atanh),
	"pow":     {Arity: 2, C: "powf", Eval: func(a ...float64) float64 { return math.Pow(a[0], a[1]) }},
	"fmod":    {Arity: 2, C: "fmodf", Eval: func(a ...float64) float64 { return math.Mod(a[0], a[1]) }},
	// roundhalf rounds to the nearest float16 (ties to even; beyond the
	// largest, 65504, to ±inf from 65520 on; NaN stays NaN): a Cast to
	// float16, computed in float32.
	"roundhalf": unaryMath("tsr_roundhalff", func(v float64) float64 { return float64(float16.Fromfloat32(float32(v)).Float32()) }),
}

func unaryMath(c string, f func(float64) float64) MathFunc {
	return MathFunc{Arity: 1, C: c, Eval: func(a ...float64) float64 { return f(a[0]) }}
}

func vectorMath(f MathFunc) MathFunc {
	f.Vector = true
	return f
}

func (v *Var) Type() DType       { return v.T }
func (*IntImm) Type() DType      { return Int }
func (*FloatImm) Type() DType    { return Float32 }
func (b *Binary) Type() DType    { return b.A.Type() }
func (*Compare) Type() DType     { return Bool }
func (*And) Type() DType         { return Bool }
func (*Or) Type() DType          { return Bool }
func (*Not) Type() DType         { return Bool }
func (s *Select) Type() DType    { return s.T.Type() }
func (c *Cast) Type() DType      { return c.To }
func (l *Load) Type() DType      { return l.Buf.DType }
func (*Call) Type() DType        { return Float32 }
func (*Var) isExpr()             {}
func (*IntImm) isExpr()          {}
func (*FloatImm) isExpr()        {}
func (*Binary) isExpr()          {}
func (*Compare) isExpr()         {}
func (*And) isExpr()             {}
func (*Or) isExpr()              {}
func (*Not) isExpr()             {}
func (*Select) isExpr()          {}
func (*Cast) isExpr()            {}
func (*Load) isExpr()            {}
func (*Call) isExpr()            {}
func (v *Var) String() string    { return v.Name }
func (e *IntImm) String() string { return fmt.Sprint(e.V) }

// NewVar returns a fresh integer variable.
func NewVar(name string) *Var { return &Var{Name: name, T: Int} }

// Const returns an integer constant.
func Const(v int64) *IntImm { return &IntImm{V: v} }

// F32 returns a float32 constant.
func F32(v float64) *FloatImm { return &FloatImm{V: float64(float32(v))} }

// Constructors. They build nodes as given; Simplify folds them.

func AddE(a, b Expr) Expr      { return &Binary{Add, a, b} }
func SubE(a, b Expr) Expr      { return &Binary{Sub, a, b} }
func MulE(a, b Expr) Expr      { return &Binary{Mul, a, b} }
func DivE(a, b Expr) Expr      { return &Binary{Div, a, b} }
func FloorDivE(a, b Expr) Expr { return &Binary{FloorDiv, a, b} }
func FloorModE(a, b Expr) Expr { return &Binary{FloorMod, a, b} }
func MinE(a, b Expr) Expr      { return &Binary{Min, a, b} }
func MaxE(a, b Expr) Expr      { return &Binary{Max, a, b} }
func Cmp(op CmpOp, a, b Expr) Expr {
	return &Compare{op, a, b}
}
func AndE(a, b Expr) Expr             { return &And{a, b} }
func OrE(a, b Expr) Expr              { return &Or{a, b} }
func NotE(a Expr) Expr                { return &Not{a} }
func SelectE(c, t, f Expr) Expr       { return &Select{c, t, f} }
func CallE(fn string, a ...Expr) Expr { return &Call{Fn: fn, Args: a} }

// IsConst reports whether e is an integer constant, and its value.
func IsConst(e Expr) (int64, bool) {
	if c, ok := e.(*IntImm); ok {
		return c.V, true
	}
	return 0, false
}
