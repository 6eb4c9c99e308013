package frontend

import (
	"slices"

	"github.com/tessera-ml/tessera/graph"
)

// fuseSilu finds SiLU written out, y = Mul(x, Sigmoid(x)) (PyTorch's
// nn.SiLU, the activation of every EfficientNet), and writes it as one
// Silu(x), the op onnxruntime's optimizer writes as QuickGelu with α = 1.
// Written out, x has two readers, the Sigmoid and the Mul: the convolution
// that computes x has no single elementwise consumer, so the search's
// fusion of a consumer into its tiles does not apply, and its schedules
// wrote the whole output (EfficientNet-B1's 120×120×96 expansion: 5.5 MB)
// before a second loop computed the activation. Silu is one consumer. The
// Sigmoid must have no other reader; a quantized SiLU (between
// DequantizeLinear and QuantizeLinear) is tabulated whole by
// lookup-tables first.
func fuseSilu(g *graph.Graph) (bool, error) {
	producers, consumers := g.Producers(), g.Consumers()
	changed := false
	for _, mul := range g.Nodes {
		if !isOp(mul, "Mul", 2) {
			continue
		}
		for k := range 2 {
			sig, x := producers[mul.Inputs[k]], mul.Inputs[1-k]
			if !isOp(sig, "Sigmoid", 1) || sig.Inputs[0] != x || onlyReader(g, sig.Outputs[0], consumers) != mul {
				continue
			}
			xv, yv := g.Values[x], g.Values[mul.Outputs[0]]
			if xv == nil || yv == nil || xv.DType != graph.Float32 || yv.DType != graph.Float32 || xv.Shape == nil || !slices.Equal(xv.Shape, yv.Shape) {
				continue
			}
			mul.OpType, mul.Domain = "Silu", ""
			mul.Inputs, mul.Attrs = []string{x}, nil
			changed = true
			producers, consumers = g.Producers(), g.Consumers()
			break
		}
	}
	return changed, nil
}
