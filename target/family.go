package target

import (
	"fmt"
	"maps"
	"slices"

	"tessera/codegen"
	"tessera/schedule"
	"tessera/tir"
)

// Family lowers states, one schedule applied to a task's DAG at each value
// of a dimension given at run time (value → state), and prints them as few
// kernels that take the value as a parameter (codegen.NewFamily). Each
// kernel is lowered once; the loops whose extents differ from those of the
// same loops at the range's ends and at the neighbouring values
// (tir.DynamicLoops) stay loops, so that the kernels of most values share
// a text; kernels that take a constant packed in different layouts
// (tir.Buffer.Packed) never share one. Each class's Workspace is the most
// its values need. It returns the family and the kernel lowered at each
// value. CPU targets only.
func (t *Target) Family(states map[int]*schedule.State, name string) (*codegen.Family, map[int]*tir.PrimFunc, error) {
	if t.GPU() {
		return nil, nil, fmt.Errorf("kernels over a dynamic dimension are built for the CPU only, not %s", t.Name)
	}
	if t.dimModule == nil {
		return nil, nil, fmt.Errorf("target %s prints no kernels over a dynamic dimension", t.Name)
	}
	values := slices.Sorted(maps.Keys(states))
	fs := make(map[int]*tir.PrimFunc, len(values))
	for _, v := range values {
		f, err := t.lower(states[v], name)
		if err != nil {
			return nil, nil, fmt.Errorf("lowering at %d: %w", v, err)
		}
		fs[v] = f
	}
	// Kernels that take a constant packed in different layouts differ in
	// their calling convention: they never share a class.
	var order []string
	byPacking := map[string][]int{}
	for _, v := range values {
		key := fs[v].Packing()
		if byPacking[key] == nil {
			order = append(order, key)
		}
		byPacking[key] = append(byPacking[key], v)
	}
	var fams []*codegen.Family
	for _, key := range order {
		vs := byPacking[key]
		codes := make(map[int]string, len(vs))
		ws := make(map[int]int, len(vs))
		for i, v := range vs {
			var others []*tir.PrimFunc
			for _, j := range []int{0, len(vs) - 1, i - 1, i + 1} {
				if j >= 0 && j < len(vs) && j != i {
					others = append(others, fs[vs[j]])
				}
			}
			f := *fs[v]
			f.Dynamic = tir.DynamicLoops(&f, others...)
			p, err := t.dimModule(&f)
			if err != nil {
				return nil, nil, fmt.Errorf("codegen at %d: %w", v, err)
			}
			codes[v], ws[v] = p.Code, p.Workspace
		}
		fam, err := codegen.NewFamily(codes)
		if err != nil {
			return nil, nil, err
		}
		for c := range fam.Classes {
			for _, v := range fam.Classes[c].Values {
				fam.Classes[c].Workspace = max(fam.Classes[c].Workspace, ws[v])
			}
		}
		fams = append(fams, fam)
	}
	fam, err := codegen.MergeFamilies(fams...)
	if err != nil {
		return nil, nil, err
	}
	return fam, fs, nil
}
