package modelgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
)

// builder appends nodes and parameters to a graph the way an exporter
// names them: nodes "/scope/path/Op", their outputs "/scope/path/Op_output_0",
// parameters "scope.path.weight".
type builder struct {
	g     *graph.Graph
	rng   *rand.Rand
	names map[string]int // node names used so far
}

func newBuilder(name string, opset int, seed uint64) *builder {
	return &builder{
		g:     graph.New(name, opset),
		rng:   rand.New(rand.NewPCG(seed, 0x7e55e7a)),
		names: map[string]int{},
	}
}

// attr constructors.

func ints(v ...int) graph.Attr {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return graph.Attr{Kind: graph.AttrInts, Ints: out}
}

func intAttr(v int) graph.Attr       { return graph.Attr{Kind: graph.AttrInt, I: int64(v)} }
func floatAttr(v float32) graph.Attr { return graph.Attr{Kind: graph.AttrFloat, F: v} }
func stringAttr(v string) graph.Attr { return graph.Attr{Kind: graph.AttrString, S: v} }
func attrs(kv ...any) map[string]graph.Attr {
	m := map[string]graph.Attr{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(graph.Attr)
	}
	return m
}

// input declares a float32 graph input.
func (b *builder) input(name string, shape ...int) string {
	b.g.AddInput(name, graph.Float32, shape)
	return name
}

// output makes value v a graph output named name: the node writing v is
// made to write name instead.
func (b *builder) output(v, name string) {
	for _, n := range b.g.Nodes {
		for i, o := range n.Outputs {
			if o == v {
				n.Outputs[i] = name
				delete(b.g.Values, v)
				b.g.Value(name)
			}
		}
	}
	b.g.Outputs = append(b.g.Outputs, name)
}

// op appends a node of op type op in scope (a dotted module path) and
// returns its output.
func (b *builder) op(scope, op string, inputs []string, at map[string]graph.Attr) string {
	name := "/" + strings.ReplaceAll(scope, ".", "/") + "/" + op
	if scope == "" {
		name = "/" + op
	}
	if k := b.names[name]; k > 0 {
		b.names[name]++
		name = fmt.Sprintf("%s_%d", name, k)
	} else {
		b.names[name] = 1
	}
	out := name + "_output_0"
	b.g.AddNode(&graph.Node{Name: name, OpType: op, Inputs: inputs, Outputs: []string{out}, Attrs: at})
	return out
}

// param adds a float32 constant whose elements init draws.
func (b *builder) param(name string, shape []int, init func() float32) string {
	data := make([]float32, graph.NumElems(shape))
	for i := range data {
		data[i] = init()
	}
	b.g.AddConst(name, graph.Float32Tensor(append([]int(nil), shape...), data))
	return name
}

// normal draws from N(0, std²).
func (b *builder) normal(std float64) func() float32 {
	return func() float32 { return float32(b.rng.NormFloat64() * std) }
}

// uniform draws from U[lo, hi).
func (b *builder) uniform(lo, hi float64) func() float32 {
	return func() float32 { return float32(lo + (hi-lo)*b.rng.Float64()) }
}

// scalar adds a float32 constant of shape [] (a literal operand).
func (b *builder) scalar(name string, v float32) string {
	b.g.AddConst(name, graph.Float32Tensor([]int{}, []float32{v}))
	return name
}

// int64s adds an int64 constant of shape [len(v)].
func (b *builder) int64s(name string, v ...int64) string {
	b.g.AddConst(name, graph.Int64Tensor([]int{len(v)}, v))
	return name
}

// Layers, as the usual frameworks export them.

// conv adds a Conv of kernel k×k with He-initialized weights (and a bias
// when bias is set).
func (b *builder) conv(scope, x string, cin, cout, k, stride, pad, group int, bias bool) string {
	fanIn := cin / group * k * k
	w := b.param(scope+".weight", []int{cout, cin / group, k, k}, b.normal(math.Sqrt(2/float64(fanIn))))
	in := []string{x, w}
	if bias {
		in = append(in, b.param(scope+".bias", []int{cout}, b.uniform(-0.1, 0.1)))
	}
	return b.op(scope, "Conv", in, attrs(
		"dilations", ints(1, 1), "group", intAttr(group), "kernel_shape", ints(k, k),
		"pads", ints(pad, pad, pad, pad), "strides", ints(stride, stride)))
}

// batchNorm adds an inference-mode BatchNormalization over c channels;
// gamma scales the initial weights (small for the last norm of a residual
// branch, so that activations stay bounded through deep networks).
func (b *builder) batchNorm(scope, x string, c int, gamma float64) string {
	return b.op(scope, "BatchNormalization", []string{x,
		b.param(scope+".weight", []int{c}, b.uniform(0.5*gamma, gamma)),
		b.param(scope+".bias", []int{c}, b.uniform(-0.1, 0.1)),
		b.param(scope+".running_mean", []int{c}, b.uniform(-0.1, 0.1)),
		b.param(scope+".running_var", []int{c}, b.uniform(0.5, 1.5)),
	}, attrs("epsilon", floatAttr(1e-5), "momentum", floatAttr(0.9)))
}

// linear adds a MatMul by a [in, out] weight and an Add of the bias, as
// exported for x of rank > 2.
func (b *builder) linear(scope, x string, in, out int) string {
	w := b.param(scope+".weight", []int{in, out}, b.normal(math.Sqrt(1/float64(in))))
	y := b.op(scope, "MatMul", []string{x, w}, nil)
	return b.op(scope, "Add", []string{b.param(scope+".bias", []int{out}, b.uniform(-0.1, 0.1)), y}, nil)
}

// gemm adds a fully connected layer on a [N, in] x: Gemm with transB, as
// exported for rank 2.
func (b *builder) gemm(scope, x string, in, out int) string {
	w := b.param(scope+".weight", []int{out, in}, b.normal(math.Sqrt(1/float64(in))))
	bias := b.param(scope+".bias", []int{out}, b.uniform(-0.1, 0.1))
	return b.op(scope, "Gemm", []string{x, w, bias}, attrs("alpha", floatAttr(1), "beta", floatAttr(1), "transB", intAttr(1)))
}

// classifier adds global average pooling, Flatten and the final Gemm.
func (b *builder) classifier(scope, x string, c, classes int) string {
	x = b.op("", "GlobalAveragePool", []string{x}, nil)
	x = b.op("", "Flatten", []string{x}, attrs("axis", intAttr(1)))
	return b.gemm(scope, x, c, classes)
}

// finish names the graph output, infers shapes (so that the file carries
// them as value_info) and checks the graph.
func (b *builder) finish(out string) (*graph.Graph, error) {
	b.output(out, "output")
	if err := frontend.InferShapes(b.g); err != nil {
		return nil, fmt.Errorf("modelgen: %s: %w", b.g.Name, err)
	}
	return b.g, nil
}
