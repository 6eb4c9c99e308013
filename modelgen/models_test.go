package modelgen

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
)

// params counts the trainable parameters of g as the frameworks do: every
// float constant except BatchNormalization's running statistics.
func params(g *graph.Graph) int {
	n := 0
	for _, name := range g.ConstNames() {
		c := g.Values[name].Const
		if c.DType != graph.Float32 || strings.HasSuffix(name, ".running_mean") || strings.HasSuffix(name, ".running_var") ||
			strings.HasPrefix(name, "relu6.") || c.Len() == 1 {
			continue
		}
		n += c.Len()
	}
	return n
}

// The architectures have exactly the parameter counts of their reference
// implementations (torchvision, Hugging Face's BertLayer).
func TestParams(t *testing.T) {
	for _, c := range []struct {
		name string
		want int
	}{
		{"tiny", 3*8*9 + 2*8 + 8*16*9 + 16 + 16*10 + 10},
		{"resnet18", 11_689_512},
		{"resnet50", 25_557_032},
		{"mobilenetv2", 3_504_872},
		{"bert_layer", 7_087_872},
		{"bert_layer_gelu", 7_087_872},
	} {
		g, err := Build(c.name, DefaultSeed)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := params(g); got != c.want {
			t.Errorf("%s: %d parameters, want %d", c.name, got, c.want)
		}
	}
}

// Every model is written, read back and simplified; its outputs have the
// expected shapes.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, m := range Models {
		t.Run(m.Name, func(t *testing.T) {
			if m.Large && testing.Short() {
				t.Skip("large model in -short mode")
			}
			want, err := m.Build(DefaultSeed)
			if err != nil {
				t.Fatal(err)
			}
			path, err := Generate(dir, m.Name, DefaultSeed)
			if err != nil {
				t.Fatal(err)
			}
			g, err := onnx.DecodeFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Nodes) != len(want.Nodes) || !slices.Equal(g.Inputs, want.Inputs) || !slices.Equal(g.Outputs, want.Outputs) {
				t.Errorf("decoded %d nodes, inputs %v, outputs %v; built %d, %v, %v",
					len(g.Nodes), g.Inputs, g.Outputs, len(want.Nodes), want.Inputs, want.Outputs)
			}
			if got, w := params(g), params(want); got != w {
				t.Errorf("decoded %d parameters, built %d", got, w)
			}
			// A dynamic model binds its symbols first: N=2; B=2, S=40.
			switch m.Name {
			case "resnet18_dynamic":
				err = g.Bind(map[string][]int{"input": {2, 3, 224, 224}})
			case "bert_encoder_dynamic":
				err = g.Bind(map[string][]int{"input_ids": {2, 40}, "attention_mask": {2, 40}})
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := frontend.RunPasses(g, nil); err != nil {
				t.Fatal(err)
			}
			out := g.Values[g.Outputs[0]].Shape
			wantShape := []int{1, 1000}
			switch {
			case m.Name == "tiny":
				wantShape = []int{1, 10}
			case m.Name == "bert_encoder":
				wantShape = []int{1, 64, 256}
			case m.Name == "bert_encoder_dynamic":
				wantShape = []int{2, 40, 256}
			case m.Name == "resnet18_dynamic":
				wantShape = []int{2, 1000}
			case strings.HasPrefix(m.Name, "bert"):
				wantShape = []int{1, 128, 768}
			}
			// What reads run-time data stays: the encoder's embedding lookup
			// of its input ids, and the unsqueezed attention mask.
			runTime := map[string]bool{"/embeddings/word_embeddings/Gather": true, "/Unsqueeze": true}
			if !slices.Equal(out, wantShape) {
				t.Errorf("output shape %v, want %v", out, wantShape)
			}
			// DenseNet's: the concatenations of each block's features, and
			// the pre-activation norms that read them (norm1, a transition's
			// norm, norm5), which follow no convolution to fold into.
			dense := func(n *graph.Node) bool {
				return m.Name == "densenet121" && (n.OpType == "Concat" ||
					n.OpType == "BatchNormalization" && (strings.Contains(n.Name, "/norm1/") || strings.Contains(n.Name, "/norm/") || strings.Contains(n.Name, "/norm5/")))
			}
			for _, n := range g.Nodes {
				switch n.OpType {
				case "BatchNormalization", "Shape", "Gather", "Concat", "Unsqueeze":
					if dense(n) {
						continue
					}
					if !runTime[n.Name] || !strings.HasPrefix(m.Name, "bert_encoder") {
						t.Errorf("node %s (%s) survived the passes", n.Name, n.OpType)
					}
				}
			}
		})
	}
}

// The same seed gives the same bytes; another seed other weights.
func TestDeterministic(t *testing.T) {
	encode := func(seed uint64) []byte {
		g, err := Tiny(seed)
		if err != nil {
			t.Fatal(err)
		}
		data, err := onnx.Encode(g)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b, c := encode(1), encode(1), encode(2)
	if !bytes.Equal(a, b) {
		t.Error("two encodings with seed 1 differ")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 1 and 2 give the same model")
	}
}

// testdata/tiny.onnx at the repository root is what genmodels writes.
func TestCommittedTiny(t *testing.T) {
	path := filepath.Join("..", "testdata", "tiny.onnx")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Tiny(DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := onnx.Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: regenerate it with go run ./cmd/genmodels -o testdata tiny", path)
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("resnet50"); err != nil {
		t.Error(err)
	}
	_, err := Build("resnet51", 1)
	if err == nil || !strings.Contains(err.Error(), `unknown model "resnet51"`) || !strings.Contains(err.Error(), "resnet50") {
		t.Errorf("unknown model: %v", err)
	}
	if _, err := BERT(BERTConfig{Name: "b", Seq: 8, Hidden: 10, Heads: 3, FFN: 8, Opset: 17}, 1); err == nil {
		t.Error("BERT with 10 hidden units in 3 heads: no error")
	}
}

// The encoder carries what PyTorch's export of BertModel does: int64 ids
// gathered at run time, the mask made additive by Cast, Equal and Where,
// and every reshape's target computed by Shape → Gather → Unsqueeze →
// Concat.
func TestBERTEncoderAsExported(t *testing.T) {
	c := BERTEncoderSmall
	c.Seq, c.Hidden, c.Heads, c.FFN, c.Vocab = 8, 16, 2, 32, 50
	g, err := BERTEncoder(c, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range g.Inputs {
		if g.Values[in].DType != graph.Int64 {
			t.Errorf("input %s is %s, want int64", in, g.Values[in].DType)
		}
	}
	prod := g.Producers()
	count := map[string]int{}
	gathersIDs, chains := false, 0
	for _, n := range g.Nodes {
		count[n.OpType]++
		if n.OpType == "Gather" && n.Input(1) == "input_ids" {
			gathersIDs = true
		}
		if n.OpType == "Reshape" {
			if cat := prod[n.Input(1)]; cat != nil && cat.OpType == "Concat" {
				if u := prod[cat.Input(0)]; u != nil && u.OpType == "Unsqueeze" {
					if ga := prod[u.Input(0)]; ga != nil && ga.OpType == "Gather" && prod[ga.Input(0)] != nil && prod[ga.Input(0)].OpType == "Shape" {
						chains++
					}
				}
			}
		}
	}
	if !gathersIDs || count["Cast"] == 0 || count["Equal"] == 0 || count["Where"] == 0 {
		t.Errorf("ops %v: want a Gather of input_ids, Cast, Equal and Where", count)
	}
	if chains != count["Reshape"] || chains != 4*c.Layers {
		t.Errorf("%d of %d reshapes read Shape → Gather → Unsqueeze → Concat, want all %d", chains, count["Reshape"], 4*c.Layers)
	}
}
