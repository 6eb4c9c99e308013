package modelgen

import (
	"fmt"

	"github.com/tessera-ml/tessera/graph"
)

// ResNetConfig describes a ResNet of torchvision's layout (v1.5: the
// stride of a bottleneck is in its 3×3 convolution).
type ResNetConfig struct {
	Name       string
	Blocks     []int // blocks per stage
	Bottleneck bool  // bottleneck blocks (expansion 4) rather than basic ones
	Width      int   // channels of the stem and the first stage (64)
	Input      int   // height and width of the image (224)
	Classes    int   // outputs of the classifier (1000)
}

// ResNet18Config and ResNet50Config are the standard networks at batch 1,
// 224×224.
var (
	ResNet18Config = ResNetConfig{Name: "resnet18", Blocks: []int{2, 2, 2, 2}, Width: 64, Input: 224, Classes: 1000}
	ResNet50Config = ResNetConfig{Name: "resnet50", Blocks: []int{3, 4, 6, 3}, Bottleneck: true, Width: 64, Input: 224, Classes: 1000}
)

// ResNet18 is torchvision's resnet18.
func ResNet18(seed uint64) (*graph.Graph, error) { return ResNet(ResNet18Config, seed) }

// ResNet50 is torchvision's resnet50.
func ResNet50(seed uint64) (*graph.Graph, error) { return ResNet(ResNet50Config, seed) }

// ResNet builds the ResNet c describes on a 1×3×Input×Input image. Every
// convolution is bias-free and followed by a BatchNormalization, as
// exported.
func ResNet(c ResNetConfig, seed uint64) (*graph.Graph, error) {
	b := newBuilder(c.Name, opset, seed)
	bottleneck := c.Bottleneck
	x := b.stem("conv1", "bn1", b.input("input", 1, 3, c.Input, c.Input), c.Width)
	expansion := 1
	if bottleneck {
		expansion = 4
	}
	in := c.Width
	for stage, n := range c.Blocks {
		width := c.Width << stage
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
	return b.finish(b.classifier("fc", x, in, c.Classes))
}

// stem is the ImageNet stem of torchvision's ResNets and DenseNets: a 7×7
// stride-2 convolution to width channels, BatchNormalization, ReLU and a
// 3×3 stride-2 max pool.
func (b *builder) stem(conv, bn, x string, width int) string {
	x = b.conv(conv, x, 3, width, 7, 2, 3, 1, false)
	x = b.batchNorm(bn, x, width, 1)
	x = b.op("", "Relu", []string{x}, nil)
	return b.op("", "MaxPool", []string{x}, attrs("ceil_mode", intAttr(0), "dilations", ints(1, 1),
		"kernel_shape", ints(3, 3), "pads", ints(1, 1, 1, 1), "strides", ints(2, 2)))
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
