// Package sketch derives schedule sketches from a compute DAG by rules, as
// Ansor does, and fills them at random to make the initial population of the
// search (annotate.go); the mutations the search applies live here too
// (mutate.go).
//
// A sketch is a State whose structure is decided — which stages are
// inlined, tiled, cached, factored, fused into which consumer — but whose
// split lengths are left unfilled. Generate visits the stages from the last
// to the first; at each stage every rule of the list is asked whether it
// applies, and those that do produce the next states. The rules look only
// at properties of the DAG (reductions, data reuse, elementwise consumers,
// inlineability), never at operator names.
//
// Entry points: Generate (sketches), Sample (random complete states),
// Mutate (one random change of a complete state).
package sketch

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/tir"
)

// Cond is a rule's answer for a stage.
type Cond uint8

const (
	Skip             Cond = iota // the rule does not apply
	Apply                        // apply it, and let the next rules see the same state too
	ApplyAndSkipRest             // apply it, and no later rule sees this state
)

// next is a state produced by a rule and the stage to visit next.
type next struct {
	state *schedule.State
	stage int
}

// Rule is one sketch rule: a name, a condition, and an apply that may fork
// the state into several.
type Rule interface {
	Name() string
	Condition(g *generator, s *schedule.State, stage int) Cond
	Apply(g *generator, s *schedule.State, stage int) ([]next, error)
}

// Options parameterize sketch generation and annotation for a target. A
// target (package backend) makes them; CPUOptions gives the CPU's.
type Options struct {
	// Rules are the sketch rules, in the order Generate asks them.
	Rules []Rule
	// Annotators fill a sketch, in order, after its tile sizes (Sample).
	Annotators []Annotator
	// Lower is the target's lowering: Default keeps the first state it
	// accepts.
	Lower func(s *schedule.State, name string) (*tir.PrimFunc, error)
	// Cores is the number of cores parallel loops should feed.
	Cores int
	// TileStructure is the multi-level tiling structure: S a level of
	// spatial loops, R a level of reduce loops. CPU: "SSRSRS".
	TileStructure string
	// FusionLevels are the spatial tile levels at which a fused
	// elementwise consumer takes the tiled stage (CPU: 1 and 2).
	FusionLevels []int
	// MaxInnermostSplit bounds the innermost split length.
	MaxInnermostSplit int
	// MaxVectorLanes bounds the extent of a vectorized loop (Ansor's
	// max_vectorize_size): the vector axis of the machine's register tile
	// (RegisterTile). Wider loops over fused axes are mostly gathers, which
	// compile slowly, run slowly and grow under unrolling.
	MaxVectorLanes int
	// Lanes and VectorRegs are the machine's float32 lanes per vector
	// register and its vector registers (the cpu target's machine model);
	// the default schedules' register tiles fit them. Zero on a GPU.
	Lanes, VectorRegs int
	// L2 is the L2 cache of one core in bytes as the default schedules
	// see it (machine.Machine.ScheduleL2): a stage streaming a larger
	// weight orders its tiles for it. Zero on a GPU: none streams.
	L2 int
	// UnrollSteps are the auto_unroll_max_step values to draw from.
	UnrollSteps []int
	// GPU are the device's limits on a GPU target (zero on the CPU): the
	// thread binding annotator tiles for its warp and keeps within its
	// threads and virtual threads.
	GPU schedule.GPULimits
	// DefaultTiles fills the tile sizes of the default schedule (Default):
	// the sketch filled, in order of preference (the first whose sample
	// lowers wins); nil means the CPU's register-tile rule.
	DefaultTiles func(sketch *schedule.State) ([]*schedule.State, error)
}

// CPUOptions returns Ansor's CPU rules and defaults for machine m: its
// cores feed the parallel loops, its vector registers bound the vector
// lanes and the default register tiles.
func CPUOptions(m machine.Machine) Options {
	cores := m.Cores
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	vecLanes, _ := RegisterTile(m.Lanes(), m.VectorRegs)
	return Options{
		Rules:             cpuRules,
		Annotators:        cpuAnnotators,
		Lower:             schedule.Lower,
		Cores:             cores,
		TileStructure:     "SSRSRS",
		FusionLevels:      []int{1, 2},
		MaxInnermostSplit: 64,
		MaxVectorLanes:    vecLanes,
		Lanes:             m.Lanes(),
		VectorRegs:        m.VectorRegs,
		L2:                m.ScheduleL2(),
		UnrollSteps:       []int{0, 16, 64, 512},
	}
}

// maxTileRows bounds the rows of a default register tile: beyond it a
// tile's rows outgrow the short axes of the tasks (a conv's 64 output
// channels split in four) before the registers run out.
const maxTileRows = 16

// RegisterTile returns the register tile of the default schedules on a
// machine with lanes float32 lanes per vector and regs vector registers:
// its vector axis in lanes, and its rows. A row of the tile keeps one
// accumulator per vector; the rows × vectors accumulators, the vectors of
// the next load and one broadcast must fit the register file. One vector
// per row while the registers hold maxTileRows rows of it (AVX-512's 32
// registers: a 16 × 16 tile, measured best there); else two vectors, so
// that each broadcast feeds two FMAs (AVX2's 16 registers: 6 rows × 16
// lanes, as OpenBLAS's Haswell kernel).
func RegisterTile(lanes, regs int) (vecLanes, rows int) {
	if lanes <= 0 || regs <= 0 {
		return 1, 1
	}
	vecs := 1
	if regs-2 < maxTileRows {
		vecs = 2
	}
	return vecs * lanes, TileRows(vecs, regs)
}

// TileRows returns how many rows of vecs accumulators each fit regs
// registers beside the vecs vectors of the next load and one broadcast
// (at most maxTileRows, at least 1).
func TileRows(vecs, regs int) int {
	if vecs <= 0 {
		vecs = 1
	}
	return max(1, min(maxTileRows, (regs-vecs-1)/vecs))
}

// generator carries the options through the rules.
type generator struct {
	opts Options
}

// Generate returns the sketches of the DAG of s0 (its initial state),
// in a deterministic order, using the rule list of opts.
func Generate(s0 *schedule.State, opts Options) ([]*schedule.State, error) {
	if len(opts.Rules) == 0 {
		return nil, errNoRules
	}
	if err := checkStructure(opts.TileStructure); err != nil {
		return nil, err
	}
	rules := opts.Rules
	g := &generator{opts: opts}
	work := []next{{s0, len(s0.Stages) - 1}}
	var out []*schedule.State
	seen := map[string]bool{}
	for len(work) > 0 {
		cur := work[len(work)-1]
		work = work[:len(work)-1]
		if cur.stage < 0 {
			key := stepsKey(cur.state)
			if !seen[key] {
				seen[key] = true
				out = append(out, cur.state)
			}
			continue
		}
		var produced []next
		for _, r := range rules {
			c := r.Condition(g, cur.state, cur.stage)
			if c == Skip {
				continue
			}
			ns, err := r.Apply(g, cur.state, cur.stage)
			if err != nil {
				return nil, fmt.Errorf("sketch rule %s at stage %d (%s): %w", r.Name(), cur.stage, cur.state.Stages[cur.stage].Tensor.Name, err)
			}
			produced = append(produced, ns...)
			if c == ApplyAndSkipRest {
				break
			}
		}
		// Push in reverse so that the first rule's states are finished first.
		for i := len(produced) - 1; i >= 0; i-- {
			work = append(work, produced[i])
		}
	}
	return out, nil
}

// errNoRules is returned by Generate when the options name no rule: the
// options were not made by a target.
var errNoRules = errors.New("sketch: Options.Rules is empty (options must come from a target, e.g. CPUOptions)")

// lower is opts.Lower, or an error when the options name no lowering.
func (opts Options) lower(s *schedule.State, name string) (*tir.PrimFunc, error) {
	if opts.Lower == nil {
		return nil, errors.New("sketch: Options.Lower is nil (options must come from a target, e.g. CPUOptions)")
	}
	return opts.Lower(s, name)
}

func checkStructure(s string) error {
	if s == "" || strings.Trim(s, "SR") != "" || !strings.Contains(s, "S") {
		return fmt.Errorf("sketch: tile structure %q must be made of S and R and contain an S", s)
	}
	return nil
}

// stepsKey is the canonical print of a state's steps: two states with the
// same key are the same schedule.
func stepsKey(s *schedule.State) string {
	data, err := schedule.MarshalSteps(s.Steps)
	if err != nil {
		panic(err) // every step kind has an encoding
	}
	return string(data)
}

// Key is the canonical print of a state's steps; the search removes
// duplicates with it.
func Key(s *schedule.State) string { return stepsKey(s) }
