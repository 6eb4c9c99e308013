package te_test

import (
	"bytes"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// roundTrip encodes d, decodes it and encodes the result again.
func roundTrip(t *testing.T, d *te.DAG) (*te.DAG, []byte) {
	t.Helper()
	data, err := d.MarshalJSON()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	back, err := te.UnmarshalDAG(data)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, data)
	}
	again, err := back.MarshalJSON()
	if err != nil {
		t.Fatalf("encode the decoded DAG: %v", err)
	}
	if !bytes.Equal(data, again) {
		t.Fatalf("encoding changed after a round trip:\n%s\n%s", data, again)
	}
	return back, data
}

func TestDAGCodecRoundTripsEveryExample(t *testing.T) {
	dags := tetest.DAGs()
	keys := make([]string, 0, len(dags))
	for k := range dags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := dags[k]
		back, _ := roundTrip(t, d)
		if got, want := back.String(), d.String(); got != want {
			t.Errorf("%s: names or bodies differ after a round trip:\n%s\nwant\n%s", k, got, want)
		}
		if back.WorkloadKey() != d.WorkloadKey() {
			t.Errorf("%s: workload key %s, want %s", k, back.WorkloadKey(), d.WorkloadKey())
		}
		for i, tt := range d.Tensors {
			b := back.Tensors[i]
			if b.Const != tt.Const || b.Reused != tt.Reused || b.Reducer != tt.Reducer || !slices.Equal(b.Shape, tt.Shape) || len(b.ReduceAxis) != len(tt.ReduceAxis) {
				t.Errorf("%s: tensor %d (%s) differs after a round trip", k, i, tt.Name)
			}
		}
		if len(back.Inputs) != len(d.Inputs) || len(back.Outputs) != len(d.Outputs) {
			t.Errorf("%s: %d inputs and %d outputs, want %d and %d", k, len(back.Inputs), len(back.Outputs), len(d.Inputs), len(d.Outputs))
		}
	}
}

// A constant timed warm (Tensor.Reused) stays so through the JSON form a
// tune worker receives, and the workload key ignores it.
func TestDAGCodecReused(t *testing.T) {
	d := tetest.DAGs()["conv_bias_relu"]
	key := d.WorkloadKey()
	marked := 0
	for _, in := range d.Inputs {
		if in.Const {
			in.Reused = true
			marked++
		}
	}
	if marked == 0 {
		t.Fatal("conv_bias_relu has no constant input")
	}
	if d.WorkloadKey() != key {
		t.Errorf("workload key %s with reused weights, want %s", d.WorkloadKey(), key)
	}
	back, _ := roundTrip(t, d)
	for i, in := range back.Inputs {
		if in.Reused != d.Inputs[i].Reused {
			t.Errorf("input %s: reused %v after a round trip, want %v", in.Name, in.Reused, d.Inputs[i].Reused)
		}
	}
	data, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"const":true,"reused":true`, `"reused":true`, 1)
	if bad == string(data) {
		t.Fatalf("no reused constant in %s", data)
	}
	if _, err := te.UnmarshalDAG([]byte(bad)); err == nil {
		t.Error("a placeholder marked reused but not constant decoded")
	}
}

// The decoded DAG computes exactly what the original does.
func TestDAGCodecEvaluatesAlike(t *testing.T) {
	dags := tetest.DAGs()
	for _, k := range []string{"conv_bias_relu", "softmax", "layernorm", "max_pool", "conv_bn_add_relu"} {
		d, ok := dags[k]
		if !ok {
			t.Fatalf("no example %s", k)
		}
		back, _ := roundTrip(t, d)
		var ins [][]float32
		for i, in := range d.Inputs {
			buf := make([]float32, in.Size())
			for j := range buf {
				buf[j] = float32(math.Sin(float64(7*i + j)))
			}
			ins = append(ins, buf)
		}
		want, err := d.Eval(ins)
		if err != nil {
			t.Fatal(err)
		}
		got, err := back.Eval(ins)
		if err != nil {
			t.Fatal(err)
		}
		for o := range want {
			if !slices.Equal(got[o], want[o]) {
				t.Errorf("%s: output %d differs after a round trip", k, o)
			}
		}
	}
}

// Constants keep their mark and names; non-finite and negative-zero floats
// and every operator survive.
func TestDAGCodecKeepsConstantsAndSpecialValues(t *testing.T) {
	w := te.Constant("weight_0", 3, 4)
	x := te.Placeholder("data", 3, 4)
	y := te.Compute("odd name/with.dots", []int{3, 4}, func(i []tir.Expr) tir.Expr {
		idx := &tir.Binary{Op: tir.FloorMod, A: &tir.Binary{Op: tir.Add, A: i[1], B: tir.Const(5)}, B: tir.Const(4)}
		pick := &tir.Select{
			Cond: &tir.Or{A: &tir.Not{A: &tir.Compare{Op: tir.LT, A: i[0], B: tir.Const(1)}}, B: &tir.And{A: &tir.Compare{Op: tir.GE, A: i[1], B: tir.Const(2)}, B: &tir.Compare{Op: tir.NE, A: i[0], B: tir.Const(2)}}},
			T:    &tir.FloatImm{V: math.Inf(-1)},
			F:    &tir.FloatImm{V: math.Copysign(0, -1)},
		}
		v := &tir.Binary{Op: tir.Max, A: w.At(i[0], idx), B: &tir.Call{Fn: "pow", Args: []tir.Expr{x.At(i...), &tir.FloatImm{V: 0.1}}}}
		return &tir.Binary{Op: tir.Add, A: v, B: &tir.Binary{Op: tir.Mul, A: pick, B: &tir.Cast{To: tir.Float32, X: i[0]}}}
	})
	d, err := te.NewDAG(y)
	if err != nil {
		t.Fatal(err)
	}
	back, data := roundTrip(t, d)
	if !back.Inputs[0].Const || back.Inputs[0].Name != "weight_0" || back.Inputs[1].Const {
		t.Errorf("constant marks or names lost: %v %v", back.Inputs[0], back.Inputs[1])
	}
	if back.String() != d.String() {
		t.Errorf("round trip changed the DAG:\n%s\nwant\n%s", back, d)
	}
	if !strings.Contains(string(data), `"-Inf"`) || !strings.Contains(string(data), `"-0"`) {
		t.Errorf("special floats not written as such: %s", data)
	}
}

func TestUnmarshalDAGRejectsBadInput(t *testing.T) {
	good := `{"v":1,"vars":[{"name":"i0","type":"int"}],"tensors":[{"name":"A","shape":[4]},{"name":"B","shape":[4],"axis":[0],"body":{"k":"load","buf":0,"a":[{"k":"var","v":0}]}}],"outputs":[1]}`
	if _, err := te.UnmarshalDAG([]byte(good)); err != nil {
		t.Fatalf("the good example: %v", err)
	}
	cases := []struct{ name, in, want string }{
		{"not json", `{`, "decode DAG"},
		{"version", `{"v":3}`, "format version 3"},
		{"no outputs", `{"v":1,"tensors":[{"name":"A","shape":[4]}]}`, "no outputs"},
		{"output range", strings.Replace(good, `"outputs":[1]`, `"outputs":[7]`, 1), "output 0: tensor 7"},
		{"placeholder output", strings.Replace(good, `"outputs":[1]`, `"outputs":[0]`, 1), "placeholder"},
		{"zero extent", strings.Replace(good, `"shape":[4]}`, `"shape":[0]}`, 1), "tensor 0 (A): dimension 0 has extent 0"},
		{"huge", strings.Replace(good, `"shape":[4]}`, `"shape":[65536,65536,4]}`, 1), "elements"},
		{"later tensor", strings.Replace(good, `"buf":0`, `"buf":1`, 1), "tensor 1 (B): load of tensor 1"},
		{"rank", strings.Replace(good, `"a":[{"k":"var","v":0}]`, `"a":[]`, 1), "with 0 indices, rank 1"},
		{"float index", strings.Replace(good, `"a":[{"k":"var","v":0}]`, `"a":[{"k":"float","f":"1"}]`, 1), "index of type float32"},
		{"unknown kind", strings.Replace(good, `"k":"var"`, `"k":"lambda"`, 1), `unknown expression kind "lambda"`},
		{"unbound var", strings.Replace(good, `"axis":[0]`, `"axis":[1]`, 1), "axis variable 1 of 1"},
		{"var type", strings.Replace(good, `"type":"int"`, `"type":"float32"`, 1), "has type float32"},
		{"bad type", strings.Replace(good, `"type":"int"`, `"type":"complex"`, 1), `unknown type "complex"`},
		{"reducer", strings.Replace(good, `"axis":[0],`, `"axis":[0],"reducer":"median",`, 1), `unknown reducer "median"`},
		{"bad float", strings.Replace(good, `"body":{"k":"load","buf":0,"a":[{"k":"var","v":0}]}`, `"body":{"k":"float","f":"one"}`, 1), `float "one"`},
		{"int body", strings.Replace(good, `"body":{"k":"load","buf":0,"a":[{"k":"var","v":0}]}`, `"body":{"k":"var","v":0}`, 1), "body of type int"},
		{"call", strings.Replace(good, `"body":{"k":"load"`, `"body":{"k":"call","fn":"system","a":[]},"x":{"k":"load"`, 1), `unknown function "system"`},
		{"int division", strings.Replace(good, `{"k":"var","v":0}`, `{"k":"bin","op":"/","a":[{"k":"var","v":0},{"k":"int","i":2}]}`, 1), "binary / of int"},
		{"mixed", strings.Replace(good, `{"k":"var","v":0}`, `{"k":"bin","op":"+","a":[{"k":"var","v":0},{"k":"float","f":"2"}]}`, 1), "bin + of int and float32"},
		{"select", strings.Replace(good, `{"k":"var","v":0}`, `{"k":"select","a":[{"k":"int","i":1},{"k":"int","i":1},{"k":"int","i":1}]}`, 1), "select on int"},
		{"arity", strings.Replace(good, `{"k":"var","v":0}`, `{"k":"not","a":[]}`, 1), "not  with 0 operands, want 1"},
		{"unreached", strings.Replace(good, `],"outputs"`, `,{"name":"C","shape":[1]}],"outputs"`, 1), "3 tensors, of which the outputs reach 2"},
		{"order", `{"v":1,"vars":[{"name":"i0","type":"int"}],"tensors":[{"name":"A","shape":[4]},{"name":"B","shape":[4]},{"name":"C","shape":[4],"axis":[0],"body":{"k":"bin","op":"+","a":[{"k":"load","buf":1,"a":[{"k":"var","v":0}]},{"k":"load","buf":0,"a":[{"k":"var","v":0}]}]}}],"outputs":[2]}`, "tensor 0 (A) is not in the DAG's topological order (B is there)"},
	}
	for _, c := range cases {
		_, err := te.UnmarshalDAG([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// FuzzUnmarshalDAG: decoding never panics, and whatever decodes encodes
// back to a form that decodes to the same encoding.
func FuzzUnmarshalDAG(f *testing.F) {
	dags := tetest.DAGs()
	for _, k := range []string{"conv_bias_relu", "softmax", "matmul_bias_relu", "max_pool", "reduce_small_output"} {
		data, err := dags[k].MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := te.UnmarshalDAG(data)
		if err != nil {
			return
		}
		enc, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("a decoded DAG does not encode: %v", err)
		}
		back, err := te.UnmarshalDAG(enc)
		if err != nil {
			t.Fatalf("the encoding of a decoded DAG does not decode: %v\n%s", err, enc)
		}
		again, err := back.MarshalJSON()
		if err != nil || !bytes.Equal(enc, again) {
			t.Fatalf("not a fixed point: %v\n%s\n%s", err, enc, again)
		}
		_ = d.CanonicalString()
		_ = d.FLOPs()
	})
}
