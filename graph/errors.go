package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the graph, grouped by when they happen.

// ErrUnsupported is wrapped by every error about a model feature Tessera
// does not handle (an op, a data type, external data, a non-tensor type).
// It is returned when decoding, inferring shapes or lowering; callers tell
// such models apart from malformed ones with errors.Is.
var ErrUnsupported = errors.New("unsupported")

// UnsupportedOpError is returned when a node's op has no shape rule
// (frontend's shape inference: no ops.Op defines it) or no lowering
// (partition).
type UnsupportedOpError struct {
	Op, Domain string
	Opset      int
	Node       string
}

func (e *UnsupportedOpError) Error() string {
	op := e.Op
	if e.Domain != "" && e.Domain != "ai.onnx" {
		op = e.Domain + "." + e.Op
	}
	return fmt.Sprintf("unsupported op %s (opset %d) at node %s", op, e.Opset, e.Node)
}

func (e *UnsupportedOpError) Unwrap() error { return ErrUnsupported }

// Unsupportedf returns an error wrapping ErrUnsupported.
func Unsupportedf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnsupported)
}

// NotConstantError is returned when an op needs the contents of a value
// (Reshape's shape, Clip's bounds, Slice's starts, ...) to define its
// output but the value is computed at run time. A caller that knows the
// value (a test, or a user freezing an input) can Freeze it and retry.
type NotConstantError struct {
	Value string // the value whose contents are needed
	Node  string
	Op    string
	What  string // the operand's role: "shape", "min", "axes", ...
}

func (e *NotConstantError) Error() string {
	return fmt.Sprintf("%s at node %s: %s input %s must be a constant (it is computed at run time)", e.Op, e.Node, e.What, e.Value)
}

// UnboundDimsError is returned by Bind and CheckBound (and so by
// frontend.InferShapes) when graph inputs still have dynamic dimensions.
type UnboundDimsError struct {
	Dims []UnboundDim
}

// UnboundDim is one dynamic dimension of a graph input.
type UnboundDim struct {
	Input string
	Index int
	Param string // the symbolic name, or "" for an unnamed dimension
}

func (e *UnboundDimsError) Error() string {
	parts := make([]string, len(e.Dims))
	for i, d := range e.Dims {
		if d.Param != "" {
			parts[i] = fmt.Sprintf("%s[%d] (%s)", d.Input, d.Index, d.Param)
		} else {
			parts[i] = fmt.Sprintf("%s[%d]", d.Input, d.Index)
		}
	}
	return "dynamic dimensions are not bound (use --input name=d0,d1,...): " + strings.Join(parts, ", ")
}

// ControlFlowError is returned when a control-flow node (If) branches on a
// value computed at run time: kernels are compiled for one path, so the
// condition must be known once the inputs are bound (or frozen). It wraps
// ErrUnsupported and a *NotConstantError for the condition, so a caller
// that knows the inputs behind it can freeze them and retry.
type ControlFlowError struct {
	Op, Node string
	Opset    int
	Cond     string   // the value that decides (a condition, a trip count)
	What     string   // what it is: "condition" when empty
	Inputs   []string // the graph inputs it is computed from
}

func (e *ControlFlowError) what() string {
	if e.What == "" {
		return "condition"
	}
	return e.What
}

func (e *ControlFlowError) Error() string {
	msg := fmt.Sprintf("%s (opset %d) at node %s: %s %s is computed at run time", e.Op, e.Opset, e.Node, e.what(), e.Cond)
	if len(e.Inputs) > 0 {
		msg += " from input " + strings.Join(e.Inputs, ", ")
	}
	msg += ": control flow on run-time data is unsupported"
	if len(e.Inputs) > 0 {
		msg += " (freeze the input to a value: --freeze " + e.Inputs[0] + "=VALUE)"
	}
	return msg
}

func (e *ControlFlowError) Unwrap() []error {
	return []error{ErrUnsupported, &NotConstantError{Value: e.Cond, Node: e.Node, Op: e.Op, What: e.what()}}
}
