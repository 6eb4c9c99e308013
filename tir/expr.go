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
	Float32 DType = iota // IEEE single precision; the element type of float tensors
	Int                  // 64-bit signed integer; indices and loop variables
	Bool                 // result of comparisons and logic
	// The integer element types of tensors (IntElem): quantized data
	// (Int8, Uint8), packed operands (Int16) and accumulators (Int32).
	// Arithmetic is on Int32 only (narrower values are Cast to it first),
	// and never overflows: a schedule whose Int32 arithmetic leaves its
	// range is as wrong as one that reads out of bounds, and the
	// interpreters fault on it. A Cast to a narrower integer wraps (two's
	// complement, as GCC and Clang define it); a Cast from Float32 to an
	// integer type truncates toward zero, and a value outside the type's
	// range (or NaN) is a fault: lowerings clamp before they narrow.
	Int8
	Uint8
	Int16
	Int32
	// BFloat16 is a storage type of float tensors: the upper half of a
	// float32 (8 exponent bits, 8 significant bits), two bytes in memory.
	// Arithmetic is on Float32 only: a BFloat16 value is Cast to Float32
	// (exactly) before it is used, and a Cast from Float32 to BFloat16
	// rounds to nearest, ties to even (RoundBFloat16), as the hardware's
	// conversions do (vcvtneps2bf16, bfcvt). The opt-in bf16 precision
	// (graph.Graph.BF16) stores a convolution's or matmul's operands so.
	BFloat16
)

func (t DType) String() string {
	switch t {
	case Float32:
		return "float32"
	case Int:
		return "int"
	case Bool:
		return "bool"
	case Int8:
		return "int8"
	case Uint8:
		return "uint8"
	case Int16:
		return "int16"
	case Int32:
		return "int32"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// IntElem reports whether t is an integer element type of tensors (Int8,
// Uint8, Int16, Int32), as opposed to Int, the type of indices.
func (t DType) IntElem() bool { return t >= Int8 && t <= Int32 }

// Bytes is the size of one element of a buffer of type t in memory.
func (t DType) Bytes() int {
	switch t {
	case Int:
		return 8
	case Int8, Uint8:
		return 1
	case Int16, BFloat16:
		return 2
	}
	return 4
}

// IsFloat reports whether t holds floating-point values: Float32 or its
// storage form BFloat16.
func (t DType) IsFloat() bool { return t == Float32 || t == BFloat16 }

// RoundBFloat16 rounds f to the nearest bfloat16 value, ties to even, as
// a float32 (the upper 16 bits of its bits; the lower are zero). NaN stays
// NaN (quieted, its sign kept); values beyond bfloat16's largest finite
// value round to ±Inf as IEEE rounding does.
func RoundBFloat16(f float32) float32 {
	b := math.Float32bits(f)
	if f != f {
		return math.Float32frombits((b | 0x00400000) &^ 0xffff)
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// Range returns the smallest and largest values of an integer element
// type (of Int, the int64 range).
func (t DType) Range() (lo, hi int64) {
	switch t {
	case Int8:
		return math.MinInt8, math.MaxInt8
	case Uint8:
		return 0, math.MaxUint8
	case Int16:
		return math.MinInt16, math.MaxInt16
	case Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// Wrap reduces v to the integer type t as a two's-complement narrowing
// conversion does (v unchanged for Int).
func (t DType) Wrap(v int64) int64 {
	switch t {
	case Int8:
		return int64(int8(v))
	case Uint8:
		return int64(uint8(v))
	case Int16:
		return int64(int16(v))
	case Int32:
		return int64(int32(v))
	}
	return v
}

// The interpreters (this package's Run and te's Eval) and everything that
// hands them data hold a buffer as one float32 slot per element, whatever
// its type: an integer element's slot holds the bits of its value as an
// int32 (never converted as a float, so no bit pattern is altered), a
// bfloat16 element's slot its value as a float32 (exact).
// PackMemory and UnpackMemory convert between that form and the memory a
// compiled kernel reads, where an element takes t.Bytes().

// IntSlot returns the slot of integer element value v.
func IntSlot(v int64) float32 { return math.Float32frombits(uint32(int32(v))) }

// SlotInt returns the value of integer element type t held in slot f.
func SlotInt(t DType, f float32) int64 { return t.Wrap(int64(int32(math.Float32bits(f)))) }

// SlotFloat returns the value held in a slot of type t as a float64: the
// float itself, or an integer element's value.
func SlotFloat(t DType, f float32) float64 {
	if t.IntElem() {
		return float64(SlotInt(t, f))
	}
	return float64(f)
}

// ValueSlot returns the slot holding v in a buffer of type t: v rounded to
// float32, or for an integer type v rounded to nearest (ties to even) and
// clamped to the type's range.
func ValueSlot(t DType, v float64) float32 {
	if t == BFloat16 {
		return RoundBFloat16(float32(v))
	}
	if !t.IntElem() {
		return float32(v)
	}
	lo, hi := t.Range()
	r := math.RoundToEven(v)
	switch {
	case math.IsNaN(r):
		r = 0
	case r < float64(lo):
		r = float64(lo)
	case r > float64(hi):
		r = float64(hi)
	}
	return IntSlot(int64(r))
}

// MemoryWords returns how many 32-bit words n elements of type t take in
// memory (rounded up).
func MemoryWords(t DType, n int) int { return (n*t.Bytes() + 3) / 4 }

// PackMemory returns slots (one per element of type t) in a compiled
// kernel's memory layout, as 32-bit words (the last one zero-padded);
// slots itself for a 4-byte type.
func PackMemory(t DType, slots []float32) []float32 {
	if t.Bytes() == 4 {
		return slots
	}
	words := make([]uint32, MemoryWords(t, len(slots)))
	size := t.Bytes()
	per := 4 / size
	mask := uint32(1)<<(8*size) - 1
	for i, f := range slots {
		w := uint32(int32(math.Float32bits(f))) & mask
		if t == BFloat16 {
			w = math.Float32bits(f) >> 16 // the slot holds a bfloat16 value: its upper half
		}
		words[i/per] |= w << (8 * size * (i % per))
	}
	out := make([]float32, len(words))
	for i, w := range words {
		out[i] = math.Float32frombits(w)
	}
	return out
}

// UnpackMemory is PackMemory's inverse: n elements of type t from a
// kernel's memory words, one slot each.
func UnpackMemory(t DType, words []float32, n int) []float32 {
	if t.Bytes() == 4 {
		return words[:n]
	}
	size := t.Bytes()
	per := 4 / size
	out := make([]float32, n)
	for i := range out {
		w := math.Float32bits(words[i/per]) >> (8 * size * (i % per))
		if t == BFloat16 {
			out[i] = math.Float32frombits(w << 16)
			continue
		}
		out[i] = IntSlot(t.Wrap(int64(w)))
	}
	return out
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
	"exp":   vectorMath(unaryMath("expf", math.Exp)),
	"log":   unaryMath("logf", math.Log),
	"sqrt":  unaryMath("sqrtf", math.Sqrt),
	"tanh":  vectorMath(unaryMath("tanhf", math.Tanh)),
	"erf":   vectorMath(unaryMath("erff", math.Erf)),
	"fabs":  vectorMath(unaryMath("fabsf", math.Abs)),
	"floor": unaryMath("floorf", math.Floor),
	"ceil":  unaryMath("ceilf", math.Ceil),
	"trunc": unaryMath("truncf", math.Trunc),
	"rint":  unaryMath("rintf", math.RoundToEven), // round half to even
	// nan0 is x, or 0 where x is NaN: with a clamp, a float's conversion
	// to an integer type that reads the float once (a select on x != x
	// reads it three times, and a quantized value inlined into it was
	// computed three times).
	"nan0": vectorMath(unaryMath("tsr_nan0f", func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	})),
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

// IntOf returns the integer constant v of element type t (a Cast of an
// IntImm, which is of type Int).
func IntOf(t DType, v int64) Expr { return &Cast{To: t, X: Const(v)} }

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
