package codegen

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// maxStackBytes is the largest Local buffer placed on the stack.
const maxStackBytes = 64 << 10

// kernel is the C printer of one PrimFunc.
type kernel struct {
	m      *module
	f      *tir.PrimFunc
	b      strings.Builder
	indent int

	scopes     []map[string]bool // C identifiers declared per open block
	vars       map[*tir.Var]string
	bufs       map[*tir.Buffer]*bufBind
	dom        domain
	inParallel bool
	gathers    int                  // the vector gathers printed so far (their index vectors' names)
	inTile     int                  // how many register tiles (scalarized Local buffers of minTileVectors vectors or more) enclose the statement printed
	gpu        *gpuDialect          // set when printing a GPU kernel (gpu.go)
	slots      []string             // the file-scope slots of heap buffers allocated inside a parallel loop
	wsTop      int                  // bytes of the workspace taken by the open heap buffers
	wsPeak     int                  // the workspace's size: the most wsTop reached
	dots       bool                 // whether a dot-product helper is called (TSR_DOTS)
	bf16Params bool                 // whether a param is bfloat16 (the weights of bf16 pairs: vdotBF16)
	castClamps map[*tir.Binary]bool // the clamps of the float value a vector conversion to an integer type is printing (nonan.go)
}

// bufBind is how a buffer is reached in the C code: an array or pointer
// name, or, for a scalarized Local buffer, a set of variables. A private
// buffer is the running thread's own: allocated inside a parallel loop, or
// with none inside it.
type bufBind struct {
	buf     *tir.Buffer
	name    string
	scal    *scalarPlan
	private bool
}

// minTileVectors is the fewest vectors of a scalarized Local buffer that
// make it a register tile, inside which the polynomial vector functions
// are called rather than inlined (vectorMathCalls).
const minTileVectors = 8

func (m *module) kernel(f *tir.PrimFunc) (out string, workspace int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	k := &kernel{
		m:    m,
		f:    f,
		vars: map[*tir.Var]string{},
		bufs: map[*tir.Buffer]*bufBind{},
		dom:  domain{},
	}
	k.openScope()
	written := map[*tir.Buffer]bool{}
	tir.WalkStmt(f.Body, func(s tir.Stmt) bool {
		if st, ok := s.(*tir.Store); ok {
			written[st.Buf] = true
		}
		return true
	})
	var params, args []string
	for i, p := range f.Params {
		if p == nil {
			return "", 0, fmt.Errorf("param %d is nil", i)
		}
		if k.bufs[p] != nil {
			return "", 0, fmt.Errorf("buffer %s is passed twice", p.Name)
		}
		if p.Scope != tir.Global {
			return "", 0, fmt.Errorf("param %s has scope %v, want global", p.Name, p.Scope)
		}
		t, err := elemType(p.DType)
		if err != nil {
			return "", 0, fmt.Errorf("param %s: %w", p.Name, err)
		}
		name := k.declare(p.Name)
		k.bufs[p] = &bufBind{buf: p, name: name}
		k.bf16Params = k.bf16Params || p.DType == tir.BFloat16
		cnst := "const "
		if written[p] {
			cnst = ""
		}
		params = append(params, fmt.Sprintf("%s%s *restrict %s", cnst, t, name))
		if p.DType == tir.Float32 {
			args = append(args, fmt.Sprintf("args[%d]", i))
		} else {
			args = append(args, fmt.Sprintf("(%s *)args[%d]", t, i))
		}
	}
	body, err := runPasses(f.Body, false, m.lanes, f.Dynamic, nil)
	if err != nil {
		return "", 0, err
	}

	k.indent = 1
	if err := k.stmt(body); err != nil {
		return "", 0, err
	}
	if k.wsPeak > 0 {
		params = append(params, "char *restrict "+wsName)
		args = append(args, fmt.Sprintf("(char *)args[%d]", len(f.Params)))
	}
	entry := "float *const *args"
	if m.opts.Dim {
		params = append([]string{"int64_t " + DimParam}, params...)
		args = append([]string{DimParam}, args...)
		entry += ", int64_t " + DimParam
	}
	if len(params) == 0 {
		params = []string{"void"}
	}
	var b strings.Builder
	for _, w := range k.slots {
		fmt.Fprintf(&b, "static void *%s;\n", w)
	}
	attr := ""
	if k.dots {
		attr = "TSR_DOTS "
	}
	fmt.Fprintf(&b, "%sstatic int tsr_impl_%s(%s) {\n", attr, f.Name, strings.Join(params, ", "))
	if m.opts.Dim {
		fmt.Fprintf(&b, "  (void)%s;\n", DimParam)
	}
	b.WriteString(k.b.String())
	b.WriteString("  return 0;\n}\n\n")
	fmt.Fprintf(&b, "TSR_KERNEL int %s(%s) {\n", f.Name, entry)
	if len(args) == 0 {
		b.WriteString("  (void)args;\n")
	}
	fmt.Fprintf(&b, "  return tsr_impl_%s(%s);\n}\n", f.Name, strings.Join(args, ", "))
	return b.String(), k.wsPeak, nil
}

// wsName is the C name of a kernel's workspace parameter; the tsr_ prefix
// keeps it apart from the buffers' names (declare).
const wsName = "tsr_ws"

// elemType is the C type of a buffer element; on a GPU integers are 32-bit.
func (k *kernel) elemType(t tir.DType) (string, error) {
	if k.gpu != nil && t == tir.Int {
		return "int", nil
	}
	return elemType(t)
}

// scalarType is the C type of a scalar variable.
func (k *kernel) scalarType(t tir.DType) (string, error) {
	if k.gpu != nil && t == tir.Int {
		return "int", nil
	}
	return scalarType(t)
}

// intType is the C type of loop variables and index arithmetic.
func (k *kernel) intType() string {
	if k.gpu != nil {
		return "int"
	}
	return "int64_t"
}

func elemType(t tir.DType) (string, error) {
	switch t {
	case tir.Float32:
		return "float", nil
	case tir.BFloat16:
		return "uint16_t", nil // its bits (tsr_bf2f, tsr_f2bf)
	case tir.Int:
		return "int64_t", nil
	case tir.Bool:
		return "int32_t", nil
	}
	if t.IntElem() {
		return intElemType(t), nil
	}
	return "", fmt.Errorf("unknown dtype %v", t)
}

// intElemType is the C type of an integer element type.
func intElemType(t tir.DType) string {
	switch t {
	case tir.Int8:
		return "int8_t"
	case tir.Uint8:
		return "uint8_t"
	case tir.Int16:
		return "int16_t"
	}
	return "int32_t"
}

func elemSize(t tir.DType) int { return t.Bytes() }

func scalarType(t tir.DType) (string, error) {
	switch t {
	case tir.Float32:
		return "float", nil
	case tir.BFloat16:
		return "uint16_t", nil
	case tir.Int:
		return "int64_t", nil
	case tir.Bool:
		return "int", nil
	}
	if t.IntElem() {
		return intElemType(t), nil
	}
	return "", fmt.Errorf("unknown dtype %v", t)
}

// ---- names and scopes ----

func (k *kernel) openScope()  { k.scopes = append(k.scopes, map[string]bool{}) }
func (k *kernel) closeScope() { k.scopes = k.scopes[:len(k.scopes)-1] }

func (k *kernel) taken(name string) bool {
	if reservedC[name] || strings.HasPrefix(name, "tsr_") || k.gpu != nil && (reservedGPU[name] || strings.HasPrefix(name, "TSR_")) {
		return true
	}
	for _, s := range k.scopes {
		if s[name] {
			return true
		}
	}
	return false
}

// declare picks a fresh C identifier resembling base in the innermost open
// block.
func (k *kernel) declare(base string) string {
	base = sanitize(base)
	name := base
	for i := 1; k.taken(name); i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	k.scopes[len(k.scopes)-1][name] = true
	return name
}

// comment makes s safe inside a C comment.
func comment(s string) string {
	return strings.NewReplacer("*/", "* /", "\n", " ", "\r", " ").Replace(s)
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || out[0] >= '0' && out[0] <= '9' || out[0] == '_' || strings.HasPrefix(out, "tsr_") {
		out = "v" + out
	}
	return out
}

func (k *kernel) bindVar(v *tir.Var, name string) func() {
	old, had := k.vars[v]
	k.vars[v] = name
	return func() {
		if had {
			k.vars[v] = old
		} else {
			delete(k.vars, v)
		}
	}
}

func (k *kernel) bindBuf(b *tir.Buffer, bb *bufBind) func() {
	old, had := k.bufs[b]
	k.bufs[b] = bb
	return func() {
		if had {
			k.bufs[b] = old
		} else {
			delete(k.bufs, b)
		}
	}
}

func (k *kernel) setDom(v *tir.Var, iv tir.Interval) func() {
	old, had := k.dom[v]
	k.dom[v] = iv
	return func() {
		if had {
			k.dom[v] = old
		} else {
			delete(k.dom, v)
		}
	}
}

func (k *kernel) lookupBuf(b *tir.Buffer) (*bufBind, error) {
	if b == nil {
		return nil, fmt.Errorf("access to a nil buffer")
	}
	bb := k.bufs[b]
	if bb == nil {
		return nil, fmt.Errorf("buffer %s is neither a param nor allocated here", b.Name)
	}
	return bb, nil
}

func (k *kernel) line(format string, a ...any) {
	k.b.WriteString(strings.Repeat("  ", k.indent))
	fmt.Fprintf(&k.b, format, a...)
	k.b.WriteByte('\n')
}

// ---- statements ----

func (k *kernel) stmt(s tir.Stmt) error {
	switch s := s.(type) {
	case nil:
		return nil
	case *tir.Seq:
		return k.seqStmts(s.Stmts)
	case *tir.For:
		return k.forLoop(s)
	case *tir.Store:
		return k.store(s)
	case *tir.Allocate:
		return k.allocate(s)
	case *tir.IfThenElse:
		return k.ifThenElse(s)
	case *tir.Let:
		return k.let(s)
	case *tir.Pragma:
		k.line("/* pragma %s = %d */", comment(s.Key), s.Value)
		return k.stmt(s.Body)
	case *tir.Barrier:
		if k.gpu == nil {
			return fmt.Errorf("a barrier in a CPU kernel")
		}
		k.line("TSR_SYNC();")
		return nil
	}
	return fmt.Errorf("unsupported statement %T", s)
}

func (k *kernel) forLoop(f *tir.For) error {
	if f.Var == nil || f.Var.T != tir.Int {
		return fmt.Errorf("loop variable of a %v loop is not an integer variable", f.Kind)
	}
	if f.Extent <= 0 {
		k.line("/* %s: empty loop */", sanitize(f.Var.Name))
		return nil
	}
	if f.Extent == 1 {
		return k.stmt(substStmt(f.Body, map[*tir.Var]tir.Expr{f.Var: tir.Const(0)}))
	}
	if k.gpu != nil {
		return k.gpuLoop(f)
	}
	switch f.Kind {
	case tir.Vectorized:
		return k.vectorLoop(f)
	case tir.Parallel:
		if !k.inParallel {
			k.line("#pragma omp parallel for")
			k.inParallel = true
			defer func() { k.inParallel = false }()
		}
	case tir.Unrolled:
		// Left by the unroll pass only when too large to unroll in the source.
		n := f.Extent
		if n > 64 {
			n = 64
		}
		k.line("#pragma GCC unroll %d", n)
	case tir.ThreadBound:
		k.line("/* %s, run serially */", comment(f.Thread))
	case tir.Serial:
		if done, err := k.reductionLoop(f); done {
			return err
		}
	default:
		return fmt.Errorf("unknown loop kind %v", f.Kind)
	}
	return k.serialLoop(f)
}

func (k *kernel) serialLoop(f *tir.For) error {
	k.openScope()
	defer k.closeScope()
	name := k.declare(f.Var.Name)
	defer k.bindVar(f.Var, name)()
	defer k.setDom(f.Var, tir.Interval{Lo: 0, Hi: int64(f.Extent) - 1})()
	k.line("for (%s %s = 0; %s < %d; ++%s) {", k.intType(), name, name, f.Extent, name)
	k.indent++
	err := k.stmt(f.Body)
	k.indent--
	k.line("}")
	return err
}

func (k *kernel) store(s *tir.Store) error {
	bb, err := k.lookupBuf(s.Buf)
	if err != nil {
		return err
	}
	if s.Value == nil {
		return fmt.Errorf("store to %s without a value", s.Buf.Name)
	}
	if s.Value.Type() != s.Buf.DType {
		return fmt.Errorf("store of a %v value into %v buffer %s", s.Value.Type(), s.Buf.DType, s.Buf.Name)
	}
	flat, err := simplifiedIndex(s.Buf, s.Indices, k.dom)
	if err != nil {
		return err
	}
	ref, err := k.elemAt(bb, flat)
	if err != nil {
		return err
	}
	val, err := k.expr(s.Value)
	if err != nil {
		return err
	}
	k.line("%s = %s;", ref, trimParens(val))
	return nil
}

// elemAt is the C lvalue of element flat (simplified) of a buffer.
func (k *kernel) elemAt(bb *bufBind, flat tir.Expr) (string, error) {
	if bb.scal != nil {
		c, ok := tir.IsConst(flat)
		if !ok {
			return "", fmt.Errorf("internal: non-constant index %s into scalarized buffer %s", tir.ExprString(flat), bb.buf.Name)
		}
		return bb.scal.elem(c)
	}
	idx, err := k.expr(flat)
	if err != nil {
		return "", err
	}
	return bb.name + "[" + idx + "]", nil
}

func (k *kernel) allocate(a *tir.Allocate) error {
	buf := a.Buf
	if buf == nil {
		return fmt.Errorf("allocation of a nil buffer")
	}
	if k.gpu != nil && buf.Scope != tir.Local {
		return k.gpuAllocate(a)
	}
	t, err := k.elemType(buf.DType)
	if err != nil {
		return fmt.Errorf("buffer %s: %w", buf.Name, err)
	}
	for _, d := range buf.Shape {
		if d < 0 {
			return fmt.Errorf("buffer %s has negative shape %v", buf.Name, buf.Shape)
		}
	}
	if buf.Scope == tir.Local {
		if plan := k.planScalarize(a); plan != nil {
			if err := k.declareScalarized(buf, plan); err != nil {
				return err
			}
			defer k.bindBuf(buf, &bufBind{buf: buf, scal: plan, private: true})()
			if buf.Size() >= minTileVectors*k.m.lanes {
				k.inTile++
				defer func() { k.inTile-- }()
			}
			return k.stmt(a.Body)
		}
	}
	size := buf.Size()
	bytes := size * elemSize(buf.DType)
	name := k.declare(buf.Name)
	private := k.inParallel || !hasParallel(a.Body)
	defer k.bindBuf(buf, &bufBind{buf: buf, name: name, private: private})()
	if buf.Scope != tir.Global && bytes <= maxStackBytes {
		if size == 0 {
			size = 1
		}
		k.line("%s %s[%d] __attribute__((aligned(64)));", t, name, size)
		return k.stmt(a.Body)
	}
	if k.gpu != nil {
		return fmt.Errorf("local buffer %s of %d bytes is too large for a GPU thread", buf.Name, bytes)
	}
	if k.inParallel {
		// Each iteration of the parallel loop needs a buffer of its own:
		// from a file-scope slot kept for the next call (tsr_ws_take,
		// tsr_ws_give).
		slot := fmt.Sprintf("tsr_ws_%s_%d", sanitize(k.f.Name), len(k.slots))
		k.slots = append(k.slots, slot)
		k.line("%s *restrict %s = (%s *)tsr_ws_take(&%s, %d);", t, name, t, slot, bytes)
		if err := k.stmt(a.Body); err != nil {
			return err
		}
		k.line("tsr_ws_give(&%s, %s);", slot, name)
		return nil
	}
	// Outside parallel loops a heap buffer is a piece of the kernel's
	// workspace, which the caller passes after the parameters: the
	// buffers open at once lie side by side, a buffer's piece is free
	// again once its scope ends.
	off := k.wsTop
	k.wsTop += (bytes + 63) / 64 * 64
	k.wsPeak = max(k.wsPeak, k.wsTop)
	defer func() { k.wsTop = off }()
	k.line("%s *restrict %s = (%s *)(%s + %d);", t, name, t, wsName, off)
	return k.stmt(a.Body)
}

// hasParallel reports whether s has a parallel loop.
func hasParallel(s tir.Stmt) bool {
	found := false
	tir.WalkStmt(s, func(x tir.Stmt) bool {
		if f, ok := x.(*tir.For); ok && f.Kind == tir.Parallel {
			found = true
		}
		return !found
	})
	return found
}

func (k *kernel) ifThenElse(s *tir.IfThenElse) error {
	if s.Cond == nil || s.Cond.Type() != tir.Bool {
		return fmt.Errorf("if condition is not boolean")
	}
	c := simplifyCond(s.Cond, k.dom)
	switch {
	case tir.IsTrue(c):
		return k.block(s.Then)
	case tir.IsFalse(c):
		return k.block(s.Else)
	}
	cs, err := k.expr(c)
	if err != nil {
		return err
	}
	k.line("if (%s) {", trimParens(cs))
	if err := k.inner(s.Then); err != nil {
		return err
	}
	if s.Else != nil {
		k.line("} else {")
		if err := k.inner(s.Else); err != nil {
			return err
		}
	}
	k.line("}")
	return nil
}

// block emits s in a new C block when it declares anything.
func (k *kernel) block(s tir.Stmt) error {
	switch s.(type) {
	case *tir.Let, *tir.Allocate, *tir.Seq:
		k.line("{")
		err := k.inner(s)
		k.line("}")
		return err
	}
	return k.stmt(s)
}

// inner emits s one level deeper inside a new C block.
func (k *kernel) inner(s tir.Stmt) error {
	k.openScope()
	k.indent++
	err := k.stmt(s)
	k.indent--
	k.closeScope()
	return err
}

func (k *kernel) let(s *tir.Let) error {
	if s.Var == nil || s.Value == nil {
		return fmt.Errorf("let without a variable or value")
	}
	if s.Var.T != s.Value.Type() {
		return fmt.Errorf("let %s of type %v bound to a %v value", s.Var.Name, s.Var.T, s.Value.Type())
	}
	t, err := k.scalarType(s.Var.T)
	if err != nil {
		return err
	}
	val := s.Value
	if val.Type() == tir.Int && !hasFloat(val) {
		val = tir.Simplify(val, k.dom)
	}
	vs, err := k.expr(val)
	if err != nil {
		return err
	}
	name := k.declare(s.Var.Name)
	k.line("const %s %s = %s;", t, name, trimParens(vs))
	defer k.bindVar(s.Var, name)()
	if s.Var.T == tir.Int {
		defer k.setDom(s.Var, letBound(val, k.dom))()
	}
	return k.stmt(s.Body)
}

func letBound(val tir.Expr, dom domain) tir.Interval {
	return tir.ConstBound(val, dom)
}

// ---- expressions ----

func intLit(v int64) string {
	switch {
	case v == math.MinInt64:
		return "INT64_MIN"
	case v < 0:
		return "(" + strconv.FormatInt(v, 10) + ")"
	}
	return strconv.FormatInt(v, 10)
}

func floatLit(v float64) string {
	f := float32(v)
	switch {
	case math.IsNaN(float64(f)):
		return "NAN"
	case math.IsInf(float64(f), 1):
		return "INFINITY"
	case math.IsInf(float64(f), -1):
		return "(-INFINITY)"
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	s += "f"
	if math.Signbit(float64(f)) {
		s = "(" + s + ")"
	}
	return s
}

func trimParens(s string) string {
	if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' || s[1] == '{' {
		return s // not parenthesized, or a statement expression (vgather)
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return s
			}
		}
	}
	return s[1 : len(s)-1]
}

// expr emits a scalar C expression for e.
func (k *kernel) expr(e tir.Expr) (string, error) {
	if e == nil {
		return "", fmt.Errorf("nil expression")
	}
	if e.Type() == tir.Bool {
		if tir.IsTrue(e) {
			return "1", nil
		}
		if tir.IsFalse(e) {
			return "0", nil
		}
	}
	switch e := e.(type) {
	case *tir.Var:
		name, ok := k.vars[e]
		if !ok {
			return "", fmt.Errorf("variable %s is not in scope", e.Name)
		}
		return name, nil
	case *tir.IntImm:
		return intLit(e.V), nil
	case *tir.FloatImm:
		return floatLit(e.V), nil
	case *tir.Binary:
		return k.binary(e)
	case *tir.Compare:
		if e.A == nil || e.B == nil || e.A.Type() != e.B.Type() {
			return "", fmt.Errorf("comparison %s of mismatched operands", tir.ExprString(e))
		}
		a, err := k.expr(e.A)
		if err != nil {
			return "", err
		}
		b, err := k.expr(e.B)
		if err != nil {
			return "", err
		}
		return "(" + a + " " + e.Op.String() + " " + b + ")", nil
	case *tir.And:
		return k.logic(e.A, e.B, "&&")
	case *tir.Or:
		return k.logic(e.A, e.B, "||")
	case *tir.Not:
		if e.A == nil || e.A.Type() != tir.Bool {
			return "", fmt.Errorf("logical not of a non-boolean")
		}
		a, err := k.expr(e.A)
		if err != nil {
			return "", err
		}
		return "!" + a, nil
	case *tir.Select:
		if e.Cond == nil || e.T == nil || e.F == nil || e.Cond.Type() != tir.Bool || e.T.Type() != e.F.Type() {
			return "", fmt.Errorf("malformed select %s", tir.ExprString(e))
		}
		c := simplifyCond(e.Cond, k.dom)
		switch {
		case tir.IsTrue(c):
			return k.expr(e.T)
		case tir.IsFalse(c):
			return k.expr(e.F)
		}
		cs, err := k.expr(c)
		if err != nil {
			return "", err
		}
		t, err := k.expr(e.T)
		if err != nil {
			return "", err
		}
		f, err := k.expr(e.F)
		if err != nil {
			return "", err
		}
		return "(" + cs + " ? " + t + " : " + f + ")", nil
	case *tir.Cast:
		return k.cast(e)
	case *tir.Load:
		bb, err := k.lookupBuf(e.Buf)
		if err != nil {
			return "", err
		}
		flat, err := simplifiedIndex(e.Buf, e.Indices, k.dom)
		if err != nil {
			return "", err
		}
		return k.elemAt(bb, flat)
	case *tir.Call:
		name, err := checkCall(e)
		if err != nil {
			return "", err
		}
		if k.gpu != nil {
			name = k.gpu.calls[e.Fn]
		} else if e.Fn == "exp" {
			name = "tsr_expf"
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			if args[i], err = k.expr(a); err != nil {
				return "", err
			}
			args[i] = trimParens(args[i])
		}
		return name + "(" + strings.Join(args, ", ") + ")", nil
	}
	return "", fmt.Errorf("unsupported expression %T", e)
}

func checkCall(e *tir.Call) (string, error) {
	mf, ok := tir.MathFuncs[e.Fn]
	if !ok {
		return "", fmt.Errorf("unknown function %q", e.Fn)
	}
	name := mf.C
	if mf.Arity != len(e.Args) {
		return "", fmt.Errorf("call of %s with %d arguments, want %d", e.Fn, len(e.Args), mf.Arity)
	}
	for _, a := range e.Args {
		if a == nil || a.Type() != tir.Float32 {
			return "", fmt.Errorf("call of %s with a non-float32 argument", e.Fn)
		}
	}
	return name, nil
}

func (k *kernel) logic(a, b tir.Expr, op string) (string, error) {
	if a == nil || b == nil || a.Type() != tir.Bool || b.Type() != tir.Bool {
		return "", fmt.Errorf("logical %s of non-boolean operands", op)
	}
	as, err := k.expr(a)
	if err != nil {
		return "", err
	}
	bs, err := k.expr(b)
	if err != nil {
		return "", err
	}
	return "(" + as + " " + op + " " + bs + ")", nil
}

func (k *kernel) binary(e *tir.Binary) (string, error) {
	if e.A == nil || e.B == nil || e.A.Type() != e.B.Type() {
		return "", fmt.Errorf("binary %v of mismatched operands in %s", e.Op, tir.ExprString(e))
	}
	t := e.A.Type()
	if t == tir.Bool {
		return "", fmt.Errorf("arithmetic %v on booleans", e.Op)
	}
	if t.IntElem() && t != tir.Int32 {
		return "", fmt.Errorf("%v arithmetic in %s (cast to int32 first)", t, tir.ExprString(e))
	}
	a, err := k.expr(e.A)
	if err != nil {
		return "", err
	}
	b, err := k.expr(e.B)
	if err != nil {
		return "", err
	}
	if t == tir.Int {
		// Two literals would multiply in C's 32-bit int.
		_, ca := e.A.(*tir.IntImm)
		_, cb := e.B.(*tir.IntImm)
		if ca && cb {
			a = "(" + k.intType() + ")" + a
		}
	}
	switch e.Op {
	case tir.Add, tir.Sub, tir.Mul:
		return "(" + a + " " + e.Op.String() + " " + b + ")", nil
	case tir.Div:
		if t != tir.Float32 {
			return "", fmt.Errorf("integer Div in %s (use FloorDiv)", tir.ExprString(e))
		}
		return "(" + a + " / " + b + ")", nil
	case tir.FloorDiv, tir.FloorMod:
		if t != tir.Int {
			return "", fmt.Errorf("%v on float32 in %s", e.Op, tir.ExprString(e))
		}
		ia, ib := tir.ConstBound(e.A, k.dom), tir.ConstBound(e.B, k.dom)
		plain := ia.Lo >= 0 && ib.Lo > 0
		switch {
		case e.Op == tir.FloorDiv && plain:
			return "(" + a + " / " + b + ")", nil
		case e.Op == tir.FloorMod && plain:
			return "(" + a + " % " + b + ")", nil
		case e.Op == tir.FloorDiv:
			return "tsr_floordiv(" + trimParens(a) + ", " + trimParens(b) + ")", nil
		default:
			return "tsr_floormod(" + trimParens(a) + ", " + trimParens(b) + ")", nil
		}
	case tir.Min, tir.Max:
		fn := map[bool]string{true: "tsr_min", false: "tsr_max"}[e.Op == tir.Min]
		if t == tir.Int || t.IntElem() {
			fn += "i"
		} else {
			fn += "f"
		}
		return fn + "(" + trimParens(a) + ", " + trimParens(b) + ")", nil
	}
	return "", fmt.Errorf("unknown binary operator %d", e.Op)
}

func (k *kernel) cast(e *tir.Cast) (string, error) {
	if e.X == nil {
		return "", fmt.Errorf("cast of nil")
	}
	x, err := k.expr(e.X)
	if err != nil {
		return "", err
	}
	return k.castOf(x, e.X.Type(), e.To)
}

// castOf converts x, C code of a value of type from, to type to.
func (k *kernel) castOf(x string, from, to tir.DType) (string, error) {
	if from == to {
		return x, nil
	}
	switch {
	case to == tir.BFloat16 && from == tir.Float32:
		return "tsr_f2bf(" + trimParens(x) + ")", nil
	case to == tir.Float32 && from == tir.BFloat16:
		return "tsr_bf2f(" + trimParens(x) + ")", nil
	case to == tir.BFloat16 || from == tir.BFloat16:
		return "", fmt.Errorf("cast of %v to %v (bfloat16 converts to and from float32 only)", from, to)
	}
	switch to {
	case tir.Float32:
		return "((float)" + x + ")", nil
	case tir.Int:
		return "((" + k.intType() + ")" + x + ")", nil
	case tir.Bool:
		if from == tir.Float32 {
			return "(" + x + " != 0.0f)", nil
		}
		return "(" + x + " != 0)", nil
	}
	if to.IntElem() {
		return "((" + intElemType(to) + ")" + x + ")", nil
	}
	return "", fmt.Errorf("cast to unknown dtype %v", to)
}

// prelude is the start of every translation unit: includes, scalar helpers
// and the vector types and helpers the kernels use.
func (m *module) prelude() string {
	var b strings.Builder
	b.WriteString(`/* Generated by tessera/codegen. */
#include <stddef.h>
#include <stdint.h>

/* Declared here rather than through <math.h> and <stdlib.h>, so that the
   kernels' exported names can only clash with these. */
void *aligned_alloc(size_t, size_t);
void free(void *);
void abort(void);

/* A masked vector store into a thread's own buffer blends with the lanes
   already there (codegen/vector.go), so the lanes its guard excludes are
   read and written back unchanged, set or not: gcc, seeing a buffer's
   first such store, warns that they may be uninitialized. They never
   reach a result. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/* A kernel's entry is exported, for measurement to find it; a model's
   library, which exports only its API, defines TSR_KERNEL as hidden. */
#ifndef TSR_KERNEL
#define TSR_KERNEL __attribute__((visibility("default")))
#endif
/* A kernel of integer dot products (tsr_dot4*): no product depends on the
   partial sums it feeds, and GCC's temporary expression replacement moves
   every product of an unrolled reduction body ahead of the sums, so that
   they all live at once and spill (a 3x3 convolution of 64 channels: 580
   stack accesses in its inner loop, not 100; 1.66 -> 1.28 ms on Zen 3).
   In float kernels the multiply-adds chain through the sums and TER
   helps. */
#if defined(__GNUC__) && !defined(__clang__)
#define TSR_DOTS __attribute__((optimize("no-tree-ter")))
#else
#define TSR_DOTS
#endif
`)
	b.WriteString(mathDecls())
	b.WriteString(`#ifndef INFINITY
#define INFINITY (__builtin_inff())
#endif
#ifndef NAN
#define NAN (__builtin_nanf(""))
#endif

/* Floor division and modulo without a branch: && would make each a
   branch, and a kernel that computes an index with them in every
   statement of an unrolled loop (a transposed convolution's phase) then
   recomputed them there, the branches keeping gcc from hoisting them
   out of the loop (a DCGAN layer 0.6 -> 2.0 ms). */
static inline int64_t tsr_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return q - (int64_t)((r != 0) & ((r < 0) != (b < 0)));
}
static inline int64_t tsr_floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r + b * (int64_t)((r != 0) & ((r < 0) != (b < 0)));
}
static inline int64_t tsr_mini(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t tsr_maxi(int64_t a, int64_t b) { return a > b ? a : b; }
/* min and max propagate NaN from either operand, as the reference
   evaluator (te.Eval) and numpy do: a != a holds for NaN only. Written as
   two selects, not a || b ? a : b, which gcc (with loop if-conversion off)
   compiles to branches: a ReLU over random data then mispredicts half its
   elements, 8x slower. */
static inline float tsr_minf(float a, float b) { float r = a < b ? a : b; return a != a ? a : r; }
static inline float tsr_maxf(float a, float b) { float r = a > b ? a : b; return a != a ? a : r; }
static inline float tsr_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float tsr_nan0f(float x) { return x == x ? x : 0.0f; }
/* bfloat16 (tir.BFloat16) is held as its bits: the upper half of a float.
   Rounding to nearest, ties to even, NaN kept (quiet), as vcvtneps2bf16. */
static inline uint16_t tsr_f2bf(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  return (uint16_t)(x != x ? (u | 0x00400000u) >> 16 : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float tsr_bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
}
` + roundHalfC + `/* expf, but 0 below -87.34 (where e^x is below FLT_MIN, at most 1.2e-38
   from libm's subnormal), without libm's underflow path: an additive
   attention mask (-10000) sends a masked row's logits there, lane by lane
   at random, and a softmax's scalar exp ran 8.4 ns an element on such a
   mix against 2.5 on unmasked logits (4.6 this way). The argument is
   clamped rather than branched on, so that libm takes its fast path. */
static inline float tsr_expf(float x) {
  float y = expf(x < -87.33654f ? -87.33654f : x);
  return x < -87.33654f ? 0.0f : y;
}
/* A vector guard's lane count, clamped. Two plain selects, not a nested
   ?:, so that gcc sees a max and a min it can value-number: nested, each
   use stayed a branch and a cmov, and the mask of a partial register tile
   was rebuilt (clamp, broadcast, compare) before every multiply-add. */
static inline int32_t tsr_clamp32(int64_t x, int64_t lo, int64_t hi) {
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  return (int32_t)x;
}
static inline void *tsr_alloc(size_t bytes) {
  bytes = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, bytes);
  if (!p)
    abort();
  return p;
}
/* A heap buffer inside a parallel loop (each iteration needs its own) is
   kept in a file-scope slot for the next call, as TVM's runtime keeps a
   workspace pool: freeing a multi-megabyte buffer returns its pages to the
   system, and every call would fault them in again. Take and give are
   atomic exchanges, so concurrent iterations or calls each get a buffer of
   their own; between calls each allocation site keeps a single buffer.
   Heap buffers outside parallel loops are pieces of the workspace the
   caller passes (CSource.Workspace). */
static inline void *tsr_ws_take(void **slot, size_t bytes) {
  void *p = __atomic_exchange_n(slot, (void *)0, __ATOMIC_ACQUIRE);
  return p ? p : tsr_alloc(bytes);
}
static inline void tsr_ws_give(void **slot, void *p) {
  void *q = __atomic_exchange_n(slot, p, __ATOMIC_ACQ_REL);
  if (q)
    free(q);
}
`)
	for _, L := range sortedKeys(m.used) {
		b.WriteString("\n")
		b.WriteString(vectorHelpers(L))
		if m.bf16Dots {
			b.WriteString(bf16DotHelpers(L))
		}
	}
	// Unused helpers must not warn.
	return strings.ReplaceAll(b.String(), "static inline ", "static inline __attribute__((unused)) ")
}

// mathDecls declares the C functions of tir.MathFuncs (tsr_ helpers are
// defined below them), sorted by name.
func mathDecls() string {
	var decls []string
	for _, mf := range tir.MathFuncs {
		if strings.HasPrefix(mf.C, "tsr_") {
			continue
		}
		args := strings.TrimSuffix(strings.Repeat("float, ", mf.Arity), ", ")
		decls = append(decls, fmt.Sprintf("float %s(%s);\n", mf.C, args))
	}
	sort.Strings(decls)
	return strings.Join(decls, "")
}
