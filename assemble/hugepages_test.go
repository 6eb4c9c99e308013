package assemble

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/tsrt"
)

// anonHugeBytes returns the bytes of this process backed by transparent
// huge pages (AnonHugePages of /proc/self/smaps_rollup), or -1 where the
// kernel does not say.
func anonHugeBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "AnonHugePages:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("smaps_rollup: %q: %v", s.Text(), err)
			}
			return kb << 10
		}
	}
	return -1
}

// TestHugePages builds a model whose weights (a 4 MiB bias) and arena (a
// 4 MiB intermediate) are both over one huge page: opening it copies the
// weights into huge pages and its run takes an arena in them, where the
// kernel gives transparent huge pages ("madvise" or "always" mode); the
// outputs must equal the reference's either way.
func TestHugePages(t *testing.T) {
	const rows, cols, inner = 1024, 1024, 8
	g := graph.New("huge", 17)
	g.AddInput("x", graph.Float32, []int{rows, inner})
	weight := weights(g, 5, 1)
	g.AddNode(&graph.Node{Name: "mm1", OpType: "MatMul", Inputs: []string{"x", weight("w1", inner, cols)}, Outputs: []string{"y1"}})
	g.AddNode(&graph.Node{Name: "bias", OpType: "Add", Inputs: []string{"y1", weight("b1", rows, cols)}, Outputs: []string{"z1"}})
	g.AddNode(&graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"z1"}, Outputs: []string{"h"}})
	g.AddNode(&graph.Node{Name: "mm2", OpType: "MatMul", Inputs: []string{"h", weight("w2", cols, inner)}, Outputs: []string{"y"}})
	g.Outputs = []string{"y"}
	p := prepare(t, g)
	dir := t.TempDir()
	man, err := Build(context.Background(), p.g, p.plan, dir, Options{Target: testTarget("", nil), Model: "huge"})
	if err != nil {
		t.Fatal(err)
	}
	if man.Memory.ArenaBytes < 2<<20 {
		t.Fatalf("arena %d bytes: the test wants one over a huge page", man.Memory.ArenaBytes)
	}
	before := anonHugeBytes(t)
	m, err := tsrt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	inputs := randomInputs(man, 3)
	got, err := m.RunFloat32(context.Background(), inputs, tsrt.RunOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	after := anonHugeBytes(t)
	want := reference(t, "", p, inputs)
	if ok, msg := compareOutputs(got[0], want[0]); !ok {
		t.Errorf("output y: %s", msg)
	}
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	t.Logf("transparent huge pages %q; AnonHugePages %d → %d bytes", strings.TrimSpace(string(mode)), before, after)
	if before < 0 || strings.Contains(string(mode), "[never]") || len(mode) == 0 || os.Getenv("TESSERA_NO_HUGE_PAGES") != "" {
		return // no huge pages to give, or none wanted: the run above used ordinary pages
	}
	if grew := after - before; grew < 8<<20 {
		t.Errorf("AnonHugePages grew by %d bytes opening and running the model, want at least its 4 MiB of weights and 4 MiB arena", grew)
	}
}
