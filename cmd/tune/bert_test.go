package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/modelgen"
)

// TestBERTEncoderAgainstOnnxruntime takes a small BERT-style encoder as
// PyTorch exports it (int64 input ids through a run-time Gather, a mask by
// Cast/Equal/Where, Shape-computed reshapes; package modelgen) through
// inspect → tune (a few trials) → build → run, and compares its output
// with onnxruntime-node's on the same ids and mask (rtol 1e-3).
func TestBERTEncoderAgainstOnnxruntime(t *testing.T) {
	dir := t.TempDir()
	c := modelgen.BERTEncoderSmall
	c.Name, c.Seq, c.Hidden, c.Heads, c.FFN, c.Vocab, c.MaxPositions = "bert_tiny", 16, 32, 2, 64, 100, 32
	g, err := modelgen.BERTEncoder(c, modelgen.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "bert.onnx")
	if err := modelgen.WriteFile(model, g); err != nil {
		t.Fatal(err)
	}
	// Ids across the vocabulary, the last four tokens masked out.
	ids, mask := make([]float32, c.Seq), make([]float32, c.Seq)
	var idText, maskText []string
	for i := range ids {
		ids[i] = float32((i*37 + 5) % c.Vocab)
		if i < c.Seq-4 {
			mask[i] = 1
		}
		idText = append(idText, fmt.Sprint(ids[i]))
		maskText = append(maskText, fmt.Sprint(mask[i]))
	}
	idsFile := writeRaw(t, filepath.Join(dir, "ids.bin"), ids) // a built model takes int64 values as float32
	maskFile := writeRaw(t, filepath.Join(dir, "mask.bin"), mask)

	out := tuneCmd(t, "inspect", model)
	for _, op := range []string{"Equal×1", "Where×1", "Cast×1", "Gather×1"} {
		if !strings.Contains(out[strings.Index(out, "after passes"):], op) {
			t.Errorf("after the passes, no %s:\n%s", op, out)
		}
	}
	db := filepath.Join(dir, "tuning.db")
	tuneCmd(t, model, "--db", db, "--trials", "24", "--per-round", "2", "--population", "64", "--threads", "1")
	built := filepath.Join(dir, "built")
	tuneCmd(t, "build", model, "--db", db, "--threads", "1", "-o", built)
	ort := ortRun(t, model, filepath.Join(dir, "ort"), "--value", "input_ids="+strings.Join(idText, ","), "--value", "attention_mask="+strings.Join(maskText, ","))
	out = tuneCmd(t, "run", built, "--input", "input_ids="+idsFile, "--input", "attention_mask="+maskFile,
		"--reference", "output="+filepath.Join(ort, "output.bin"), "--rtol", "1e-3", "-o", filepath.Join(dir, "res"))
	t.Logf("%s", out)
}

// TestInspectRange: `tune inspect --range` of the dynamic BERT encoder
// (batch B, sequence length S) and of the dynamic ResNet-18 (batch N)
// prints their tasks as functions of the symbols (--dag: the attention's
// softmax and second product reduce over ⟨S⟩); without a range the
// dynamic dimension is an error that names the flag.
func TestInspectRange(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"bert_encoder_dynamic", []string{"--range", "B=1..8", "--range", "S=16..256", "--dag", "3"}, []string{"MatMul+Add+Gelu", "[B,S,1024]", "[B,4,S,64]", "8 tasks (8 of them depend on the symbols)",
			"max[⟨S⟩]", "= sum[⟨S⟩] (T15", "tuned at S=[32 64 160], 24 workloads, their best schedules probed at [16 17 23 31 32 33 45 63 64 65 101 159 160 161 202 255 256]; built at each of its 241 values"}},
		{"resnet18_dynamic", []string{"--range", "N=1..16"}, []string{"Conv+Relu          [N,112,112,64]", "Reshape+Gemm       [N,1000]"}},
	} {
		path, err := modelgen.Generate(dir, m.name, modelgen.DefaultSeed)
		if err != nil {
			t.Fatal(err)
		}
		out := tuneCmd(t, append([]string{"inspect", path}, m.args...)...)
		for _, want := range m.wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", m.name, want, out)
			}
		}
		var stdout, stderr strings.Builder
		if st := run([]string{"inspect", path, m.args[0], m.args[1]}, &stdout, &stderr); m.name == "bert_encoder_dynamic" && (st == 0 || !strings.Contains(stderr.String(), "--range S=lo..hi")) {
			t.Errorf("%s with one range: status %d, %s", m.name, st, stderr.String())
		}
	}
}
