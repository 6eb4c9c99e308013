package partition

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/modelgen"
)

// The models of package modelgen, through the whole front end: generated
// into a temporary directory, decoded, simplified by the passes and
// partitioned.

// loadGenerated writes model name and reads it back, passes run.
func loadGenerated(t *testing.T, name string) *graph.Graph {
	t.Helper()
	path, err := modelgen.Generate(t.TempDir(), name, modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.DecodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// taskList prints the tasks as "ops×weight".
func taskList(p *Plan) []string {
	var out []string
	for _, task := range p.Tasks {
		out = append(out, fmt.Sprintf("%s×%d", task.Ops(), task.Weight))
	}
	return out
}

func countOps(grp *Group, op string) int {
	n := 0
	for _, node := range grp.Nodes {
		if node.OpType == op {
			n++
		}
	}
	return n
}

// checkNoStrays checks that every group does real work: it holds a
// reduction or an anchor (no group of a lone BatchNormalization, ReLU or
// reshape), and no BatchNormalization or shape arithmetic is left.
func checkNoStrays(t *testing.T, p *Plan) {
	t.Helper()
	for _, grp := range p.Groups {
		if grp.Pattern < CommReduce {
			t.Errorf("group %d (%s) is %v: neither a reduction nor an anchor", grp.ID, grp.Ops(), grp.Pattern)
		}
		for _, op := range []string{"BatchNormalization", "Shape", "Gather", "Concat", "Unsqueeze", "Identity", "Dropout"} {
			if countOps(grp, op) > 0 {
				t.Errorf("group %d (%s) holds %s", grp.ID, grp.Ops(), op)
			}
		}
	}
}

// checkConvNet checks a convolutional network's groups: each holds one
// convolution with its activation (act) and residual Add, or is a pooling
// or the classifier.
func checkConvNet(t *testing.T, p *Plan, act string, residualAct bool) {
	t.Helper()
	for _, grp := range p.Groups {
		// The layout pass's transpose to NHWC fuses into the first
		// group (the model input's); the pooled value goes back to NCHW
		// as a Reshape, merged with the Flatten, in the classifier's.
		switch ops := strings.TrimPrefix(grp.Ops(), "Transpose+"); ops {
		case "MaxPool", "GlobalAveragePool", "Reshape+Gemm":
			continue
		}
		nodes := grp.Nodes
		if nodes[0].OpType == "Transpose" {
			nodes = nodes[1:]
		}
		if countOps(grp, "Conv") != 1 || nodes[0].OpType != "Conv" {
			t.Errorf("group %d (%s) does not start with its one Conv", grp.ID, grp.Ops())
			continue
		}
		for _, n := range nodes[1:] {
			if n.OpType != act && n.OpType != "Add" {
				t.Errorf("group %d (%s) holds %s", grp.ID, grp.Ops(), n.OpType)
			}
		}
		if countOps(grp, "Add") > 0 && residualAct && grp.Root().OpType != act {
			t.Errorf("group %d (%s): the residual Add is not followed by %s", grp.ID, grp.Ops(), act)
		}
	}
	// Every activation and every residual Add is in a convolution's group.
	for _, grp := range p.Groups {
		if countOps(grp, "Conv") == 0 && (countOps(grp, act) > 0 || countOps(grp, "Add") > 0) {
			t.Errorf("group %d (%s): %s or Add outside a convolution's group", grp.ID, grp.Ops(), act)
		}
	}
}

// directTasks counts the tasks of p's groups without their alternatives.
func directTasks(p *Plan) int {
	return len(p.Choose(func(*Task) (float64, bool) { return 0, false }).Tasks)
}

func TestModelTasks(t *testing.T) {
	for _, c := range []struct {
		name  string
		check func(t *testing.T, p *Plan)
	}{
		{"tiny", func(t *testing.T, p *Plan) {
			want := []string{"Conv+Relu×1", "Conv+Relu×1", "GlobalAveragePool×1", "Reshape+Gemm×1"}
			if got := taskList(p); !slices.Equal(got, want) {
				t.Errorf("tasks %q, want %q", got, want)
			}
		}},
		{"resnet18", func(t *testing.T, p *Plan) {
			checkConvNet(t, p, "Relu", true)
			if n := directTasks(p); n < 12 || n > 24 {
				t.Errorf("%d tasks", n)
			}
		}},
		{"resnet50", func(t *testing.T, p *Plan) {
			checkConvNet(t, p, "Relu", true)
			// 53 convolutions, the max pool, the global pool and the
			// classifier: 56 groups; the 16 residual Adds are fused.
			if n := len(p.Groups); n != 56 {
				t.Errorf("%d groups, want 56", n)
			}
			if n := directTasks(p); n < 20 || n > 30 {
				t.Errorf("%d tasks, want 20 to 30", n)
			}
			residual := 0
			for _, grp := range p.Groups {
				if grp.Ops() == "Conv+Add+Relu" {
					residual++
				}
			}
			if residual != 16 {
				t.Errorf("%d Conv+Add+Relu groups, want one per bottleneck (16)", residual)
			}
			// 4.1 GMAC
			if gf := p.TotalFLOPs() / 1e9; gf < 8.0 || gf > 8.4 {
				t.Errorf("%.3f GFLOP per inference, want about 8.2", gf)
			}
		}},
		{"mobilenetv2", func(t *testing.T, p *Plan) {
			checkConvNet(t, p, "Clip", false)
			adds := 0
			for _, grp := range p.Groups {
				adds += countOps(grp, "Add")
			}
			if adds != 10 {
				t.Errorf("%d residual Adds in convolution groups, want 10", adds)
			}
		}},
		// GELU written out ends in a Mul by 0.5, which matmul-scale moves
		// after the next matmul.
		{"bert_layer", func(t *testing.T, p *Plan) { checkBERT(t, p, "Gelu", "MatMul+Add×2") }},
		{"bert_layer_gelu", func(t *testing.T, p *Plan) { checkBERT(t, p, "Gelu", "MatMul+Add×2") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if m, _ := modelgen.Lookup(c.name); m.Large && testing.Short() {
				t.Skip("large model in -short mode")
			}
			g := loadGenerated(t, c.name)
			p, err := Extract(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkGroups(t, g, p.Groups)
			checkNoStrays(t, p)
			c.check(t, p)
			if t.Failed() {
				var b strings.Builder
				WriteTasks(&b, g, p)
				t.Logf("tasks:\n%s", b.String())
			}
		})
	}
}

// checkBERT checks the tasks of an encoder layer: the Q, K and V
// projections are one task, the reshapes to and from the heads are the
// prologues of the attention MatMuls, the residual Adds are epilogues, and
// the two LayerNormalizations are one task.
func checkBERT(t *testing.T, p *Plan, gelu, ffn2 string) {
	t.Helper()
	// The attention is one task (the scores, their scale and mask, the
	// softmax, the product with the values: partition's sandwiches).
	want := []string{
		"MatMul+Add×3",
		"Reshape+Transpose+Reshape+Transpose×2+Reshape+Transpose+MatMul+Div+Add+Softmax+MatMul×1",
		"Transpose+Reshape+MatMul+Add×2×1",
		"LayerNormalization×2",
		"MatMul+Add+" + gelu + "×1",
		ffn2 + "×1",
	}
	if got := taskList(p); !slices.Equal(got, want) {
		t.Errorf("tasks\n%q\nwant\n%q", got, want)
	}
	// 4·2·S·H² for the projections, 2·2·S·H·F for the FFN, 2·2·S²·H for
	// the attention: 1.86 GFLOP.
	if gf := p.TotalFLOPs() / 1e9; gf < 1.85 || gf > 1.9 {
		t.Errorf("%.3f GFLOP per inference", gf)
	}
}

// Equal layers of two models share keys: ResNet-18 and ResNet-50 have the
// same stem, max pool and 3×3 convolutions (with ReLU) at every stage.
func TestKeysShared(t *testing.T) {
	if testing.Short() {
		t.Skip("large models in -short mode")
	}
	keys := func(name string) map[string]string {
		g, err := modelgen.Build(name, modelgen.DefaultSeed)
		if err != nil {
			t.Fatal(err)
		}
		if err := frontend.RunPasses(g, nil); err != nil {
			t.Fatal(err)
		}
		p, err := Extract(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, task := range p.Tasks {
			m[task.Key] = task.Ops() + " " + fmt.Sprint(g.Values[task.Groups[0].Outputs[0]].Shape)
		}
		return m
	}
	r18, r50 := keys("resnet18"), keys("resnet50")
	var shared []string
	for k, v := range r18 {
		if _, ok := r50[k]; ok {
			shared = append(shared, v)
		}
	}
	slices.Sort(shared)
	// the stem, the max pool, and a 3×3 Conv+Relu per stage
	if len(shared) != 6 {
		t.Errorf("ResNet-18 and ResNet-50 share %d tasks, want 6: %q", len(shared), shared)
	}
}

// Small versions of the architectures compute, group by group, what the
// whole graph computes.
func TestModelsCompute(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func() (*graph.Graph, error)
	}{
		{"tiny", func() (*graph.Graph, error) { return modelgen.Tiny(3) }},
		{"resnet-basic", func() (*graph.Graph, error) {
			return modelgen.ResNet(modelgen.ResNetConfig{Name: "r", Blocks: []int{1, 2}, Width: 4, Input: 32, Classes: 5}, 3)
		}},
		{"resnet-bottleneck", func() (*graph.Graph, error) {
			return modelgen.ResNet(modelgen.ResNetConfig{Name: "r", Blocks: []int{2, 1}, Bottleneck: true, Width: 4, Input: 32, Classes: 5}, 3)
		}},
		{"bert", func() (*graph.Graph, error) {
			return modelgen.BERT(modelgen.BERTConfig{Name: "b", Seq: 8, Hidden: 16, Heads: 2, FFN: 32, Opset: 17}, 3)
		}},
		{"bert-gelu", func() (*graph.Graph, error) {
			return modelgen.BERT(modelgen.BERTConfig{Name: "b", Seq: 8, Hidden: 16, Heads: 2, FFN: 32, Opset: 20, GeluOp: true}, 3)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			if err := frontend.RunPasses(g, nil); err != nil {
				t.Fatal(err)
			}
			checkComputes(t, g, Options{})
		})
	}
}
