package te

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// Eval runs the DAG naively: every tensor in topological order, every
// element from its definition, each float operation rounded to float32 as
// the C code rounds it (kernels differ only where a compiler contracts a
// product and a sum into one fused multiply-add, and in the order of
// sums), reductions accumulated in float64, integers exactly. It is the
// oracle every schedule is checked against.
// inputs are given in the order of d.Inputs; the outputs come back in the
// order of d.Outputs.
func (d *DAG) Eval(inputs [][]float32) ([][]float32, error) {
	vals, err := d.EvalAll(inputs)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(d.Outputs))
	for i, o := range d.Outputs {
		out[i] = vals[o]
	}
	return out, nil
}

// EvalAll is Eval returning the values of every tensor.
func (d *DAG) EvalAll(inputs [][]float32) (map[*Tensor][]float32, error) {
	if len(inputs) != len(d.Inputs) {
		return nil, fmt.Errorf("te: eval: %d inputs given, DAG has %d", len(inputs), len(d.Inputs))
	}
	vals := map[*tir.Buffer][]float32{}
	for i, in := range d.Inputs {
		if len(inputs[i]) != in.Size() {
			return nil, fmt.Errorf("te: eval: input %s has %d elements, want %d", in.Name, len(inputs[i]), in.Size())
		}
		vals[in.Buf] = inputs[i]
	}
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			continue
		}
		out, err := evalTensor(t, vals)
		if err != nil {
			return nil, fmt.Errorf("te: eval %s: %w", t.Name, err)
		}
		vals[t.Buf] = out
	}
	res := map[*Tensor][]float32{}
	for _, t := range d.Tensors {
		res[t] = vals[t.Buf]
	}
	return res, nil
}

// Tolerance returns the relative (and absolute) tolerance to compare a
// schedule's outputs with Eval's: float32 sums taken in another order
// differ by about sqrt(n)·eps, n the longest reduction.
func (d *DAG) Tolerance() float64 {
	n := 1
	for _, t := range d.Tensors {
		r := 1
		for _, a := range t.ReduceAxis {
			r *= a.Extent
		}
		n = max(n, r)
	}
	tol := 2e-5 * math.Sqrt(float64(n))
	if d.roundsInexactToBFloat16() {
		// A float one rounding apart from Eval's can round to the next
		// bfloat16 (2^-8 relative), and the products it feeds with it.
		tol = max(tol, 1.0/64)
	}
	return tol
}

// roundsInexactToBFloat16 reports whether a tensor of d rounds to
// bfloat16 a float that C may compute one rounding apart from Eval
// (floatInexact).
func (d *DAG) roundsInexactToBFloat16() bool {
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			continue
		}
		found := false
		tir.WalkExpr(t.Body, func(e tir.Expr) bool {
			if c, ok := e.(*tir.Cast); ok && c.To == tir.BFloat16 && c.X.Type() == tir.Float32 && floatInexact(c.X, map[*Tensor]bool{}) {
				found = true
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// env holds the current values of the axis variables.
type env struct{ v []int64 }

type compiler struct {
	slots map[*tir.Var]int
	vals  map[*tir.Buffer][]float32
	err   error
}

func evalTensor(t *Tensor, vals map[*tir.Buffer][]float32) (out []float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			ee, ok := r.(evalError)
			if !ok {
				panic(r)
			}
			out, err = nil, fmt.Errorf("%s", ee.msg)
		}
	}()
	c := &compiler{slots: map[*tir.Var]int{}, vals: vals}
	axes := append(append([]IterVar(nil), t.Axis...), t.ReduceAxis...)
	for i, a := range axes {
		c.slots[a.Var] = i
	}
	if dt := t.Buf.DType; dt.IntElem() {
		return evalIntTensor(t, c, dt)
	}
	body := c.float(t.Body)
	if c.err != nil {
		return nil, c.err
	}
	out = make([]float32, t.Size())
	e := &env{v: make([]int64, len(axes))}
	eachElement(t, e, func(idx int) {
		if t.Reducer == NoReduce {
			out[idx] = float32(body(e))
			return
		}
		acc := t.Reducer.Identity()
		reduceLoop(e, len(t.Axis), t.ReduceAxis, t.Reducer, body, &acc)
		out[idx] = float32(acc)
	})
	return out, nil
}

// eachElement sets e's spatial axes of t to each element's index in turn,
// in row-major order, and calls f with its flat index.
func eachElement(t *Tensor, e *env, f func(idx int)) {
	idx := 0
	var spatial func(dim int)
	spatial = func(dim int) {
		if dim == len(t.Axis) {
			f(idx)
			idx++
			return
		}
		for i := 0; i < t.Axis[dim].Extent; i++ {
			e.v[dim] = int64(i)
			spatial(dim + 1)
		}
	}
	spatial(0)
}

// evalIntTensor evaluates a tensor of integer element type dt exactly, in
// int64, faulting where its Int32 arithmetic would leave int32's range.
func evalIntTensor(t *Tensor, c *compiler, dt tir.DType) ([]float32, error) {
	body := c.int(t.Body)
	if c.err != nil {
		return nil, c.err
	}
	if t.Body.Type() != dt {
		return nil, fmt.Errorf("body of type %v for a tensor of %v", t.Body.Type(), dt)
	}
	out := make([]float32, t.Size())
	e := &env{v: make([]int64, len(t.Axis)+len(t.ReduceAxis))}
	lo, hi := dt.Range()
	eachElement(t, e, func(idx int) {
		v := int64(0)
		if t.Reducer == NoReduce {
			v = body(e)
		} else {
			v = intIdentity(t.Reducer, dt)
			intReduceLoop(e, len(t.Axis), t.ReduceAxis, t.Reducer, body, &v)
		}
		if v < lo || v > hi {
			panic(evalError{fmt.Sprintf("%v reduction overflows: %d", dt, v)})
		}
		out[idx] = tir.IntSlot(v)
	})
	return out, nil
}

// intIdentity is r's neutral element in integer type dt.
func intIdentity(r Reducer, dt tir.DType) int64 {
	lo, hi := dt.Range()
	switch r {
	case MaxReduce:
		return lo
	case MinReduce:
		return hi
	case ProdReduce:
		return 1
	}
	return 0
}

func intReduceLoop(e *env, base int, axes []IterVar, r Reducer, body func(*env) int64, acc *int64) {
	if len(axes) == 0 {
		v := body(e)
		switch r {
		case Sum:
			*acc += v
		case MaxReduce:
			*acc = max(*acc, v)
		case MinReduce:
			*acc = min(*acc, v)
		case ProdReduce:
			*acc *= v
		}
		if *acc != int64(int32(*acc)) {
			panic(evalError{fmt.Sprintf("int32 reduction overflows: %d", *acc)})
		}
		return
	}
	for i := 0; i < axes[0].Extent; i++ {
		e.v[base] = int64(i)
		intReduceLoop(e, base+1, axes[1:], r, body, acc)
	}
}

func reduceLoop(e *env, base int, axes []IterVar, r Reducer, body func(*env) float64, acc *float64) {
	if len(axes) == 0 {
		v := body(e)
		switch r {
		case Sum:
			*acc += v
		case MaxReduce:
			if v > *acc || math.IsNaN(v) {
				*acc = v
			}
		case MinReduce:
			if v < *acc || math.IsNaN(v) {
				*acc = v
			}
		case ProdReduce:
			*acc *= v
		}
		return
	}
	for i := 0; i < axes[0].Extent; i++ {
		e.v[base] = int64(i)
		reduceLoop(e, base+1, axes[1:], r, body, acc)
	}
}

func (c *compiler) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// float compiles a float expression: every operation's result rounded to
// float32.
func (c *compiler) float(x tir.Expr) func(*env) float64 {
	switch x.(type) {
	case *tir.FloatImm, *tir.Load, *tir.Select:
		return c.float64(x) // float32 already, or its branches rounded
	}
	f := c.float64(x)
	return func(e *env) float64 { return float64(float32(f(e))) }
}

func (c *compiler) float64(x tir.Expr) func(*env) float64 {
	switch x := x.(type) {
	case *tir.FloatImm:
		v := x.V
		return func(*env) float64 { return v }
	case *tir.Cast:
		if t := x.X.Type(); t == tir.Int || t.IntElem() {
			f := c.int(x.X)
			return func(e *env) float64 { return float64(f(e)) }
		}
		f := c.float(x.X)
		if x.To == tir.BFloat16 && x.X.Type() != tir.BFloat16 {
			return func(e *env) float64 { return float64(tir.RoundBFloat16(float32(f(e)))) }
		}
		return f
	case *tir.Load:
		if !x.Buf.DType.IsFloat() {
			break
		}
		load := c.load(x)
		return func(e *env) float64 { return float64(load(e)) }
	case *tir.Binary:
		a, b := c.float(x.A), c.float(x.B)
		switch x.Op {
		case tir.Add:
			return func(e *env) float64 { return a(e) + b(e) }
		case tir.Sub:
			return func(e *env) float64 { return a(e) - b(e) }
		case tir.Mul:
			return func(e *env) float64 { return a(e) * b(e) }
		case tir.Div:
			return func(e *env) float64 { return a(e) / b(e) }
		case tir.Min:
			return func(e *env) float64 { return fmin(a(e), b(e)) }
		case tir.Max:
			return func(e *env) float64 { return fmax(a(e), b(e)) }
		}
		c.fail("float operator %v", x.Op)
	case *tir.Select:
		cond, t, f := c.bool(x.Cond), c.float(x.T), c.float(x.F)
		return func(e *env) float64 {
			if cond(e) {
				return t(e)
			}
			return f(e)
		}
	case *tir.Call:
		args := make([]func(*env) float64, len(x.Args))
		for i, a := range x.Args {
			args[i] = c.float(a)
		}
		mf, ok := tir.MathFuncs[x.Fn]
		if !ok || mf.Arity != len(args) {
			c.fail("call of %s with %d arguments", x.Fn, len(args))
			return func(*env) float64 { return 0 }
		}
		if len(args) == 1 {
			a := args[0]
			return func(e *env) float64 { return mf.Eval(a(e)) }
		}
		return func(e *env) float64 {
			v := make([]float64, len(args))
			for i, a := range args {
				v[i] = a(e)
			}
			return mf.Eval(v...)
		}
	}
	c.fail("unsupported float expression %s", tir.ExprString(x))
	return func(*env) float64 { return 0 }
}

// fmin and fmax follow C's fminf/fmaxf on non-NaN values and propagate NaN
// from either side (the generated C must match on finite data only).
func fmin(a, b float64) float64 {
	if a < b || math.IsNaN(a) {
		return a
	}
	return b
}

func fmax(a, b float64) float64 {
	if a > b || math.IsNaN(a) {
		return a
	}
	return b
}

// load returns a function reading the slot a Load reads.
func (c *compiler) load(x *tir.Load) func(*env) float32 {
	data, ok := c.vals[x.Buf]
	if !ok {
		c.fail("read of %s before it is computed", x.Buf.Name)
		return func(*env) float32 { return 0 }
	}
	idx := make([]func(*env) int64, len(x.Indices))
	for i, ix := range x.Indices {
		idx[i] = c.int(ix)
	}
	strides := x.Buf.Strides()
	shape := x.Buf.Shape
	name := x.Buf.Name
	return func(e *env) float32 {
		off := int64(0)
		for i, f := range idx {
			v := f(e)
			if v < 0 || v >= int64(shape[i]) {
				panic(evalError{fmt.Sprintf("read %s out of bounds: index %d of dimension %d is outside [0, %d)", name, v, i, shape[i])})
			}
			off += v * int64(strides[i])
		}
		return data[off]
	}
}

// intElem compiles an expression of integer element type t, exactly.
func (c *compiler) intElem(t tir.DType, x tir.Expr) func(*env) int64 {
	switch x := x.(type) {
	case *tir.Load:
		load := c.load(x)
		return func(e *env) int64 { return tir.SlotInt(t, load(e)) }
	case *tir.Cast:
		switch from := x.X.Type(); {
		case from == tir.Float32:
			f := c.float(x.X)
			lo, hi := t.Range()
			return func(e *env) int64 {
				v := math.Trunc(float64(float32(f(e))))
				if math.IsNaN(v) || v < float64(lo) || v > float64(hi) {
					panic(evalError{fmt.Sprintf("%v outside the range of %v in a conversion", v, t)})
				}
				return int64(v)
			}
		case from == tir.Bool:
			b := c.bool(x.X)
			return func(e *env) int64 {
				if b(e) {
					return 1
				}
				return 0
			}
		}
		v := c.int(x.X)
		return func(e *env) int64 { return t.Wrap(v(e)) }
	case *tir.Binary:
		if t != tir.Int32 {
			c.fail("%v arithmetic in %s (cast to int32 first)", t, tir.ExprString(x))
			return func(*env) int64 { return 0 }
		}
		a, b := c.int(x.A), c.int(x.B)
		var op func(a, b int64) int64
		switch x.Op {
		case tir.Add:
			op = func(a, b int64) int64 { return a + b }
		case tir.Sub:
			op = func(a, b int64) int64 { return a - b }
		case tir.Mul:
			op = func(a, b int64) int64 { return a * b }
		case tir.Min:
			op = func(a, b int64) int64 { return min(a, b) }
		case tir.Max:
			op = func(a, b int64) int64 { return max(a, b) }
		default:
			c.fail("int32 operator %v", x.Op)
			return func(*env) int64 { return 0 }
		}
		return func(e *env) int64 {
			v := op(a(e), b(e))
			if v != int64(int32(v)) {
				panic(evalError{fmt.Sprintf("int32 arithmetic overflows: %d", v)})
			}
			return v
		}
	case *tir.Select:
		cond, a, b := c.bool(x.Cond), c.int(x.T), c.int(x.F)
		return func(e *env) int64 {
			if cond(e) {
				return a(e)
			}
			return b(e)
		}
	}
	c.fail("unsupported %v expression %s", t, tir.ExprString(x))
	return func(*env) int64 { return 0 }
}

func (c *compiler) int(x tir.Expr) func(*env) int64 {
	if t := x.Type(); t.IntElem() {
		return c.intElem(t, x)
	}
	switch x := x.(type) {
	case *tir.IntImm:
		v := x.V
		return func(*env) int64 { return v }
	case *tir.Var:
		slot, ok := c.slots[x]
		if !ok {
			c.fail("unbound variable %s", x.Name)
			return func(*env) int64 { return 0 }
		}
		return func(e *env) int64 { return e.v[slot] }
	case *tir.Binary:
		a, b := c.int(x.A), c.int(x.B)
		switch x.Op {
		case tir.Add:
			return func(e *env) int64 { return a(e) + b(e) }
		case tir.Sub:
			return func(e *env) int64 { return a(e) - b(e) }
		case tir.Mul:
			return func(e *env) int64 { return a(e) * b(e) }
		case tir.FloorDiv:
			return func(e *env) int64 { return floorDiv(a(e), b(e)) }
		case tir.FloorMod:
			return func(e *env) int64 { return a(e) - floorDiv(a(e), b(e))*b(e) }
		case tir.Min:
			return func(e *env) int64 { return min(a(e), b(e)) }
		case tir.Max:
			return func(e *env) int64 { return max(a(e), b(e)) }
		}
		c.fail("integer operator %v", x.Op)
	case *tir.Select:
		cond, t, f := c.bool(x.Cond), c.int(x.T), c.int(x.F)
		return func(e *env) int64 {
			if cond(e) {
				return t(e)
			}
			return f(e)
		}
	case *tir.Cast:
		if x.X.Type() == tir.Float32 {
			f := c.float(x.X)
			return func(e *env) int64 { return int64(float32(f(e))) }
		}
		return c.int(x.X)
	}
	c.fail("unsupported integer expression %s", tir.ExprString(x))
	return func(*env) int64 { return 0 }
}

func floorDiv(a, b int64) int64 {
	if b == 0 {
		panic(evalError{"integer division by zero"})
	}
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func (c *compiler) bool(x tir.Expr) func(*env) bool {
	switch x := x.(type) {
	case *tir.Compare:
		if x.A.Type() == tir.Float32 {
			a, b := c.float(x.A), c.float(x.B)
			return cmp(x.Op, a, b)
		}
		a, b := c.int(x.A), c.int(x.B)
		return cmp(x.Op, a, b)
	case *tir.And:
		a, b := c.bool(x.A), c.bool(x.B)
		return func(e *env) bool { return a(e) && b(e) }
	case *tir.Or:
		a, b := c.bool(x.A), c.bool(x.B)
		return func(e *env) bool { return a(e) || b(e) }
	case *tir.Not:
		a := c.bool(x.A)
		return func(e *env) bool { return !a(e) }
	}
	c.fail("unsupported boolean expression %s", tir.ExprString(x))
	return func(*env) bool { return false }
}

func cmp[T int64 | float64](op tir.CmpOp, a, b func(*env) T) func(*env) bool {
	switch op {
	case tir.EQ:
		return func(e *env) bool { return a(e) == b(e) }
	case tir.NE:
		return func(e *env) bool { return a(e) != b(e) }
	case tir.LT:
		return func(e *env) bool { return a(e) < b(e) }
	case tir.LE:
		return func(e *env) bool { return a(e) <= b(e) }
	case tir.GT:
		return func(e *env) bool { return a(e) > b(e) }
	}
	return func(e *env) bool { return a(e) >= b(e) }
}

// evalError carries a runtime fault of the evaluated program (an
// out-of-bounds read) out of the closures; Eval turns it into an error.
type evalError struct{ msg string }
