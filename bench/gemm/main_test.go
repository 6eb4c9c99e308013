package main

import (
	"testing"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/sketch"
)

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
	for _, level := range machine.Levels() {
		m, err := machine.Level(level)
		if err != nil {
			t.Fatal(err)
		}
		tl := expertTiles(n, m.Lanes(), m.VectorRegs, m.L1D)
		if tl.i2 > tl.ib || n%tl.ib != 0 || n%(tl.j1*tl.j2) != 0 || n%tl.k != 0 || tl.j2 != 2*m.Lanes() {
			t.Errorf("%s: tiles %+v do not divide %d, a register tile is taller than its block, or not two vectors wide", level, tl, n)
		}
		s, err := expert(d, tl)
		if err != nil {
			t.Fatalf("%s: expert %+v: %v", level, tl, err)
		}
		f, err := schedule.Lower(s, "k")
		if err != nil {
			t.Fatalf("%s: lower: %v", level, err)
		}
		if err := schedtest.Check(d, f, 1); err != nil {
			t.Errorf("%s: tiles %+v: %v", level, tl, err)
		}
	}
}

// TestInt8Default checks the int8 race's kernel, the default schedule of
// the u8×s8 GEMM at every level, against the reference evaluator (the
// benchmark itself compares the compiled kernel with oneDNN's and with a
// product computed in Go).
func TestInt8Default(t *testing.T) {
	const n = 64
	d, err := int8DAG(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range machine.Levels() {
		m, err := machine.Level(level)
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := sketch.Default(schedule.NewState(d), sketch.CPUOptions(m))
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
