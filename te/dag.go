package te

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// DAG is a compute DAG: the tensors reachable from its outputs, in
// topological order (every tensor after the tensors it reads), with the
// access analysis the sketch rules and the lowering need.
type DAG struct {
	Tensors []*Tensor // topological order; placeholders included
	Inputs  []*Tensor // placeholders, in topological order
	Outputs []*Tensor // as given to NewDAG

	byBuf     map[*tir.Buffer]*Tensor
	reads     map[*Tensor][]Access
	consumers map[*Tensor][]*Tensor
	index     map[*Tensor]int
}

// Access is one read of a producer by a consumer's body.
type Access struct {
	Producer *Tensor
	Indices  []tir.Expr
}

// NewDAG collects the tensors reachable from outputs. Ties in the
// topological order are broken by discovery order, so the same definitions
// always give the same DAG.
func NewDAG(outputs ...*Tensor) (*DAG, error) {
	d := &DAG{
		Outputs:   outputs,
		byBuf:     map[*tir.Buffer]*Tensor{},
		reads:     map[*Tensor][]Access{},
		consumers: map[*Tensor][]*Tensor{},
		index:     map[*Tensor]int{},
	}
	state := map[*Tensor]int{} // 1 visiting, 2 done
	var visit func(t *Tensor) error
	visit = func(t *Tensor) error {
		switch state[t] {
		case 1:
			return fmt.Errorf("te: cycle through tensor %s", t.Name)
		case 2:
			return nil
		}
		state[t] = 1
		if err := validate(t); err != nil {
			return err
		}
		d.byBuf[t.Buf] = t
		for _, p := range producers(t) {
			if err := visit(p); err != nil {
				return err
			}
		}
		state[t] = 2
		d.index[t] = len(d.Tensors)
		d.Tensors = append(d.Tensors, t)
		if t.IsPlaceholder() {
			d.Inputs = append(d.Inputs, t)
		}
		return nil
	}
	for _, o := range outputs {
		if o.IsPlaceholder() {
			return nil, fmt.Errorf("te: output %s is a placeholder", o.Name)
		}
		if err := visit(o); err != nil {
			return nil, err
		}
	}
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			continue
		}
		seen := map[*Tensor]bool{}
		tir.WalkExpr(t.Body, func(e tir.Expr) bool {
			if l, ok := e.(*tir.Load); ok {
				p := d.byBuf[l.Buf]
				d.reads[t] = append(d.reads[t], Access{Producer: p, Indices: l.Indices})
				if !seen[p] {
					seen[p] = true
					d.consumers[p] = append(d.consumers[p], t)
				}
			}
			return true
		})
	}
	return d, nil
}

// producers lists the tensors t reads, in order of first appearance.
func producers(t *Tensor) []*Tensor {
	if t.IsPlaceholder() {
		return nil
	}
	var out []*Tensor
	seen := map[*tir.Buffer]bool{}
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && !seen[l.Buf] {
			seen[l.Buf] = true
			if t, ok := l.Buf.Owner.(*Tensor); ok {
				out = append(out, t)
			}
		}
		return true
	})
	return out
}

func validate(t *Tensor) error {
	for i, d := range t.Shape {
		if d <= 0 {
			return fmt.Errorf("te: tensor %s: dimension %d has extent %d", t.Name, i, d)
		}
	}
	if t.IsPlaceholder() {
		return nil
	}
	if len(t.Axis) != len(t.Shape) {
		return fmt.Errorf("te: tensor %s: %d axes for rank %d", t.Name, len(t.Axis), len(t.Shape))
	}
	if (t.Reducer == NoReduce) != (len(t.ReduceAxis) == 0) {
		return fmt.Errorf("te: tensor %s: reducer %v with %d reduce axes", t.Name, t.Reducer, len(t.ReduceAxis))
	}
	var err error
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && err == nil {
			if l.Buf.Owner == nil {
				err = fmt.Errorf("te: tensor %s reads buffer %s that belongs to no tensor", t.Name, l.Buf.Name)
			} else if len(l.Indices) != len(l.Buf.Shape) {
				err = fmt.Errorf("te: tensor %s reads %s with %d indices, rank %d", t.Name, l.Buf.Name, len(l.Indices), len(l.Buf.Shape))
			}
		}
		return err == nil
	})
	return err
}

// TensorOf returns the tensor whose buffer is b, or nil.
func (d *DAG) TensorOf(b *tir.Buffer) *Tensor { return d.byBuf[b] }

// Index returns t's position in d.Tensors, or -1.
func (d *DAG) Index(t *Tensor) int {
	if i, ok := d.index[t]; ok {
		return i
	}
	return -1
}

// Reads lists every load in t's body, in order.
func (d *DAG) Reads(t *Tensor) []Access { return d.reads[t] }

// Consumers lists the tensors that read t, in topological order.
func (d *DAG) Consumers(t *Tensor) []*Tensor { return d.consumers[t] }

// Producers lists the tensors t reads, in order of first appearance.
func (d *DAG) Producers(t *Tensor) []*Tensor { return producers(t) }

// IsOutput reports whether t is an output of the DAG.
func (d *DAG) IsOutput(t *Tensor) bool {
	for _, o := range d.Outputs {
		if o == t {
			return true
		}
	}
	return false
}

// expensiveCalls are math functions that make inlining a producer into a
// consumer with data reuse costly.
var expensiveCalls = map[string]bool{"exp": true, "log": true, "tanh": true, "erf": true, "pow": true, "sqrt": true, "sigmoid": true}

// The analyses below look only at a tensor's own definition, so they hold
// for tensors that schedules create (cache and rfactor stages) as well.

// IsStrictlyInlineable reports whether t is a cheap injective computation:
// no reduction, no expensive math call and no division by a computed
// value (a division costs several multiplications: a softmax's e / Σe,
// inlined into the matmul that reads the probabilities, is computed again
// for every output column). A division by a literal, or by a stage that
// is one (a model's one-element constant, partition's literal stage: a
// GELU's x / √2), is cheap. Such a stage is always inlined into its
// consumers on CPU. A rounding to bfloat16 (a product's operand in the
// bf16 precision) is not: ten integer operations, where its consumer, a
// convolution or matmul, would round each element again for every output
// that reads it.
func IsStrictlyInlineable(t *Tensor) bool {
	if t.IsPlaceholder() || t.Reducer != NoReduce {
		return false
	}
	cheap := true
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		switch e := e.(type) {
		case *tir.Call:
			if expensiveCalls[e.Fn] {
				cheap = false
			}
		case *tir.Binary:
			if e.Op == tir.Div && !isLiteral(e.B) {
				cheap = false
			}
		case *tir.Cast:
			if e.To == tir.BFloat16 && e.X.Type() != tir.BFloat16 && !isLiteral(e.X) {
				cheap = false
			}
		}
		return cheap
	})
	return cheap
}

// isLiteral reports whether e is a constant: a literal, a conversion of
// one, or a load of a stage whose body is one.
func isLiteral(e tir.Expr) bool {
	switch e := e.(type) {
	case *tir.FloatImm, *tir.IntImm:
		return true
	case *tir.Cast:
		return e.X != nil && isLiteral(e.X)
	case *tir.Load:
		t, ok := e.Buf.Owner.(*Tensor)
		return ok && !t.IsPlaceholder() && t.Reducer == NoReduce && t.Body != nil && isLiteral(t.Body)
	}
	return false
}

// HasReduce reports whether t is a reduction.
func HasReduce(t *Tensor) bool { return !t.IsPlaceholder() && t.Reducer != NoReduce }

// loads lists the loads in t's body.
func loads(t *Tensor) []*tir.Load {
	var out []*tir.Load
	if t.IsPlaceholder() {
		return nil
	}
	tir.WalkExpr(t.Body, func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok {
			out = append(out, l)
		}
		return true
	})
	return out
}

// NeedsMultiLevelTiling reports whether t has data reuse worth tiling for: a
// reduction in which the loads, taken together, miss at least two spatial
// axes of extent > 1 (matmul: A misses j, B misses i; conv: the data misses
// the output channel, the kernel misses the pixel). Reductions that read
// every spatial axis (softmax sums, pooling) do not.
func NeedsMultiLevelTiling(t *Tensor) bool { return missingAxes(t) >= 2 }

// IsContraction reports whether t is a reduction in which some load misses
// a spatial axis of extent > 1: a matmul or a convolution, and also a
// matrix-vector product (only the matrix misses an axis: the vector's rows
// are one), whose register tile keeps accumulators; not a pooling window,
// a softmax's sum or a layer norm's mean, whose loads use every axis.
func IsContraction(t *Tensor) bool { return missingAxes(t) >= 1 }

// missingAxes counts, over the loads of a reduction t, the spatial axes of
// extent > 1 each load does not use (0 for a tensor without reduction).
func missingAxes(t *Tensor) int {
	if !HasReduce(t) {
		return 0
	}
	missing := 0
	for _, l := range loads(t) {
		used := map[*tir.Var]bool{}
		for _, ix := range l.Indices {
			tir.WalkExpr(ix, func(e tir.Expr) bool {
				if v, ok := e.(*tir.Var); ok {
					used[v] = true
				}
				return true
			})
		}
		for _, ax := range t.Axis {
			if ax.Extent > 1 && !used[ax.Var] {
				missing++
			}
		}
	}
	return missing
}

// ReadsElementwise reports whether every read of p in c uses exactly c's
// spatial axes in order, and c has p's shape and no reduction (so c can be
// fused at any tile of p's spatial loops).
func ReadsElementwise(c, p *Tensor) bool {
	if c.IsPlaceholder() || len(c.ReduceAxis) > 0 || !sameShape(c.Shape, p.Shape) {
		return false
	}
	found := false
	for _, l := range loads(c) {
		if l.Buf != p.Buf {
			continue
		}
		found = true
		for i, ix := range l.Indices {
			if v, ok := ix.(*tir.Var); !ok || v != c.Axis[i].Var {
				return false
			}
		}
	}
	return found
}

// IsStrictlyInlineable, IsInjective, HasReduce, NeedsMultiLevelTiling and
// IsElementwiseRead are the analyses above, for tensors of d.
func (d *DAG) IsStrictlyInlineable(t *Tensor) bool  { return IsStrictlyInlineable(t) }
func (d *DAG) IsInjective(t *Tensor) bool           { return !t.IsPlaceholder() && t.Reducer == NoReduce }
func (d *DAG) HasReduce(t *Tensor) bool             { return HasReduce(t) }
func (d *DAG) NeedsMultiLevelTiling(t *Tensor) bool { return NeedsMultiLevelTiling(t) }
func (d *DAG) IsElementwiseRead(c, p *Tensor) bool  { return ReadsElementwise(c, p) }

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FLOPs estimates the floating-point operations of the DAG: for each compute
// tensor, the float arithmetic and math calls of its body (plus one for the
// reduction's combine) times the iteration count.
func (d *DAG) FLOPs() float64 {
	total := 0.0
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			continue
		}
		ops := 0
		tir.WalkExpr(t.Body, func(e tir.Expr) bool {
			switch e := e.(type) {
			case *tir.Binary:
				if e.Type() == tir.Float32 {
					ops++
				}
			case *tir.Call:
				ops++
			case *tir.Load:
				return false // index arithmetic is not counted
			}
			return true
		})
		if t.Reducer != NoReduce {
			ops++
		}
		n := float64(t.Size())
		for _, r := range t.ReduceAxis {
			n *= float64(r.Extent)
		}
		total += n * float64(ops)
	}
	return total
}

// CanonicalString prints the DAG with every name replaced by its position,
// so that equal computations from different models print alike.
func (d *DAG) CanonicalString() string {
	var b strings.Builder
	names := map[*tir.Buffer]string{}
	for i, t := range d.Tensors {
		names[t.Buf] = fmt.Sprintf("T%d", i)
	}
	outs := make([]string, len(d.Outputs))
	for i, o := range d.Outputs {
		outs[i] = names[o.Buf]
	}
	for i, t := range d.Tensors {
		fmt.Fprintf(&b, "T%d%v", i, t.Shape)
		if t.IsPlaceholder() {
			if t.Const {
				b.WriteString(" = const\n")
			} else {
				b.WriteString(" = input\n")
			}
			continue
		}
		vars := map[*tir.Var]tir.Expr{}
		for j, a := range t.Axis {
			vars[a.Var] = &tir.Var{Name: fmt.Sprintf("i%d", j), T: tir.Int}
		}
		for j, a := range t.ReduceAxis {
			vars[a.Var] = &tir.Var{Name: fmt.Sprintf("r%d", j), T: tir.Int}
		}
		body := tir.MutateExpr(tir.Substitute(t.Body, vars), func(e tir.Expr) tir.Expr {
			if l, ok := e.(*tir.Load); ok {
				return &tir.Load{Buf: &tir.Buffer{Name: names[l.Buf], Shape: l.Buf.Shape}, Indices: l.Indices}
			}
			return e
		})
		if t.Reducer != NoReduce {
			ext := make([]int, len(t.ReduceAxis))
			for j, r := range t.ReduceAxis {
				ext[j] = r.Extent
			}
			fmt.Fprintf(&b, " = %s%v ", t.Reducer, ext)
		} else {
			b.WriteString(" = ")
		}
		b.WriteString(tir.ExprString(body))
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "outputs %s\n", strings.Join(outs, ","))
	return b.String()
}

// workloadKeyVersion changes when the canonical print changes on purpose;
// records keyed by an older version are then not matched silently.
// v2: constant placeholders (weights) print as const, because a schedule
// may repack them (schedule.RewriteLayout).
const workloadKeyVersion = "v2"

// WorkloadKey is a hash of the canonical print: equal subgraphs from
// different models share it.
func (d *DAG) WorkloadKey() string {
	h := sha256.Sum256([]byte(workloadKeyVersion + "\n" + d.CanonicalString()))
	return workloadKeyVersion + "-" + hex.EncodeToString(h[:12])
}

// String lists the tensors with their definitions, for debugging.
func (d *DAG) String() string {
	var b strings.Builder
	for _, t := range d.Tensors {
		if t.IsPlaceholder() {
			kind := "placeholder"
			if t.Const {
				kind = "constant"
			}
			fmt.Fprintf(&b, "%s = %s%v\n", t.Name, kind, t.Shape)
			continue
		}
		idx := make([]string, len(t.Axis))
		for i, a := range t.Axis {
			idx[i] = a.Var.Name
		}
		fmt.Fprintf(&b, "%s[%s] = ", t.Name, strings.Join(idx, ", "))
		if t.Reducer != NoReduce {
			rs := make([]string, len(t.ReduceAxis))
			for i, r := range t.ReduceAxis {
				rs[i] = fmt.Sprintf("%s:%d", r.Var.Name, r.Extent)
			}
			fmt.Fprintf(&b, "%s(%s) ", t.Reducer, strings.Join(rs, ", "))
		}
		b.WriteString(tir.ExprString(t.Body))
		b.WriteByte('\n')
	}
	return b.String()
}
