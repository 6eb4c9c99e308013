package codegen

import "github.com/tessera-ml/tessera/tir"

// Partial sums in registers.
//
// Unrolling a reduction over a constant matrix (the rule for constant
// tensors: Winograd's transforms) leaves, per output element, a run of
// statements
//
//	B[i] = init;  B[i] = B[i] + t1;  B[i] = B[i] + t2;  ...
//
// each its own vectorized loop where the element is a vector. The C
// compiler keeps the partial sum in a register but still stores it after
// every term once guarded loads (the padding) put branches between the
// stores: a store per term, which bounded the transforms (a Winograd
// F(4×4, 3×3) data pack ran at half the speed). forwardUpdates rewrites
// such a run into one statement that stores the element once: lets bind
// the partial sums, a term's load of B[i] reading the previous let. The
// operations and their order are the same, so the result is bitwise the
// same, with one exception: a long run whose every term combines the
// partial result by one associative operation (B = B + t, max, min: a
// softmax's row maximum and sum, a layer norm's mean) is one chain of
// dependent operations, each waiting for the last (4 cycles for an add).
// Such a run is split into interleaved chains (term k goes to chain k mod
// chains) combined at the end, which the processor runs side by side.
// Max and min give the same result; a sum is rounded in another order,
// as a split or factored reduction is.

// forwardUpdates merges every run of updates of one element (see above)
// in the sequences of s.
func forwardUpdates(s tir.Stmt) tir.Stmt {
	tiles := map[*tir.Buffer]bool{}
	tir.WalkStmt(s, func(st tir.Stmt) bool {
		if a, ok := st.(*tir.Allocate); ok {
			tiles[a.Buf] = true
		}
		return true
	})
	return tir.MutateStmt(s, tir.StmtFuncs{Stmt: func(st tir.Stmt) tir.Stmt {
		seq, ok := st.(*tir.Seq)
		if !ok || len(seq.Stmts) < 2 {
			return st
		}
		return tir.SeqOf(mergeUpdates(groupInterleaved(seq.Stmts, tiles))...)
	}})
}

// update is a store of one element, alone or, for a vector element, as the
// whole body of a vectorized loop whose lanes store distinct elements.
type update struct {
	loop     *tir.For // nil: a scalar store
	st       *tir.Store
	flat     string   // the flat index, simplified, printed
	flatExpr tir.Expr // the same, unprinted
}

func asUpdate(s tir.Stmt) (update, bool) {
	var u update
	switch s := s.(type) {
	case *tir.Store:
		u.st = s
	case *tir.For:
		st, ok := s.Body.(*tir.Store)
		if !ok || s.Kind != tir.Vectorized || s.Var == nil || s.Extent < 2 {
			return u, false
		}
		u.loop, u.st = s, st
	default:
		return u, false
	}
	flat, err := flatIndex(u.st.Buf, u.st.Indices)
	if err != nil {
		return u, false
	}
	flat = tir.Simplify(flat, nil)
	if u.loop != nil {
		// Every lane must store an element of its own.
		if c, _, ok := tir.LinearIn(flat, u.loop.Var); !ok || c == 0 {
			return u, false
		}
	}
	u.flat, u.flatExpr = tir.ExprString(flat), flat
	return u, true
}

// Interleaved runs.
//
// A reduction into a buffer in memory whose unrolled body updates several
// elements in turn (a max pool's two vectors of channels, tap after tap)
// has no run of one element to merge: each update is stored and loaded
// back by the next, a store-to-load forwarding delay per term, and for an
// 8-bit buffer a narrowing shuffle and a widening load as well.
// groupInterleaved first sorts such a window into one run per element.
// That moves no update across another of the same element, and every
// update reads the buffer only at its own element, so each element sees
// the same operations in the same order. A tile the kernel allocates (a
// convolution's accumulators, Local or not) is left as it is: the C
// compiler keeps it in registers, where the interleaving hides the latency
// of each element's chain and lets one operand load feed every element
// (sorted, a convolution's 8 accumulators each loaded their own weights
// for every tap: 1.6 → 2.5 ms).

// maxInterleaved is the most elements one window sorts apart.
const maxInterleaved = 8

// groupInterleaved returns stmts with every window of updates of at most
// maxInterleaved disjoint elements of one buffer outside registers (not
// Local, not in tiles: the buffers the kernel allocates) sorted into one
// contiguous run per element (see above).
func groupInterleaved(stmts []tir.Stmt, tiles map[*tir.Buffer]bool) []tir.Stmt {
	out := make([]tir.Stmt, 0, len(stmts))
	for i := 0; i < len(stmts); {
		first, ok := asUpdate(stmts[i])
		if !ok || first.st.Buf.Scope == tir.Local || tiles[first.st.Buf] || !continues(first, first) {
			out = append(out, stmts[i])
			i++
			continue
		}
		heads := []update{first}
		groups := [][]tir.Stmt{{stmts[i]}}
		j := i + 1
	window:
		for ; j < len(stmts); j++ {
			u, ok := asUpdate(stmts[j])
			if !ok {
				break
			}
			for k, h := range heads {
				if continues(h, u) {
					groups[k] = append(groups[k], stmts[j])
					continue window
				}
			}
			if len(heads) == maxInterleaved || u.st.Buf != first.st.Buf || !continues(u, u) {
				break
			}
			for _, h := range heads {
				if !disjoint(h, u) {
					break window
				}
			}
			heads = append(heads, u)
			groups = append(groups, []tir.Stmt{stmts[j]})
		}
		for _, g := range groups {
			out = append(out, g...)
		}
		i = j
	}
	return out
}

// disjoint reports whether updates a and b of one buffer store no element
// in common, as far as their flat indices prove it: a constant distance
// between scalar elements, or between vectors of equal lanes and stride
// that no lane of one reaches in the other.
func disjoint(a, b update) bool {
	if (a.loop == nil) != (b.loop == nil) {
		return false
	}
	if a.loop == nil {
		d, ok := constDiff(a.flatExpr, b.flatExpr)
		return ok && d != 0
	}
	ca, ra, okA := tir.LinearIn(a.flatExpr, a.loop.Var)
	cb, rb, okB := tir.LinearIn(b.flatExpr, b.loop.Var)
	if !okA || !okB || ca != cb || ca == 0 || a.loop.Extent != b.loop.Extent {
		return false
	}
	d, ok := constDiff(ra, rb)
	if !ok {
		return false
	}
	if d%ca != 0 {
		return true
	}
	lanes := d / ca
	return lanes >= int64(a.loop.Extent) || -lanes >= int64(a.loop.Extent)
}

// lane returns e with u's lane variable renamed to v (the run's).
func (u update) lane(e tir.Expr, v *tir.Var) tir.Expr {
	if u.loop == nil || u.loop.Var == v {
		return e
	}
	return tir.Substitute(e, map[*tir.Var]tir.Expr{u.loop.Var: v})
}

// continues reports whether u updates the element first stores, reading
// first's buffer at that element only, and at most once.
func continues(first, u update) bool {
	if u.st.Buf != first.st.Buf || (u.loop == nil) != (first.loop == nil) {
		return false
	}
	var v *tir.Var
	if first.loop != nil {
		if u.loop.Extent != first.loop.Extent {
			return false
		}
		v = first.loop.Var
	}
	if flatString(u.st.Buf, indicesIn(u, v)) != first.flat {
		return false
	}
	// The element is read at most once: the vector printer substitutes
	// lets, and a sum read twice per term would double with every term.
	reads, onlyHere := 0, true
	tir.WalkExpr(u.lane(u.st.Value, v), func(e tir.Expr) bool {
		if l, ok := e.(*tir.Load); ok && l.Buf == u.st.Buf {
			reads++
			onlyHere = onlyHere && flatString(l.Buf, l.Indices) == first.flat
		}
		return onlyHere
	})
	return onlyHere && reads <= 1
}

func indicesIn(u update, v *tir.Var) []tir.Expr {
	out := make([]tir.Expr, len(u.st.Indices))
	for i, x := range u.st.Indices {
		out[i] = u.lane(x, v)
	}
	return out
}

// flatString is the printed simplified flat index of an access ("" when
// the indices do not fit the buffer).
func flatString(buf *tir.Buffer, idx []tir.Expr) string {
	flat, err := flatIndex(buf, idx)
	if err != nil {
		return ""
	}
	return tir.ExprString(tir.Simplify(flat, nil))
}

// maxForwardRun bounds a merged run: the vector printer writes it as one
// nested expression, and a reduction unrolled 512 deep should not become
// one. A longer run is merged in pieces, each storing once.
const maxForwardRun = 64

// mergeUpdates replaces every run of at least two updates of one element
// in stmts by a single store of the last partial sum.
func mergeUpdates(stmts []tir.Stmt) []tir.Stmt {
	var out []tir.Stmt
	for i := 0; i < len(stmts); {
		first, ok := asUpdate(stmts[i])
		j := i + 1
		for ok && j < len(stmts) && j-i < maxForwardRun {
			u, ok2 := asUpdate(stmts[j])
			if !ok2 || !continues(first, u) {
				break
			}
			j++
		}
		if !ok || j-i < 2 {
			out = append(out, stmts[i])
			i++
			continue
		}
		out = append(out, mergeRun(first, stmts[i:j]))
		i = j
	}
	return out
}

// chains is how many interleaved chains a reassociable run is split into
// (see above), and minChainTerms the fewest terms per chain worth it.
const (
	chains        = 4
	minChainTerms = 2
)

// mergeRun is the run of updates as lets of the partial sums and one
// store.
func mergeRun(first update, run []tir.Stmt) tir.Stmt {
	var v *tir.Var
	if first.loop != nil {
		v = first.loop.Var
	}
	buf := first.st.Buf
	if body := interleaved(first, run, v); body != nil {
		return body
	}
	sums := make([]*tir.Var, len(run))
	values := make([]tir.Expr, len(run))
	for k, s := range run {
		u, _ := asUpdate(s)
		val := u.lane(u.st.Value, v)
		if k > 0 {
			prev := sums[k-1]
			val = tir.MutateExpr(val, func(e tir.Expr) tir.Expr {
				if l, ok := e.(*tir.Load); ok && l.Buf == buf {
					return prev // continues checked it is the element
				}
				return e
			})
		}
		sums[k] = &tir.Var{Name: buf.Name + "_sum", T: buf.DType}
		values[k] = val
	}
	return storeAfter(first, v, sums, values, sums[len(run)-1])
}

// storeAfter is the lets sums[k] = values[k], in order, then one store of
// result to the run's element, in the run's vectorized loop (lane v) when
// it has one.
func storeAfter(first update, v *tir.Var, sums []*tir.Var, values []tir.Expr, result tir.Expr) tir.Stmt {
	var body tir.Stmt = &tir.Store{Buf: first.st.Buf, Indices: first.st.Indices, Value: result}
	for k := len(sums) - 1; k >= 0; k-- {
		body = &tir.Let{Var: sums[k], Value: values[k], Body: body}
	}
	if first.loop == nil {
		return body
	}
	return &tir.For{Var: v, Extent: first.loop.Extent, Kind: tir.Vectorized, Thread: first.loop.Thread, Body: body}
}

// interleaved returns the run as interleaved chains of one associative
// operation (see above), or nil when some update is not B = op(B, t) of
// one op for all (the first update, which starts the run, may be
// anything) or the run is too short to split.
func interleaved(first update, run []tir.Stmt, v *tir.Var) tir.Stmt {
	buf := first.st.Buf
	if buf.DType != tir.Float32 || len(run)-1 < chains*minChainTerms {
		return nil
	}
	var op tir.BinOp
	isElem := func(e tir.Expr) bool { l, ok := e.(*tir.Load); return ok && l.Buf == buf }
	terms := make([]tir.Expr, len(run)) // terms[0]: the first value, whole
	for k, s := range run {
		u, _ := asUpdate(s)
		val := u.lane(u.st.Value, v)
		if k == 0 {
			terms[0] = val
			continue
		}
		b, ok := val.(*tir.Binary)
		if !ok || (b.Op != tir.Add && b.Op != tir.Max && b.Op != tir.Min) || k > 1 && b.Op != op {
			return nil
		}
		op = b.Op
		switch {
		case isElem(b.A) && !tir.Reads(b.B, buf):
			terms[k] = b.B
		case isElem(b.B) && !tir.Reads(b.A, buf):
			terms[k] = b.A
		default:
			return nil
		}
	}
	// Lets in term order, so that neighbouring lets are independent.
	var sums []*tir.Var
	var values []tir.Expr
	heads := make([]tir.Expr, chains)
	bind := func(val tir.Expr) *tir.Var {
		x := &tir.Var{Name: buf.Name + "_sum", T: buf.DType}
		sums, values = append(sums, x), append(values, val)
		return x
	}
	for k, t := range terms {
		c := k % chains
		if heads[c] == nil {
			heads[c] = bind(t)
		} else {
			heads[c] = bind(&tir.Binary{Op: op, A: heads[c], B: t})
		}
	}
	for n := chains; n > 1; n /= 2 {
		for c := 0; c < n/2; c++ {
			heads[c] = bind(&tir.Binary{Op: op, A: heads[c], B: heads[c+n/2]})
		}
	}
	return storeAfter(first, v, sums, values, heads[0])
}
