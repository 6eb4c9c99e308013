package tir

import (
	"errors"
	"fmt"
	"math"
)

// Run interprets f on args (one float32 slice per parameter, row-major),
// writing the outputs in place. Loops of every kind run serially. Any read
// or write outside a buffer, a read of a variable out of scope, or an
// allocation too large is an error: this is the checker that tests run on
// every lowered schedule, before and apart from the C compiler.
func Run(f *PrimFunc, args [][]float32) (err error) {
	if len(args) != len(f.Params) {
		return fmt.Errorf("tir: run %s: %d arguments for %d parameters", f.Name, len(args), len(f.Params))
	}
	in := &interp{slots: map[*Var]int{}, bufs: map[*Buffer]int{}}
	for i, p := range f.Params {
		if len(args[i]) != p.Size() {
			return fmt.Errorf("tir: run %s: argument %s has %d elements, want %d", f.Name, p.Name, len(args[i]), p.Size())
		}
		in.bufs[p] = len(in.mem)
		in.mem = append(in.mem, args[i])
		in.memBuf = append(in.memBuf, p)
	}
	defer func() {
		if r := recover(); r != nil {
			switch fault := r.(type) {
			case runFault:
				err = fmt.Errorf("tir: run %s: %s", f.Name, string(fault))
			case budgetFault:
				err = fmt.Errorf("tir: run %s: %w", f.Name, ErrBudget)
			default:
				panic(r)
			}
		}
	}()
	exec := in.stmt(f.Body)
	if in.err != nil {
		return fmt.Errorf("tir: run %s: %w", f.Name, in.err)
	}
	steps := int64(maxInterpSteps)
	exec(&frame{vars: make([]int64, len(in.slots)), mem: in.mem, steps: &steps})
	return nil
}

type runFault string

// budgetFault stops a run that would take more than maxInterpSteps loop
// iterations (ErrBudget).
type budgetFault struct{}

// ErrBudget is the error of a run longer than the interpreter affords
// (2^28 loop iterations): not a fault of the function, which a checker
// cannot check that way.
var ErrBudget = errors.New("more than the interpreter's budget of loop iterations")

// frame is the interpreter's run-time state: variable values and buffer
// storage by slot. RunGPU gives every thread a frame of its own.
type frame struct {
	vars  []int64
	mem   [][]float32
	steps *int64     // loop iterations left before the run is declared too long (shared by the threads of a run)
	th    *gpuThread // the GPU thread running this frame; nil in Run
}

// maxInterpSteps bounds the loop iterations of one Run.
const maxInterpSteps = 1 << 28

type interp struct {
	slots map[*Var]int
	bufs  map[*Buffer]int
	live  map[*Buffer]bool // the buffers whose allocation is being compiled
	// memBuf is the buffer of each storage slot of mem (a buffer whose
	// allocation unrolling copied has a slot per copy).
	memBuf []*Buffer
	mem    [][]float32
	err    error
	gpu    *gpuCompile // set while RunGPU compiles a kernel body
}

func (in *interp) fail(format string, a ...any) {
	if in.err == nil {
		in.err = fmt.Errorf(format, a...)
	}
}

func (in *interp) slot(v *Var) int {
	s, ok := in.slots[v]
	if !ok {
		s = len(in.slots)
		in.slots[v] = s
	}
	return s
}

const maxInterpAlloc = 1 << 26

func (in *interp) stmt(s Stmt) func(*frame) {
	switch s := s.(type) {
	case nil:
		return func(*frame) {}
	case *Seq:
		fs := make([]func(*frame), len(s.Stmts))
		for i, c := range s.Stmts {
			fs[i] = in.stmt(c)
		}
		return func(fr *frame) {
			for _, f := range fs {
				f(fr)
			}
		}
	case *For:
		slot := in.slot(s.Var)
		body := in.stmt(s.Body)
		ext := int64(s.Extent)
		if in.gpu != nil && s.Kind == ThreadBound && s.Thread != "vthread" {
			in.fail("loop %s bound to %s inside a kernel body (thread loops belong at the top of a kernel)", s.Var.Name, s.Thread)
		}
		return func(fr *frame) {
			*fr.steps -= ext
			if *fr.steps < 0 {
				panic(budgetFault{})
			}
			for i := int64(0); i < ext; i++ {
				fr.vars[slot] = i
				body(fr)
			}
			fr.vars[slot] = math.MinInt64 // out of scope: any later use is a fault
		}
	case *Let:
		slot := in.slot(s.Var)
		body := in.stmt(s.Body)
		if s.Var.T == Float32 {
			// A float let (the partial sums of forwardUpdates) keeps its
			// float32 value's bits in the variable's slot.
			val := in.float(s.Value)
			return func(fr *frame) {
				fr.vars[slot] = int64(math.Float64bits(float64(float32(val(fr)))))
				body(fr)
			}
		}
		val := in.int(s.Value)
		return func(fr *frame) {
			fr.vars[slot] = val(fr)
			body(fr)
		}
	case *Pragma:
		return in.stmt(s.Body)
	case *Barrier:
		if in.gpu == nil {
			return func(*frame) {} // serial execution needs no barrier
		}
		id := in.gpu.barriers
		in.gpu.barriers++
		return func(fr *frame) { fr.th.barrier(id) }
	case *IfThenElse:
		cond := in.bool(s.Cond)
		then, els := in.stmt(s.Then), in.stmt(s.Else)
		return func(fr *frame) {
			if cond(fr) {
				then(fr)
			} else {
				els(fr)
			}
		}
	case *Allocate:
		// A buffer is allocated once at a time: allocated again inside its
		// own allocation is an error, but the copies of one allocation that
		// unrolling a loop leaves side by side each get storage of their
		// own, which the buffer names inside its copy's scope only.
		if in.live[s.Buf] {
			in.fail("buffer %s allocated twice", s.Buf.Name)
		}
		n := s.Buf.Size()
		if n <= 0 || n > maxInterpAlloc {
			in.fail("allocation of %s with %d elements", s.Buf.Name, n)
		}
		slot := len(in.mem)
		prev, had := in.bufs[s.Buf]
		in.bufs[s.Buf] = slot
		in.mem = append(in.mem, nil)
		in.memBuf = append(in.memBuf, s.Buf)
		if in.live == nil {
			in.live = map[*Buffer]bool{}
		}
		in.live[s.Buf] = true
		defer func() {
			delete(in.live, s.Buf)
			if had {
				in.bufs[s.Buf] = prev
			} else {
				delete(in.bufs, s.Buf)
			}
		}()
		if in.gpu != nil {
			return in.gpuAllocate(s, slot)
		}
		return in.localAllocate(s, slot) // uninitialized reads show up as NaN
	case *Store:
		off := in.offset(s.Buf, s.Indices)
		slot, ok := in.bufs[s.Buf]
		if !ok {
			in.fail("store to undeclared buffer %s", s.Buf.Name)
		}
		var val func(*frame) float32
		if t := s.Buf.DType; t.IntElem() {
			if s.Value.Type() != t {
				in.fail("store of a %v value into %s, a buffer of %v", s.Value.Type(), s.Buf.Name, t)
			}
			iv := in.int(s.Value)
			val = func(fr *frame) float32 { return IntSlot(iv(fr)) }
		} else {
			if s.Value.Type() != t && (t == BFloat16 || s.Value.Type() == BFloat16) {
				in.fail("store of a %v value into %s, a buffer of %v", s.Value.Type(), s.Buf.Name, t)
			}
			fv := in.float(s.Value)
			val = func(fr *frame) float32 { return float32(fv(fr)) }
		}
		if in.checked(s.Buf) {
			return func(fr *frame) {
				o := off(fr)
				v := val(fr)
				fr.th.access(slot, o, true)
				fr.mem[slot][o] = v
			}
		}
		return func(fr *frame) {
			o := off(fr)
			fr.mem[slot][o] = val(fr)
		}
	}
	in.fail("unknown statement %T", s)
	return func(*frame) {}
}

// offset returns a function computing the flat offset of an access,
// faulting when any index is outside its dimension.
func (in *interp) offset(b *Buffer, idx []Expr) func(*frame) int64 {
	if len(idx) != len(b.Shape) {
		in.fail("%s accessed with %d indices, rank %d", b.Name, len(idx), len(b.Shape))
		return func(*frame) int64 { return 0 }
	}
	fs := make([]func(*frame) int64, len(idx))
	for i, x := range idx {
		fs[i] = in.int(x)
	}
	strides := b.Strides()
	shape := b.Shape
	name := b.Name
	return func(fr *frame) int64 {
		o := int64(0)
		for i, f := range fs {
			v := f(fr)
			if v < 0 || v >= int64(shape[i]) {
				panic(runFault(fmt.Sprintf("%s accessed out of bounds: index %d of dimension %d is outside [0, %d)", name, v, i, shape[i])))
			}
			o += v * int64(strides[i])
		}
		return o
	}
}

func (in *interp) float(x Expr) func(*frame) float64 {
	switch x := x.(type) {
	case *FloatImm:
		v := x.V
		return func(*frame) float64 { return v }
	case *Var:
		if x.T != Float32 {
			break
		}
		slot, ok := in.slots[x]
		if !ok {
			in.fail("float variable %s used outside its let", x.Name)
			return func(*frame) float64 { return 0 }
		}
		return func(fr *frame) float64 { return math.Float64frombits(uint64(fr.vars[slot])) }
	case *Load:
		if !x.Buf.DType.IsFloat() {
			break
		}
		load := in.load(x)
		return func(fr *frame) float64 { return float64(load(fr)) }
	case *Cast:
		if t := x.X.Type(); t == Int || t.IntElem() {
			f := in.int(x.X)
			return func(fr *frame) float64 { return float64(f(fr)) }
		}
		f := in.float(x.X)
		if x.To == BFloat16 && x.X.Type() != BFloat16 {
			return func(fr *frame) float64 { return float64(RoundBFloat16(float32(f(fr)))) }
		}
		return f
	case *Binary:
		a, b := in.float(x.A), in.float(x.B)
		var op func(a, b float64) float64
		switch x.Op {
		case Add:
			op = func(a, b float64) float64 { return a + b }
		case Sub:
			op = func(a, b float64) float64 { return a - b }
		case Mul:
			op = func(a, b float64) float64 { return a * b }
		case Div:
			op = func(a, b float64) float64 { return a / b }
		case Min:
			op = func(a, b float64) float64 {
				if a < b || math.IsNaN(a) {
					return a
				}
				return b
			}
		case Max:
			op = func(a, b float64) float64 {
				if a > b || math.IsNaN(a) {
					return a
				}
				return b
			}
		default:
			in.fail("float operator %v", x.Op)
			return func(*frame) float64 { return 0 }
		}
		// Round every float result to float32, as the C code does.
		return func(fr *frame) float64 { return float64(float32(op(a(fr), b(fr)))) }
	case *Select:
		c, t, f := in.bool(x.Cond), in.float(x.T), in.float(x.F)
		return func(fr *frame) float64 {
			if c(fr) {
				return t(fr)
			}
			return f(fr)
		}
	case *Call:
		mf, ok := MathFuncs[x.Fn]
		if !ok || mf.Arity != len(x.Args) {
			in.fail("call of %s with %d arguments", x.Fn, len(x.Args))
			return func(*frame) float64 { return 0 }
		}
		args := make([]func(*frame) float64, len(x.Args))
		for i, a := range x.Args {
			args[i] = in.float(a)
		}
		if len(args) == 1 {
			a := args[0]
			return func(fr *frame) float64 { return float64(float32(mf.Eval(a(fr)))) }
		}
		return func(fr *frame) float64 {
			v := make([]float64, len(args))
			for i, a := range args {
				v[i] = a(fr)
			}
			return float64(float32(mf.Eval(v...)))
		}
	}
	in.fail("unsupported float expression %s", ExprString(x))
	return func(*frame) float64 { return 0 }
}

// load returns a function reading the slot a Load reads.
func (in *interp) load(x *Load) func(*frame) float32 {
	off := in.offset(x.Buf, x.Indices)
	slot, ok := in.bufs[x.Buf]
	if !ok {
		in.fail("load from undeclared buffer %s", x.Buf.Name)
	}
	if in.checked(x.Buf) {
		return func(fr *frame) float32 {
			o := off(fr)
			fr.th.access(slot, o, false)
			return fr.mem[slot][o]
		}
	}
	return func(fr *frame) float32 { return fr.mem[slot][off(fr)] }
}

// int32Op checks that an Int32 result is within the type's range: C's
// signed overflow is undefined, so a schedule that overflows is wrong.
func int32Op(v int64) int64 {
	if v != int64(int32(v)) {
		panic(runFault(fmt.Sprintf("int32 arithmetic overflows: %d", v)))
	}
	return v
}

// floatToInt converts a float to integer type t as C does (truncating),
// faulting where C's conversion is undefined.
func floatToInt(t DType, f float64) (int64, bool) {
	lo, hi := t.Range()
	v := math.Trunc(f)
	if math.IsNaN(v) || v < float64(lo) || v > float64(hi) {
		return 0, false
	}
	return int64(v), true
}

func (in *interp) int(x Expr) func(*frame) int64 {
	if t := x.Type(); t.IntElem() {
		return in.intElem(t, x)
	}
	switch x := x.(type) {
	case *IntImm:
		v := x.V
		return func(*frame) int64 { return v }
	case *Var:
		slot := in.slot(x)
		name := x.Name
		return func(fr *frame) int64 {
			v := fr.vars[slot]
			if v == math.MinInt64 {
				panic(runFault("variable " + name + " used out of its loop"))
			}
			return v
		}
	case *Binary:
		a, b := in.int(x.A), in.int(x.B)
		switch x.Op {
		case Add:
			return func(fr *frame) int64 { return a(fr) + b(fr) }
		case Sub:
			return func(fr *frame) int64 { return a(fr) - b(fr) }
		case Mul:
			return func(fr *frame) int64 { return a(fr) * b(fr) }
		case FloorDiv:
			return func(fr *frame) int64 { return floorDiv(a(fr), b(fr)) }
		case FloorMod:
			return func(fr *frame) int64 { return floorMod(a(fr), b(fr)) }
		case Min:
			return func(fr *frame) int64 { return min(a(fr), b(fr)) }
		case Max:
			return func(fr *frame) int64 { return max(a(fr), b(fr)) }
		}
	case *Select:
		c, t, f := in.bool(x.Cond), in.int(x.T), in.int(x.F)
		return func(fr *frame) int64 {
			if c(fr) {
				return t(fr)
			}
			return f(fr)
		}
	case *Cast:
		if x.X.Type() == Float32 {
			f := in.float(x.X)
			return func(fr *frame) int64 { return int64(f(fr)) }
		}
		return in.int(x.X)
	}
	in.fail("unsupported integer expression %s", ExprString(x))
	return func(*frame) int64 { return 0 }
}

// intElem compiles an expression of integer element type t.
func (in *interp) intElem(t DType, x Expr) func(*frame) int64 {
	switch x := x.(type) {
	case *Load:
		load := in.load(x)
		return func(fr *frame) int64 { return SlotInt(t, load(fr)) }
	case *Var:
		slot := in.slot(x)
		return func(fr *frame) int64 { return fr.vars[slot] }
	case *Cast:
		from := x.X.Type()
		if from == Float32 {
			f := in.float(x.X)
			return func(fr *frame) int64 {
				v, ok := floatToInt(t, f(fr))
				if !ok {
					panic(runFault(fmt.Sprintf("%v outside the range of %v in a conversion", f(fr), t)))
				}
				return v
			}
		}
		if from == Bool {
			c := in.bool(x.X)
			return func(fr *frame) int64 {
				if c(fr) {
					return 1
				}
				return 0
			}
		}
		v := in.int(x.X)
		return func(fr *frame) int64 { return t.Wrap(v(fr)) }
	case *Binary:
		if t != Int32 {
			in.fail("%v arithmetic in %s (cast to int32 first)", t, ExprString(x))
			return func(*frame) int64 { return 0 }
		}
		a, b := in.int(x.A), in.int(x.B)
		switch x.Op {
		case Add:
			return func(fr *frame) int64 { return int32Op(a(fr) + b(fr)) }
		case Sub:
			return func(fr *frame) int64 { return int32Op(a(fr) - b(fr)) }
		case Mul:
			return func(fr *frame) int64 { return int32Op(a(fr) * b(fr)) }
		case Min:
			return func(fr *frame) int64 { return min(a(fr), b(fr)) }
		case Max:
			return func(fr *frame) int64 { return max(a(fr), b(fr)) }
		}
	case *Select:
		c, a, b := in.bool(x.Cond), in.int(x.T), in.int(x.F)
		return func(fr *frame) int64 {
			if c(fr) {
				return a(fr)
			}
			return b(fr)
		}
	}
	in.fail("unsupported %v expression %s", t, ExprString(x))
	return func(*frame) int64 { return 0 }
}

func floorDiv(a, b int64) int64 {
	if b == 0 {
		panic(runFault("integer division by zero"))
	}
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func (in *interp) bool(x Expr) func(*frame) bool {
	switch x := x.(type) {
	case *Compare:
		if x.A.Type() == Float32 {
			a, b := in.float(x.A), in.float(x.B)
			return compare(x.Op, a, b)
		}
		a, b := in.int(x.A), in.int(x.B)
		return compare(x.Op, a, b)
	case *And:
		a, b := in.bool(x.A), in.bool(x.B)
		return func(fr *frame) bool { return a(fr) && b(fr) }
	case *Or:
		a, b := in.bool(x.A), in.bool(x.B)
		return func(fr *frame) bool { return a(fr) || b(fr) }
	case *Not:
		a := in.bool(x.A)
		return func(fr *frame) bool { return !a(fr) }
	}
	in.fail("unsupported boolean expression %s", ExprString(x))
	return func(*frame) bool { return false }
}

func compare[T int64 | float64](op CmpOp, a, b func(*frame) T) func(*frame) bool {
	switch op {
	case EQ:
		return func(fr *frame) bool { return a(fr) == b(fr) }
	case NE:
		return func(fr *frame) bool { return a(fr) != b(fr) }
	case LT:
		return func(fr *frame) bool { return a(fr) < b(fr) }
	case LE:
		return func(fr *frame) bool { return a(fr) <= b(fr) }
	case GT:
		return func(fr *frame) bool { return a(fr) > b(fr) }
	}
	return func(fr *frame) bool { return a(fr) >= b(fr) }
}
