package te

import (
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// Einsum is ONNX Einsum: an equation such as "bij,bjk->bik" names every
// axis of every operand by a letter; the output keeps the letters after
// "->" (without it, the letters used once, in alphabetical order) and the
// product of the operands is summed over the others. A letter repeated in
// one operand reads its diagonal; "..." stands for the same leading axes in
// every operand (broadcast numpy-style) and leads the output. One stage: a
// reduction over the summed letters, or an elementwise compute when none
// is summed (a transpose, a diagonal, an outer product).
func Einsum(name, equation string, xs ...*Tensor) (*Tensor, error) {
	name = orDefault(name, "einsum")
	if err := checkInputs("Einsum", name, xs...); err != nil {
		return nil, err
	}
	eq := strings.ReplaceAll(equation, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(xs) {
		return nil, opError("Einsum", name, "equation %q has %d operands, %d given", equation, len(terms), len(xs))
	}
	// The ellipsis axes: as many as the operand with the most, broadcast.
	var ell []int
	ops := make([][]rune, len(xs)) // each operand's letters, '.' for an ellipsis axis
	for k, term := range terms {
		letters := []rune{}
		pre, post, hasEll := strings.Cut(term, "...")
		n := len([]rune(pre)) + len([]rune(post))
		if strings.Contains(post, ".") || strings.Contains(pre, ".") {
			return nil, opError("Einsum", name, "equation %q: a stray '.'", equation)
		}
		if !hasEll && n != len(xs[k].Shape) || hasEll && n > len(xs[k].Shape) {
			return nil, opError("Einsum", name, "operand %d (%s) of shape %v has %d axes", k, term, xs[k].Shape, len(xs[k].Shape))
		}
		letters = append(letters, []rune(pre)...)
		if hasEll {
			e := len(xs[k].Shape) - n
			dims := xs[k].Shape[len([]rune(pre)) : len([]rune(pre))+e]
			shape, err := BroadcastShapes(ell, dims)
			if err != nil {
				return nil, opError("Einsum", name, "the ellipsis axes %v and %v do not broadcast", ell, dims)
			}
			ell = shape
			for range e {
				letters = append(letters, '.')
			}
		}
		letters = append(letters, []rune(post)...)
		for _, r := range letters {
			if r != '.' && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return nil, opError("Einsum", name, "equation %q: %q is not a letter", equation, r)
			}
		}
		ops[k] = letters
	}
	extent := map[rune]int{}
	count := map[rune]int{}
	for k, letters := range ops {
		for a, r := range letters {
			if r == '.' {
				continue
			}
			count[r]++
			d := xs[k].Shape[a]
			if e, ok := extent[r]; ok && e != d {
				return nil, opError("Einsum", name, "letter %c is %d and %d long", r, e, d)
			}
			extent[r] = d
		}
	}
	var out []rune
	if explicit {
		pre, post, hasEll := strings.Cut(rhs, "...")
		out = []rune(pre + post)
		if hasEll && len(pre) > 0 {
			return nil, opError("Einsum", name, "equation %q: the output's ellipsis must lead", equation)
		}
		if !hasEll && len(ell) > 0 && slices.ContainsFunc(ell, func(d int) bool { return d != 1 }) {
			return nil, opError("Einsum", name, "equation %q sums the ellipsis axes", equation)
		}
	} else {
		for r, c := range count {
			if c == 1 {
				out = append(out, r)
			}
		}
		slices.Sort(out)
	}
	for i, r := range out {
		if _, ok := extent[r]; !ok || slices.Contains(out[i+1:], r) {
			return nil, opError("Einsum", name, "equation %q: output letter %c is not an input's, or repeats", equation, r)
		}
	}
	var summed []rune
	for r := range extent {
		if !slices.Contains(out, r) {
			summed = append(summed, r)
		}
	}
	slices.Sort(summed)
	shape := slices.Clone(ell)
	for _, r := range out {
		shape = append(shape, extent[r])
	}
	rshape := make([]int, len(summed))
	for i, r := range summed {
		rshape[i] = extent[r]
	}
	body := func(i, r []tir.Expr) tir.Expr {
		at := map[rune]tir.Expr{}
		for k, l := range out {
			at[l] = i[len(ell)+k]
		}
		for k, l := range summed {
			at[l] = r[k]
		}
		var prod tir.Expr
		for k, letters := range ops {
			idx := make([]tir.Expr, len(letters))
			e := 0
			for a, l := range letters {
				switch {
				case l != '.':
					idx[a] = at[l]
				default:
					// The operand's ellipsis axes align with the last of
					// the output's; an axis of 1 broadcasts.
					n := strings.Count(string(letters), ".")
					o := len(ell) - n + e
					if xs[k].Shape[a] == 1 {
						idx[a] = Idx(0)
					} else {
						idx[a] = i[o]
					}
					e++
				}
			}
			v := xs[k].At(idx...)
			if prod == nil {
				prod = v
			} else {
				prod = tir.MulE(prod, v)
			}
		}
		return prod
	}
	if len(summed) == 0 {
		return Compute(name, shape, func(i []tir.Expr) tir.Expr { return body(i, nil) }), nil
	}
	return Reduce(name, shape, Sum, rshape, body), nil
}
