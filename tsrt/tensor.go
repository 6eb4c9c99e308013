package tsrt

import (
	"fmt"
	"unsafe"

	"github.com/x448/float16"
)

// DType is an element type, as tessera.h's tessera_dtype: ONNX's
// TensorProto numbers.
type DType int32

const (
	Float32 DType = 1
	Uint8   DType = 2
	Int8    DType = 3
	Uint16  DType = 4
	Int16   DType = 5
	Int32   DType = 6
	Int64   DType = 7
	Bool    DType = 9 // one byte per element, 0 or 1
	Float16 DType = 10
	Uint32  DType = 12
)

var dtypes = map[DType]struct {
	name string
	size int
}{
	Float32: {"float32", 4}, Uint8: {"uint8", 1}, Int8: {"int8", 1}, Uint16: {"uint16", 2}, Int16: {"int16", 2},
	Int32: {"int32", 4}, Int64: {"int64", 8}, Bool: {"bool", 1}, Float16: {"float16", 2}, Uint32: {"uint32", 4},
}

func (d DType) String() string {
	if t, ok := dtypes[d]; ok {
		return t.name
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

// Size is the bytes of one element (0 for an unknown dtype).
func (d DType) Size() int { return dtypes[d].size }

// ParseDType returns the dtype of a name ("float32", "int64", ...).
func ParseDType(name string) (DType, error) {
	for d, t := range dtypes {
		if t.name == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("tessera: unknown dtype %q", name)
}

// Status is tessera.h's tessera_status.
type Status int32

const (
	OK              Status = 0
	InvalidArgument Status = 1
	ShapeMismatch   Status = 2
	DTypeMismatch   Status = 3
	BadWeights      Status = 4
	ABIMismatch     Status = 5
	UnsupportedCPU  Status = 6
	OutOfMemory     Status = 7
	KernelFailed    Status = 8
	DeviceError     Status = 9
	// ValueOutOfRange: a value the model cannot take (an index outside
	// its axis, an integer float32 would round).
	ValueOutOfRange Status = 10
	// NotFound: no model folder, library or weights file at the path.
	NotFound Status = 11
	// BadLibrary: a truncated, damaged or foreign library, found before
	// it was loaded.
	BadLibrary Status = 12
)

var statusNames = [...]string{"TESSERA_OK", "TESSERA_INVALID_ARGUMENT", "TESSERA_SHAPE_MISMATCH", "TESSERA_DTYPE_MISMATCH",
	"TESSERA_BAD_WEIGHTS", "TESSERA_ABI_MISMATCH", "TESSERA_UNSUPPORTED_CPU", "TESSERA_OUT_OF_MEMORY",
	"TESSERA_KERNEL_FAILED", "TESSERA_DEVICE_ERROR", "TESSERA_VALUE_OUT_OF_RANGE", "TESSERA_NOT_FOUND",
	"TESSERA_BAD_LIBRARY"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("TESSERA_STATUS_%d", int32(s))
}

// Error is a failed call of the library: its status and message.
type Error struct {
	Status Status
	Msg    string
}

func (e *Error) Error() string { return e.Msg + " (" + e.Status.String() + ")" }

// Is reports whether target is an *Error of the same status, so that
// errors.Is(err, &runtime.Error{Status: runtime.NotFound}) tells a
// mistake's kind whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Msg == "" || t.Msg == e.Msg)
}

// errorf returns an *Error of status st with a formatted message.
func errorf(st Status, format string, args ...any) *Error {
	return &Error{Status: st, Msg: fmt.Sprintf(format, args...)}
}

// Tensor is a dense row-major tensor: Data holds its elements in the
// machine's byte order. Name is optional in Model.RunInto (when set, it
// must be the name of the model's tensor at that position); Model.Run and
// Model.RunNamed set it on the tensors they return.
type Tensor struct {
	DType DType
	Shape []int64
	Data  []byte
	Name  string
}

// NewTensor returns a tensor viewing data (no copy), of the dtype of its
// elements.
func NewTensor[T Element](shape []int64, data []T) Tensor {
	var z T
	return Tensor{DType: dtypeOf(z), Shape: shape, Data: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(data))), len(data)*int(unsafe.Sizeof(z)))}
}

// Element is a Go type with a tessera dtype (bool as one byte; float16 as
// github.com/x448/float16's Float16, its bits).
type Element interface {
	float32 | uint8 | int8 | uint16 | int16 | int32 | int64 | bool | uint32 | float16.Float16
}

func dtypeOf(v any) DType {
	switch v.(type) {
	case float32:
		return Float32
	case uint8:
		return Uint8
	case int8:
		return Int8
	case uint16:
		return Uint16
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case bool:
		return Bool
	case uint32:
		return Uint32
	case float16.Float16:
		return Float16
	}
	return 0
}

// Values returns t's elements as a []T viewing its data (no copy); T must
// be the Go type of t's dtype.
func Values[T Element](t Tensor) ([]T, error) {
	var z T
	if dtypeOf(z) != t.DType {
		return nil, fmt.Errorf("tessera: a %s tensor read as %s", t.DType, dtypeOf(z))
	}
	n := len(t.Data) / int(unsafe.Sizeof(z))
	if n == 0 {
		return []T{}, nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&t.Data[0])), n), nil
}
