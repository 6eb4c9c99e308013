// Package graph is Tessera's operator graph: the nodes of a model in
// topological order, the values they read and write with static shapes, and
// the constant tensors (initializers and folded constants) with their data.
//
// A graph comes from a model file (package graph/onnx decodes ONNX) and has
// its dynamic dimensions bound by the user (Bind) or its inputs frozen to
// constants (Freeze). Package frontend then infers its shapes by the rules
// of package ops and simplifies it by its named passes; package partition
// lowers the result to compute DAGs.
//
// The graph depends on nothing else of Tessera's and knows no op: it is the
// IR that ops, frontend and partition share (nodes, values, attributes,
// tensors, subgraphs, their invariant and the errors they report).
package graph

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// DType is the element type of a value. float32, float16 and bfloat16 hold
// their values in Tensor.F32 (a float16 or bfloat16 value exactly, as a
// float32); the integer types and bool in Tensor.I64 (bool as 0 and 1).
// The decoder rejects other types (float64, strings, the 8- and 4-bit
// floats) by name. Kernels compute float16 and bfloat16 values in
// float32: frontend.Load leaves them only at the model's inputs and
// outputs and its Casts (see its half-precision rewrite). BFloat16 is
// also the storage of the weights a bf16-precision build rounds
// (Graph.BF16).
type DType uint8

const (
	Undefined DType = iota
	Float32
	Int64
	Int32
	Int16
	Int8
	Uint8
	Uint16
	Uint32
	Bool
	Float16  // IEEE half precision, held in Tensor.F32 (see DType)
	BFloat16 // bfloat16, held in Tensor.F32 (see DType)
)

// dtypeInfo gives each dtype its name and ONNX TensorProto data type number.
var dtypeInfo = [...]struct {
	name string
	onnx int32
}{
	Undefined: {"undefined", 0},
	Float32:   {"float32", 1},
	Int64:     {"int64", 7},
	Int32:     {"int32", 6},
	Int16:     {"int16", 5},
	Int8:      {"int8", 3},
	Uint8:     {"uint8", 2},
	Uint16:    {"uint16", 4},
	Uint32:    {"uint32", 12},
	Bool:      {"bool", 9},
	Float16:   {"float16", 10},
	BFloat16:  {"bfloat16", 16},
}

func (d DType) String() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].name
	}
	return "undefined"
}

// ONNX returns d's ONNX TensorProto data type number (0 for Undefined).
func (d DType) ONNX() int32 {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].onnx
	}
	return 0
}

// DTypeFromONNX returns the dtype of ONNX data type number t; ok is false
// for a type the graph does not hold.
func DTypeFromONNX(t int32) (d DType, ok bool) {
	for i, info := range dtypeInfo {
		if i != int(Undefined) && info.onnx == t {
			return DType(i), true
		}
	}
	return Undefined, false
}

// IsInt reports whether d is an integer type or bool (held in Tensor.I64).
func (d DType) IsInt() bool { return d >= Int64 && d <= Bool }

// IsFloat reports whether d is a floating-point type (held in Tensor.F32).
func (d DType) IsFloat() bool { return d == Float32 || d == Float16 || d == BFloat16 }

// Wrap converts v to d's range as a C cast does: integers wrap modulo
// their width, bool is v != 0. Int64 and non-integer dtypes keep v.
func (d DType) Wrap(v int64) int64 {
	switch d {
	case Int32:
		return int64(int32(v))
	case Int16:
		return int64(int16(v))
	case Int8:
		return int64(int8(v))
	case Uint8:
		return int64(uint8(v))
	case Uint16:
		return int64(uint16(v))
	case Uint32:
		return int64(uint32(v))
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// Graph is an operator graph.
//
// Invariant (checked by Validate): every node input names a value that is a
// graph input, a constant, or an output of an earlier node; every value has
// exactly one source.
type Graph struct {
	Name   string
	Opset  int            // version of the default ONNX domain
	Opsets map[string]int // every imported operator set, by domain ("" is the default)

	Nodes   []*Node           // topological order
	Values  map[string]*Value // every named value
	Inputs  []string          // graph inputs, initializers excluded
	Outputs []string          // graph outputs

	// Declared holds, by output name, the type the model file declares for
	// an output; shape inference checks the inferred one against it.
	Declared map[string]Decl
	// Shadowed lists the inputs the model file also gives an initializer
	// (from IR version 4, a default value the caller may override): they
	// are taken as constants, and a command says so.
	Shadowed []string
	// Integer says that quantized convolutions and matmuls run on integer
	// kernels where they can (frontend.LoadOptions.Integer), not in their
	// float form.
	Integer bool
	// ExactDots says that the integer kernels' target sums four u8×s8
	// products exactly in one instruction (frontend.LoadOptions.
	// ExactDots): a quantized convolution or matmul sums its groups
	// exactly, not in saturated pairs, and on integers wherever the
	// groups fit.
	ExactDots bool
	// ScalarTables says that the integer kernels' target has no vector
	// lookup of bytes in a 256-byte table (frontend.LoadOptions.
	// ScalarTables: x86 without AVX512_VBMI's vpermi2b; aarch64, whose
	// kernels look bytes up one by one): a lookup there is a gather, which
	// costs more than the few float operations of a piecewise-linear
	// activation, so lookup-tables leaves those in float arithmetic.
	ScalarTables bool
	// BF16 is the opt-in bf16 precision (frontend.LoadOptions.BF16): the
	// operands of every float convolution and matrix product are rounded
	// to bfloat16 (constant weights at build time, stored so) and their
	// products summed in float32, as a CPU's bf16 dot products do.
	BF16 bool
	// Notes are what shape inference and the passes decided that a user
	// should know (a quantized op left in float, and why); Note adds one.
	Notes []string
}

// Note adds a note, once.
func (g *Graph) Note(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	if !slices.Contains(g.Notes, s) {
		g.Notes = append(g.Notes, s)
	}
}

// Decl is a declared type: Undefined and a nil Shape where the model
// declares none, -1 for a dynamic dimension.
type Decl struct {
	DType DType
	Shape []int
}

// Node is one operator application. An empty input name stands for an
// omitted optional input; an empty output name for an unused optional
// output.
type Node struct {
	Name    string
	OpType  string
	Domain  string // "" for the default ONNX domain
	Inputs  []string
	Outputs []string
	Attrs   map[string]Attr
}

// Value is a named tensor of the graph: a graph input, a constant, or a node
// output.
type Value struct {
	Name  string
	DType DType
	// Shape is the static shape once bound and inferred; before that, graph
	// inputs may hold -1 for dynamic dimensions (named in DimParams).
	Shape     []int
	DimParams []string // per dimension, the symbolic name of a dynamic one, or ""
	// Const holds the contents of an initializer, a Constant node's value
	// or a folded value; nil when the value is computed at run time.
	Const *Tensor
	// Known holds the contents of a computed int64 value when shape
	// inference could work them out (the output of Shape, and of shape
	// arithmetic on it); constant folding turns such a value into a Const.
	Known *Tensor
}

// Tensor is a constant tensor: a shape and the row-major data of one dtype.
//
// Invariant: len(F32) (for Float32 and Float16, whose values are each a
// float16) or len(I64) (for the integer types and bool) equals the product
// of Shape.
type Tensor struct {
	DType DType
	Shape []int
	F32   []float32
	I64   []int64
}

// NumElems returns the product of shape (1 for a scalar).
func NumElems(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Len returns the number of elements of t.
func (t *Tensor) Len() int { return NumElems(t.Shape) }

// Clone returns a deep copy of t.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{DType: t.DType, Shape: slices.Clone(t.Shape), F32: slices.Clone(t.F32), I64: slices.Clone(t.I64)}
}

// Float64s returns the elements converted to float64.
func (t *Tensor) Float64s() []float64 {
	out := make([]float64, t.Len())
	for i := range out {
		if t.DType.IsInt() {
			out[i] = float64(t.I64[i])
		} else {
			out[i] = float64(t.F32[i])
		}
	}
	return out
}

// Int64s returns the elements converted to int64 (float32 truncated).
func (t *Tensor) Int64s() []int64 {
	if t.DType.IsInt() {
		return t.I64
	}
	out := make([]int64, len(t.F32))
	for i, v := range t.F32 {
		out[i] = int64(v)
	}
	return out
}

// MaxExactInt is the largest integer magnitude up to which every integer is
// a float32. Kernels carry integer and bool tensors as float32 values, so
// an integer tensor that reaches a kernel must stay within it.
const MaxExactInt = 1 << 24

// KernelData returns t's elements as the float32 values a kernel reads:
// float32 data itself, integers and bools converted. It fails when an
// integer is beyond MaxExactInt, where float32 would change it.
func (t *Tensor) KernelData() ([]float32, error) {
	if !t.DType.IsInt() {
		return t.F32, nil
	}
	out := make([]float32, len(t.I64))
	for i, v := range t.I64 {
		if v > MaxExactInt || v < -MaxExactInt {
			return nil, Unsupportedf("%s element %d is %d: integers reach kernels as float32, exact only within ±%d", t.DType, i, v, MaxExactInt)
		}
		out[i] = float32(v)
	}
	return out, nil
}

func (t *Tensor) String() string {
	if t.Len() > 8 {
		return fmt.Sprintf("%s%v", t.DType, t.Shape)
	}
	if t.DType.IsInt() {
		return fmt.Sprintf("%s%v%v", t.DType, t.Shape, t.I64)
	}
	return fmt.Sprintf("%s%v%v", t.DType, t.Shape, t.F32)
}

// Float32Tensor returns a float32 tensor of the given shape and data.
func Float32Tensor(shape []int, data []float32) *Tensor {
	return &Tensor{DType: Float32, Shape: shape, F32: data}
}

// Int64Tensor returns an int64 tensor of the given shape and data.
func Int64Tensor(shape []int, data []int64) *Tensor {
	return &Tensor{DType: Int64, Shape: shape, I64: data}
}

// AttrKind says which field of an Attr holds its value.
type AttrKind uint8

const (
	AttrFloat AttrKind = iota + 1
	AttrInt
	AttrString
	AttrTensor
	AttrFloats
	AttrInts
	AttrStrings
	AttrGraph // a subgraph (If's branches, Loop's and Scan's bodies)
)

var attrKindNames = [...]string{"?", "float", "int", "string", "tensor", "floats", "ints", "strings", "graph"}

func (k AttrKind) String() string {
	if int(k) < len(attrKindNames) {
		return attrKindNames[k]
	}
	return "?"
}

// Attr is a typed attribute value.
type Attr struct {
	Kind    AttrKind
	F       float32
	I       int64
	S       string
	T       *Tensor
	Floats  []float32
	Ints    []int64
	Strings []string
	// G is the subgraph of an AttrGraph attribute. Its nodes may read
	// values of the enclosing graphs (outer-scope references); it is never
	// modified in place, so clones of a graph share it.
	G *Graph
}

// LayoutAttr is the attribute convert-layout sets on the sliding-window
// ops it makes channels-last (package frontend): data_layout = "NHWC". OutLayoutAttr, with
// data_layout "NCHW", marks a Conv that reads an NCHW graph input and
// writes a channels-last output: out_layout = "NHWC" (Relay's names). They
// are Tessera's own, never read from a model file (package onnx refuses
// them).
const (
	LayoutAttr    = "data_layout"
	OutLayoutAttr = "out_layout"
)

// TableLookupOp is the op Tessera writes for an elementwise function of
// 8-bit data that it tabulates (package ops defines it, package frontend's
// lookup-tables pass writes it). It is not ONNX's, and package onnx
// refuses it in a model file's default domain.
const TableLookupOp = "TableLookup"

// Attribute accessors. Each returns def when the attribute is absent and an
// error when it has another kind.

// Int returns the int attribute name.
func (n *Node) Int(name string, def int64) (int64, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrInt {
		return 0, n.attrKindError(name, a, AttrInt)
	}
	return a.I, nil
}

// Float returns the float attribute name.
func (n *Node) Float(name string, def float32) (float32, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrFloat {
		return 0, n.attrKindError(name, a, AttrFloat)
	}
	return a.F, nil
}

// Str returns the string attribute name.
func (n *Node) Str(name, def string) (string, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrString {
		return "", n.attrKindError(name, a, AttrString)
	}
	return a.S, nil
}

// Ints returns the ints attribute name (nil when absent).
func (n *Node) Ints(name string) ([]int64, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return nil, nil
	}
	if a.Kind != AttrInts {
		return nil, n.attrKindError(name, a, AttrInts)
	}
	return a.Ints, nil
}

// Floats returns the floats attribute name (nil when absent).
func (n *Node) Floats(name string) ([]float32, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return nil, nil
	}
	if a.Kind != AttrFloats {
		return nil, n.attrKindError(name, a, AttrFloats)
	}
	return a.Floats, nil
}

// HasAttr reports whether the node has the attribute name.
func (n *Node) HasAttr(name string) bool {
	_, ok := n.Attrs[name]
	return ok
}

// SetAttr sets attribute name to a on a copy of n's attributes: nodes may
// share one attribute map.
func (n *Node) SetAttr(name string, a Attr) {
	attrs := maps.Clone(n.Attrs)
	if attrs == nil {
		attrs = map[string]Attr{}
	}
	attrs[name] = a
	n.Attrs = attrs
}

func (n *Node) attrKindError(name string, a Attr, want AttrKind) error {
	return n.Errorf("attribute %s is a %s, want %s", name, a.Kind, want)
}

// Input returns the i-th input name, or "" when it is omitted.
func (n *Node) Input(i int) string {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return ""
}

// Errorf returns an error naming the node and its op.
func (n *Node) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s at node %s: %s", n.OpType, n.Name, fmt.Sprintf(format, args...))
}

// New returns an empty graph for the given default-domain opset.
func New(name string, opset int) *Graph {
	return &Graph{Name: name, Opset: opset, Opsets: map[string]int{"": opset}, Values: map[string]*Value{}}
}

// Value returns the value named name, creating it when missing.
func (g *Graph) Value(name string) *Value {
	v := g.Values[name]
	if v == nil {
		v = &Value{Name: name}
		g.Values[name] = v
	}
	return v
}

// AddConst adds a constant value.
func (g *Graph) AddConst(name string, t *Tensor) *Value {
	v := g.Value(name)
	v.DType, v.Shape, v.Const = t.DType, slices.Clone(t.Shape), t
	return v
}

// AddInput adds a graph input of the given dtype and shape (-1 for a
// dynamic dimension).
func (g *Graph) AddInput(name string, dt DType, shape []int) *Value {
	v := g.Value(name)
	v.DType, v.Shape = dt, slices.Clone(shape)
	g.Inputs = append(g.Inputs, name)
	return v
}

// AddNode appends a node and creates its output values.
func (g *Graph) AddNode(n *Node) *Node {
	if n.Attrs == nil {
		n.Attrs = map[string]Attr{}
	}
	for _, o := range n.Outputs {
		if o != "" {
			g.Value(o)
		}
	}
	g.Nodes = append(g.Nodes, n)
	return n
}

// ConstOf returns the constant contents of value name (a Const, or Known
// int64 contents), or nil.
func (g *Graph) ConstOf(name string) *Tensor {
	if name == "" {
		return nil
	}
	v := g.Values[name]
	if v == nil {
		return nil
	}
	if v.Const != nil {
		return v.Const
	}
	return v.Known
}

// IsInput reports whether name is a graph input.
func (g *Graph) IsInput(name string) bool { return slices.Contains(g.Inputs, name) }

// IsOutput reports whether name is a graph output.
func (g *Graph) IsOutput(name string) bool { return slices.Contains(g.Outputs, name) }

// Producers maps each node output to its node.
func (g *Graph) Producers() map[string]*Node {
	m := map[string]*Node{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				m[o] = n
			}
		}
	}
	return m
}

// Consumers maps each value name to the nodes that read it, in order.
func (g *Graph) Consumers() map[string][]*Node {
	m := map[string][]*Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !slices.Contains(m[in], n) {
				m[in] = append(m[in], n)
			}
		}
	}
	return m
}

// ConstNames lists the constant values, sorted by name.
func (g *Graph) ConstNames() []string {
	var out []string
	for name, v := range g.Values {
		if v.Const != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Rename replaces every read of value from by a read of value to (node
// inputs and graph outputs).
func (g *Graph) Rename(from, to string) {
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if in == from {
				n.Inputs[i] = to
			}
		}
	}
	for i, o := range g.Outputs {
		if o == from {
			g.Outputs[i] = to
		}
	}
}

// Validate checks the graph's invariant: every input of a node is defined
// before it, and no value is defined twice. A subgraph's nodes may also
// read the values defined in its enclosing graphs before the node that
// holds it.
func (g *Graph) Validate() error { return g.validate(nil) }

// scope is the set of names defined so far in a graph, with the scope of
// the enclosing graph (nil for the main graph).
type scope struct {
	names  map[string]bool
	parent *scope
}

func (s *scope) has(name string) bool {
	for ; s != nil; s = s.parent {
		if s.names[name] {
			return true
		}
	}
	return false
}

func (g *Graph) validate(outer *scope) error {
	sc := &scope{names: map[string]bool{}, parent: outer}
	defined := sc.names
	for _, in := range g.Inputs {
		if g.Values[in] == nil {
			return fmt.Errorf("graph %s: input %s has no value", g.Name, in)
		}
		defined[in] = true
	}
	for name, v := range g.Values {
		if v.Const != nil {
			if defined[name] {
				return fmt.Errorf("graph %s: %s is both an input and a constant", g.Name, name)
			}
			defined[name] = true
		}
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !sc.has(in) {
				return fmt.Errorf("graph %s: node %s (%s) reads %s, which is not defined before it", g.Name, n.Name, n.OpType, in)
			}
		}
		for _, k := range sortedAttrNames(n) {
			if a := n.Attrs[k]; a.Kind == AttrGraph && a.G != nil {
				if err := a.G.validate(sc); err != nil {
					return fmt.Errorf("graph %s: node %s (%s) attribute %s: %w", g.Name, n.Name, n.OpType, k, err)
				}
			}
		}
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if defined[o] {
				return fmt.Errorf("graph %s: node %s (%s) writes %s, which is already defined", g.Name, n.Name, n.OpType, o)
			}
			defined[o] = true
		}
	}
	for _, o := range g.Outputs {
		if !sc.has(o) {
			return fmt.Errorf("graph %s: output %s is not defined", g.Name, o)
		}
	}
	return nil
}

// sortedAttrNames lists n's attribute names in order.
func sortedAttrNames(n *Node) []string {
	names := make([]string, 0, len(n.Attrs))
	for k := range n.Attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Clone returns a deep copy of g (constant data and subgraphs are shared:
// neither is ever modified in place).
func (g *Graph) Clone() *Graph {
	c := &Graph{Name: g.Name, Opset: g.Opset, Opsets: map[string]int{}, Values: map[string]*Value{},
		Inputs: slices.Clone(g.Inputs), Outputs: slices.Clone(g.Outputs), Shadowed: slices.Clone(g.Shadowed), Integer: g.Integer, ExactDots: g.ExactDots, ScalarTables: g.ScalarTables, BF16: g.BF16, Notes: slices.Clone(g.Notes)}
	if g.Declared != nil {
		c.Declared = make(map[string]Decl, len(g.Declared))
		for k, d := range g.Declared {
			c.Declared[k] = Decl{DType: d.DType, Shape: slices.Clone(d.Shape)}
		}
	}
	for k, v := range g.Opsets {
		c.Opsets[k] = v
	}
	for name, v := range g.Values {
		nv := *v
		nv.Shape = slices.Clone(v.Shape)
		nv.DimParams = slices.Clone(v.DimParams)
		c.Values[name] = &nv
	}
	for _, n := range g.Nodes {
		nn := *n
		nn.Inputs = slices.Clone(n.Inputs)
		nn.Outputs = slices.Clone(n.Outputs)
		nn.Attrs = make(map[string]Attr, len(n.Attrs))
		for k, a := range n.Attrs {
			nn.Attrs[k] = a
		}
		c.Nodes = append(c.Nodes, &nn)
	}
	return c
}

// OpsetOf returns the opset version that applies to node n.
func (g *Graph) OpsetOf(n *Node) int {
	if n.Domain == "" || n.Domain == "ai.onnx" {
		return g.Opset
	}
	return g.Opsets[n.Domain]
}

// Output returns the i-th output name, or "" when it is omitted.
func (n *Node) Output(i int) string {
	if i < len(n.Outputs) {
		return n.Outputs[i]
	}
	return ""
}

// InputsBehind lists the graph inputs that value is computed from (value
// itself when it is one): the inputs to freeze when an op needs value's
// contents as a constant (a *NotConstantError).
func (g *Graph) InputsBehind(value string) []string {
	prod := g.Producers()
	seen := map[string]bool{}
	var out []string
	var walk func(string)
	walk = func(v string) {
		if v == "" || seen[v] {
			return
		}
		seen[v] = true
		if g.IsInput(v) {
			out = append(out, v)
			return
		}
		if n := prod[v]; n != nil {
			for _, in := range n.Inputs {
				walk(in)
			}
		}
	}
	walk(value)
	return out
}
