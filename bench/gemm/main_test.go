package main

import (
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/sketch"
	"github.com/tessera-ml/tessera/te"
)

// checkEveryLevel lowers the state build returns for each portable
// level's machine and checks it against d's reference evaluator on random
// inputs.
func checkEveryLevel(t *testing.T, d *te.DAG, build func(level string, m machine.Machine) (*schedule.State, error)) {
	t.Helper()
	for _, level := range machine.Levels() {
		m, err := machine.Level(level)
		if err != nil {
			t.Fatal(err)
		}
		s, err := build(level, m)
		if err != nil {
			t.Fatalf("%s: %v", level, err)
		}
		f, err := schedule.Lower(s, "k")
		if err != nil {
			t.Fatalf("%s: lower: %v", level, err)
		}
		if err := schedtest.Check(d, f, 1); err != nil {
			t.Errorf("%s: %v", level, err)
		}
	}
}

// TestExpert checks the expert schedule, with the tiles expertTiles picks
// for each machine, against the reference evaluator: its lowering is
// interpreted on random inputs (the benchmark itself compares the compiled
// kernel with OpenBLAS).
func TestExpert(t *testing.T) {
	const n = 128
	d, err := gemmDAG(n)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryLevel(t, d, func(level string, m machine.Machine) (*schedule.State, error) {
		tl := expertTiles(n, m.Lanes(), m.VectorRegs, m.L1D)
		if tl.i2 > tl.ib || n%tl.ib != 0 || n%(tl.j1*tl.j2) != 0 || n%tl.k != 0 || tl.j2 != 2*m.Lanes() {
			t.Errorf("%s: tiles %+v do not divide %d, a register tile is taller than its block, or not two vectors wide", level, tl, n)
		}
		return expert(d, tl)
	})
}

// TestInt8Default checks the int8 race's kernel, the default schedule of
// the u8×s8 GEMM (saturated pairs and exact groups) at every level,
// against the reference evaluator (the
// benchmark itself compares the compiled kernel with oneDNN's and with a
// product computed in Go).
func TestInt8Default(t *testing.T) {
	for _, exact := range []bool{false, true} {
		d, err := int8DAG(64, exact)
		if err != nil {
			t.Fatal(err)
		}
		checkEveryLevel(t, d, func(_ string, m machine.Machine) (*schedule.State, error) {
			s, _, err := sketch.Default(schedule.NewState(d), sketch.CPUOptions(m))
			return s, err
		})
	}
}
