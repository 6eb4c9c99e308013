package partition

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Plans over a range of shapes: a model whose inputs have dynamic
// dimensions (symbols, such as a batch N or a sequence length S) has one
// plan per value of its symbols. Symbolic derives the plan as a function
// of the symbols from the plans at a few sample values: every plan must
// cut the graph into the same groups running the same ops, and every
// number in a task's canonical DAG (its extents, strides and offsets)
// must be a polynomial of degree at most one in each symbol, with integer
// coefficients (N·49, 64·B·S + 1). Three values per symbol fix and check
// that: two determine the polynomial (a grid of 2^k plans for k symbols),
// a third, away from the grid, must agree with it; at the corners of the
// ranges (1 included) the plan must have the same groups, writing the
// shapes the polynomials give. A dimension that is no such polynomial (a
// strided convolution of a dynamic height, ⌈H/2⌉) is an error that names
// the task.

// A Symbol is a dynamic dimension of the model's inputs and the values it
// takes, Lo..Hi inclusive.
type Symbol struct {
	Name   string
	Lo, Hi int
}

func (s Symbol) String() string { return fmt.Sprintf("%s=%d..%d", s.Name, s.Lo, s.Hi) }

// Sample is the plan of a model at one value of every symbol.
type Sample struct {
	Values map[string]int
	Plan   *Plan
}

// SamplePoints returns the values of the symbols to extract plans at, in
// the order Symbolic takes them: the 2^k points of the grid of each
// symbol's first two values, one point of their third values, then the
// corners of the ranges (each symbol at its lo or hi) not among them. The
// three values are the smallest of the range above 1 (a dimension of 1
// broadcasts, and passes may treat it apart), so a range needs three
// values above 1; the corners check that the plan holds at the ends of
// the ranges, 1 included.
func SamplePoints(syms []Symbol) ([]map[string]int, error) {
	vals := make([][3]int, len(syms))
	for i, s := range syms {
		lo := max(s.Lo, 2)
		if s.Lo < 1 || s.Hi < s.Lo {
			return nil, fmt.Errorf("range %s: want 1 ≤ lo ≤ hi", s)
		}
		if s.Hi-lo < 2 {
			return nil, fmt.Errorf("range %s: too narrow to derive the plan from (three values above 1 are needed); bind %s to each value instead", s, s.Name)
		}
		vals[i] = [3]int{lo, lo + 1, lo + 2}
	}
	var points []map[string]int
	for m := range 1 << len(syms) {
		p := map[string]int{}
		for i, s := range syms {
			p[s.Name] = vals[i][m>>i&1]
		}
		points = append(points, p)
	}
	check := map[string]int{}
	for i, s := range syms {
		check[s.Name] = vals[i][2]
	}
	points = append(points, check)
	for m := range 1 << len(syms) {
		p := map[string]int{}
		for i, s := range syms {
			p[s.Name] = s.Lo
			if m>>i&1 == 1 {
				p[s.Name] = s.Hi
			}
		}
		if !slices.ContainsFunc(points, func(q map[string]int) bool { return maps.Equal(p, q) }) {
			points = append(points, p)
		}
	}
	return points, nil
}

// A Poly is an integer polynomial of degree at most one in each symbol:
// Terms maps a product of symbols (their names sorted and joined by "·",
// "" for the constant) to its coefficient.
type Poly struct {
	Terms map[string]int64
}

// Eval returns p at the values of its symbols.
func (p Poly) Eval(values map[string]int) int64 {
	var sum int64
	for term, c := range p.Terms {
		v := c
		if term != "" {
			for _, s := range strings.Split(term, "·") {
				v *= int64(values[s])
			}
		}
		sum += v
	}
	return sum
}

// Const reports whether p has no symbol.
func (p Poly) Const() bool {
	for term, c := range p.Terms {
		if term != "" && c != 0 {
			return false
		}
	}
	return true
}

// String prints p with its largest product first: "49·N", "64·B·S + 1".
func (p Poly) String() string {
	terms := slices.Collect(func(yield func(string) bool) {
		for t, c := range p.Terms {
			if c != 0 && !yield(t) {
				return
			}
		}
	})
	if len(terms) == 0 {
		return "0"
	}
	sort.Slice(terms, func(i, j int) bool {
		ni, nj := strings.Count(terms[i], "·"), strings.Count(terms[j], "·")
		if (terms[i] == "") != (terms[j] == "") {
			return terms[j] == ""
		}
		if ni != nj {
			return ni > nj
		}
		return terms[i] < terms[j]
	})
	var b strings.Builder
	for k, t := range terms {
		c := p.Terms[t]
		switch {
		case k == 0 && c < 0:
			b.WriteString("-")
		case k > 0 && c < 0:
			b.WriteString(" - ")
		case k > 0:
			b.WriteString(" + ")
		}
		a := c
		if a < 0 {
			a = -a
		}
		switch {
		case t == "":
			b.WriteString(strconv.FormatInt(a, 10))
		case a == 1:
			b.WriteString(t)
		default:
			b.WriteString(strconv.FormatInt(a, 10) + "·" + t)
		}
	}
	return b.String()
}

// fitPoly returns the polynomial of degree at most one in each of syms
// that takes the values ys at the grid points (SamplePoints' first 2^k),
// and whether it has integer coefficients.
func fitPoly(syms []Symbol, points []map[string]int, ys []float64) (Poly, bool) {
	// The coefficient of a product of the symbols in set m is a finite
	// difference over the grid: Σ over the subsets s of m of
	// (−1)^|m∖s| y(s), divided by the product of the steps (1 here, the
	// grid's values differ by one) — after shifting every symbol to its
	// first value, then expanding the shift back.
	k := len(syms)
	n := 1 << k
	shifted := make([]float64, n) // coefficients in (x_i − a_i)
	for m := range n {
		var sum float64
		for s := range n {
			if s&^m != 0 {
				continue
			}
			sign := 1.0
			if popcount(m&^s)%2 == 1 {
				sign = -1
			}
			sum += sign * ys[s]
		}
		shifted[m] = sum
	}
	base := points[0]
	p := Poly{Terms: map[string]int64{}}
	// Π_{i∈m} (x_i − a_i) = Σ_{t⊆m} x^t Π_{i∈m∖t} (−a_i).
	for m := range n {
		c := shifted[m]
		if c == 0 {
			continue
		}
		for t := range n {
			if t&^m != 0 {
				continue
			}
			v := c
			for i := range k {
				if (m&^t)>>i&1 == 1 {
					v *= -float64(base[syms[i].Name])
				}
			}
			name := termName(syms, t)
			r := math.Round(v)
			if math.Abs(v-r) > 1e-9*math.Max(1, math.Abs(v)) {
				return Poly{}, false
			}
			p.Terms[name] += int64(r)
		}
	}
	for t, c := range p.Terms {
		if c == 0 {
			delete(p.Terms, t)
		}
	}
	return p, true
}

func popcount(m int) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

// termName names the product of the symbols in set t.
func termName(syms []Symbol, t int) string {
	var names []string
	for i, s := range syms {
		if t>>i&1 == 1 {
			names = append(names, s.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "·")
}

// SymbolicTask is a task of a plan over a range: its canonical DAG with
// every number that depends on the symbols written as a polynomial.
type SymbolicTask struct {
	// Key hashes the symbolic canonical form and the symbols' ranges: the
	// same computation over the same ranges has one key, whatever the
	// model.
	Key    string
	Form   string  // the canonical DAG, numbers that vary written as ⟨poly⟩
	Ops    string  // the fused ops, as Task.Ops
	Weight int     // groups that run it in one inference
	Output []Poly  // the shape of its first output
	Tasks  []*Task // the task at each point of the grid and at the check point
}

// outputString prints the output shape: [N,112,112,64].
func (t *SymbolicTask) outputString() string {
	dims := make([]string, len(t.Output))
	for d, p := range t.Output {
		dims[d] = p.String()
	}
	return "[" + strings.Join(dims, ",") + "]"
}

// Dynamic reports whether the task's work depends on the symbols.
func (t *SymbolicTask) Dynamic() bool { return strings.Contains(t.Form, "⟨") }

// SymbolicPlan is a model's plan as a function of its symbols: its groups'
// direct definitions (an alternative algorithm, Winograd's, is not part
// of it).
type SymbolicPlan struct {
	Symbols []Symbol
	Tasks   []*SymbolicTask // in order of first occurrence
	Groups  []int           // per group, in execution order: its task's index
}

// symbolicKeyVersion changes when the symbolic form changes on purpose.
const symbolicKeyVersion = "s1"

// Symbolic derives the plan over the symbols' ranges from the plans at
// SamplePoints(syms), in that order (see the comment at the top of this
// file). It fails, naming the group or task, where the samples' plans
// differ in structure or a number is no polynomial of the symbols.
func Symbolic(syms []Symbol, samples []Sample) (*SymbolicPlan, error) {
	points, err := SamplePoints(syms)
	if err != nil {
		return nil, err
	}
	if len(samples) != len(points) {
		return nil, fmt.Errorf("symbolic plan: %d samples for %d points", len(samples), len(points))
	}
	for i, s := range samples {
		for name, v := range points[i] {
			if s.Values[name] != v {
				return nil, fmt.Errorf("symbolic plan: sample %d has %s=%d, want %d", i, name, s.Values[name], v)
			}
		}
	}
	first := samples[0].Plan
	for i, s := range samples[1:] {
		if err := sameStructure(first, s.Plan); err != nil {
			return nil, fmt.Errorf("the plan at %s differs from the one at %s: %w", valuesString(syms, samples[i+1].Values), valuesString(syms, samples[0].Values), err)
		}
	}
	fit := 1<<len(syms) + 1 // the grid and the check point; the corners after them
	sp := &SymbolicPlan{Symbols: syms, Groups: make([]int, len(first.Groups))}
	index := map[*Task]int{}
	for g, grp := range first.Groups {
		if k, ok := index[grp.Task]; ok {
			sp.Groups[g] = k
			continue
		}
		tasks := make([]*Task, fit)
		for i, s := range samples[:fit] {
			tasks[i] = s.Plan.Groups[g].Task
		}
		st, err := symbolicTask(syms, points[:fit], tasks)
		if err != nil {
			return nil, fmt.Errorf("group %d (%s): %w", g, grp.Ops(), err)
		}
		index[grp.Task] = len(sp.Tasks)
		sp.Groups[g] = len(sp.Tasks)
		sp.Tasks = append(sp.Tasks, st)
	}
	// At the corners, every group writes the shape the polynomials give.
	for _, s := range samples[fit:] {
		for g, grp := range s.Plan.Groups {
			st := sp.Tasks[sp.Groups[g]]
			got := grp.Task.DAG.Outputs[0].Shape
			for d, p := range st.Output {
				if d >= len(got) || int64(got[d]) != p.Eval(s.Values) {
					return nil, fmt.Errorf("group %d (%s) writes %v at %s, not the shape its plan over the range gives there (%s)", g, grp.Ops(), got, valuesString(syms, s.Values), st.outputString())
				}
			}
		}
	}
	// Groups that share a task at one sample point must share it at all
	// (at the corners, equal shapes may make two tasks one).
	for i, s := range samples[1:fit] {
		for g, grp := range s.Plan.Groups {
			for h := range g {
				if (first.Groups[g].Task == first.Groups[h].Task) != (grp.Task == s.Plan.Groups[h].Task) {
					return nil, fmt.Errorf("groups %d and %d share a task at %s but not at %s", h, g, valuesString(syms, samples[0].Values), valuesString(syms, samples[i+1].Values))
				}
			}
		}
	}
	return sp, nil
}

// sameStructure reports how plans a and b differ in their groups' ops.
func sameStructure(a, b *Plan) error {
	if len(a.Groups) != len(b.Groups) {
		return fmt.Errorf("%d groups against %d", len(b.Groups), len(a.Groups))
	}
	for g := range a.Groups {
		if oa, ob := a.Groups[g].Ops(), b.Groups[g].Ops(); oa != ob {
			return fmt.Errorf("group %d runs %s, not %s", g, ob, oa)
		}
	}
	return nil
}

func valuesString(syms []Symbol, values map[string]int) string {
	parts := make([]string, len(syms))
	for i, s := range syms {
		parts[i] = fmt.Sprintf("%s=%d", s.Name, values[s.Name])
	}
	return strings.Join(parts, ", ")
}

// symbolicTask fits every number of the tasks' canonical forms (one task
// per sample point) to a polynomial.
func symbolicTask(syms []Symbol, points []map[string]int, tasks []*Task) (*SymbolicTask, error) {
	grid := 1 << len(syms)
	forms := make([][]token, len(tasks))
	for i, t := range tasks {
		forms[i] = tokens(t.DAG.CanonicalString())
		if len(forms[i]) != len(forms[0]) {
			return nil, fmt.Errorf("its DAG at %s differs in form from the one at %s", valuesString(syms, points[i]), valuesString(syms, points[0]))
		}
	}
	var b strings.Builder
	for j, tok := range forms[0] {
		if !tok.number {
			for i := range forms {
				if forms[i][j] != tok {
					return nil, fmt.Errorf("its DAG at %s reads %q where the one at %s reads %q", valuesString(syms, points[i]), forms[i][j].text, valuesString(syms, points[0]), tok.text)
				}
			}
			b.WriteString(tok.text)
			continue
		}
		same := true
		for i := range forms {
			same = same && forms[i][j].text == tok.text
		}
		if same {
			b.WriteString(tok.text)
			continue
		}
		p, err := fitAll(syms, points, grid, func(i int) (float64, bool) {
			v, err := strconv.ParseFloat(forms[i][j].text, 64)
			return v, err == nil && v == math.Trunc(v)
		})
		if err != nil {
			return nil, fmt.Errorf("the number %s of its DAG (%s): %w", tok.text, around(forms[0], j), err)
		}
		b.WriteString("⟨" + p.String() + "⟩")
	}
	st := &SymbolicTask{Form: b.String(), Ops: tasks[0].Ops(), Weight: tasks[0].Weight, Tasks: tasks}
	var ranges []string
	for _, s := range syms {
		ranges = append(ranges, s.String())
	}
	h := sha256.Sum256([]byte(symbolicKeyVersion + "\n" + strings.Join(ranges, " ") + "\n" + st.Form))
	st.Key = symbolicKeyVersion + "-" + hex.EncodeToString(h[:12])
	out := tasks[0].DAG.Outputs[0].Shape
	for d := range out {
		p, err := fitAll(syms, points, grid, func(i int) (float64, bool) { return float64(tasks[i].DAG.Outputs[0].Shape[d]), true })
		if err != nil {
			return nil, fmt.Errorf("output dimension %d: %w", d, err)
		}
		st.Output = append(st.Output, p)
	}
	return st, nil
}

// fitAll fits the values at the grid points and checks the fit at every
// point after them.
func fitAll(syms []Symbol, points []map[string]int, grid int, value func(i int) (float64, bool)) (Poly, error) {
	ys := make([]float64, len(points))
	for i := range points {
		v, ok := value(i)
		if !ok {
			return Poly{}, fmt.Errorf("%s at %s is not an integer", strconv.FormatFloat(v, 'g', -1, 64), valuesString(syms, points[i]))
		}
		ys[i] = v
	}
	p, ok := fitPoly(syms, points[:grid], ys[:grid])
	if !ok {
		return Poly{}, fmt.Errorf("its values %v at %s have no integer polynomial", ys[:grid], gridString(syms, points[:grid]))
	}
	for i := grid; i < len(points); i++ {
		if got := p.Eval(points[i]); float64(got) != ys[i] {
			return Poly{}, fmt.Errorf("it is %v at %s where %s gives %d: not a polynomial of degree one in each symbol", ys[i], valuesString(syms, points[i]), p, got)
		}
	}
	return p, nil
}

func gridString(syms []Symbol, points []map[string]int) string {
	parts := make([]string, len(points))
	for i, p := range points {
		parts[i] = "(" + valuesString(syms, p) + ")"
	}
	return strings.Join(parts, " ")
}

// token is a piece of a canonical form: a number (digits not part of a
// name such as T3 or i0, with a fraction or exponent) or anything else.
type token struct {
	text   string
	number bool
}

// tokens cuts s into numbers and the text between them.
func tokens(s string) []token {
	var out []token
	isName := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	start := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || i > 0 && (isName(s[i-1]) || s[i-1] == '.') {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
			for j++; j < len(s) && isDigit(s[j]); j++ {
			}
		}
		if j < len(s) && (s[j] == 'e' || s[j] == 'E') && j+1 < len(s) && (isDigit(s[j+1]) || (s[j+1] == '-' || s[j+1] == '+') && j+2 < len(s) && isDigit(s[j+2])) {
			j += 2
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		}
		if j < len(s) && (isName(s[j]) || s[j] == '.') { // part of a name after all (1x3, 1.2.3)
			i = j
			continue
		}
		if start < i {
			out = append(out, token{text: s[start:i]})
		}
		out = append(out, token{text: s[i:j], number: true})
		start, i = j, j
	}
	if start < len(s) {
		out = append(out, token{text: s[start:]})
	}
	return out
}

// around prints the tokens around token j, for errors.
func around(toks []token, j int) string {
	var b strings.Builder
	for k := max(0, j-6); k < min(len(toks), j+4); k++ {
		b.WriteString(toks[k].text)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// WriteSymbolic prints the symbolic plan's task table: key prefix, ops,
// the output shape as polynomials of the symbols, the weight, and whether
// the task's work depends on the symbols; then the FLOPs of one inference
// at each sample point.
func WriteSymbolic(w io.Writer, sp *SymbolicPlan) error {
	var ranges []string
	for _, s := range sp.Symbols {
		ranges = append(ranges, s.String())
	}
	fmt.Fprintf(w, "\ntasks over %s:\n", strings.Join(ranges, ", "))
	t := table{header: []string{"task", "key", "ops", "output", "weight", "dynamic"}, right: "100010"}
	dynamic := 0
	for i, st := range sp.Tasks {
		dyn := "no"
		if st.Dynamic() {
			dyn = "yes"
			dynamic++
		}
		t.add(fmt.Sprint(i), shortKey(st.Key), st.Ops, st.outputString(), fmt.Sprint(st.Weight), dyn)
	}
	if err := t.write(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d tasks (%d of them depend on the symbols), %d groups\n", len(sp.Tasks), dynamic, len(sp.Groups))
	return err
}
