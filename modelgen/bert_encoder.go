package modelgen

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
)

// BERTEncoderConfig describes a BERT-style encoder: embeddings, then
// Layers encoder layers of the BERTConfig shape.
type BERTEncoderConfig struct {
	BERTConfig
	Layers       int
	Vocab        int // word embeddings
	MaxPositions int // position embeddings (≥ Seq)
}

// BERTEncoderSmall is the catalog's encoder: two layers of hidden size 256
// (4 heads, FFN 1024) over 64 tokens of an 8,000-word vocabulary.
var BERTEncoderSmall = BERTEncoderConfig{
	BERTConfig:   BERTConfig{Name: "bert_encoder", Seq: 64, Hidden: 256, Heads: 4, FFN: 1024, Opset: 17},
	Layers:       2,
	Vocab:        8000,
	MaxPositions: 512,
}

// BERTEncoder builds the encoder c describes as PyTorch exports Hugging
// Face's BertModel (without its pooler): int64 input_ids [1, Seq] looked
// up in the word embeddings by a Gather at run time, plus position and
// token-type embeddings whose ids are slices of constant buffers, the
// slice's end read from Shape(input_ids); LayerNorm; an int64
// attention_mask [1, Seq] made additive with Cast, Unsqueeze, Equal and
// Where (−1e9 where the mask is 0); then the encoder layers, whose reshapes
// go through Shape → Gather → Unsqueeze → Concat → Reshape. The output,
// "output", is the last hidden state [1, Seq, Hidden].
func BERTEncoder(c BERTEncoderConfig, seed uint64) (*graph.Graph, error) {
	if c.Heads <= 0 || c.Hidden%c.Heads != 0 {
		return nil, fmt.Errorf("modelgen: %s: hidden size %d is not a multiple of %d heads", c.Name, c.Hidden, c.Heads)
	}
	if c.Layers <= 0 || c.Vocab <= 0 || c.MaxPositions < c.Seq {
		return nil, fmt.Errorf("modelgen: %s: %d layers, vocabulary %d, %d positions for %d tokens", c.Name, c.Layers, c.Vocab, c.MaxPositions, c.Seq)
	}
	b := newBuilder(c.Name, c.Opset, seed)
	b.g.AddInput("input_ids", graph.Int64, []int{1, c.Seq})
	b.g.AddInput("attention_mask", graph.Int64, []int{1, c.Seq})

	// Embeddings.
	const emb = "embeddings"
	buffer := func(name string, v func(i int) int64) string {
		data := make([]int64, c.MaxPositions)
		for i := range data {
			data[i] = v(i)
		}
		b.g.AddConst(name, graph.Int64Tensor([]int{1, c.MaxPositions}, data))
		return name
	}
	positionIDs := buffer(emb+".position_ids", func(i int) int64 { return int64(i) })
	tokenTypeIDs := buffer(emb+".token_type_ids", func(int) int64 { return 0 })
	// ids[:, :seq_len], seq_len = input_ids.shape[1]
	shape := b.op(emb, "Shape", []string{"input_ids"}, nil)
	seqLen := b.op(emb, "Gather", []string{shape, b.g.AddConst(emb+".dim1", graph.Int64Tensor([]int{}, []int64{1})).Name}, attrs("axis", intAttr(0)))
	end := b.op(emb, "Unsqueeze", []string{seqLen, b.int64s(emb+".axes0", 0)}, nil)
	slice := func(ids string) string {
		return b.op(emb, "Slice", []string{ids, b.int64s(emb+".start", 0), end, b.int64s(emb+".axes1", 1)}, nil)
	}
	lookup := func(name, ids string, rows int) string {
		table := b.param(emb+"."+name+".weight", []int{rows, c.Hidden}, b.normal(0.02))
		return b.op(emb+"."+name, "Gather", []string{table, ids}, nil)
	}
	words := lookup("word_embeddings", "input_ids", c.Vocab)
	types := lookup("token_type_embeddings", slice(tokenTypeIDs), 2)
	x := b.op(emb, "Add", []string{words, types}, nil)
	x = b.op(emb, "Add", []string{x, lookup("position_embeddings", slice(positionIDs), c.MaxPositions)}, nil)
	h := b.layerNorm(emb+".LayerNorm", x, c.Hidden)

	// The additive mask: 0 where attention_mask is 1, −1e9 where it is 0.
	m := b.op("", "Cast", []string{"attention_mask"}, attrs("to", intAttr(int(graph.Float32.ONNX()))))
	m = b.op("", "Unsqueeze", []string{m, b.int64s("mask.axes", 1, 2)}, nil)
	masked := b.op("", "Equal", []string{m, b.scalar("mask.zero", 0)}, nil)
	mask := b.op("", "Where", []string{masked, b.scalar("mask.min", -1e9), b.scalar("mask.keep", 0)}, nil)

	for l := range c.Layers {
		h = b.bertLayer(fmt.Sprintf("encoder.layer.%d", l), c.BERTConfig, h, mask)
	}
	return b.finish(h)
}
