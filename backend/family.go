package backend

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/tir"
)

// Family lowers states, one schedule applied to a task's DAG at each value
// of a dimension given at run time (value → state), and prints them as few
// kernels that take the value as a parameter (codegen.NewFamily). Each
// kernel is lowered once; the loops whose extents differ from those of the
// same loops at the range's ends and at the neighbouring values
// (tir.DynamicLoops) stay loops, so that the kernels of most values share
// a text; kernels that take a constant packed in different layouts
// (tir.Buffer.Packed) never share one. Each class's Workspace is the most
// its values need. It returns the family and the kernel lowered at each
// value. CPU targets only.
func (t *Target) Family(states map[int]*schedule.State, name string) (*codegen.Family, map[int]*tir.PrimFunc, error) {
	if t.GPU() {
		return nil, nil, fmt.Errorf("kernels over a dynamic dimension are built for the CPU only, not %s", t.Name)
	}
	if t.dimModule == nil {
		return nil, nil, fmt.Errorf("target %s prints no kernels over a dynamic dimension", t.Name)
	}
	values := slices.Sorted(maps.Keys(states))
	fs := make(map[int]*tir.PrimFunc, len(values))
	for _, v := range values {
		f, err := t.lower(states[v], name)
		if err != nil {
			return nil, nil, fmt.Errorf("lowering at %d: %w", v, err)
		}
		fs[v] = f
	}
	padBuffers(fs)
	// Kernels that take a constant packed in different layouts differ in
	// their calling convention: they never share a class.
	var order []string
	byPacking := map[string][]int{}
	for _, v := range values {
		key := fs[v].Packing()
		if byPacking[key] == nil {
			order = append(order, key)
		}
		byPacking[key] = append(byPacking[key], v)
	}
	var fams []*codegen.Family
	for _, key := range order {
		vs := byPacking[key]
		codes := make(map[int]string, len(vs))
		ws := make(map[int]int, len(vs))
		for i, v := range vs {
			var others []*tir.PrimFunc
			for _, j := range []int{0, len(vs) - 1, i - 1, i + 1} {
				if j >= 0 && j < len(vs) && j != i {
					others = append(others, fs[vs[j]])
				}
			}
			f := *fs[v]
			f.Dynamic = tir.DynamicLoops(&f, others...)
			p, err := t.dimModule(&f)
			if err != nil {
				return nil, nil, fmt.Errorf("codegen at %d: %w", v, err)
			}
			codes[v], ws[v] = p.Code, p.Workspace
		}
		fam, err := codegen.NewFamily(codes)
		if err != nil {
			return nil, nil, err
		}
		for c := range fam.Classes {
			for _, v := range fam.Classes[c].Values {
				fam.Classes[c].Workspace = max(fam.Classes[c].Workspace, ws[v])
			}
		}
		fams = append(fams, fam)
	}
	fam, err := codegen.MergeFamilies(fams...)
	if err != nil {
		return nil, nil, err
	}
	return fam, fs, nil
}

// padBuffers gives each buffer the kernels allocate themselves (not a
// parameter: the model's tensors keep their layout) the largest shape it
// has at any value, where every access to it gives one index per
// dimension: its strides are then the same at every value, constants of
// the family's kernels instead of the value times a constant. A softmax's
// probabilities [heads, S, S] read by a register tile of 16 rows at a
// stride of S took 16 address registers and spilled them; at a constant
// stride the rows are displacements of one (BERT attention at S=245: 0.69
// ms against 0.56 for the kernel printed with S a constant). The buffers
// are matched by name across values; a buffer accessed with a flat index
// somewhere keeps its shapes.
func padBuffers(fs map[int]*tir.PrimFunc) {
	largest := map[string][]int{}
	flat := map[string]bool{}
	internal := func(f *tir.PrimFunc, b *tir.Buffer) bool { return !slices.Contains(f.Params, b) }
	for _, f := range fs {
		tir.WalkStmt(f.Body, func(st tir.Stmt) bool {
			switch n := st.(type) {
			case *tir.Allocate:
				if !internal(f, n.Buf) {
					break
				}
				if l, seen := largest[n.Buf.Name]; !seen {
					largest[n.Buf.Name] = slices.Clone(n.Buf.Shape)
				} else if len(l) != len(n.Buf.Shape) {
					flat[n.Buf.Name] = true // ranks differ: leave it
				} else {
					for i, d := range n.Buf.Shape {
						l[i] = max(l[i], d)
					}
				}
			case *tir.Store:
				if len(n.Indices) != len(n.Buf.Shape) {
					flat[n.Buf.Name] = true
				}
			}
			return true
		})
		tir.WalkStmtExprs(f.Body, func(e tir.Expr) {
			tir.WalkExpr(e, func(x tir.Expr) bool {
				if l, ok := x.(*tir.Load); ok && len(l.Indices) != len(l.Buf.Shape) {
					flat[l.Buf.Name] = true
				}
				return true
			})
		})
	}
	// The buffers are the lowering's (a stage's storage may be its
	// tensor's own buffer, which the DAG keeps): each padded one is a
	// copy, put in its place.
	for v, f := range fs {
		padded := map[*tir.Buffer]*tir.Buffer{}
		tir.WalkStmt(f.Body, func(st tir.Stmt) bool {
			if a, ok := st.(*tir.Allocate); ok && internal(f, a.Buf) && !flat[a.Buf.Name] && !slices.Equal(a.Buf.Shape, largest[a.Buf.Name]) {
				b := *a.Buf
				b.Shape = slices.Clone(largest[a.Buf.Name])
				padded[a.Buf] = &b
			}
			return true
		})
		if len(padded) == 0 {
			continue
		}
		expr := func(e tir.Expr) tir.Expr {
			return tir.MutateExpr(e, func(x tir.Expr) tir.Expr {
				if l, ok := x.(*tir.Load); ok && padded[l.Buf] != nil {
					c := *l
					c.Buf = padded[l.Buf]
					return &c
				}
				return x
			})
		}
		g := *f
		g.Body = tir.MutateStmt(f.Body, tir.StmtFuncs{Expr: expr, Stmt: func(st tir.Stmt) tir.Stmt {
			switch n := st.(type) {
			case *tir.Allocate:
				if b := padded[n.Buf]; b != nil {
					return &tir.Allocate{Buf: b, Body: n.Body}
				}
			case *tir.Store:
				if b := padded[n.Buf]; b != nil {
					return &tir.Store{Buf: b, Indices: n.Indices, Value: n.Value}
				}
			}
			return st
		}})
		fs[v] = &g
	}
}
