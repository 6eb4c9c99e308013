package partition

import (
	"fmt"
	"math"
	"slices"
)

// Plans over a dimension the kernels take at run time: a sequence length
// S, whose value changes the extents of most tasks' loops, not only how
// many samples there are. The model is prepared at every value of the
// range (a sample of the batch where the model has one too), and must cut
// into the same groups at each, reading and writing the same values; the
// build then prints each task's kernel at every value, as few kernels
// that take the value at run time (target.Family), and the executor calls
// the one for a run's value.

// DimPlan is a model's plans over a dimension given at run time.
type DimPlan struct {
	Symbol Symbol
	// At holds the model at each value of the range, At[v-Symbol.Lo] at v:
	// at batch 1 where the model also has a dynamic batch.
	At []BatchSample
}

// Hi returns the model at the range's largest value, whose memory plan
// serves every value.
func (d *DimPlan) Hi() BatchSample { return d.At[len(d.At)-1] }

// TaskAt returns task k of the plan at the range's largest value (Hi) as
// it is at value v: the task of the same group there.
func (d *DimPlan) TaskAt(k, v int) *Task {
	hi := d.Hi().Plan
	for g, grp := range hi.Groups {
		if grp.Task == hi.Tasks[k] {
			return d.At[v-d.Symbol.Lo].Plan.Groups[g].Task
		}
	}
	return nil
}

// Dim checks the model's plans at every value of sym's range (at[v-Lo] at
// v) against the one at its largest value: the same groups running the
// same ops on the same values, the groups that share a task there sharing
// it at every value (tasks apart there may meet at another), and the same graph
// inputs and outputs.
func Dim(sym Symbol, at []BatchSample) (*DimPlan, error) {
	if sym.Lo < 1 || sym.Hi < sym.Lo || len(at) != sym.Hi-sym.Lo+1 {
		return nil, fmt.Errorf("range %s: %d plans for %d values", sym, len(at), sym.Hi-sym.Lo+1)
	}
	hi := at[len(at)-1]
	for i, s := range at[:len(at)-1] {
		v := sym.Lo + i
		if !slices.Equal(s.Graph.Inputs, hi.Graph.Inputs) || !slices.Equal(s.Graph.Outputs, hi.Graph.Outputs) {
			return nil, fmt.Errorf("at %s=%d the model's inputs and outputs are %v and %v, at %d %v and %v", sym.Name, v, s.Graph.Inputs, s.Graph.Outputs, sym.Hi, hi.Graph.Inputs, hi.Graph.Outputs)
		}
		if err := sameStructure(hi.Plan, s.Plan); err != nil {
			return nil, fmt.Errorf("the plan at %s=%d differs from the one at %d: %w", sym.Name, v, sym.Hi, err)
		}
		for g, grp := range hi.Plan.Groups {
			at := s.Plan.Groups[g]
			if !slices.Equal(at.Inputs, grp.Inputs) || !slices.Equal(at.Outputs, grp.Outputs) {
				return nil, fmt.Errorf("group %d (%s) reads %v and writes %v at %s=%d, but %v and %v at %d", g, grp.Ops(), at.Inputs, at.Outputs, sym.Name, v, grp.Inputs, grp.Outputs, sym.Hi)
			}
			for h := range g {
				// One kernel serves the groups of a task at Hi: they must
				// share it at every value (tasks apart at Hi may meet at v).
				if grp.Task == hi.Plan.Groups[h].Task && at.Task != s.Plan.Groups[h].Task {
					return nil, fmt.Errorf("groups %d and %d share a task at %s=%d but not at %d", h, g, sym.Name, sym.Hi, v)
				}
			}
		}
	}
	return &DimPlan{Symbol: sym, At: at}, nil
}

// TunePoints returns the values a tuning over the range of a dimension
// given at run time tunes its tasks at, and a build takes schedules from:
// the range's ends and middle on a log scale (at a sixth, a half and five
// sixths of the way), each rounded to the nearest multiple of the largest
// power of two up to 16 that keeps it in the range and no more than half
// its size, so that the tiles a schedule picks there divide many values;
// all values of a range of three or fewer.
func (s Symbol) TunePoints() []int {
	if s.Hi-s.Lo < 3 {
		var all []int
		for v := s.Lo; v <= s.Hi; v++ {
			all = append(all, v)
		}
		return all
	}
	var points []int
	for _, f := range []float64{1.0 / 6, 0.5, 5.0 / 6} {
		v := float64(s.Lo) * math.Pow(float64(s.Hi)/float64(s.Lo), f)
		p := int(math.Round(v))
		for m := 16; m > 1; m /= 2 {
			r := int(math.Round(v/float64(m))) * m
			if r >= s.Lo && r <= s.Hi && 2*m <= r {
				p = r
				break
			}
		}
		if len(points) == 0 || points[len(points)-1] != p {
			points = append(points, p)
		}
	}
	return points
}

// ProbePoints returns the values at which a tuning over the range measures
// the best schedules of every tuning point, so that a build can replay at
// each value the schedule measured fastest nearest it rather than the
// nearest point's own: the tuning points, the range's ends, the values
// next to each of those (one below, one above, within the range) and the
// midpoints (on a log scale, rounded) between consecutive points and
// ends; in increasing order, each once. A point's or an end's own
// measurements speak for that value alone: a schedule may tile it exactly
// (a tile of 32 at 160 or 256) and leave a tail of a row at its
// neighbours, where a rival has none; the values next to it, where every
// tile but 1 leaves a tail, speak for the values around it.
func (s Symbol) ProbePoints() []int {
	points := s.TunePoints()
	seq := append(append([]int{s.Lo}, points...), s.Hi)
	var out []int
	for i, v := range seq {
		if i > 0 {
			out = append(out, int(math.Round(math.Sqrt(float64(seq[i-1])*float64(v)))))
		}
		out = append(out, v)
	}
	for _, p := range seq {
		out = append(out, p-1, p+1)
	}
	out = slices.DeleteFunc(out, func(v int) bool { return v < s.Lo || v > s.Hi })
	slices.Sort(out)
	return slices.Compact(out)
}

// LogDistance is how far value v lies from tuning point p on a log scale,
// the distance by which a build replays at v the records of the nearest
// tuning point.
func LogDistance(p, v int) float64 {
	return math.Abs(math.Log(float64(p) / float64(v)))
}

// Nearest returns the tuning point nearest v (LogDistance; the smaller on
// a tie).
func (s Symbol) Nearest(v int) int {
	points := s.TunePoints()
	best := points[0]
	for _, p := range points[1:] {
		if LogDistance(p, v) < LogDistance(best, v) {
			best = p
		}
	}
	return best
}

// PointWeights turns weights on values of the range (how much each value
// matters to the user: how often it is served) into weights of the tuning
// points: each point gets the weights of the values nearest it, scaled so
// that the points' weights average 1, the weight every point has without
// them. A point no weighted value is nearest gets 0. The weights must be
// positive, on values of the range.
func (s Symbol) PointWeights(w map[int]float64) (map[int]float64, error) {
	points := s.TunePoints()
	out := make(map[int]float64, len(points))
	for _, p := range points {
		out[p] = 0
	}
	total := 0.0
	for v, x := range w {
		if v < s.Lo || v > s.Hi {
			return nil, fmt.Errorf("weight on %s=%d, outside the range %s", s.Name, v, s)
		}
		if !(x > 0) || math.IsInf(x, 1) {
			return nil, fmt.Errorf("weight %v on %s=%d: weights must be positive numbers", x, s.Name, v)
		}
		out[s.Nearest(v)] += x
		total += x
	}
	if total == 0 {
		return nil, fmt.Errorf("no weights on %s", s)
	}
	for p := range out {
		out[p] *= float64(len(points)) / total
	}
	return out, nil
}
