package te

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/tessera-ml/tessera/tir"
)

// The DAG codec writes a compute DAG as JSON and reads it back exactly: the
// same tensors in the same order, with their names, shapes, constant marks,
// axes (variable names and extents), reducers and bodies, so that the
// decoded DAG has the same workload key, prints the same, and replays and
// lowers every schedule as the original does. It lets a process that never
// saw the model (a measuring worker) rebuild a task.
//
// The form, version dagFormatVersion:
//
//	{"v":1, "vars":[{"name":"i0","type":"int"},...],
//	 "tensors":[{"name":"A","shape":[4,8],"const":true},
//	            {"name":"C","shape":[4,4],"axis":[0,1],"reduce":[2],"extents":[...],
//	             "reducer":"sum","body":EXPR},...],
//	 "outputs":[2]}
//
// Tensors are in the DAG's topological order and refer to each other by
// position; variables are a table referred to by position, because a Var is
// identified by its pointer. An EXPR is {"k":KIND, ...} with KIND one of
// var (v: table index), int (i), float (f: the float64 as a string, so
// infinities survive), bin (op: +,-,*,/,floordiv,floormod,min,max), cmp
// (op: ==,!=,<,<=,>,>=), and, or, not, select (cond, then, else), cast (t:
// the type), load (buf: tensor index) and call (fn); the operands, indices
// or arguments are in "a".

// dagFormatVersion is the version of the JSON form; another version is
// refused, never misread. Version 2 adds the integer element types
// (tir.DType.IntElem): a placeholder's "dtype", and casts and loads of
// them. A DAG without them is written as version 1, which readers from
// before version 2 read as before.
const (
	dagFormatVersion = 2
	dagFormatFloat   = 1
)

// maxTensorElems bounds the elements of one decoded tensor, so that a
// hostile or damaged DAG cannot make its reader allocate without limit.
const maxTensorElems = 1 << 31

type dagJSON struct {
	Version int          `json:"v"`
	Vars    []varJSON    `json:"vars"`
	Tensors []tensorJSON `json:"tensors"`
	Outputs []int        `json:"outputs"`
}

type varJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type tensorJSON struct {
	Name    string    `json:"name"`
	Shape   []int     `json:"shape"`
	Const   bool      `json:"const,omitempty"`
	Reused  bool      `json:"reused,omitempty"` // a constant timed warm (Tensor.Reused)
	DType   string    `json:"dtype,omitempty"`  // a placeholder's element type, if not float32
	Axis    []int     `json:"axis,omitempty"`   // var indices, one per dimension
	Reduce  []int     `json:"reduce,omitempty"` // var indices of the reduce axes
	Extents []int     `json:"extents,omitempty"`
	Reducer string    `json:"reducer,omitempty"`
	Body    *exprJSON `json:"body,omitempty"`
}

type exprJSON struct {
	K   string      `json:"k"`
	Op  string      `json:"op,omitempty"`
	V   *int        `json:"v,omitempty"`
	I   *int64      `json:"i,omitempty"`
	F   string      `json:"f,omitempty"`
	T   string      `json:"t,omitempty"`
	Buf *int        `json:"buf,omitempty"`
	Fn  string      `json:"fn,omitempty"`
	A   []*exprJSON `json:"a,omitempty"`
}

var (
	binOps     = []string{"+", "-", "*", "/", "floordiv", "floormod", "min", "max"}
	cmpOps     = []string{"==", "!=", "<", "<=", ">", ">="}
	dtypeNames = []string{tir.Float32: "float32", tir.Int: "int", tir.Bool: "bool",
		tir.Int8: "int8", tir.Uint8: "uint8", tir.Int16: "int16", tir.Int32: "int32", tir.BFloat16: "bfloat16"}
	reducers = []string{NoReduce: "", Sum: "sum", MaxReduce: "max", MinReduce: "min", ProdReduce: "prod"}
)

// MarshalJSON encodes the DAG in the codec's JSON form. It fails for a
// tensor whose buffer is not the one the te constructors give it.
func (d *DAG) MarshalJSON() ([]byte, error) {
	e := dagEncoder{vars: map[*tir.Var]int{}, tensors: map[*tir.Buffer]int{}}
	out := dagJSON{Version: dagFormatFloat}
	for i, t := range d.Tensors {
		if b := t.Buf; b == nil || b.Owner != t || b.Name != t.Name || !ownType(t) || b.Scope != 0 || b.Packed != nil || !slices.Equal(b.Shape, t.Shape) {
			return nil, fmt.Errorf("te: encode tensor %d (%s): its buffer is not the tensor's own", i, t.Name)
		}
		e.tensors[t.Buf] = i
		tj := tensorJSON{Name: t.Name, Shape: t.Shape, Const: t.Const, Reused: t.Reused}
		if dt := t.DType(); dt != tir.Float32 {
			out.Version = dagFormatVersion
			if t.IsPlaceholder() {
				tj.DType = dt.String()
			}
		}
		if !t.IsPlaceholder() {
			for _, a := range t.Axis {
				tj.Axis = append(tj.Axis, e.varIndex(a.Var))
			}
			for _, a := range t.ReduceAxis {
				tj.Reduce = append(tj.Reduce, e.varIndex(a.Var))
				tj.Extents = append(tj.Extents, a.Extent)
			}
			if int(t.Reducer) >= len(reducers) {
				return nil, fmt.Errorf("te: encode tensor %s: unknown reducer %d", t.Name, t.Reducer)
			}
			tj.Reducer = reducers[t.Reducer]
			body, err := e.expr(t.Body)
			if err != nil {
				return nil, fmt.Errorf("te: encode tensor %s: %w", t.Name, err)
			}
			tj.Body = body
		}
		out.Tensors = append(out.Tensors, tj)
	}
	for _, o := range d.Outputs {
		i, ok := e.tensors[o.Buf]
		if !ok {
			return nil, fmt.Errorf("te: encode: output %s is not a tensor of the DAG", o.Name)
		}
		out.Outputs = append(out.Outputs, i)
	}
	out.Vars = e.table
	return json.Marshal(out)
}

type dagEncoder struct {
	vars    map[*tir.Var]int
	table   []varJSON
	tensors map[*tir.Buffer]int
}

func (e *dagEncoder) varIndex(v *tir.Var) int {
	if i, ok := e.vars[v]; ok {
		return i
	}
	e.vars[v] = len(e.table)
	e.table = append(e.table, varJSON{Name: v.Name, Type: v.T.String()})
	return len(e.table) - 1
}

func (e *dagEncoder) exprs(xs ...tir.Expr) ([]*exprJSON, error) {
	out := make([]*exprJSON, len(xs))
	for i, x := range xs {
		var err error
		if out[i], err = e.expr(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *dagEncoder) expr(x tir.Expr) (*exprJSON, error) {
	var (
		j   exprJSON
		err error
	)
	switch x := x.(type) {
	case *tir.Var:
		i := e.varIndex(x)
		j = exprJSON{K: "var", V: &i}
	case *tir.IntImm:
		v := x.V
		j = exprJSON{K: "int", I: &v}
	case *tir.FloatImm:
		j = exprJSON{K: "float", F: strconv.FormatFloat(x.V, 'g', -1, 64)}
	case *tir.Binary:
		if int(x.Op) >= len(binOps) {
			return nil, fmt.Errorf("unknown binary operator %d", x.Op)
		}
		j = exprJSON{K: "bin", Op: binOps[x.Op]}
		j.A, err = e.exprs(x.A, x.B)
	case *tir.Compare:
		if int(x.Op) >= len(cmpOps) {
			return nil, fmt.Errorf("unknown comparison %d", x.Op)
		}
		j = exprJSON{K: "cmp", Op: cmpOps[x.Op]}
		j.A, err = e.exprs(x.A, x.B)
	case *tir.And:
		j = exprJSON{K: "and"}
		j.A, err = e.exprs(x.A, x.B)
	case *tir.Or:
		j = exprJSON{K: "or"}
		j.A, err = e.exprs(x.A, x.B)
	case *tir.Not:
		j = exprJSON{K: "not"}
		j.A, err = e.exprs(x.A)
	case *tir.Select:
		j = exprJSON{K: "select"}
		j.A, err = e.exprs(x.Cond, x.T, x.F)
	case *tir.Cast:
		j = exprJSON{K: "cast", T: x.To.String()}
		j.A, err = e.exprs(x.X)
	case *tir.Load:
		i, ok := e.tensors[x.Buf]
		if !ok {
			return nil, fmt.Errorf("load of buffer %s, which no earlier tensor of the DAG owns", x.Buf.Name)
		}
		j = exprJSON{K: "load", Buf: &i}
		j.A, err = e.exprs(x.Indices...)
	case *tir.Call:
		j = exprJSON{K: "call", Fn: x.Fn}
		j.A, err = e.exprs(x.Args...)
	default:
		return nil, fmt.Errorf("expression %T has no JSON form", x)
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// UnmarshalDAG decodes a DAG written by DAG.MarshalJSON. Everything is
// checked: a wrong version, an index out of range, an unknown operator,
// reducer, type or function, operands of the wrong type, a load with the
// wrong number of indices, a tensor that reads a later one, and tensors
// that are not exactly the DAG of the outputs in its own order are each an
// error naming the tensor, never a panic.
func UnmarshalDAG(data []byte) (*DAG, error) {
	var dj dagJSON
	if err := json.Unmarshal(data, &dj); err != nil {
		return nil, fmt.Errorf("te: decode DAG: %w", err)
	}
	if dj.Version != dagFormatVersion && dj.Version != dagFormatFloat {
		return nil, fmt.Errorf("te: decode DAG: format version %d, this tessera reads %d and %d", dj.Version, dagFormatFloat, dagFormatVersion)
	}
	dec := dagDecoder{}
	for i, v := range dj.Vars {
		t, ok := parseDType(v.Type)
		if !ok {
			return nil, fmt.Errorf("te: decode DAG: variable %d (%s): unknown type %q", i, v.Name, v.Type)
		}
		dec.vars = append(dec.vars, &tir.Var{Name: v.Name, T: t})
	}
	for i, tj := range dj.Tensors {
		t, err := dec.tensor(tj)
		if err != nil {
			return nil, fmt.Errorf("te: decode DAG: tensor %d (%s): %w", i, tj.Name, err)
		}
		dec.tensors = append(dec.tensors, t)
	}
	if len(dj.Outputs) == 0 {
		return nil, errors.New("te: decode DAG: no outputs")
	}
	outs := make([]*Tensor, len(dj.Outputs))
	for i, o := range dj.Outputs {
		if o < 0 || o >= len(dec.tensors) {
			return nil, fmt.Errorf("te: decode DAG: output %d: tensor %d of %d", i, o, len(dec.tensors))
		}
		outs[i] = dec.tensors[o]
	}
	d, err := NewDAG(outs...)
	if err != nil {
		return nil, fmt.Errorf("te: decode DAG: %w", err)
	}
	if len(d.Tensors) != len(dec.tensors) {
		return nil, fmt.Errorf("te: decode DAG: %d tensors, of which the outputs reach %d", len(dec.tensors), len(d.Tensors))
	}
	for i, t := range d.Tensors {
		if t != dec.tensors[i] {
			return nil, fmt.Errorf("te: decode DAG: tensor %d (%s) is not in the DAG's topological order (%s is there)", i, dec.tensors[i].Name, t.Name)
		}
	}
	return d, nil
}

type dagDecoder struct {
	vars    []*tir.Var
	tensors []*Tensor
	bound   map[*tir.Var]bool // the axis variables of the tensor being decoded
}

func (dec *dagDecoder) tensor(tj tensorJSON) (*Tensor, error) {
	n := 1
	for k, e := range tj.Shape {
		if e <= 0 {
			return nil, fmt.Errorf("dimension %d has extent %d", k, e)
		}
		if n > maxTensorElems/e {
			return nil, fmt.Errorf("more than %d elements", maxTensorElems)
		}
		n *= e
	}
	if tj.Body == nil {
		if len(tj.Axis)+len(tj.Reduce)+len(tj.Extents) > 0 || tj.Reducer != "" {
			return nil, errors.New("a placeholder with axes or a reducer")
		}
		if tj.Reused && !tj.Const {
			return nil, errors.New("a placeholder marked reused but not constant")
		}
		t := Placeholder(tj.Name, tj.Shape...)
		t.Const, t.Reused = tj.Const, tj.Reused
		if tj.DType != "" {
			dt, ok := parseDType(tj.DType)
			if !ok || !dt.IntElem() && dt != tir.BFloat16 {
				return nil, fmt.Errorf("placeholder of element type %q", tj.DType)
			}
			t.Buf.DType = dt
		}
		return t, nil
	}
	if tj.Const || tj.Reused {
		return nil, errors.New("a computed tensor marked constant or reused")
	}
	if len(tj.Axis) != len(tj.Shape) {
		return nil, fmt.Errorf("%d axes for rank %d", len(tj.Axis), len(tj.Shape))
	}
	if len(tj.Extents) != len(tj.Reduce) {
		return nil, fmt.Errorf("%d reduce extents for %d reduce axes", len(tj.Extents), len(tj.Reduce))
	}
	red := slices.Index(reducers, tj.Reducer)
	if red < 0 {
		return nil, fmt.Errorf("unknown reducer %q", tj.Reducer)
	}
	t := &Tensor{Name: tj.Name, Shape: slices.Clone(tj.Shape), Reducer: Reducer(red)}
	t.Buf = &tir.Buffer{Name: tj.Name, DType: tir.Float32, Shape: t.Shape, Owner: t}
	dec.bound = map[*tir.Var]bool{}
	axis := func(vi, extent int) (IterVar, error) {
		if vi < 0 || vi >= len(dec.vars) {
			return IterVar{}, fmt.Errorf("axis variable %d of %d", vi, len(dec.vars))
		}
		v := dec.vars[vi]
		if v.T != tir.Int {
			return IterVar{}, fmt.Errorf("axis variable %s has type %v", v.Name, v.T)
		}
		if dec.bound[v] {
			return IterVar{}, fmt.Errorf("axis variable %s used twice", v.Name)
		}
		if extent <= 0 {
			return IterVar{}, fmt.Errorf("axis %s has extent %d", v.Name, extent)
		}
		dec.bound[v] = true
		return IterVar{Var: v, Extent: extent}, nil
	}
	for k, vi := range tj.Axis {
		a, err := axis(vi, tj.Shape[k])
		if err != nil {
			return nil, err
		}
		t.Axis = append(t.Axis, a)
	}
	for k, vi := range tj.Reduce {
		a, err := axis(vi, tj.Extents[k])
		if err != nil {
			return nil, err
		}
		t.ReduceAxis = append(t.ReduceAxis, a)
	}
	if (t.Reducer == NoReduce) != (len(t.ReduceAxis) == 0) {
		return nil, fmt.Errorf("reducer %q with %d reduce axes", tj.Reducer, len(t.ReduceAxis))
	}
	body, err := dec.expr(tj.Body)
	if err != nil {
		return nil, err
	}
	if dt := body.Type(); !dt.IsFloat() && !dt.IntElem() {
		return nil, fmt.Errorf("body of type %v, want float32, bfloat16 or an integer element type", dt)
	}
	t.Body = body
	t.typeFromBody()
	return t, nil
}

func (dec *dagDecoder) expr(j *exprJSON) (tir.Expr, error) {
	if j == nil {
		return nil, errors.New("missing expression")
	}
	args := make([]tir.Expr, len(j.A))
	for i, a := range j.A {
		var err error
		if args[i], err = dec.expr(a); err != nil {
			return nil, err
		}
	}
	arity := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("%s %s with %d operands, want %d", j.K, j.Op, len(args), n)
		}
		return nil
	}
	same := func() error {
		if err := arity(2); err != nil {
			return err
		}
		if args[0].Type() != args[1].Type() {
			return fmt.Errorf("%s %s of %v and %v", j.K, j.Op, args[0].Type(), args[1].Type())
		}
		return nil
	}
	logic := func(n int) error {
		if err := arity(n); err != nil {
			return err
		}
		for _, a := range args {
			if a.Type() != tir.Bool {
				return fmt.Errorf("%s of %v", j.K, a.Type())
			}
		}
		return nil
	}
	switch j.K {
	case "var":
		if j.V == nil || *j.V < 0 || *j.V >= len(dec.vars) {
			return nil, errors.New("var without a variable of the table")
		}
		v := dec.vars[*j.V]
		if !dec.bound[v] {
			return nil, fmt.Errorf("variable %s is not an axis of the tensor", v.Name)
		}
		return v, arity(0)
	case "int":
		if j.I == nil {
			return nil, errors.New("int without a value")
		}
		return tir.Const(*j.I), arity(0)
	case "float":
		v, err := strconv.ParseFloat(j.F, 64)
		if err != nil {
			return nil, fmt.Errorf("float %q: %w", j.F, err)
		}
		return &tir.FloatImm{V: v}, arity(0)
	case "bin":
		op := slices.Index(binOps, j.Op)
		if op < 0 {
			return nil, fmt.Errorf("unknown binary operator %q", j.Op)
		}
		if err := same(); err != nil {
			return nil, err
		}
		if !binOpTypes(tir.BinOp(op), args[0].Type()) {
			return nil, fmt.Errorf("binary %s of %v", j.Op, args[0].Type())
		}
		return &tir.Binary{Op: tir.BinOp(op), A: args[0], B: args[1]}, nil
	case "cmp":
		op := slices.Index(cmpOps, j.Op)
		if op < 0 {
			return nil, fmt.Errorf("unknown comparison %q", j.Op)
		}
		if err := same(); err != nil {
			return nil, err
		}
		return &tir.Compare{Op: tir.CmpOp(op), A: args[0], B: args[1]}, nil
	case "and", "or":
		if err := logic(2); err != nil {
			return nil, err
		}
		if j.K == "and" {
			return &tir.And{A: args[0], B: args[1]}, nil
		}
		return &tir.Or{A: args[0], B: args[1]}, nil
	case "not":
		if err := logic(1); err != nil {
			return nil, err
		}
		return &tir.Not{A: args[0]}, nil
	case "select":
		if err := arity(3); err != nil {
			return nil, err
		}
		if args[0].Type() != tir.Bool || args[1].Type() != args[2].Type() {
			return nil, fmt.Errorf("select on %v of %v and %v", args[0].Type(), args[1].Type(), args[2].Type())
		}
		return &tir.Select{Cond: args[0], T: args[1], F: args[2]}, nil
	case "cast":
		to, ok := parseDType(j.T)
		if !ok {
			return nil, fmt.Errorf("cast to unknown type %q", j.T)
		}
		return &tir.Cast{To: to, X: first(args)}, arity(1)
	case "load":
		if j.Buf == nil || *j.Buf < 0 || *j.Buf >= len(dec.tensors) {
			return nil, fmt.Errorf("load of tensor %v: not an earlier tensor", derefOr(j.Buf, -1))
		}
		src := dec.tensors[*j.Buf]
		if len(args) != len(src.Shape) {
			return nil, fmt.Errorf("load of %s with %d indices, rank %d", src.Name, len(args), len(src.Shape))
		}
		for _, a := range args {
			if a.Type() != tir.Int {
				return nil, fmt.Errorf("load of %s with an index of type %v", src.Name, a.Type())
			}
		}
		return &tir.Load{Buf: src.Buf, Indices: args}, nil
	case "call":
		mf, ok := tir.MathFuncs[j.Fn]
		if !ok {
			return nil, fmt.Errorf("call of unknown function %q", j.Fn)
		}
		if err := arity(mf.Arity); err != nil {
			return nil, err
		}
		for _, a := range args {
			if a.Type() != tir.Float32 {
				return nil, fmt.Errorf("call of %s with a %v argument", j.Fn, a.Type())
			}
		}
		return &tir.Call{Fn: j.Fn, Args: args}, nil
	}
	return nil, fmt.Errorf("unknown expression kind %q", j.K)
}

// binOpTypes reports whether op applies to operands of type t: / to
// floats only, floordiv and floormod to integers only, nothing to booleans.
func binOpTypes(op tir.BinOp, t tir.DType) bool {
	switch {
	case t == tir.Bool, t == tir.BFloat16, t.IntElem() && t != tir.Int32:
		return false
	case t == tir.Int32:
		return op != tir.Div && op != tir.FloorDiv && op != tir.FloorMod
	case op == tir.Div:
		return t == tir.Float32
	case op == tir.FloorDiv || op == tir.FloorMod:
		return t == tir.Int
	}
	return true
}

func first(xs []tir.Expr) tir.Expr {
	if len(xs) == 0 {
		return nil
	}
	return xs[0]
}

func derefOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// ownType reports whether t's buffer has the element type te gives it: a
// compute tensor's its body's (Compute), a placeholder's any but Int and
// Bool.
func ownType(t *Tensor) bool {
	dt := t.DType()
	if t.IsPlaceholder() {
		return dt.IsFloat() || dt.IntElem()
	}
	want := t.Body.Type()
	if !want.IntElem() && want != tir.BFloat16 {
		want = tir.Float32
	}
	return dt == want
}

func parseDType(s string) (tir.DType, bool) {
	i := slices.Index(dtypeNames, s)
	return tir.DType(i), i >= 0
}
