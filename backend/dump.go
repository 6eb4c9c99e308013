package backend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/codegen"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/tir"
)

// Passes names the passes a kernel goes through on this target, in order:
// the lowering passes as "lower/NAME" (schedule.LowerPassNames), then the
// code generator's as "codegen/NAME" (codegen.PassNames).
func (t *Target) Passes() []string {
	var names []string
	for _, p := range schedule.LowerPassNames(t.GPU()) {
		names = append(names, "lower/"+p)
	}
	for _, p := range codegen.PassNames(t.GPU()) {
		names = append(names, "codegen/"+p)
	}
	return append(names, SourcePass)
}

// SourcePass is the last entry of Passes: the translation unit the
// target's compiler receives (C on the CPU, CUDA or OpenCL C on a GPU).
const SourcePass = "source"

// Dump returns the kernel of state s (named name) as it is after pass, one
// of Passes (a code generator pass may be named without its "codegen/"):
// the tir the pass leaves, printed; for SourcePass, the printed source. A pass the kernel's pipeline does not
// run, or before the function exists (lower/inline, bound, pack), is an
// error that lists the ones it can show.
func (t *Target) Dump(s *schedule.State, name, pass string) (string, error) {
	if pass == SourcePass {
		f, err := t.lower(s, name)
		if err != nil {
			return "", err
		}
		p, err := t.module(f)
		if err != nil {
			return "", fmt.Errorf("codegen: %w", err)
		}
		return p.Code, nil
	}
	if !strings.Contains(pass, "/") {
		pass = "codegen/" + pass
	}
	shown := map[string]*tir.PrimFunc{}
	f, err := schedule.LowerTrace(s, name, t.GPU(), func(p string, g *tir.PrimFunc) { shown["lower/"+p] = g })
	if err != nil {
		return "", err
	}
	lanes := t.Machine.Lanes()
	if err := codegen.Trace(f, t.GPU(), lanes, func(p string, g *tir.PrimFunc) error {
		shown["codegen/"+p] = g
		return nil
	}); err != nil {
		return "", err
	}
	if g, ok := shown[pass]; ok {
		return g.String(), nil
	}
	var can []string
	for _, p := range t.Passes() {
		if _, ok := shown[p]; ok {
			can = append(can, p)
		}
	}
	if slices.Contains(t.Passes(), pass) {
		return "", fmt.Errorf("--dump %s: the pass makes no function to show (it derives what later passes build): try one of %s", pass, strings.Join(can, ", "))
	}
	return "", fmt.Errorf("--dump %s: no such pass on target %s: the passes are %s", pass, t.Name, strings.Join(can, ", "))
}
