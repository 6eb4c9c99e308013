package schedule

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// The JSON form of a step is a short array led by a tag, as in Ansor's
// logs: ["SP", stage, iter, [lengths...]]. The form is part of the record
// format: change it only with a new records version.
//
//	SP   split              stage, iter, [lengths]
//	FSP  follow_split       stage, iter, src_step, n_parts
//	FFSP follow_fused_split stage, iter, [src_steps], level
//	FU   fuse               stage, [iters]
//	RE   reorder            stage, [order]
//	CA   compute_at         stage, target_stage, target_iter
//	CI   compute_inline     stage
//	CR   compute_root       stage
//	CW   cache_write        stage, scope
//	CHR  cache_read         stage, scope, [readers]
//	RF   rfactor            stage, iter
//	AN   annotate           stage, iter, annotation
//	PR   pragma             stage, iter, key, value
//	RL   rewrite_layout     stage

// EncodeStep returns the JSON array form of a step.
func EncodeStep(st Step) []any {
	switch st := st.(type) {
	case *Split:
		return []any{"SP", st.Stage, st.Iter, st.Lengths}
	case *FollowSplit:
		return []any{"FSP", st.Stage, st.Iter, st.SrcStep, st.NParts}
	case *FollowFusedSplit:
		return []any{"FFSP", st.Stage, st.Iter, st.SrcSteps, st.Level}
	case *Fuse:
		return []any{"FU", st.Stage, st.Iters}
	case *Reorder:
		return []any{"RE", st.Stage, st.Order}
	case *ComputeAt:
		return []any{"CA", st.Stage, st.TargetStage, st.TargetIter}
	case *ComputeInline:
		return []any{"CI", st.Stage}
	case *ComputeRoot:
		return []any{"CR", st.Stage}
	case *CacheWrite:
		return []any{"CW", st.Stage, st.Scope.String()}
	case *CacheRead:
		return []any{"CHR", st.Stage, st.Scope.String(), st.Readers}
	case *Rfactor:
		return []any{"RF", st.Stage, st.Iter}
	case *Annotate:
		return []any{"AN", st.Stage, st.Iter, st.Ann.String()}
	case *Pragma:
		return []any{"PR", st.Stage, st.Iter, st.Key, st.Value}
	case *RewriteLayout:
		return []any{"RL", st.Stage}
	}
	panic(fmt.Sprintf("schedule: step %T has no encoding", st))
}

// MarshalSteps encodes steps as a JSON array of step arrays.
func MarshalSteps(steps []Step) ([]byte, error) {
	out := make([][]any, len(steps))
	for i, s := range steps {
		out[i] = EncodeStep(s)
	}
	return json.Marshal(out)
}

// UnmarshalSteps decodes what MarshalSteps wrote. Every malformed step is an
// error naming its position.
func UnmarshalSteps(data []byte) ([]Step, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	steps := make([]Step, len(raw))
	for i, r := range raw {
		st, err := DecodeStep(r)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		steps[i] = st
	}
	return steps, nil
}

// DecodeStep decodes one step array.
func DecodeStep(data []byte) (Step, error) {
	var a []any
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, err
	}
	if len(a) == 0 {
		return nil, fmt.Errorf("empty step")
	}
	tag, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("step tag %v is not a string", a[0])
	}
	d := decoder{a: a, tag: tag}
	var st Step
	switch tag {
	case "SP":
		d.arity(4)
		st = &Split{Stage: d.int(1), Iter: d.int(2), Lengths: d.ints(3)}
	case "FSP":
		d.arity(5)
		st = &FollowSplit{Stage: d.int(1), Iter: d.int(2), SrcStep: d.int(3), NParts: d.int(4)}
	case "FFSP":
		d.arity(5)
		st = &FollowFusedSplit{Stage: d.int(1), Iter: d.int(2), SrcSteps: d.ints(3), Level: d.int(4)}
	case "FU":
		d.arity(3)
		st = &Fuse{Stage: d.int(1), Iters: d.ints(2)}
	case "RE":
		d.arity(3)
		st = &Reorder{Stage: d.int(1), Order: d.ints(2)}
	case "CA":
		d.arity(4)
		st = &ComputeAt{Stage: d.int(1), TargetStage: d.int(2), TargetIter: d.int(3)}
	case "CI":
		d.arity(2)
		st = &ComputeInline{Stage: d.int(1)}
	case "RL":
		d.arity(2)
		st = &RewriteLayout{Stage: d.int(1)}
	case "CR":
		d.arity(2)
		st = &ComputeRoot{Stage: d.int(1)}
	case "CW":
		d.arity(3)
		st = &CacheWrite{Stage: d.int(1), Scope: d.scope(2)}
	case "CHR":
		d.arity(4)
		st = &CacheRead{Stage: d.int(1), Scope: d.scope(2), Readers: d.ints(3)}
	case "RF":
		d.arity(3)
		st = &Rfactor{Stage: d.int(1), Iter: d.int(2)}
	case "AN":
		d.arity(4)
		st = &Annotate{Stage: d.int(1), Iter: d.int(2), Ann: d.ann(3)}
	case "PR":
		d.arity(5)
		st = &Pragma{Stage: d.int(1), Iter: d.int(2), Key: d.str(3), Value: d.int(4)}
	default:
		return nil, fmt.Errorf("unknown step tag %q", tag)
	}
	if d.err != nil {
		return nil, fmt.Errorf("%s: %w", tag, d.err)
	}
	return st, nil
}

// decoder reads the fields of one step array, keeping the first error.
type decoder struct {
	a   []any
	tag string
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) arity(n int) {
	if len(d.a) != n {
		d.fail("%d fields, want %d", len(d.a), n)
	}
}

func (d *decoder) field(i int) any {
	if i >= len(d.a) {
		d.fail("missing field %d", i)
		return nil
	}
	return d.a[i]
}

func toInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, false
	}
	return int(f), true
}

func (d *decoder) int(i int) int {
	v, ok := toInt(d.field(i))
	if !ok && d.err == nil {
		d.fail("field %d: %v is not an integer", i, d.a[i])
	}
	return v
}

func (d *decoder) ints(i int) []int {
	l, ok := d.field(i).([]any)
	if !ok {
		d.fail("field %d is not a list", i)
		return nil
	}
	out := make([]int, len(l))
	for k, x := range l {
		v, ok := toInt(x)
		if !ok {
			d.fail("field %d[%d]: %v is not an integer", i, k, x)
		}
		out[k] = v
	}
	return out
}

func (d *decoder) str(i int) string {
	s, ok := d.field(i).(string)
	if !ok {
		d.fail("field %d is not a string", i)
	}
	return s
}

func (d *decoder) scope(i int) tir.Scope {
	switch s := d.str(i); s {
	case "global":
		return tir.Global
	case "local":
		return tir.Local
	case "shared":
		return tir.Shared
	default:
		d.fail("field %d: unknown scope %q", i, s)
	}
	return 0
}

func (d *decoder) ann(i int) Annotation {
	a, err := ParseAnnotation(d.str(i))
	if err != nil {
		d.fail("field %d: %v", i, err)
	}
	return a
}
