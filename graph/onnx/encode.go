package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/x448/float16"
	"google.golang.org/protobuf/proto"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx/onnxpb"
)

// irVersion is the ONNX IR version Encode writes (ONNX 1.12).
const irVersion = 8

// Encode serializes g as an ONNX model. Constants that no node produces
// become initializers (raw little-endian data); every value with a known
// type and shape is described in the graph's value_info.
func Encode(g *graph.Graph) ([]byte, error) {
	m, err := ToProto(g)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// EncodeFile writes g to path as an ONNX model file (Encode).
func EncodeFile(path string, g *graph.Graph) error {
	data, err := Encode(g)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// ToProto converts g to a ModelProto.
func ToProto(g *graph.Graph) (*onnxpb.ModelProto, error) {
	gp, err := graphToProto(g)
	if err != nil {
		return nil, err
	}
	m := &onnxpb.ModelProto{IrVersion: irVersion, ProducerName: "tessera", Graph: gp}
	domains := make([]string, 0, len(g.Opsets))
	for d := range g.Opsets {
		domains = append(domains, d)
	}
	if _, ok := g.Opsets[""]; !ok {
		domains = append(domains, "")
	}
	sort.Strings(domains)
	for _, d := range domains {
		v := g.Opsets[d]
		if d == "" {
			v = g.Opset
		}
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: d, Version: int64(v)})
	}
	return m, nil
}

// graphToProto converts the main graph or a subgraph.
func graphToProto(g *graph.Graph) (*onnxpb.GraphProto, error) {
	gp := &onnxpb.GraphProto{Name: g.Name}
	produced := map[string]bool{}
	for _, n := range g.Nodes {
		np := &onnxpb.NodeProto{Name: n.Name, OpType: n.OpType, Domain: n.Domain,
			Input: append([]string(nil), n.Inputs...), Output: append([]string(nil), n.Outputs...)}
		names := make([]string, 0, len(n.Attrs))
		for k := range n.Attrs {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ap, err := attrToProto(k, n.Attrs[k])
			if err != nil {
				return nil, fmt.Errorf("node %s (%s): %w", n.Name, n.OpType, err)
			}
			np.Attribute = append(np.Attribute, ap)
		}
		gp.Node = append(gp.Node, np)
		for _, o := range n.Outputs {
			produced[o] = true
		}
	}
	for _, name := range g.ConstNames() {
		if !produced[name] {
			gp.Initializer = append(gp.Initializer, TensorToProto(name, g.Values[name].Const))
		}
	}
	for _, name := range g.Inputs {
		gp.Input = append(gp.Input, valueInfo(g.Values[name]))
	}
	for _, name := range g.Outputs {
		v := g.Values[name]
		if v == nil { // a subgraph's output read from an enclosing graph
			v = &graph.Value{Name: name}
		}
		gp.Output = append(gp.Output, valueInfo(v))
	}
	var inner []string
	for name, v := range g.Values {
		if produced[name] && v.DType != graph.Undefined && v.Shape != nil && !g.IsOutput(name) {
			inner = append(inner, name)
		}
	}
	sort.Strings(inner)
	for _, name := range inner {
		gp.ValueInfo = append(gp.ValueInfo, valueInfo(g.Values[name]))
	}
	return gp, nil
}

// valueInfo describes v; a value whose type is not inferred yet is
// described by its name only.
func valueInfo(v *graph.Value) *onnxpb.ValueInfoProto {
	if v.DType == graph.Undefined {
		return &onnxpb.ValueInfoProto{Name: v.Name}
	}
	tt := &onnxpb.TypeProto_Tensor{ElemType: onnxType(v.DType)}
	if v.Shape != nil {
		tt.Shape = &onnxpb.TensorShapeProto{}
		for i, d := range v.Shape {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch {
			case d >= 0:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}
			case i < len(v.DimParams) && v.DimParams[i] != "":
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v.DimParams[i]}
			}
			tt.Shape.Dim = append(tt.Shape.Dim, dim)
		}
	}
	return &onnxpb.ValueInfoProto{Name: v.Name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}}}
}

func onnxType(d graph.DType) int32 { return d.ONNX() }

// TensorToProto encodes t with raw little-endian data.
func TensorToProto(name string, t *graph.Tensor) *onnxpb.TensorProto {
	tp := &onnxpb.TensorProto{Name: name, DataType: onnxType(t.DType)}
	for _, d := range t.Shape {
		tp.Dims = append(tp.Dims, int64(d))
	}
	switch t.DType {
	case graph.Float32:
		tp.RawData = make([]byte, 4*len(t.F32))
		for i, v := range t.F32 {
			binary.LittleEndian.PutUint32(tp.RawData[4*i:], math.Float32bits(v))
		}
	case graph.Float16:
		tp.RawData = make([]byte, 2*len(t.F32))
		for i, v := range t.F32 {
			binary.LittleEndian.PutUint16(tp.RawData[2*i:], uint16(float16.Fromfloat32(v)))
		}
	case graph.BFloat16:
		// The values are bfloat16s held as float32s: their upper halves.
		tp.RawData = make([]byte, 2*len(t.F32))
		for i, v := range t.F32 {
			binary.LittleEndian.PutUint16(tp.RawData[2*i:], uint16(math.Float32bits(v)>>16))
		}
	default:
		w := intWidth(t.DType)
		tp.RawData = make([]byte, w*len(t.I64))
		for i, v := range t.I64 {
			b := tp.RawData[w*i:]
			switch w {
			case 8:
				binary.LittleEndian.PutUint64(b, uint64(v))
			case 4:
				binary.LittleEndian.PutUint32(b, uint32(v))
			case 2:
				binary.LittleEndian.PutUint16(b, uint16(v))
			default:
				b[0] = byte(v)
			}
		}
	}
	return tp
}

// EncodeTensor serializes t as a TensorProto named name.
func EncodeTensor(name string, t *graph.Tensor) ([]byte, error) {
	return proto.Marshal(TensorToProto(name, t))
}

func attrToProto(name string, a graph.Attr) (*onnxpb.AttributeProto, error) {
	ap := &onnxpb.AttributeProto{Name: name}
	switch a.Kind {
	case graph.AttrFloat:
		ap.Type, ap.F = onnxpb.AttributeProto_FLOAT, a.F
	case graph.AttrInt:
		ap.Type, ap.I = onnxpb.AttributeProto_INT, a.I
	case graph.AttrString:
		ap.Type, ap.S = onnxpb.AttributeProto_STRING, []byte(a.S)
	case graph.AttrFloats:
		ap.Type, ap.Floats = onnxpb.AttributeProto_FLOATS, a.Floats
	case graph.AttrInts:
		ap.Type, ap.Ints = onnxpb.AttributeProto_INTS, a.Ints
	case graph.AttrStrings:
		ap.Type = onnxpb.AttributeProto_STRINGS
		for _, s := range a.Strings {
			ap.Strings = append(ap.Strings, []byte(s))
		}
	case graph.AttrTensor:
		ap.Type, ap.T = onnxpb.AttributeProto_TENSOR, TensorToProto("", a.T)
	case graph.AttrGraph:
		if a.G == nil {
			return nil, fmt.Errorf("attribute %s: graph attribute without a graph", name)
		}
		sub, err := graphToProto(a.G)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		ap.Type, ap.G = onnxpb.AttributeProto_GRAPH, sub
	default:
		return nil, fmt.Errorf("attribute %s: cannot encode a %s attribute", name, a.Kind)
	}
	return ap, nil
}
