// Package onnx reads and writes ONNX model files: Decode turns a serialized
// ModelProto into a *graph.Graph, Encode does the reverse. The protobuf
// messages are in package onnxpb. It knows no op: package frontend's Load
// reads a model the way every command takes it (inputs frozen and bound,
// shapes inferred by the ops' rules, the graph passes run).
//
// Tensors are float32, float16 (held as float32 values, exactly), integer
// (int8 to int64, uint8 to uint32) or bool; a tensor of another data type
// (bfloat16, float64, string), a tensor stored
// outside the file and a value of a non-tensor type are rejected with an error that names it and wraps
// graph.ErrUnsupported. Malformed input is an error, never a panic, and no
// tensor is allocated before its size is checked against the bytes that
// hold it.
package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/x448/float16"
	"google.golang.org/protobuf/proto"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx/onnxpb"
)

// DecodeFile reads and decodes the model file at path; errors name the
// file.
func DecodeFile(path string) (*graph.Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(data, path)
}

// Decode decodes a serialized ModelProto. name (usually the file name)
// prefixes every error and becomes the graph's name when the model's graph
// has none.
func Decode(data []byte, name string) (*graph.Graph, error) {
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: not an ONNX model: %v", name, err)
	}
	g, err := FromProto(&m, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

// The model versions the decoder accepts: IR versions 3 (ONNX 1.0) to 10
// (ONNX 1.16), and the default domain's operators up to opset 21 (ONNX
// 1.16). A model outside them is refused by name rather than read as if
// it were within.
const (
	MinIRVersion = 3
	MaxIRVersion = 10
	MaxOpset     = 21
)

// FromProto converts a decoded ModelProto; name is used when the graph has
// none.
func FromProto(m *onnxpb.ModelProto, name string) (*graph.Graph, error) {
	gp := m.GetGraph()
	if gp == nil {
		return nil, fmt.Errorf("model has no graph")
	}
	if v := m.GetIrVersion(); v < MinIRVersion || v > MaxIRVersion {
		return nil, fmt.Errorf("IR version %d: tessera reads IR versions %d to %d (ONNX 1.0 to 1.16)", v, MinIRVersion, MaxIRVersion)
	}
	opset := -1
	opsets := map[string]int{}
	for _, o := range m.GetOpsetImport() {
		if o.GetVersion() < 1 || o.GetVersion() > math.MaxInt32 {
			return nil, fmt.Errorf("opset import %q has version %d", o.GetDomain(), o.GetVersion())
		}
		d := o.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		opsets[d] = int(o.GetVersion())
		if d == "" {
			opset = int(o.GetVersion())
		}
	}
	if opset > MaxOpset {
		return nil, fmt.Errorf("opset %d of the default ONNX domain: tessera knows its operators up to opset %d", opset, MaxOpset)
	}
	if opset < 0 {
		for _, np := range gp.GetNode() {
			if d := np.GetDomain(); d == "" || d == "ai.onnx" {
				return nil, fmt.Errorf("node %q (%s) is of the default ONNX domain, but the model imports no version of it (opset_import)", np.GetName(), np.GetOpType())
			}
		}
		opset = 0 // no default-domain op is then known: see graph.UnsupportedOpError
	}
	if len(gp.GetOutput()) == 0 {
		return nil, fmt.Errorf("the graph has no outputs: nothing to compute")
	}
	g, err := graphFromProto(gp, name, opset, opsets, 0)
	if err != nil {
		return nil, err
	}
	if m.GetIrVersion() < 4 {
		g.Shadowed = nil // every initializer is listed as an input before IR 4
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// maxNesting bounds how deeply subgraphs (If's branches, Loop's body) may
// nest inside one another.
const maxNesting = 64

// graphFromProto converts the main graph (depth 0) or a subgraph (depth >
// 0) of a model. A subgraph's inputs and outputs may leave their type to
// inference; its nodes may read values of the enclosing graphs, which
// Validate checks on the whole model.
func graphFromProto(gp *onnxpb.GraphProto, name string, opset int, opsets map[string]int, depth int) (*graph.Graph, error) {
	if gp.GetName() != "" {
		name = gp.GetName()
	}
	g := graph.New(name, opset)
	g.Opsets = opsets

	for _, tp := range gp.GetInitializer() {
		if tp.GetName() == "" {
			return nil, fmt.Errorf("initializer without a name")
		}
		if g.Values[tp.GetName()] != nil {
			return nil, fmt.Errorf("initializer %s is defined twice", tp.GetName())
		}
		t, err := TensorFromProto(tp)
		if err != nil {
			return nil, err
		}
		g.AddConst(tp.GetName(), t)
	}
	for _, vi := range gp.GetInput() {
		n := vi.GetName()
		if n == "" {
			return nil, fmt.Errorf("graph input without a name")
		}
		if v := g.Values[n]; v != nil {
			if v.Const == nil {
				return nil, fmt.Errorf("graph input %s is listed twice", n)
			}
			// An initializer also listed as an input: before IR version 4
			// every initializer is; from 4 on it is a default value the
			// caller may override. Either way it is taken as a constant,
			// and (FromProto keeps Shadowed from IR 4 on) the commands say so.
			if depth == 0 {
				g.Shadowed = append(g.Shadowed, n)
			}
			continue
		}
		if depth > 0 && untyped(vi) {
			g.AddInput(n, graph.Undefined, nil)
			continue
		}
		dt, shape, params, err := valueType(vi, "input")
		if err != nil {
			return nil, err
		}
		v := g.AddInput(n, dt, shape)
		v.DimParams = params
	}
	for i, np := range gp.GetNode() {
		n, err := nodeFromProto(np, i, opset, opsets, depth)
		if err != nil {
			return nil, err
		}
		g.AddNode(n)
	}
	for _, vi := range gp.GetOutput() {
		n := vi.GetName()
		if n == "" {
			return nil, fmt.Errorf("graph output without a name")
		}
		// An output's type is inferred; a declared one must still be a
		// supported tensor type, and shape inference checks the main
		// graph's against it.
		if !untyped(vi) {
			dt, shape, _, err := valueType(vi, "output")
			if err != nil {
				return nil, err
			}
			if depth == 0 {
				if g.Declared == nil {
					g.Declared = map[string]graph.Decl{}
				}
				g.Declared[n] = graph.Decl{DType: dt, Shape: shape}
			}
		}
		g.Outputs = append(g.Outputs, n)
	}
	return g, nil
}

// untyped reports whether vi leaves its type to inference: no type, an
// empty one, or a tensor type of undefined element type.
func untyped(vi *onnxpb.ValueInfoProto) bool {
	tt := vi.GetType()
	return tt == nil || tt.GetValue() == nil || (tt.GetTensorType() != nil && tt.GetTensorType().GetElemType() == 0)
}

// valueType reads a graph input's or output's dtype and shape (-1 and the
// parameter name for a dynamic dimension; a nil shape when the rank is
// unknown).
func valueType(vi *onnxpb.ValueInfoProto, what string) (graph.DType, []int, []string, error) {
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		kind := "no type"
		switch vi.GetType().GetValue().(type) {
		case *onnxpb.TypeProto_SequenceType:
			kind = "a sequence type"
		case *onnxpb.TypeProto_MapType:
			kind = "a map type"
		case *onnxpb.TypeProto_OptionalType:
			kind = "an optional type"
		case *onnxpb.TypeProto_SparseTensorType:
			kind = "a sparse tensor type"
		}
		return 0, nil, nil, graph.Unsupportedf("%s %s has %s", what, vi.GetName(), kind)
	}
	dt, err := dtype(tt.GetElemType())
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", what, vi.GetName(), err)
	}
	if tt.GetShape() == nil {
		return dt, nil, nil, nil
	}
	shape := []int{}
	var params []string
	elems := int64(1)
	for i, d := range tt.GetShape().GetDim() {
		switch v := d.GetValue().(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue < 0 || v.DimValue > graph.MaxElems || (v.DimValue > 0 && elems > graph.MaxElems/v.DimValue) {
				return 0, nil, nil, fmt.Errorf("%s %s: dimension %d is %d", what, vi.GetName(), i, v.DimValue)
			}
			elems *= v.DimValue
			shape = append(shape, int(v.DimValue))
			params = append(params, "")
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			shape = append(shape, -1)
			params = append(params, v.DimParam)
		default:
			shape = append(shape, -1)
			params = append(params, "")
		}
	}
	return dt, shape, params, nil
}

// newerDataTypes names the data types ONNX added after the onnx.proto
// package onnxpb was generated from (ONNX 1.14 to 1.18), so that a model
// holding one is refused by the type's name.
var newerDataTypes = map[int32]string{
	17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ",
	21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1",
}

// dtype maps an ONNX data type number to a graph dtype.
func dtype(t int32) (graph.DType, error) {
	if d, ok := graph.DTypeFromONNX(t); ok {
		return d, nil
	}
	name, ok := onnxpb.TensorProto_DataType_name[t]
	if !ok {
		name, ok = newerDataTypes[t]
	}
	if !ok {
		name = fmt.Sprint(t)
	}
	return 0, graph.Unsupportedf("data type %s", name)
}

// intWidth is the size in bytes of an integer dtype's raw elements.
func intWidth(d graph.DType) int {
	switch d {
	case graph.Int64:
		return 8
	case graph.Int32, graph.Uint32:
		return 4
	case graph.Int16, graph.Uint16:
		return 2
	}
	return 1
}

// rawInt decodes one little-endian raw element of integer dtype d.
func rawInt(d graph.DType, b []byte) int64 {
	switch d {
	case graph.Int64:
		return int64(binary.LittleEndian.Uint64(b))
	case graph.Int32:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	case graph.Uint32:
		return int64(binary.LittleEndian.Uint32(b))
	case graph.Int16:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case graph.Uint16:
		return int64(binary.LittleEndian.Uint16(b))
	case graph.Int8:
		return int64(int8(b[0]))
	}
	return d.Wrap(int64(b[0])) // uint8, bool
}

func nodeFromProto(np *onnxpb.NodeProto, i int, opset int, opsets map[string]int, depth int) (*graph.Node, error) {
	n := &graph.Node{
		Name:    np.GetName(),
		OpType:  np.GetOpType(),
		Domain:  np.GetDomain(),
		Inputs:  append([]string(nil), np.GetInput()...),
		Outputs: append([]string(nil), np.GetOutput()...),
		Attrs:   map[string]graph.Attr{},
	}
	if n.Domain == "ai.onnx" {
		n.Domain = ""
	}
	if n.Name == "" {
		n.Name = fmt.Sprintf("%s_%d", n.OpType, i)
	}
	if n.OpType == "" {
		return nil, fmt.Errorf("node %s has no op type", n.Name)
	}
	if n.OpType == graph.TableLookupOp && n.Domain == "" {
		return nil, fmt.Errorf("node %s: op %s is not ONNX's (Tessera's lookup-tables pass writes it)", n.Name, n.OpType)
	}
	for _, ap := range np.GetAttribute() {
		if (ap.GetName() == graph.LayoutAttr || ap.GetName() == graph.OutLayoutAttr) && n.Domain == "" {
			return nil, fmt.Errorf("node %s (%s): attribute %s is not ONNX's (Tessera's layout pass sets it)", n.Name, n.OpType, ap.GetName())
		}
		a, err := attrFromProto(ap)
		if err != nil {
			return nil, fmt.Errorf("node %s (%s): attribute %s: %w", n.Name, n.OpType, ap.GetName(), err)
		}
		if a.Kind == graph.AttrGraph {
			if !subgraphOps[n.OpType] || (n.Domain != "" && n.Domain != "ai.onnx") {
				return nil, fmt.Errorf("node %s (%s): attribute %s is a graph, which only control-flow ops take", n.Name, n.OpType, ap.GetName())
			}
			if depth+1 > maxNesting {
				return nil, fmt.Errorf("node %s (%s): attribute %s: subgraphs nest more than %d deep", n.Name, n.OpType, ap.GetName(), maxNesting)
			}
			sub, err := graphFromProto(ap.GetG(), n.Name+"."+ap.GetName(), opset, opsets, depth+1)
			if err != nil {
				return nil, fmt.Errorf("node %s (%s): attribute %s: %w", n.Name, n.OpType, ap.GetName(), err)
			}
			a.G = sub
		}
		n.Attrs[ap.GetName()] = a
	}
	return n, nil
}

// subgraphOps are the ops of the default domain whose attributes may be
// graphs (their bodies and branches).
var subgraphOps = map[string]bool{"If": true, "Loop": true, "Scan": true}

func attrFromProto(ap *onnxpb.AttributeProto) (graph.Attr, error) {
	typ := ap.GetType()
	if ap.GetRefAttrName() != "" {
		return graph.Attr{}, graph.Unsupportedf("reference to a function attribute")
	}
	if typ == onnxpb.AttributeProto_UNDEFINED { // IR < 2: the set field tells
		switch {
		case len(ap.GetFloats()) > 0:
			typ = onnxpb.AttributeProto_FLOATS
		case len(ap.GetInts()) > 0:
			typ = onnxpb.AttributeProto_INTS
		case len(ap.GetStrings()) > 0:
			typ = onnxpb.AttributeProto_STRINGS
		case ap.GetT() != nil:
			typ = onnxpb.AttributeProto_TENSOR
		case ap.GetG() != nil:
			typ = onnxpb.AttributeProto_GRAPH
		case len(ap.GetS()) > 0:
			typ = onnxpb.AttributeProto_STRING
		case ap.GetF() != 0:
			typ = onnxpb.AttributeProto_FLOAT
		default:
			typ = onnxpb.AttributeProto_INT
		}
	}
	switch typ {
	case onnxpb.AttributeProto_FLOAT:
		return graph.Attr{Kind: graph.AttrFloat, F: ap.GetF()}, nil
	case onnxpb.AttributeProto_INT:
		return graph.Attr{Kind: graph.AttrInt, I: ap.GetI()}, nil
	case onnxpb.AttributeProto_STRING:
		return graph.Attr{Kind: graph.AttrString, S: string(ap.GetS())}, nil
	case onnxpb.AttributeProto_FLOATS:
		return graph.Attr{Kind: graph.AttrFloats, Floats: append([]float32{}, ap.GetFloats()...)}, nil
	case onnxpb.AttributeProto_INTS:
		return graph.Attr{Kind: graph.AttrInts, Ints: append([]int64{}, ap.GetInts()...)}, nil
	case onnxpb.AttributeProto_STRINGS:
		s := make([]string, len(ap.GetStrings()))
		for i, b := range ap.GetStrings() {
			s[i] = string(b)
		}
		return graph.Attr{Kind: graph.AttrStrings, Strings: s}, nil
	case onnxpb.AttributeProto_TENSOR:
		if ap.GetT() == nil {
			return graph.Attr{}, fmt.Errorf("tensor attribute without a tensor")
		}
		t, err := TensorFromProto(ap.GetT())
		if err != nil {
			return graph.Attr{}, err
		}
		return graph.Attr{Kind: graph.AttrTensor, T: t}, nil
	case onnxpb.AttributeProto_GRAPH:
		if ap.GetG() == nil {
			return graph.Attr{}, fmt.Errorf("graph attribute without a graph")
		}
		return graph.Attr{Kind: graph.AttrGraph}, nil // the caller decodes the graph
	}
	return graph.Attr{}, graph.Unsupportedf("attribute type %s", typ)
}

// TensorFromProto decodes a TensorProto holding float32, integer or bool
// data, raw or typed. Other data types and external data are unsupported;
// a size that does not match the data is an error.
func TensorFromProto(tp *onnxpb.TensorProto) (*graph.Tensor, error) {
	name := tp.GetName()
	if name == "" {
		name = "(unnamed)"
	}
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL || len(tp.GetExternalData()) > 0 {
		return nil, graph.Unsupportedf("tensor %s: external data", name)
	}
	if tp.GetSegment() != nil {
		return nil, graph.Unsupportedf("tensor %s: segmented data", name)
	}
	dt, err := dtype(tp.GetDataType())
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	shape := make([]int, len(tp.GetDims()))
	n := int64(1)
	for i, d := range tp.GetDims() {
		if d < 0 || d > graph.MaxElems || (d > 0 && n > graph.MaxElems/d) {
			return nil, fmt.Errorf("tensor %s: dims %v", name, tp.GetDims())
		}
		n *= d
		shape[i] = int(d)
	}
	t := &graph.Tensor{DType: dt, Shape: shape}
	raw := tp.GetRawData()
	switch dt {
	case graph.Float32:
		switch {
		case raw != nil:
			if int64(len(raw)) != 4*n {
				return nil, fmt.Errorf("tensor %s: %d bytes of raw data for shape %v", name, len(raw), shape)
			}
			t.F32 = make([]float32, n)
			for i := range t.F32 {
				t.F32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		case int64(len(tp.GetFloatData())) == n:
			t.F32 = append([]float32{}, tp.GetFloatData()...)
		default:
			return nil, fmt.Errorf("tensor %s: %d floats for shape %v", name, len(tp.GetFloatData()), shape)
		}
	case graph.Float16, graph.BFloat16:
		f32 := func(b uint16) float32 { return float16.Frombits(b).Float32() }
		if dt == graph.BFloat16 {
			f32 = func(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) } // a float32's upper half
		}
		var err error
		if t.F32, err = halfData(name, dt, tp, raw, shape, n, f32); err != nil {
			return nil, err
		}
	default:
		w := intWidth(dt)
		switch {
		case raw != nil:
			if int64(len(raw)) != int64(w)*n {
				return nil, fmt.Errorf("tensor %s: %d bytes of raw data for shape %v", name, len(raw), shape)
			}
			t.I64 = make([]int64, n)
			for i := range t.I64 {
				t.I64[i] = rawInt(dt, raw[w*i:])
			}
		case dt == graph.Int64 && int64(len(tp.GetInt64Data())) == n:
			t.I64 = append([]int64{}, tp.GetInt64Data()...)
		case dt == graph.Uint32 && int64(len(tp.GetUint64Data())) == n:
			t.I64 = make([]int64, n)
			for i, v := range tp.GetUint64Data() {
				t.I64[i] = dt.Wrap(int64(v))
			}
		case dt != graph.Int64 && dt != graph.Uint32 && int64(len(tp.GetInt32Data())) == n:
			t.I64 = make([]int64, n)
			for i, v := range tp.GetInt32Data() {
				t.I64[i] = dt.Wrap(int64(v))
			}
		default:
			return nil, fmt.Errorf("tensor %s: no %s data for shape %v", name, dt, shape)
		}
	}
	return t, nil
}

// DecodeTensor decodes a serialized TensorProto (the input_N.pb and
// output_N.pb files of ONNX's test data), returning its name and contents.
func DecodeTensor(data []byte) (string, *graph.Tensor, error) {
	var tp onnxpb.TensorProto
	if err := proto.Unmarshal(data, &tp); err != nil {
		return "", nil, fmt.Errorf("not an ONNX tensor: %v", err)
	}
	t, err := TensorFromProto(&tp)
	return tp.GetName(), t, err
}

// halfData decodes the n 16-bit elements of tensor tp (named name, of
// half-precision type dt: float16 or bfloat16) to float32 by f32: raw, 2
// bytes each, little-endian, or typed, each in an int32_data element's low
// 16 bits (ONNX's convention for both).
func halfData(name string, dt graph.DType, tp *onnxpb.TensorProto, raw []byte, shape []int, n int64, f32 func(uint16) float32) ([]float32, error) {
	out := make([]float32, n)
	switch {
	case raw != nil:
		if int64(len(raw)) != 2*n {
			return nil, fmt.Errorf("tensor %s: %d bytes of raw %s data for shape %v", name, len(raw), dt, shape)
		}
		for i := range out {
			out[i] = f32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case int64(len(tp.GetInt32Data())) == n:
		for i, v := range tp.GetInt32Data() {
			if v < 0 || v > math.MaxUint16 {
				return nil, fmt.Errorf("tensor %s: %s element %d is stored as %d, not 16 bits", name, dt, i, v)
			}
			out[i] = f32(uint16(v))
		}
	default:
		return nil, fmt.Errorf("tensor %s: no %s data for shape %v", name, dt, shape)
	}
	return out, nil
}
