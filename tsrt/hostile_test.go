package tsrt_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/graph/onnx"
	"github.com/tessera-ml/tessera/internal/crosstest"
	"github.com/tessera-ml/tessera/internal/pytest"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// The hostile suite: every way a file, an input or a call can be wrong,
// given to the three ways of loading a model (C through tessera_load.h,
// Go, Python), each case in a process of its own or announced before it
// runs, so that a crash is counted, not suffered:
//
//	damaged artefacts  the library, the weights and the manifest truncated,
//	                   zeroed, bit-flipped, swapped or missing; a library of
//	                   another architecture; a --single-file library whose
//	                   embedded weights are flipped (testdata/hostile/
//	                   hostile.c load, hostile.py load, TestHostileChild load)
//	bad calls          every NULL, count, index, dtype, rank, shape and name
//	                   mistake, integers float32 would round, indices outside
//	                   their axis, profiling into a short array, calls on a
//	                   closed or never-opened handle (… calls)
//	concurrency        16 threads running and profiling one model while it is
//	                   closed, twice at once (… hammer)
//
// The C side is compiled with -fsanitize=address,undefined and its calls
// and hammer run on a library compiled so too; scripts/test.sh runs the Go
// side again under -race. A case is a crash when its process dies or a
// sanitizer reports, a silent wrong answer when a call that must fail
// succeeds or a call that succeeds gives other outputs than the intact
// model's, and a failure of the test when it returns another status than
// the one every loader must give.

// hostileResult is one case's outcome, as a child printed it.
type hostileResult struct {
	name, got, want, hash, msg string
}

// hostileTally counts the suite's cases and their outcomes.
type hostileTally struct {
	mu                     sync.Mutex
	cases, crashes, wrong  int
	misclassified, details []string
}

func (h *hostileTally) add(loader, name, got, want, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cases++
	id := loader + "/" + name
	switch {
	case got == "CRASH":
		h.crashes++
		h.details = append(h.details, "CRASH "+id+": "+msg)
	case got == "WRONG" || (got == "TESSERA_OK" && want != "TESSERA_OK"):
		h.wrong++
		h.details = append(h.details, fmt.Sprintf("SILENT WRONG ANSWER %s: got %s, want %s", id, got, want))
	case got != want:
		h.misclassified = append(h.misclassified, fmt.Sprintf("%s: got %s, want %s (%s)", id, got, want, msg))
	}
}

// runChild runs a child of the suite and returns the cases it printed; a
// case it started and never finished, or a sanitizer's report, comes back
// as a CRASH.
func runChild(t *testing.T, cmd *exec.Cmd) []hostileResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		err = <-done
	}
	var out []hostileResult
	started := ""
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "start "); ok {
			started = name
			continue
		}
		rest, ok := strings.CutPrefix(line, "case ")
		if !ok {
			continue
		}
		f := strings.SplitN(rest, " ", 5)
		for len(f) < 5 {
			f = append(f, "")
		}
		r := hostileResult{name: f[0], got: f[1], want: f[2], hash: f[3], msg: f[4]}
		if r.hash != "-" && !isHex(r.hash) { // calls print a message where load prints a hash
			r.msg, r.hash = strings.TrimSpace(f[3]+" "+f[4]), "-"
		}
		out = append(out, r)
		if r.name == started {
			started = ""
		}
	}
	sanitizer := strings.Contains(stderr.String(), "Sanitizer") || strings.Contains(stderr.String(), "runtime error:")
	if started != "" || sanitizer || (err != nil && len(out) == 0) {
		why := fmt.Sprintf("%v; stderr: %s", err, lastLines(stderr.String(), 12))
		name := started
		if name == "" {
			name = "(after the last case)"
		}
		out = append(out, hostileResult{name: name, got: "CRASH", msg: why})
	}
	return out
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && len(s) == 64
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// hostileModel builds the suite's two-input model: ids and mask, int64
// [2,4]; emb = Gather(table[1000,8], ids), next = ids - mask + 1 (int64).
func hostileModel(t *testing.T) *graph.Graph {
	t.Helper()
	g := graph.New("hostile", 17)
	g.AddInput("ids", graph.Int64, []int{2, 4})
	g.AddInput("mask", graph.Int64, []int{2, 4})
	rng := rand.New(rand.NewPCG(7, 7))
	table := make([]float32, 1000*8)
	for i := range table {
		table[i] = float32(rng.NormFloat64())
	}
	g.AddConst("embeddings.weight", graph.Float32Tensor([]int{1000, 8}, table))
	g.AddConst("one", graph.Int64Tensor([]int{}, []int64{1}))
	g.AddNode(&graph.Node{Name: "/embeddings/Gather", OpType: "Gather", Inputs: []string{"embeddings.weight", "ids"}, Outputs: []string{"emb"}})
	g.AddNode(&graph.Node{Name: "/Sub", OpType: "Sub", Inputs: []string{"ids", "mask"}, Outputs: []string{"diff"}})
	g.AddNode(&graph.Node{Name: "/Add", OpType: "Add", Inputs: []string{"diff", "one"}, Outputs: []string{"next"}})
	g.Outputs = []string{"emb", "next"}
	return g
}

// buildGraph builds g with tg into a new folder.
func buildGraph(t *testing.T, g *graph.Graph, tg *backend.Target, singleFile bool) string {
	t.Helper()
	if err := frontend.RunPasses(g, nil); err != nil {
		t.Fatal(err)
	}
	plan, err := partition.Extract(g, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := assemble.Build(context.Background(), g, plan, dir, assemble.Options{Target: tg, Model: g.Name, SingleFile: singleFile}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fixedInputs are the suite's inputs: element i is (i%7)/7 (float32) or
// i%5 (integers).
func fixedInputs(m *tsrt.Model) []tsrt.Tensor {
	var in []tsrt.Tensor
	for _, info := range m.Inputs() {
		n := info.Elems()
		switch info.DType {
		case tsrt.Float32:
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i%7) / 7
			}
			in = append(in, tsrt.NewTensor(info.Shape, x))
		case tsrt.Int64:
			x := make([]int64, n)
			for i := range x {
				x[i] = int64(i % 5)
			}
			in = append(in, tsrt.NewTensor(info.Shape, x))
		default:
			panic("the suite's models take float32 and int64 inputs")
		}
	}
	return in
}

func outputsHash(outs []tsrt.Tensor) string {
	h := sha256.New()
	for _, o := range outs {
		h.Write(o.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestHostileChild is the Go side's child process (TESSERA_HOSTILE_CHILD=
// "MODE PATH"); it does nothing in a plain test run.
func TestHostileChild(t *testing.T) {
	spec := os.Getenv("TESSERA_HOSTILE_CHILD")
	if spec == "" {
		t.Skip("the hostile suite's child: run by TestHostile")
	}
	mode, path, _ := strings.Cut(spec, " ")
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	say := func(format string, args ...any) {
		fmt.Fprintf(w, format+"\n", args...)
		w.Flush()
	}
	switch mode {
	case "load":
		goLoad(path, say)
	case "calls":
		goCalls(path, say)
	case "hammer":
		goHammer(path, say)
	}
}

// statusOf names err's status as the C ABI does.
func statusOf(err error) (string, string) {
	if err == nil {
		return "TESSERA_OK", ""
	}
	var e *tsrt.Error
	if errors.As(err, &e) {
		return e.Status.String(), strings.ReplaceAll(e.Msg, "\n", " ")
	}
	return "NOT_A_STATUS", strings.ReplaceAll(err.Error(), "\n", " ")
}

func goLoad(path string, say func(string, ...any)) {
	say("start load")
	m, err := tsrt.Open(path)
	if err != nil {
		st, msg := statusOf(err)
		say("case load %s - - %s", st, msg)
		return
	}
	defer m.Close()
	outs, err := m.Run(context.Background(), fixedInputs(m))
	if err != nil {
		st, msg := statusOf(err)
		say("case load %s - - %s", st, msg)
		return
	}
	say("case load TESSERA_OK - %s", outputsHash(outs))
}

func goCalls(dir string, say func(string, ...any)) {
	ctx := context.Background()
	m, err := tsrt.Open(dir)
	if err != nil {
		say("case open %s - %v", "CRASH", err)
		return
	}
	base := fixedInputs(m)
	mask, _ := tsrt.Values[int64](base[1])
	for i := range mask {
		mask[i] = int64(i % 2)
	}
	ref, err := m.Run(ctx, base)
	if err != nil {
		say("case reference CRASH - %v", err)
		return
	}
	refHash := outputsHash(ref)
	check := func(name string, err error, want string, ok func() bool) {
		got, msg := statusOf(err)
		if got == "TESSERA_OK" && ok != nil && !ok() {
			got = "WRONG"
		}
		say("case %s %s %s %s", name, got, want, msg)
	}
	run := func(name string, in []tsrt.Tensor, want string) {
		say("start %s", name)
		outs, err := m.Run(ctx, in)
		check(name, err, want, func() bool {
			ids, _ := tsrt.Values[int64](in[0])
			mk, _ := tsrt.Values[int64](in[1])
			next, _ := tsrt.Values[int64](outs[1])
			for i := range next {
				if next[i] != ids[i]-mk[i]+1 {
					return false
				}
			}
			return true
		})
	}
	withInput := func(k int, t tsrt.Tensor) []tsrt.Tensor {
		in := slices.Clone(base)
		in[k] = t
		return in
	}
	empty, _ := os.MkdirTemp("", "tessera-hostile-")
	for _, c := range []struct{ name, path, want string }{
		{"open_missing_folder", filepath.Join(dir, "nothing-here"), "TESSERA_NOT_FOUND"},
		{"open_empty_folder", empty, "TESSERA_NOT_FOUND"},
		{"open_not_a_library", filepath.Join(dir, "manifest.json"), "TESSERA_BAD_LIBRARY"},
	} {
		say("start %s", c.name)
		other, err := tsrt.Open(c.path)
		if err == nil {
			other.Close()
		}
		check(c.name, err, c.want, nil)
	}
	os.Remove(empty)
	run("run_1_input", base[:1], "TESSERA_INVALID_ARGUMENT")
	run("run_3_inputs", append(slices.Clone(base), base[0]), "TESSERA_INVALID_ARGUMENT")
	run("input_nil_data", withInput(0, tsrt.Tensor{DType: tsrt.Int64, Shape: []int64{2, 4}}), "TESSERA_INVALID_ARGUMENT")
	run("input_short_data", withInput(0, tsrt.Tensor{DType: tsrt.Int64, Shape: []int64{2, 4}, Data: make([]byte, 63)}), "TESSERA_INVALID_ARGUMENT")
	for _, dt := range []tsrt.DType{tsrt.Float32, tsrt.Int32, tsrt.Int8, tsrt.Uint8, tsrt.Int16, tsrt.Uint16, tsrt.Uint32, tsrt.Bool, tsrt.Float16, 0, 99} {
		run("input_dtype_"+dt.String(), withInput(0, tsrt.Tensor{DType: dt, Shape: []int64{2, 4}, Data: make([]byte, 64)}), "TESSERA_DTYPE_MISMATCH")
	}
	for _, shape := range [][]int64{{2}, {8}, {2, 4, 1}, {2, 5}, {3, 4}, {0, 4}, {2, -4}, {math.MaxInt64, 4}, {1 << 40, 1 << 40}, {}} {
		run(fmt.Sprintf("input_shape_%v", strings.ReplaceAll(fmt.Sprint(shape), " ", "x")), withInput(1, tsrt.Tensor{DType: tsrt.Int64, Shape: shape, Data: make([]byte, 1024)}), "TESSERA_SHAPE_MISMATCH")
	}
	named := slices.Clone(base)
	named[0].Name, named[1].Name = m.Inputs()[1].Name, m.Inputs()[0].Name
	run("names_swapped", named, "TESSERA_INVALID_ARGUMENT")
	named[0].Name, named[1].Name = m.Inputs()[0].Name, m.Inputs()[1].Name
	run("names_right", named, "TESSERA_OK")
	byName := map[string]tsrt.Tensor{m.Inputs()[1].Name: base[1], m.Inputs()[0].Name: base[0]}
	say("start run_named")
	outs, err := m.RunNamed(ctx, byName)
	check("run_named", err, "TESSERA_OK", func() bool {
		return outputsHash([]tsrt.Tensor{outs[m.Outputs()[0].Name], outs[m.Outputs()[1].Name]}) == refHash
	})
	for _, c := range []struct {
		name string
		in   map[string]tsrt.Tensor
	}{
		{"run_named_unknown", map[string]tsrt.Tensor{"ids": base[0], "mask": base[1], "nope": base[0]}},
		{"run_named_missing", map[string]tsrt.Tensor{m.Inputs()[0].Name: base[0]}},
	} {
		say("start %s", c.name)
		_, err := m.RunNamed(ctx, c.in)
		check(c.name, err, "TESSERA_INVALID_ARGUMENT", nil)
	}
	for _, c := range []struct {
		name  string
		which int
		v     int64
		want  string
	}{
		{"mask_2^24", 1, 1 << 24, "TESSERA_OK"},
		{"mask_2^24+1", 1, 1<<24 + 1, "TESSERA_VALUE_OUT_OF_RANGE"},
		{"mask_2^31+7", 1, 1<<31 + 7, "TESSERA_VALUE_OUT_OF_RANGE"},
		{"mask_int64_min", 1, math.MinInt64, "TESSERA_VALUE_OUT_OF_RANGE"},
		{"next_2^24+1", 1, -(1 << 24), "TESSERA_VALUE_OUT_OF_RANGE"},
		{"ids_999", 0, 999, "TESSERA_OK"},
		{"ids_1000", 0, 1000, "TESSERA_VALUE_OUT_OF_RANGE"},
		{"ids_5000", 0, 5000, "TESSERA_VALUE_OUT_OF_RANGE"},
		{"ids_-1001", 0, -1001, "TESSERA_VALUE_OUT_OF_RANGE"},
	} {
		ids, _ := tsrt.Values[int64](base[0])
		mk, _ := tsrt.Values[int64](base[1])
		x := slices.Clone([]int64{ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6], ids[7]})
		y := slices.Clone(mk)
		if c.which == 0 {
			x[7] = c.v
		} else {
			y[7] = c.v
			if c.v == -(1 << 24) {
				x[7] = 0
			}
		}
		run(c.name, []tsrt.Tensor{tsrt.NewTensor([]int64{2, 4}, x), tsrt.NewTensor([]int64{2, 4}, y)}, c.want)
	}
	steps := make([]float64, len(m.Steps()))
	say("start profile_short")
	check("profile_short", m.SetProfile(steps[:len(steps)-1]), "TESSERA_INVALID_ARGUMENT", nil)
	say("start threads_-1")
	check("threads_-1", m.SetThreads(-1), "TESSERA_INVALID_ARGUMENT", nil)
	say("start threads_2^31-1")
	check("threads_2^31-1", m.SetThreads(math.MaxInt32), "TESSERA_INVALID_ARGUMENT", nil)
	say("start profile")
	check("profile", m.SetProfile(steps), "TESSERA_OK", nil)
	run("profiled_run", base, "TESSERA_OK")
	say("start profile_off")
	check("profile_off", m.SetProfile(nil), "TESSERA_OK", func() bool { return slices.Max(steps) > 0 })
	m.Close()
	m.Close()
	run("closed_run", base, "TESSERA_INVALID_ARGUMENT")
	say("start closed_run_named")
	_, err = m.RunNamed(ctx, byName)
	check("closed_run_named", err, "TESSERA_INVALID_ARGUMENT", nil)
	say("start closed_profile")
	check("closed_profile", m.SetProfile(steps), "TESSERA_INVALID_ARGUMENT", nil)
	say("start closed_threads")
	check("closed_threads", m.SetThreads(1), "TESSERA_INVALID_ARGUMENT", nil)
}

// goHammer: 16 goroutines run and profile one model while it is closed
// (twice at once in the last round).
func goHammer(dir string, say func(string, ...any)) {
	for round := range 3 {
		m, err := tsrt.Open(dir)
		if err != nil {
			say("case open CRASH - %v", err)
			return
		}
		m.SetThreads(1)
		in := fixedInputs(m)
		ref, err := m.Run(context.Background(), in)
		if err != nil {
			say("case reference CRASH - %v", err)
			return
		}
		refHash := outputsHash(ref)
		name := fmt.Sprintf("hammer_%d", round)
		say("start %s", name)
		const workers = 16
		var mu sync.Mutex
		runs, saw, wrong := 0, 0, 0
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				steps := make([]float64, len(m.Steps()))
				seen, after := false, 0
				for i := 0; after < 100 && i < 200000; i++ {
					var err error
					if i%7 == 3 {
						if (i+w)%2 == 0 {
							err = m.SetProfile(steps)
						} else {
							err = m.SetProfile(nil)
						}
					} else {
						var outs []tsrt.Tensor
						if outs, err = m.Run(context.Background(), in); err == nil {
							mu.Lock()
							runs++
							wrong += b2i(outputsHash(outs) != refHash)
							mu.Unlock()
						}
					}
					if err != nil {
						mu.Lock()
						wrong += b2i(!errors.Is(err, &tsrt.Error{Status: tsrt.InvalidArgument}) || !strings.Contains(err.Error(), "closed"))
						mu.Unlock()
						seen = true
					}
					if seen {
						after++
					}
				}
				mu.Lock()
				saw += b2i(seen)
				mu.Unlock()
			})
		}
		time.Sleep(time.Duration(100+50*round) * time.Millisecond)
		if round == 2 {
			var c sync.WaitGroup
			c.Go(func() { m.Close() })
			m.Close()
			c.Wait()
		} else {
			m.Close()
		}
		wg.Wait()
		got := "TESSERA_OK"
		if wrong > 0 || saw != workers {
			got = "WRONG"
		}
		say("case %s %s TESSERA_OK %d goroutines, %d runs, %d saw the close, %d wrong", name, got, workers, runs, saw, wrong)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// damage is one way to spoil a copy of a build folder, and the status
// every loader must answer with.
type damage struct {
	name  string
	model string // which built model it spoils
	path  string // the path the loaders are given, relative to the copy ("" the folder)
	apply func(t *testing.T, dir string)
	want  string
}

// mutate returns an apply that rewrites the file name in the copy with f.
func mutate(name string, f func([]byte) []byte) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func truncateAt(frac float64, abs int) func([]byte) []byte {
	return func(b []byte) []byte {
		n := abs
		if abs < 0 {
			n = int(float64(len(b)) * frac)
		}
		return slices.Clone(b[:min(n, len(b))])
	}
}

func flipAt(frac float64, abs int) func([]byte) []byte {
	return func(b []byte) []byte {
		b = slices.Clone(b)
		n := abs
		if abs < 0 {
			n = int(float64(len(b)) * frac)
		}
		if n < 0 {
			n += len(b)
		}
		b[n] ^= 0x10
		return b
	}
}

func zeroed(b []byte) []byte { return make([]byte, len(b)) }

func remove(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFrom(src, name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func editManifest(edit func(map[string]any)) func(*testing.T, string) {
	return mutate("manifest.json", func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			panic(err)
		}
		edit(m)
		out, _ := json.Marshal(m)
		return out
	})
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// weightsOffset returns where the weights payload starts in a --single-file
// library: after the weights file's 64-byte header (its magic, size and
// checksum), which the library holds just before it.
func weightsOffset(t *testing.T, lib []byte, magic []byte) int {
	t.Helper()
	i := bytes.Index(lib, magic)
	if i < 0 {
		t.Fatal("no weights header inside the --single-file library")
	}
	return i + 64
}

func TestHostile(t *testing.T) {
	if os.Getenv("TESSERA_HOSTILE_CHILD") != "" {
		t.Skip("a child")
	}
	py := pytest.Require(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	// The models: the tiny CNN (a folder, and --single-file), the two-input
	// model, the two-input model compiled with the sanitizers (the C calls
	// and hammer run inside it), and the tiny CNN for aarch64.
	cpu := backend.CPU(backend.CPUConfig{Builder: &measure.Builder{Timeout: assemble.LibraryTimeout}})
	models := map[string]string{"tiny": buildTiny(t), "single": buildTinyWith(t, true), "two": buildGraph(t, hostileModel(t), cpu, false)}
	asanFlags := append(measure.DefaultFlags(), "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
	asan := backend.CPU(backend.CPUConfig{Builder: &measure.Builder{Timeout: assemble.LibraryTimeout, Flags: asanFlags}, Key: "cpu hostile asan"})
	models["two-asan"] = buildGraph(t, hostileModel(t), asan, false)
	tools := crosstest.RequireAarch64(t)
	arm, err := machine.Level("armv8-a")
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.DecodeFile("../testdata/tiny.onnx")
	if err != nil {
		t.Fatal(err)
	}
	models["aarch64"] = buildGraph(t, g, backend.CPU(backend.CPUConfig{Builder: &measure.Builder{CC: tools.CC, Timeout: assemble.LibraryTimeout}, Machine: arm, Key: "cpu hostile aarch64"}), false)

	// The intact models' outputs on the suite's inputs.
	refs := map[string]string{}
	for _, name := range []string{"tiny", "single", "two"} {
		m, err := tsrt.Open(models[name])
		if err != nil {
			t.Fatal(err)
		}
		outs, err := m.Run(context.Background(), fixedInputs(m))
		if err != nil {
			t.Fatal(err)
		}
		refs[name] = outputsHash(outs)
		m.Close()
	}

	// The C side, compiled with the sanitizers.
	hostileC := filepath.Join(work, "hostile")
	cc := exec.Command("cc", "-std=gnu11", "-O1", "-g", "-Wall", "-Werror", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
		"-fno-omit-frame-pointer", "-I", filepath.Join(root, "tsrt/c"), filepath.Join(root, "tsrt/testdata/hostile/hostile.c"),
		"-o", hostileC, "-ldl", "-lpthread")
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("compiling hostile.c: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "tsrt/python"),
		"ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1", "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
	loaders := map[string]func(mode, path string) *exec.Cmd{
		"c": func(mode, path string) *exec.Cmd { c := exec.Command(hostileC, mode, path); c.Env = env; return c },
		"go": func(mode, path string) *exec.Cmd {
			c := exec.Command(self, "-test.run=^TestHostileChild$", "-test.v=false")
			c.Env = append(slices.Clone(env), "TESSERA_HOSTILE_CHILD="+mode+" "+path)
			return c
		},
		"python": func(mode, path string) *exec.Cmd {
			c := exec.Command(py, filepath.Join(root, "tsrt/testdata/hostile/hostile.py"), mode, path)
			c.Env = env
			return c
		},
	}

	weights, err := os.ReadFile(filepath.Join(models["tiny"], "weights.bin"))
	if err != nil {
		t.Fatal(err)
	}
	singleLib, err := os.ReadFile(filepath.Join(models["single"], "libmodel.so"))
	if err != nil {
		t.Fatal(err)
	}
	wOff := weightsOffset(t, singleLib, weights[:64])
	libOnly := func(dir string) func(*testing.T, string) {
		return func(t *testing.T, dst string) {
			for _, f := range []string{"manifest.json", "tessera.h", "model.c"} {
				os.Remove(filepath.Join(dst, f))
			}
		}
	}
	lib, w, man := "libmodel.so", "weights.bin", "manifest.json"
	var damages []damage
	add := func(name, model, path string, apply func(*testing.T, string), want string) {
		damages = append(damages, damage{name, model, path, apply, want})
	}
	const bad, badW, notFound, ok = "TESSERA_BAD_LIBRARY", "TESSERA_BAD_WEIGHTS", "TESSERA_NOT_FOUND", "TESSERA_OK"
	add("intact", "tiny", "", func(*testing.T, string) {}, ok)
	add("intact_two_inputs", "two", "", func(*testing.T, string) {}, ok)
	for _, c := range []struct {
		name string
		frac float64
		abs  int
	}{{"0", 0, 0}, {"4", 0, 4}, {"63", 0, 63}, {"100", 0, 100}, {"25%", 0.25, -1}, {"50%", 0.5, -1}, {"75%", 0.75, -1}, {"last_byte", 0, -2}} {
		cut := truncateAt(c.frac, c.abs)
		if c.abs == -2 {
			cut = func(b []byte) []byte { return slices.Clone(b[:len(b)-1]) }
		}
		add("library_truncated_at_"+c.name, "tiny", "", mutate(lib, cut), bad)
	}
	for _, frac := range []float64{0.25, 0.5, 0.9} {
		f := frac
		add(fmt.Sprintf("library_truncated_at_%.0f%%_no_manifest", 100*f), "tiny", "", func(t *testing.T, dir string) {
			mutate(lib, truncateAt(f, -1))(t, dir)
			remove(man)(t, dir)
		}, bad)
	}
	for _, c := range []struct {
		name string
		frac float64
		abs  int
	}{{"ident", 0, 5}, {"program_headers", 0, 70}, {"25%", 0.25, -1}, {"50%", 0.5, -1}, {"end", 0, -10}} {
		add("library_bit_flipped_at_"+c.name, "tiny", "", mutate(lib, flipAt(c.frac, c.abs)), bad)
	}
	add("library_zeroed", "tiny", "", mutate(lib, zeroed), bad)
	add("library_of_another_model", "tiny", "", copyFrom(models["two"], lib), bad)
	add("library_for_aarch64", "aarch64", "", func(*testing.T, string) {}, "TESSERA_UNSUPPORTED_CPU")
	add("library_for_aarch64_alone", "aarch64", lib, libOnly(""), "TESSERA_UNSUPPORTED_CPU")
	add("library_missing", "tiny", "", remove(lib), notFound)
	add("library_not_elf", "tiny", lib, func(t *testing.T, dir string) {
		libOnly("")(t, dir)
		mutate(lib, func([]byte) []byte { return []byte("#!/bin/sh\necho not a library\n") })(t, dir)
	}, bad)
	for _, c := range []struct {
		name string
		frac float64
		abs  int
	}{{"0", 0, 0}, {"8", 0, 8}, {"63", 0, 63}, {"64", 0, 64}, {"50%", 0.5, -1}} {
		add("weights_truncated_at_"+c.name, "tiny", "", mutate(w, truncateAt(c.frac, c.abs)), badW)
	}
	add("weights_truncated_by_one_byte", "tiny", "", mutate(w, func(b []byte) []byte { return slices.Clone(b[:len(b)-1]) }), badW)
	add("weights_with_a_byte_more", "tiny", "", mutate(w, func(b []byte) []byte { return append(slices.Clone(b), 0) }), badW)
	for _, c := range []struct {
		name string
		abs  int
	}{{"magic", 0}, {"size", 8}, {"checksum", 16}, {"payload_first", 64}, {"payload_last", -1}} {
		add("weights_bit_flipped_at_"+c.name, "tiny", "", mutate(w, flipAt(0, c.abs)), badW)
	}
	add("weights_zeroed", "tiny", "", mutate(w, zeroed), badW)
	add("weights_of_another_model", "tiny", "", copyFrom(models["two"], w), badW)
	add("weights_missing", "tiny", "", remove(w), notFound)
	add("manifest_truncated", "tiny", "", mutate(man, truncateAt(0.5, -1)), bad)
	add("manifest_zeroed", "tiny", "", mutate(man, zeroed), bad)
	add("manifest_other_sha256", "tiny", "", editManifest(func(m map[string]any) {
		m["library_sha256"] = strings.Repeat("ab", 32)
	}), bad)
	add("manifest_other_size", "tiny", "", editManifest(func(m map[string]any) { m["library_bytes"] = 12345 }), bad)
	add("manifest_of_an_older_build", "tiny", "", editManifest(func(m map[string]any) {
		delete(m, "library_bytes")
		delete(m, "library_sha256")
	}), bad)
	add("manifest_missing", "tiny", "", remove(man), ok)
	add("folder_missing", "tiny", "nothing-here", func(*testing.T, string) {}, notFound)
	add("folder_empty", "tiny", "empty", func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "empty"), 0o755) }, notFound)
	add("single_file_intact_alone", "single", lib, libOnly(""), ok)
	for _, off := range []int{0, 1000, -1} {
		o := off
		add(fmt.Sprintf("single_file_weights_flipped_at_%d_alone", off), "single", lib, func(t *testing.T, dir string) {
			libOnly("")(t, dir)
			mutate(lib, func(b []byte) []byte {
				b = slices.Clone(b)
				at := wOff + o
				if o < 0 {
					at = wOff + len(weights) - 64 - 1
				}
				b[at] ^= 0x01
				return b
			})(t, dir)
		}, badW)
	}
	add("single_file_weights_flipped_with_manifest", "single", "", mutate(lib, func(b []byte) []byte {
		b = slices.Clone(b)
		b[wOff+10] ^= 0x80
		return b
	}), bad)
	add("single_file_truncated_alone", "single", lib, func(t *testing.T, dir string) {
		libOnly("")(t, dir)
		mutate(lib, truncateAt(0.5, -1))(t, dir)
	}, bad)

	tally := &hostileTally{}
	for i, d := range damages {
		dir := filepath.Join(work, fmt.Sprintf("case%03d", i))
		copyDir(t, models[d.model], dir)
		d.apply(t, dir)
		path := filepath.Join(dir, d.path)
		for _, loader := range []string{"c", "go", "python"} {
			res := runChild(t, loaders[loader]("load", path))
			if len(res) == 0 {
				tally.add(loader, d.name, "CRASH", d.want, "no output")
				continue
			}
			r := res[len(res)-1]
			got := r.got
			if got == "TESSERA_OK" && d.want == "TESSERA_OK" && r.hash != refs[d.model] {
				got = "WRONG"
			}
			tally.add(loader, d.name, got, d.want, r.msg)
		}
	}

	// The calls and the hammer: C on the sanitized library, Go and Python
	// on the plain one.
	for _, c := range []struct{ loader, mode, model string }{
		{"c", "calls", "two-asan"}, {"go", "calls", "two"}, {"python", "calls", "two"},
		{"c", "hammer", "two-asan"}, {"go", "hammer", "two"}, {"python", "hammer", "two"},
	} {
		var cmd *exec.Cmd
		if c.loader == "c" && c.mode == "hammer" {
			cmd = exec.Command(hostileC, "hammer", models[c.model], "16")
			cmd.Env = env
		} else {
			cmd = loaders[c.loader](c.mode, models[c.model])
		}
		for _, r := range runChild(t, cmd) {
			tally.add(c.loader, c.mode+"/"+r.name, r.got, r.want, r.msg)
		}
	}

	for _, d := range tally.details {
		t.Log(d)
	}
	for _, m := range tally.misclassified {
		t.Errorf("misclassified: %s", m)
	}
	line := fmt.Sprintf("runtime hostile: %d cases, %d crashes, %d silent wrong answers", tally.cases, tally.crashes, tally.wrong)
	fmt.Println(line)
	t.Log(line)
	if tally.crashes > 0 || tally.wrong > 0 {
		t.Errorf("%s", line)
	}
	if tally.cases < 150 {
		t.Errorf("only %d cases", tally.cases)
	}
}
