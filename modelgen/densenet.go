package modelgen

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
)

// DenseNetConfig describes a DenseNet of torchvision's layout: every layer
// of a dense block reads the concatenation of the block's input and all
// the layers before it (BN, ReLU, 1×1 conv to BNSize·Growth channels, BN,
// ReLU, 3×3 conv to Growth channels), and a transition (BN, ReLU, 1×1
// conv halving the channels, 2×2 average pool) follows every block but
// the last.
type DenseNetConfig struct {
	Name    string
	Blocks  []int // layers per dense block
	Growth  int   // channels each layer adds (32)
	Init    int   // channels of the stem (64)
	BNSize  int   // bottleneck width factor (4)
	Input   int   // height and width of the image (224)
	Classes int   // outputs of the classifier (1000)
}

// DenseNet121Config is torchvision's densenet121 at batch 1, 224×224.
var DenseNet121Config = DenseNetConfig{Name: "densenet121", Blocks: []int{6, 12, 24, 16}, Growth: 32, Init: 64, BNSize: 4, Input: 224, Classes: 1000}

// DenseNet121 is torchvision's densenet121.
func DenseNet121(seed uint64) (*graph.Graph, error) { return DenseNet(DenseNet121Config, seed) }

// DenseNet builds the DenseNet c describes on a 1×3×Input×Input image, as
// PyTorch exports it: each layer concatenates all of its block's features
// so far (torch.cat(prev_features, 1)), the final features go through a
// ReLU, a global average pool and the classifier.
func DenseNet(c DenseNetConfig, seed uint64) (*graph.Graph, error) {
	b := newBuilder(c.Name, opset, seed)
	x := b.stem("features.conv0", "features.norm0", b.input("input", 1, 3, c.Input, c.Input), c.Init)
	ch := c.Init
	for blk, n := range c.Blocks {
		features := []string{x}
		for l := range n {
			scope := fmt.Sprintf("features.denseblock%d.denselayer%d", blk+1, l+1)
			in := ch + l*c.Growth
			y := features[0]
			if len(features) > 1 {
				y = b.op(scope, "Concat", features, attrs("axis", intAttr(1)))
			}
			y = b.batchNorm(scope+".norm1", y, in, 1)
			y = b.op(scope, "Relu", []string{y}, nil)
			y = b.conv(scope+".conv1", y, in, c.BNSize*c.Growth, 1, 1, 0, 1, false)
			y = b.batchNorm(scope+".norm2", y, c.BNSize*c.Growth, 1)
			y = b.op(scope, "Relu", []string{y}, nil)
			y = b.conv(scope+".conv2", y, c.BNSize*c.Growth, c.Growth, 3, 1, 1, 1, false)
			features = append(features, y)
		}
		x = b.op(fmt.Sprintf("features.denseblock%d", blk+1), "Concat", features, attrs("axis", intAttr(1)))
		ch += n * c.Growth
		if blk < len(c.Blocks)-1 {
			scope := fmt.Sprintf("features.transition%d", blk+1)
			x = b.batchNorm(scope+".norm", x, ch, 1)
			x = b.op(scope, "Relu", []string{x}, nil)
			x = b.conv(scope+".conv", x, ch, ch/2, 1, 1, 0, 1, false)
			x = b.op(scope, "AveragePool", []string{x}, attrs("ceil_mode", intAttr(0), "kernel_shape", ints(2, 2),
				"pads", ints(0, 0, 0, 0), "strides", ints(2, 2)))
			ch /= 2
		}
	}
	x = b.batchNorm("features.norm5", x, ch, 1)
	x = b.op("", "Relu", []string{x}, nil)
	return b.finish(b.classifier("classifier", x, ch, c.Classes))
}
