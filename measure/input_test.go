package measure_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/te/tetest"
)

// An input read back from its wire form is the same candidate: the same
// steps, the same workload, and the same generated program.
func TestInputRoundTrip(t *testing.T) {
	tg := backend.CPU(backend.CPUConfig{Threads: 1})
	var enc measure.InputEncoder
	var dec measure.InputDecoder
	rng := rand.New(rand.NewPCG(16, 16))
	for _, name := range []string{"conv_bias_relu", "matmul_bias_relu", "softmax", "layernorm", "max_pool"} {
		d := tetest.DAGs()[name]
		s0 := schedule.NewState(d)
		var first *te.DAG
		for k := range 4 {
			st, _ := schedtest.RandomLowerable(rng, s0, 10)
			in := measure.Input{State: st, Cutoff: time.Duration(k) * time.Millisecond}
			data, err := enc.Encode(in)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			back, err := dec.Decode(data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if back.Cutoff != in.Cutoff || back.State.DAG.WorkloadKey() != d.WorkloadKey() {
				t.Errorf("%s: cutoff %v, key %s", name, back.Cutoff, back.State.DAG.WorkloadKey())
			}
			if first == nil {
				first = back.State.DAG
			} else if back.State.DAG != first {
				t.Errorf("%s: the inputs of one task decode to different DAGs", name)
			}
			want, err := tg.Generate(st)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tg.Generate(back.State)
			if err != nil {
				t.Fatalf("%s: the decoded state does not lower: %v", name, err)
			}
			if got.Code != want.Code {
				t.Errorf("%s: the decoded state generates other code", name)
			}
			// The json interfaces give the same.
			var viaJSON measure.Input
			if err := json.Unmarshal(data, &viaJSON); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(viaJSON)
			if err != nil || string(again) != string(data) {
				t.Errorf("%s: MarshalJSON of the decoded input differs: %v", name, err)
			}
		}
	}
}

func TestDecodeInputErrors(t *testing.T) {
	d := tetest.DAGs()["softmax"]
	st, _ := schedtest.RandomLowerable(rand.New(rand.NewPCG(1, 1)), schedule.NewState(d), 6)
	data, err := json.Marshal(measure.Input{State: st})
	if err != nil {
		t.Fatal(err)
	}
	other := tetest.DAGs()["relu"].WorkloadKey()
	var j map[string]json.RawMessage
	json.Unmarshal(data, &j)
	with := func(field, value string) []byte {
		m := map[string]json.RawMessage{}
		for k, v := range j {
			m[k] = v
		}
		m[field] = json.RawMessage(value)
		out, _ := json.Marshal(m)
		return out
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"not json", []byte("["), "decode input"},
		{"other key", with("workload", `"`+other+`"`), "the DAG's workload key is"},
		{"bad dag", with("dag", `{"v":9}`), "format version 9"},
		{"bad steps", with("steps", `[["NOPE"]]`), "steps"},
		{"steps of another DAG", with("steps", `[["SP",40,0,[2]]]`), "replay"},
		{"negative cutoff", with("cutoff_ns", `-5`), "negative cutoff"},
	}
	for _, c := range cases {
		var dec measure.InputDecoder
		_, err := dec.Decode(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// FuzzDecodeInput: decoding an input never panics, and a decoded input
// encodes to a form that decodes again.
func FuzzDecodeInput(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, name := range []string{"softmax", "matmul_bias_relu"} {
		st, _ := schedtest.RandomLowerable(rng, schedule.NewState(tetest.DAGs()[name]), 8)
		data, err := json.Marshal(measure.Input{State: st})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var dec measure.InputDecoder
		in, err := dec.Decode(data)
		if err != nil {
			return
		}
		enc, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("a decoded input does not encode: %v", err)
		}
		if _, err := dec.Decode(enc); err != nil {
			t.Fatalf("a re-encoded input does not decode: %v", err)
		}
	})
}
