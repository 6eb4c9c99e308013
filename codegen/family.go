package codegen

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Kernels over a range of a dimension's values.
//
// A dimension that varies at run time (a sequence length S in 16..256)
// gives a task one DAG per value, and a schedule replayed on each gives
// one kernel per value: the same loop nest where the tiles divide S, with
// tails elsewhere, and extents and strides that are functions of S.
// NewFamily takes those kernels, printed with COptions.Dim, and finds few
// C kernels that compute them all with S a parameter (DimParam). Kernels
// whose texts differ only in decimal integer literals form a class, and
// every literal that varies within a class must be a polynomial of S of
// degree at most two with rational coefficients: 64·S is one, and so is
// ⌈S/16⌉·4096 on the values of S of one remainder mod 16. Where no such
// polynomial fits a class, the class is split by the value modulo the
// smallest m that makes every literal of every part fit (up to
// maxModulus; beyond it, a class per value).
//
// A class's kernel writes each varying literal as its polynomial of
// DimParam, in parentheses, evaluated in int64_t. It is checked, not
// trusted: printed back at each of its values, the polynomials evaluated,
// it is the kernel printed at that value byte for byte. Literals that
// must stay constants in C are never made polynomials: those of
// preprocessor lines, comments, string and character literals, floating
// and suffixed numbers, and the size of a heap buffer kept between calls
// (tsr_ws_take, whose buffer serves every later call).

// maxModulus is the largest modulus a class is split by before it is cut
// into one class per value.
const maxModulus = 64

// A Family is one kernel printed at every value of a dynamic dimension,
// as few kernels that take the value at run time.
type Family struct {
	Classes []FamilyClass
	class   map[int]int // value → index in Classes
}

// A FamilyClass is one kernel of a Family: Code is a translation unit
// whose entry takes the dimension's value (COptions.Dim), valid for each
// of Values (ascending) and for no other.
type FamilyClass struct {
	Values []int
	Code   string
	// Workspace is the most bytes of workspace (CSource.Workspace) the
	// kernel needs at any of its values: set by the caller, who printed
	// them.
	Workspace int

	pieces []string // the text around the literals: len(lits)+1 pieces
	lits   []poly
}

// Class returns the index of the class whose kernel computes value v.
func (f *Family) Class(v int) (int, bool) {
	c, ok := f.class[v]
	return c, ok
}

// At prints the class's kernel at value v: its literals evaluated.
func (c *FamilyClass) At(v int) string {
	var b strings.Builder
	for i, p := range c.lits {
		b.WriteString(c.pieces[i])
		b.WriteString(strconv.FormatInt(p.eval(int64(v)), 10))
	}
	b.WriteString(c.pieces[len(c.lits)])
	return b.String()
}

// NewFamily groups the kernels codes (the value of the dimension → the
// kernel printed at it with COptions.Dim) into classes (see the top of
// this file). It fails only if a class's kernel does not print back as
// the kernels it replaces, which would be a bug here.
func NewFamily(codes map[int]string) (*Family, error) {
	if len(codes) == 0 {
		return nil, fmt.Errorf("codegen: a family of no kernels")
	}
	type member struct {
		v    int
		lits []int64
	}
	type group struct {
		pieces  []string
		members []member
	}
	var order []string
	groups := map[string]*group{}
	for _, v := range slices.Sorted(maps.Keys(codes)) {
		pieces, lits := cSkeleton(codes[v])
		key := strings.Join(pieces, "\x00")
		g := groups[key]
		if g == nil {
			g = &group{pieces: pieces}
			groups[key] = g
			order = append(order, key)
		}
		g.members = append(g.members, member{v, lits})
	}
	f := &Family{class: map[int]int{}}
	for _, key := range order {
		g := groups[key]
		xs := make([]int64, len(g.members))
		for i, m := range g.members {
			xs[i] = int64(m.v)
		}
		column := func(idx []int, j int) []int64 {
			ys := make([]int64, len(idx))
			for k, i := range idx {
				ys[k] = g.members[i].lits[j]
			}
			return ys
		}
		at := func(idx []int) []int64 {
			out := make([]int64, len(idx))
			for k, i := range idx {
				out[k] = xs[i]
			}
			return out
		}
		// The parts of the group by value modulo m, for the smallest m
		// whose every part fits.
		var parts [][]int
		var fits [][]poly
		for m := 1; m <= maxModulus && parts == nil; m++ {
			ps := partsMod(xs, m)
			fs := make([][]poly, len(ps))
			ok := true
			for p, idx := range ps {
				fs[p] = make([]poly, len(g.pieces)-1)
				for j := range fs[p] {
					if fs[p][j], ok = fitPoly(at(idx), column(idx, j)); !ok {
						break
					}
				}
				if !ok {
					break
				}
			}
			if ok {
				parts, fits = ps, fs
			}
		}
		if parts == nil { // a class per value: its literals are constants
			for i := range g.members {
				parts = append(parts, []int{i})
				fs := make([]poly, len(g.pieces)-1)
				for j := range fs {
					fs[j] = poly{c: [3]int64{g.members[i].lits[j]}, d: 1}
				}
				fits = append(fits, fs)
			}
		}
		for p, idx := range parts {
			c := FamilyClass{pieces: g.pieces, lits: fits[p]}
			for _, i := range idx {
				c.Values = append(c.Values, g.members[i].v)
			}
			c.Code = c.print()
			for _, v := range c.Values {
				if c.At(v) != codes[v] {
					return nil, fmt.Errorf("codegen: the family's kernel of %d values does not print back as the kernel at %d", len(c.Values), v)
				}
				f.class[v] = len(f.Classes)
			}
			f.Classes = append(f.Classes, c)
		}
	}
	return f, nil
}

// MergeFamilies returns one family of the classes of fams, whose values
// must be disjoint (kernels of one task printed apart, such as those that
// take a constant packed in different layouts).
func MergeFamilies(fams ...*Family) (*Family, error) {
	out := &Family{class: map[int]int{}}
	for _, f := range fams {
		for _, c := range f.Classes {
			for _, v := range c.Values {
				if _, dup := out.class[v]; dup {
					return nil, fmt.Errorf("codegen: two families print the kernel at %d", v)
				}
				out.class[v] = len(out.Classes)
			}
			out.Classes = append(out.Classes, c)
		}
	}
	return out, nil
}

// partsMod splits the indices of xs by xs[i] mod m, in order of first
// value.
func partsMod(xs []int64, m int) [][]int {
	var parts [][]int
	where := map[int64]int{}
	for i, x := range xs {
		r := x % int64(m)
		p, ok := where[r]
		if !ok {
			p = len(parts)
			where[r] = p
			parts = append(parts, nil)
		}
		parts[p] = append(parts[p], i)
	}
	return parts
}

// print writes the class's kernel with its literals as polynomials of
// DimParam.
func (c *FamilyClass) print() string {
	var b strings.Builder
	for i, p := range c.lits {
		b.WriteString(c.pieces[i])
		b.WriteString(p.cExpr(DimParam))
	}
	b.WriteString(c.pieces[len(c.lits)])
	return b.String()
}

// poly is (c[0] + c[1]·x + c[2]·x²) / d, d > 0, exact at the values it
// was fitted to.
type poly struct {
	c [3]int64
	d int64
}

func (p poly) constant() bool { return p.c[1] == 0 && p.c[2] == 0 && p.d == 1 }

func (p poly) eval(x int64) int64 { return (p.c[0] + p.c[1]*x + p.c[2]*x*x) / p.d }

// cExpr prints p as a C expression of x: a plain literal where p is
// constant, else parenthesized.
func (p poly) cExpr(x string) string {
	if p.constant() {
		return strconv.FormatInt(p.c[0], 10)
	}
	var terms []string
	add := func(c int64, factor string) {
		if c == 0 {
			return
		}
		sign, a := "+ ", c
		if c < 0 {
			sign, a = "- ", -c
		}
		t := strconv.FormatInt(a, 10)
		switch {
		case factor != "" && a == 1:
			t = factor
		case factor != "":
			t += " * " + factor
		}
		if len(terms) == 0 {
			sign = strings.TrimSuffix(strings.TrimPrefix(sign, "+ "), " ")
		}
		terms = append(terms, sign+t)
	}
	add(p.c[2], x+" * "+x)
	add(p.c[1], x)
	add(p.c[0], "")
	e := "(" + strings.Join(terms, " ") + ")"
	if p.d != 1 {
		e = "(" + e + " / " + strconv.FormatInt(p.d, 10) + ")"
	}
	return e
}

// fitPoly returns the polynomial of the lowest degree up to two through
// the points (xs[i], ys[i]), xs ascending and distinct, with integer
// numerators and denominator; false if there is none.
func fitPoly(xs, ys []int64) (poly, bool) {
	if len(xs) == 0 {
		return poly{d: 1}, true
	}
	if !slices.ContainsFunc(ys, func(y int64) bool { return y != ys[0] }) {
		return poly{c: [3]int64{ys[0]}, d: 1}, true
	}
	n := len(xs)
	tries := [][]int{{0, n - 1}}
	if n >= 3 {
		tries = append(tries, []int{0, n / 2, n - 1})
	}
	for _, at := range tries {
		p, ok := interpolate(xs, ys, at)
		if !ok {
			continue
		}
		fits := true
		for i, x := range xs {
			if !p.exactAt(x, ys[i]) {
				fits = false
				break
			}
		}
		if fits {
			return p, true
		}
	}
	return poly{}, false
}

// maxCoef bounds a polynomial's numerators and denominator, so that
// evaluating it at any dimension's value (below maxCoef too) fits int64.
const maxCoef = 1 << 20

// exactAt reports whether p is exactly y at x, in integers.
func (p poly) exactAt(x, y int64) bool {
	if x < 0 || x >= maxCoef {
		return false
	}
	return p.c[0]+p.c[1]*x+p.c[2]*x*x == y*p.d
}

// interpolate returns the Lagrange polynomial through the points at
// indices at, written over a common denominator.
func interpolate(xs, ys []int64, at []int) (poly, bool) {
	var coef [3]*big.Rat
	for k := range coef {
		coef[k] = new(big.Rat)
	}
	for _, i := range at {
		// y_i · Π_{j≠i} (x − x_j) / (x_i − x_j), expanded.
		term := []*big.Rat{big.NewRat(ys[i], 1)} // coefficients by power
		for _, j := range at {
			if j == i {
				continue
			}
			den := xs[i] - xs[j]
			next := make([]*big.Rat, len(term)+1)
			for k := range next {
				next[k] = new(big.Rat)
			}
			for k, c := range term {
				// c·x^k · (x − x_j)/den
				next[k+1].Add(next[k+1], new(big.Rat).Mul(c, big.NewRat(1, den)))
				next[k].Sub(next[k], new(big.Rat).Mul(c, big.NewRat(xs[j], den)))
			}
			term = next
		}
		for k, c := range term {
			coef[k].Add(coef[k], c)
		}
	}
	d := big.NewInt(1)
	for _, c := range coef {
		den := c.Denom()
		g := new(big.Int).GCD(nil, nil, d, den)
		d.Mul(d, new(big.Int).Quo(den, g))
	}
	if !d.IsInt64() || d.Int64() >= maxCoef {
		return poly{}, false
	}
	p := poly{d: d.Int64()}
	for k, c := range coef {
		n := new(big.Int).Mul(c.Num(), new(big.Int).Quo(d, c.Denom()))
		if !n.IsInt64() || n.Int64() >= maxCoef*maxCoef || n.Int64() <= -maxCoef*maxCoef {
			return poly{}, false
		}
		p.c[k] = n.Int64()
	}
	return p, true
}

// cSkeleton cuts C code into the decimal integer literals that may vary
// (their values) and the text around them (one piece more than
// literals); literals that must stay constants are part of the text.
func cSkeleton(code string) (pieces []string, lits []int64) {
	var text strings.Builder
	pinned := false // the line holds a literal that must stay a constant
	lineStart := 0
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(code); {
		if i == lineStart {
			end := strings.IndexByte(code[i:], '\n')
			if end < 0 {
				end = len(code) - i
			}
			line := code[i : i+end]
			pinned = strings.HasPrefix(strings.TrimSpace(line), "#") || strings.Contains(line, "tsr_ws_take(")
		}
		c := code[i]
		j := i + 1
		switch {
		case c == '\n':
			lineStart = j
		case c == '/' && j < len(code) && code[j] == '*':
			end := strings.Index(code[j+1:], "*/")
			if end < 0 {
				j = len(code)
			} else {
				j = j + 1 + end + 2
			}
			// A comment may span lines: the next line starts after it.
			if k := strings.LastIndexByte(code[i:j], '\n'); k >= 0 {
				text.WriteString(code[i:j])
				i = j
				lineStart = i // not the start of a line, but its rest is read as one
				continue
			}
		case c == '/' && j < len(code) && code[j] == '/':
			for j < len(code) && code[j] != '\n' {
				j++
			}
		case c == '"' || c == '\'':
			for j < len(code) && code[j] != c && code[j] != '\n' {
				if code[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(code))
		case isIdent(c) && !(c >= '0' && c <= '9'):
			for j < len(code) && isIdent(code[j]) {
				j++
			}
		case c >= '0' && c <= '9' || c == '.' && j < len(code) && code[j] >= '0' && code[j] <= '9':
			// A preprocessing number: digits, letters, '.', and a sign after
			// an exponent.
			for j < len(code) {
				d := code[j]
				if isIdent(d) || d == '.' {
					j++
				} else if (d == '+' || d == '-') && strings.ContainsRune("eEpP", rune(code[j-1])) {
					j++
				} else {
					break
				}
			}
			num := code[i:j]
			if v, err := strconv.ParseInt(num, 10, 64); !pinned && err == nil && (num == "0" || num[0] != '0') && v < maxCoef*maxCoef {
				pieces = append(pieces, text.String())
				text.Reset()
				lits = append(lits, v)
				i = j
				continue
			}
		}
		text.WriteString(code[i:j])
		i = j
	}
	pieces = append(pieces, text.String())
	return pieces, lits
}
