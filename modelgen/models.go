// Package modelgen builds operator graphs of real network architectures
// with random, seeded weights, and writes them as ONNX files: the models
// that tests, benchmarks and the README demo use, so that nothing is
// downloaded at run time.
//
// Models lists them; Build makes one by name and WriteFile encodes it.
// The graphs look like what PyTorch's exporter writes at opset 17
// (BatchNormalization after bias-free convolutions, Clip(0, 6) as ReLU6,
// reshapes whose target shape is computed by Shape/Gather/Concat, GELU in
// its Erf form), so that the graph passes have real work to do. The same
// name and seed always give the same bytes.
package modelgen

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// DefaultSeed is the seed of the generated test data.
const DefaultSeed = 1

// Model is one architecture of the catalog.
type Model struct {
	Name  string
	Doc   string
	Large bool // tens of megabytes of weights: generated on demand, never committed
	Build func(seed uint64) (*graph.Graph, error)
}

// Models is the catalog, in the order genmodels writes it.
var Models = []Model{
	{"tiny", "two 3×3 convolutions (one with BatchNormalization) + ReLU, global average pool, Gemm; input 1×3×16×16", false, Tiny},
	{"resnet18", "ResNet-18 (torchvision layout), batch 1, 224×224", true, ResNet18},
	{"resnet50", "ResNet-50 v1.5 (torchvision layout), batch 1, 224×224", true, ResNet50},
	{"densenet121", "DenseNet-121 (torchvision layout: each layer concatenates its block's features so far), batch 1, 224×224", true, DenseNet121},
	{"mobilenetv2", "MobileNetV2 (width 1.0), batch 1, 224×224", true, MobileNetV2},
	{"bert_layer", "one BERT-base encoder layer (seq 128, hidden 768, 12 heads, FFN 3072), opset 17, GELU as Erf", true, BERTLayer},
	{"bert_layer_gelu", "the same layer at opset 20 with the Gelu op", true, BERTLayerGelu},
	{"bert_encoder", "a BERT-style encoder as PyTorch exports BertModel: int64 input_ids and attention_mask, Gather embeddings, mask by Cast/Equal/Where, 2 layers (seq 64, hidden 256, 4 heads)", true,
		func(seed uint64) (*graph.Graph, error) { return BERTEncoder(BERTEncoderSmall, seed) }},
	{"resnet18_dynamic", "ResNet-18 on a dynamic batch: input [N, 3, 224, 224]", true, ResNet18Dynamic},
	{"bert_encoder_dynamic", "the BERT encoder on a dynamic batch and sequence length: input_ids and attention_mask [B, S]", true, BERTEncoderDynamic},
}

// Lookup returns the model named name.
func Lookup(name string) (Model, error) {
	for _, m := range Models {
		if m.Name == name {
			return m, nil
		}
	}
	names := make([]string, len(Models))
	for i, m := range Models {
		names[i] = m.Name
	}
	sort.Strings(names)
	return Model{}, fmt.Errorf("modelgen: unknown model %q (models: %v)", name, names)
}

// Build makes the model named name with weights drawn from seed.
func Build(name string, seed uint64) (*graph.Graph, error) {
	m, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return m.Build(seed)
}

// WriteFile encodes g as an ONNX file at path.
func WriteFile(path string, g *graph.Graph) error {
	data, err := onnx.Encode(g)
	if err != nil {
		return fmt.Errorf("modelgen: encoding %s: %w", g.Name, err)
	}
	return os.WriteFile(path, data, 0o644)
}

// Generate builds the named model and writes it to dir/name.onnx,
// returning the path.
func Generate(dir, name string, seed uint64) (string, error) {
	g, err := Build(name, seed)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".onnx")
	return path, WriteFile(path, g)
}

// GenerateFloat16 builds the named model, converts it to float16
// (Float16) and writes it to dir/name.fp16.onnx, returning the path.
func GenerateFloat16(dir, name string, seed uint64) (string, error) {
	g, err := Build(name, seed)
	if err != nil {
		return "", err
	}
	if g, err = Float16(g); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".fp16.onnx")
	return path, WriteFile(path, g)
}

// opset is the default-domain opset of the generated models (the first
// with LayerNormalization).
const opset = 17

// Tiny is a model small enough to tune in minutes: the test and demo
// model committed as testdata/tiny.onnx.
func Tiny(seed uint64) (*graph.Graph, error) {
	b := newBuilder("tiny", opset, seed)
	x := b.input("input", 1, 3, 16, 16)
	x = b.conv("conv1", x, 3, 8, 3, 1, 1, 1, false)
	x = b.batchNorm("bn1", x, 8, 1)
	x = b.op("", "Relu", []string{x}, nil)
	x = b.conv("conv2", x, 8, 16, 3, 2, 1, 1, true)
	x = b.op("", "Relu", []string{x}, nil)
	x = b.op("", "GlobalAveragePool", []string{x}, nil)
	x = b.op("", "Flatten", []string{x}, attrs("axis", intAttr(1)))
	return b.finish(b.gemm("fc", x, 16, 10))
}
