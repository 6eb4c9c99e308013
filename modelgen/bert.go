package modelgen

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/graph"
)

// BERTConfig describes one encoder layer of a BERT.
type BERTConfig struct {
	Name   string
	Seq    int  // sequence length (128)
	Hidden int  // hidden size (768)
	Heads  int  // attention heads; Hidden must be a multiple (12)
	FFN    int  // inner size of the feed-forward network (3072)
	Opset  int  // 17, or 20 and later for the Gelu op
	GeluOp bool // GELU as the Gelu op (opset 20) rather than its Erf form
}

// BERTLayerConfig is BERT-base's layer at batch 1, sequence 128.
var BERTLayerConfig = BERTConfig{Name: "bert_layer", Seq: 128, Hidden: 768, Heads: 12, FFN: 3072, Opset: 17}

// BERTLayer is one BERT-base encoder layer (Hugging Face's BertLayer) on
// hidden states of 1×128×768 with an additive attention mask of 1×1×1×128,
// exported at opset 17: GELU in its Erf form, and the reshapes to and from
// the attention heads computed from Shape, as a traced export writes them.
func BERTLayer(seed uint64) (*graph.Graph, error) { return BERT(BERTLayerConfig, seed) }

// BERTLayerGelu is the same layer at opset 20, with the Gelu op.
func BERTLayerGelu(seed uint64) (*graph.Graph, error) {
	c := BERTLayerConfig
	c.Name, c.Opset, c.GeluOp = "bert_layer_gelu", 20, true
	return BERT(c, seed)
}

// BERT builds the encoder layer c describes (see BERTLayer).
func BERT(c BERTConfig, seed uint64) (*graph.Graph, error) {
	if c.Heads <= 0 || c.Hidden%c.Heads != 0 {
		return nil, fmt.Errorf("modelgen: %s: hidden size %d is not a multiple of %d heads", c.Name, c.Hidden, c.Heads)
	}
	b := newBuilder(c.Name, c.Opset, seed)
	h := b.input("hidden_states", 1, c.Seq, c.Hidden)
	mask := b.input("attention_mask", 1, 1, 1, c.Seq)
	return b.finish(b.bertLayer("encoder.layer.0", c, h, mask))
}

// bertLayer appends one encoder layer (scope sc, e.g. "encoder.layer.0")
// on hidden states h [1, Seq, Hidden] with the additive attention mask
// mask [1, 1, 1, Seq], and returns its output.
func (b *builder) bertLayer(sc string, c BERTConfig, h, mask string) string {
	headDim := c.Hidden / c.Heads
	// dims returns Unsqueeze(Gather(Shape(x), i)) for each i: the leading
	// dimensions of x as 1-element int64 tensors.
	gidx := []string{b.g.AddConst("gather.0", graph.Int64Tensor([]int{}, []int64{0})).Name,
		b.g.AddConst("gather.1", graph.Int64Tensor([]int{}, []int64{1})).Name}
	axes0 := b.int64s("unsqueeze.axes", 0)
	dims := func(scope, x string, n int) []string {
		shape := b.op(scope, "Shape", []string{x}, nil)
		out := make([]string, n)
		for i := range n {
			d := b.op(scope, "Gather", []string{shape, gidx[i]}, attrs("axis", intAttr(0)))
			out[i] = b.op(scope, "Unsqueeze", []string{d, axes0}, nil)
		}
		return out
	}
	heads, hdim := b.int64s("shape.heads", int64(c.Heads)), b.int64s("shape.head_dim", int64(headDim))
	hidden := b.int64s("shape.hidden", int64(c.Hidden))
	// toHeads: [B, S, H] → [B, heads, S, d] (and [B, heads, d, S] for keys).
	toHeads := func(scope, x string, key bool) string {
		bs := dims(scope, x, 2)
		shape := b.op(scope, "Concat", []string{bs[0], bs[1], heads, hdim}, attrs("axis", intAttr(0)))
		x = b.op(scope, "Reshape", []string{x, shape}, nil)
		x = b.op(scope, "Transpose", []string{x}, attrs("perm", ints(0, 2, 1, 3)))
		if key {
			x = b.op(scope, "Transpose", []string{x}, attrs("perm", ints(0, 1, 3, 2)))
		}
		return x
	}

	q := toHeads(sc+".attention.self", b.linear(sc+".attention.self.query", h, c.Hidden, c.Hidden), false)
	k := toHeads(sc+".attention.self", b.linear(sc+".attention.self.key", h, c.Hidden, c.Hidden), true)
	v := toHeads(sc+".attention.self", b.linear(sc+".attention.self.value", h, c.Hidden, c.Hidden), false)
	att := sc + ".attention.self"
	s := b.op(att, "MatMul", []string{q, k}, nil)
	s = b.op(att, "Div", []string{s, b.scalar(att+".scale", float32(math.Sqrt(float64(headDim))))}, nil)
	s = b.op(att, "Add", []string{s, mask}, nil)
	p := b.op(att, "Softmax", []string{s}, attrs("axis", intAttr(-1)))
	ctx := b.op(att, "MatMul", []string{p, v}, nil)
	ctx = b.op(att, "Transpose", []string{ctx}, attrs("perm", ints(0, 2, 1, 3)))
	bs := dims(att, ctx, 2)
	ctx = b.op(att, "Reshape", []string{ctx, b.op(att, "Concat", []string{bs[0], bs[1], hidden}, attrs("axis", intAttr(0)))}, nil)

	x := b.linear(sc+".attention.output.dense", ctx, c.Hidden, c.Hidden)
	x = b.op(sc+".attention.output", "Add", []string{x, h}, nil)
	x = b.layerNorm(sc+".attention.output.LayerNorm", x, c.Hidden)

	y := b.linear(sc+".intermediate.dense", x, c.Hidden, c.FFN)
	if c.GeluOp {
		y = b.op(sc+".intermediate", "Gelu", []string{y}, nil)
	} else {
		y = b.geluErf(sc+".intermediate", y)
	}
	y = b.linear(sc+".output.dense", y, c.FFN, c.Hidden)
	y = b.op(sc+".output", "Add", []string{y, x}, nil)
	return b.layerNorm(sc+".output.LayerNorm", y, c.Hidden)
}

// layerNorm is LayerNormalization over the last axis.
func (b *builder) layerNorm(scope, x string, c int) string {
	return b.op(scope, "LayerNormalization", []string{x,
		b.param(scope+".weight", []int{c}, b.uniform(0.8, 1.2)),
		b.param(scope+".bias", []int{c}, b.uniform(-0.1, 0.1)),
	}, attrs("axis", intAttr(-1), "epsilon", floatAttr(1e-12)))
}

// geluErf is x * 0.5 * (1 + erf(x / √2)) as PyTorch exports it before
// opset 20: Div, Erf, Add, Mul, Mul.
func (b *builder) geluErf(scope, x string) string {
	d := b.op(scope, "Div", []string{x, b.scalar(scope+".sqrt2", float32(math.Sqrt2))}, nil)
	e := b.op(scope, "Erf", []string{d}, nil)
	a := b.op(scope, "Add", []string{e, b.scalar(scope+".one", 1)}, nil)
	m := b.op(scope, "Mul", []string{x, a}, nil)
	return b.op(scope, "Mul", []string{m, b.scalar(scope+".half", 0.5)}, nil)
}
