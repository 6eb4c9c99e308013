package modelgen

import (
	"fmt"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
)

// Models with dynamic dimensions, as PyTorch exports them with
// dynamic_axes: the inputs' dimensions named (ONNX dim_param), every
// reshape's target computed from Shape or written with 0 and -1, so that
// one file serves every batch size or sequence length.

// ResNet18Dynamic is ResNet-18 on a batch of N images: input [N, 3, 224,
// 224].
func ResNet18Dynamic(seed uint64) (*graph.Graph, error) {
	g, err := ResNet(ResNetConfig{Name: "resnet18_dynamic", Blocks: ResNet18Config.Blocks, Width: 64, Input: 224, Classes: 1000}, seed)
	if err != nil {
		return nil, err
	}
	return Dynamic(g, map[string]map[int]string{"input": {0: "N"}})
}

// BERTEncoderDynamic is the catalog's BERT encoder (BERTEncoderSmall) on
// B sequences of S tokens: input_ids and attention_mask [B, S].
func BERTEncoderDynamic(seed uint64) (*graph.Graph, error) {
	c := BERTEncoderSmall
	c.Name = "bert_encoder_dynamic"
	g, err := BERTEncoder(c, seed)
	if err != nil {
		return nil, err
	}
	return Dynamic(g, map[string]map[int]string{"input_ids": {0: "B", 1: "S"}, "attention_mask": {0: "B", 1: "S"}})
}

// Dynamic makes the named dimensions of g's inputs dynamic (dims: input →
// axis → symbol) and forgets the shapes of every other value but the
// constants (inferred at the static shape the model was built for), then
// checks that the graph binds and infers shapes at other values of the
// symbols. It changes and returns g.
func Dynamic(g *graph.Graph, dims map[string]map[int]string) (*graph.Graph, error) {
	for in, axes := range dims {
		v := g.Values[in]
		if v == nil || !g.IsInput(in) {
			return nil, fmt.Errorf("modelgen: %s: no input %s", g.Name, in)
		}
		v.DimParams = make([]string, len(v.Shape))
		for axis, name := range axes {
			v.Shape[axis], v.DimParams[axis] = -1, name
		}
	}
	for name, v := range g.Values {
		if v.Const == nil && !g.IsInput(name) {
			v.Shape = nil
		}
	}
	for _, n := range []int{2, 3} {
		h := g.Clone()
		bound := map[string][]int{}
		for in, axes := range dims {
			shape := append([]int(nil), h.Values[in].Shape...)
			for axis := range axes {
				shape[axis] = n + axis
			}
			bound[in] = shape
		}
		if err := h.Bind(bound); err != nil {
			return nil, fmt.Errorf("modelgen: %s: %w", g.Name, err)
		}
		if err := frontend.InferShapes(h); err != nil {
			return nil, fmt.Errorf("modelgen: %s at %v: %w", g.Name, bound, err)
		}
	}
	return g, nil
}

// SeqMatMul is the least model over a sequence length: x [2, S, 8], S
// dynamic (dimension 1, not a batch: the leading dimension is fixed),
// times a constant w [8, 16] (w[i] = i%7 − 3), then Relu, into y [2, S,
// 16]. It returns w too, to compute the expected outputs by hand.
func SeqMatMul() (*graph.Graph, []float32) {
	g := graph.New("seq_matmul", 17)
	g.AddInput("x", graph.Float32, []int{2, -1, 8}).DimParams = []string{"", "S", ""}
	w := make([]float32, 8*16)
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	g.AddConst("w", graph.Float32Tensor([]int{8, 16}, w))
	g.AddNode(&graph.Node{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"m"}})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"m"}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	return g, w
}
