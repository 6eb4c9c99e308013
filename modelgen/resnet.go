package modelgen

import (
	"fmt"

	"tessera/graph"
)

// ResNet18 is torchvision's resnet18: basic blocks [2, 2, 2, 2].
func ResNet18(seed uint64) (*graph.Graph, error) {
	return resnet("resnet18", seed, []int{2, 2, 2, 2}, false)
}

// ResNet50 is torchvision's resnet50 (v1.5: the stride is in the 3×3
// convolution of a bottleneck): bottleneck blocks [3, 4, 6, 3].
func ResNet50(seed uint64) (*graph.Graph, error) {
	return resnet("resnet50", seed, []int{3, 4, 6, 3}, true)
}

// resnet builds a ResNet on a 1×3×224×224 input. Every convolution is
// bias-free and followed by a BatchNormalization, as exported.
func resnet(name string, seed uint64, blocks []int, bottleneck bool) (*graph.Graph, error) {
	b := newBuilder(name, opset, seed)
	x := b.input("input", 1, 3, 224, 224)
	x = b.conv("conv1", x, 3, 64, 7, 2, 3, 1, false)
	x = b.batchNorm("bn1", x, 64, 1)
	x = b.op("", "Relu", []string{x}, nil)
	x = b.op("", "MaxPool", []string{x}, attrs("ceil_mode", intAttr(0), "dilations", ints(1, 1),
		"kernel_shape", ints(3, 3), "pads", ints(1, 1, 1, 1), "strides", ints(2, 2)))
	expansion := 1
	if bottleneck {
		expansion = 4
	}
	in := 64
	for stage, n := range blocks {
		width := 64 << stage
		for i := range n {
			stride := 1
			if stage > 0 && i == 0 {
				stride = 2
			}
			scope := fmt.Sprintf("layer%d.%d", stage+1, i)
			if bottleneck {
				x = b.bottleneck(scope, x, in, width, stride)
			} else {
				x = b.basicBlock(scope, x, in, width, stride)
			}
			in = width * expansion
		}
	}
	return b.finish(b.classifier("fc", x, in, 1000))
}

// convBN is a bias-free convolution followed by BatchNormalization.
func (b *builder) convBN(scope, x string, cin, cout, k, stride, pad, group int, gamma float64, bn string) string {
	x = b.conv(scope, x, cin, cout, k, stride, pad, group, false)
	return b.batchNorm(bn, x, cout, gamma)
}

// shortcut is the identity, or a strided 1×1 convolution + BN when the
// shape changes.
func (b *builder) shortcut(scope, x string, in, out, stride int) string {
	if stride == 1 && in == out {
		return x
	}
	return b.convBN(scope+".downsample.0", x, in, out, 1, stride, 0, 1, 1, scope+".downsample.1")
}

// residual adds the shortcut to the branch and applies ReLU.
func (b *builder) residual(scope, branch, short string) string {
	y := b.op(scope, "Add", []string{branch, short}, nil)
	return b.op(scope, "Relu", []string{y}, nil)
}

func (b *builder) basicBlock(scope, x string, in, width, stride int) string {
	y := b.convBN(scope+".conv1", x, in, width, 3, stride, 1, 1, 1, scope+".bn1")
	y = b.op(scope, "Relu", []string{y}, nil)
	y = b.convBN(scope+".conv2", y, width, width, 3, 1, 1, 1, 0.3, scope+".bn2")
	return b.residual(scope, y, b.shortcut(scope, x, in, width, stride))
}

func (b *builder) bottleneck(scope, x string, in, width, stride int) string {
	out := width * 4
	y := b.convBN(scope+".conv1", x, in, width, 1, 1, 0, 1, 1, scope+".bn1")
	y = b.op(scope, "Relu", []string{y}, nil)
	y = b.convBN(scope+".conv2", y, width, width, 3, stride, 1, 1, 1, scope+".bn2")
	y = b.op(scope, "Relu", []string{y}, nil)
	y = b.convBN(scope+".conv3", y, width, out, 1, 1, 0, 1, 0.3, scope+".bn3")
	return b.residual(scope, y, b.shortcut(scope, x, in, out, stride))
}
