package tetest

import (
	"github.com/tessera-ml/tessera/te"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestOpNames(t *testing.T) {
	names := te.OpNames()
	if !sort.StringsAreSorted(names) {
		t.Errorf("OpNames not sorted: %v", names)
	}
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Errorf("OpNames repeats %s", names[i])
		}
	}
	// every op of the brief is there
	for _, op := range []string{"MatMul", "Gemm", "Conv", "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
		"Tanh", "Exp", "Log", "Sqrt", "Erf", "Gelu", "Clip", "Neg", "Abs", "Reciprocal", "Add", "Sub", "Mul", "Div",
		"Pow", "Max", "Min", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
		"Softmax", "LogSoftmax", "ReduceSum", "ReduceMean", "ReduceMax", "Transpose", "Reshape", "Flatten", "Squeeze",
		"Unsqueeze", "Concat", "Slice", "Pad", "LayerNormalization"} {
		if !slices.Contains(names, op) {
			t.Errorf("OpNames lacks %s", op)
		}
	}
}

// exampleKey names the example DAG of each op.
var exampleKey = map[string]string{
	"Abs": "abs", "Add": "add", "AveragePool": "average_pool", "BatchNormalization": "batch_norm",
	"Clip": "clip", "Concat": "concat", "Conv": "conv", "Div": "div", "Erf": "erf", "Exp": "exp",
	"Expand": "expand", "Flatten": "flatten", "Gelu": "gelu", "Gemm": "gemm",
	"GlobalAveragePool": "global_average_pool", "GlobalMaxPool": "global_max_pool",
	"HardSigmoid": "hard_sigmoid", "HardSwish": "hard_swish", "LayerNormalization": "layernorm",
	"LeakyRelu": "leaky_relu", "Log": "log", "LogSoftmax": "log_softmax", "MatMul": "matmul", "Max": "max",
	"MaxPool": "max_pool", "Min": "min", "Mul": "mul", "Neg": "neg", "Pad": "pad", "Pow": "pow",
	"Reciprocal": "reciprocal", "ReduceMax": "reduce_max", "ReduceMean": "reduce_mean", "ReduceMin": "reduce_min",
	"ReduceSum": "reduce_sum", "Relu": "relu", "Reshape": "reshape", "Sigmoid": "sigmoid", "Slice": "slice",
	"Softmax": "softmax", "Sqrt": "sqrt", "Squeeze": "squeeze", "Sub": "sub", "Tanh": "tanh",
	"Transpose": "transpose", "Unsqueeze": "unsqueeze", "ConvTranspose": "conv_transpose", "Gather": "gather",
	"GatherElements": "gather_elements", "GatherND": "gather_nd", "OneHot": "one_hot",
	"ScatterElements": "scatter_elements", "ScatterND": "scatter_nd", "CumSum": "cumsum", "Einsum": "einsum", "LRN": "lrn",
	"ReverseSequence": "reverse_sequence", "TopK": "top_k", "GridSample": "grid_sample", "DFT": "dft", "STFT": "stft",
}

func TestDAGs(t *testing.T) {
	dags := DAGs()
	for _, op := range te.OpNames() {
		key, ok := exampleKey[op]
		if !ok || dags[key] == nil {
			t.Errorf("no example DAG for %s", op)
		}
	}
	for _, key := range []string{"conv_bias_relu", "matmul_bias_relu", "conv_bn_add_relu", "elemwise_chain",
		"softmax", "layernorm", "reduce_small_output"} {
		if dags[key] == nil {
			t.Errorf("no example DAG %q", key)
		}
	}
	if d := dags["reduce_small_output"]; d != nil {
		if o := d.Outputs[0]; !slices.Equal(o.Shape, []int{4}) || !slices.Equal(d.Inputs[0].Shape, []int{4, 1024}) {
			t.Errorf("reduce_small_output: %v -> %v", d.Inputs[0].Shape, o.Shape)
		}
	}
	if d := dags["conv_bias_relu"]; d != nil {
		var names []string
		for _, x := range d.Tensors {
			names = append(names, x.Name)
		}
		if got := strings.Join(names, " "); got != "X conv_pad W conv bias conv_bias relu" {
			t.Errorf("conv_bias_relu tensors: %s", got)
		}
	}
	keys := make([]string, 0, len(dags))
	for k := range dags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range keys {
		d := dags[k]
		inputs := make([][]float32, len(d.Inputs))
		for i, in := range d.Inputs {
			inputs[i] = make([]float32, in.Size())
			te.RandomSlots(in.DType(), inputs[i], rng.Float64)
		}
		start := time.Now()
		out, err := d.Eval(inputs)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if el := time.Since(start); el > 500*time.Millisecond {
			t.Errorf("%s: Eval took %v", k, el)
		}
		for _, v := range out[0] {
			if d.Outputs[0].DType().IntElem() {
				break // every integer is finite
			}
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Errorf("%s: non-finite output %v", k, v)
				break
			}
		}
		for _, x := range d.Tensors {
			if x.Name == "" {
				t.Errorf("%s: unnamed tensor", k)
			}
		}
	}
	// fresh DAGs on every call, with stable workload keys
	again := DAGs()
	for _, k := range keys {
		if again[k] == dags[k] {
			t.Errorf("%s: DAGs returned the same DAG twice", k)
		}
		if again[k].WorkloadKey() != dags[k].WorkloadKey() {
			t.Errorf("%s: workload key changed between calls", k)
		}
	}
}
