package modelgen

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
)

// MobileNetV2 is torchvision's mobilenet_v2 (width multiplier 1.0) on a
// 1×3×224×224 input.
func MobileNetV2(seed uint64) (*graph.Graph, error) { return MobileNetV2At(224, seed) }

// MobileNetV2At is MobileNetV2 on a 1×3×size×size input: inverted
// residual blocks of a 1×1 expansion, a 3×3 depthwise convolution and a
// linear 1×1 projection, each followed by BatchNormalization, with ReLU6
// exported as Clip(0, 6).
func MobileNetV2At(size int, seed uint64) (*graph.Graph, error) {
	b := newBuilder("mobilenetv2", opset, seed)
	lo, hi := b.scalar("relu6.min", 0), b.scalar("relu6.max", 6)
	relu6 := func(scope, x string) string { return b.op(scope, "Clip", []string{x, lo, hi}, nil) }
	x := b.input("input", 1, 3, size, size)
	x = b.convBN("features.0.0", x, 3, 32, 3, 2, 1, 1, 1, "features.0.1")
	x = relu6("features.0.2", x)
	// expansion t, output channels c, repeats n, first stride s
	settings := [][4]int{{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}}
	in, layer := 32, 1
	for _, s := range settings {
		t, c, n, stride := s[0], s[1], s[2], s[3]
		for i := range n {
			if i > 0 {
				stride = 1
			}
			scope := fmt.Sprintf("features.%d.conv", layer)
			hidden := in * t
			y, k := x, 0
			if t != 1 {
				y = b.convBN(fmt.Sprintf("%s.%d.0", scope, k), y, in, hidden, 1, 1, 0, 1, 1, fmt.Sprintf("%s.%d.1", scope, k))
				y = relu6(fmt.Sprintf("%s.%d.2", scope, k), y)
				k++
			}
			y = b.convBN(fmt.Sprintf("%s.%d.0", scope, k), y, hidden, hidden, 3, stride, 1, hidden, 1, fmt.Sprintf("%s.%d.1", scope, k))
			y = relu6(fmt.Sprintf("%s.%d.2", scope, k), y)
			k++
			gamma := 1.0
			if stride == 1 && in == c {
				gamma = 0.3
			}
			y = b.convBN(fmt.Sprintf("%s.%d", scope, k), y, hidden, c, 1, 1, 0, 1, gamma, fmt.Sprintf("%s.%d", scope, k+1))
			if stride == 1 && in == c {
				y = b.op(fmt.Sprintf("features.%d", layer), "Add", []string{x, y}, nil)
			}
			x, in = y, c
			layer++
		}
	}
	x = b.convBN(fmt.Sprintf("features.%d.0", layer), x, in, 1280, 1, 1, 0, 1, 1, fmt.Sprintf("features.%d.1", layer))
	x = relu6(fmt.Sprintf("features.%d.2", layer), x)
	return b.finish(b.classifier("classifier.1", x, 1280, 1000))
}
