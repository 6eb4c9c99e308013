package tuning

import (
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/sketch"
)

// DumpPass returns what tune inspect --dump prints: for pass "list", the
// passes a kernel goes through on a target of cfg (backend.Target.Passes),
// one a line; else the kernel of task n of the plan, its default schedule
// (sketch.Default), as it is after pass (backend.Target.Dump), under a
// comment line that names the task, the target key, the schedule's rule
// and the pass. The target's C compiler is a measure.Builder unless cfg
// names one.
func DumpPass(p *partition.Plan, n int, pass string, cfg backend.Config) (string, error) {
	if cfg.Host == nil {
		cfg.Host = &measure.Builder{}
	}
	tg, err := backend.New(cfg)
	if err != nil {
		return "", err
	}
	defer tg.Close()
	if pass == "list" {
		return strings.Join(tg.Passes(), "\n") + "\n", nil
	}
	if n < 0 || n >= len(p.Tasks) {
		return "", fmt.Errorf("--dump needs --dag N, a task of the model's %d", len(p.Tasks))
	}
	t := p.Tasks[n]
	s, rule, err := sketch.Default(schedule.NewState(t.DAG), tg.Sketch)
	if err != nil {
		return "", fmt.Errorf("task %d (%s): %w", n, t.Ops(), err)
	}
	out, err := tg.Dump(s, fmt.Sprintf("task%d", n), pass)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("# task %d (%s), %s, default schedule (%s), after %s\n%s", n, t.Ops(), tg.Key(), rule, pass, out), nil
}
