package onnx_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// FuzzDecode feeds arbitrary bytes through decoding, binding, shape
// inference and the passes: each step may fail, none may panic or hang.
// Run with: go test ./graph/onnx -run '^$' -fuzz FuzzDecode -fuzztime 1m
func FuzzDecode(f *testing.F) {
	for _, g := range []*graph.Graph{onnx.Sample(), onnx.WithIf()} {
		if data, err := onnx.Encode(g); err == nil {
			f.Add(data)
		}
	}
	// A few of ONNX's test models, when installed, as seeds.
	for _, name := range []string{"node/test_reshape_extended_dims", "node/test_slice_neg_steps", "node/test_batchnorm_example",
		"pytorch-converted/test_Conv2d_depthwise_padded", "pytorch-operator/test_operator_chunk", "node/test_constantofshape_float_ones", "node/test_if"} {
		if data, err := os.ReadFile(filepath.Join("/usr/share/libonnx-testdata/data", name, "model.onnx")); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := onnx.Decode(data, "fuzz.onnx")
		if err != nil {
			return
		}
		// Bind every dynamic dimension to 2 (and unknown ranks to [2]).
		dims := map[string][]int{}
		for _, name := range g.Inputs {
			v := g.Values[name]
			s := []int{2}
			if v.Shape != nil {
				s = make([]int, len(v.Shape))
				for i, d := range v.Shape {
					s[i] = d
					if d < 0 {
						s[i] = 2
					}
				}
			}
			dims[name] = s
		}
		if err := g.Bind(dims); err != nil {
			return
		}
		if err := frontend.RunPasses(g, nil); err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("passes left an invalid graph: %v", err)
		}
		if _, err := onnx.Encode(g); err != nil {
			t.Fatalf("cannot encode a graph that decoded: %v", err)
		}
	})
}
