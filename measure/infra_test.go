package measure_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te/tetest"
)

// A machine that cannot build or run is an error of the batch, never a
// CompileError or RuntimeError of its candidates.
func TestMeasureInfrastructureErrors(t *testing.T) {
	s0 := schedule.NewState(tetest.DAGs()["relu"])
	good := &measure.Builder{CacheDir: t.TempDir()}
	missing := &measure.Builder{CC: "/nonexistent/cc", CacheDir: t.TempDir()}
	tg := backend.CPU(backend.CPUConfig{Threads: 1, Builder: good})
	defer tg.Close()
	for _, c := range []struct {
		name             string
		builder, harness *measure.Builder
		want             string
	}{
		{"no compiler for the harness", good, missing, "runner is not ready"},
		{"no compiler for the candidates", missing, good, "/nonexistent/cc"},
	} {
		m := &measure.Measurer{Generate: tg.Generate, Builder: c.builder, Runner: &measure.Runner{Builder: c.harness}}
		res, err := m.Measure(context.Background(), []measure.Input{{State: s0}})
		if err == nil || !strings.Contains(err.Error(), c.want) || res != nil {
			t.Errorf("%s: results %v, error %v; want no results and an error containing %q", c.name, res, err, c.want)
		}
		m.Runner.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := tg.Measurer(false).Measure(ctx, []measure.Input{{State: s0}}); err == nil || res != nil {
		t.Errorf("canceled: results %v, error %v", res, err)
	}
}
