package onnx

// The models of the decoder's tests, for the tests of package onnx_test
// that also infer shapes (through package frontend, which imports this
// one).
var (
	Sample = sample
	WithIf = withIf
	Edited = edited
)
