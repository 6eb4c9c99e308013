package assemble

import (
	"fmt"
	"slices"
	"sort"
)

// The static memory planner: intermediate tensors → offsets in one arena.
//
//	[]Buffer{bytes, first step, last step} ──PlanMemory──▶ offsets, arena peak
//
// Every intermediate tensor of the executor lives from the step that
// writes it to the last step that reads it (both included: a kernel's
// inputs and outputs are live together and must not overlap, since the
// kernels take their buffers as restrict pointers). Two tensors whose
// lifetimes do not intersect may share memory. The planner is TFLite's
// "greedy by size" placement: tensors are placed largest first, each at
// the offset of the smallest gap between the already placed tensors whose
// lifetimes intersect its own that is large enough (best fit), or above
// all of them. The goal is the arena's peak, not the sum of the tensors;
// the largest total of tensors live at one step is a lower bound of any
// placement and is reported next to both.

// Align is the alignment of every arena offset and of the arena itself, in
// bytes: a cache line, and the widest vector the code generator emits.
const Align = 64

// Buffer is one tensor to place: its size and lifetime, the executor steps
// First ≤ Last that write and read it.
type Buffer struct {
	Name        string
	Bytes       int64
	First, Last int
}

// MemoryPlan is a placement of buffers in one arena.
type MemoryPlan struct {
	Offsets []int64 // per buffer, in the order given: a multiple of Align
	Peak    int64   // the arena's size: the largest offset + aligned size
	Sum     int64   // the sum of the aligned sizes: one allocation per tensor
	LiveMax int64   // the largest sum of aligned sizes live at one step: a lower bound of Peak
}

func alignUp(n int64) int64 { return (n + Align - 1) / Align * Align }

func overlapsInTime(a, b Buffer) bool { return a.First <= b.Last && b.First <= a.Last }

// PlanMemory places bufs in one arena. The placement depends only on the
// buffers, in their order, so the same model always gets the same plan.
func PlanMemory(bufs []Buffer) (*MemoryPlan, error) {
	for _, b := range bufs {
		if b.Bytes < 0 || b.First < 0 || b.Last < b.First {
			return nil, fmt.Errorf("build: memory plan: buffer %s has size %d and lifetime [%d, %d]", b.Name, b.Bytes, b.First, b.Last)
		}
	}
	p := &MemoryPlan{Offsets: make([]int64, len(bufs))}
	// Largest first; ties by start of lifetime, then by position.
	order := make([]int, len(bufs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		a, b := bufs[order[x]], bufs[order[y]]
		if sa, sb := alignUp(a.Bytes), alignUp(b.Bytes); sa != sb {
			return sa > sb
		}
		return a.First < b.First
	})
	var placed []int
	for _, i := range order {
		size := alignUp(bufs[i].Bytes)
		p.Sum += size
		var conflicts []int
		for _, j := range placed {
			if overlapsInTime(bufs[i], bufs[j]) {
				conflicts = append(conflicts, j)
			}
		}
		slices.SortFunc(conflicts, func(x, y int) int {
			if p.Offsets[x] != p.Offsets[y] {
				return int(p.Offsets[x] - p.Offsets[y])
			}
			return x - y
		})
		best, bestGap := int64(-1), int64(-1)
		end := int64(0) // the highest end of the conflicts seen so far
		for _, j := range conflicts {
			if gap := p.Offsets[j] - end; gap >= size && (bestGap < 0 || gap < bestGap) {
				best, bestGap = end, gap
			}
			end = max(end, p.Offsets[j]+alignUp(bufs[j].Bytes))
		}
		if best < 0 {
			best = end
		}
		p.Offsets[i] = best
		p.Peak = max(p.Peak, best+size)
		placed = append(placed, i)
	}
	last := -1
	for _, b := range bufs {
		last = max(last, b.Last)
	}
	for step := 0; step <= last; step++ {
		live := int64(0)
		for _, b := range bufs {
			if b.First <= step && step <= b.Last {
				live += alignUp(b.Bytes)
			}
		}
		p.LiveMax = max(p.LiveMax, live)
	}
	return p, p.Check(bufs)
}

// Check verifies the plan: every offset aligned, every buffer inside the
// arena, and no two buffers live at the same step sharing a byte.
func (p *MemoryPlan) Check(bufs []Buffer) error {
	if len(p.Offsets) != len(bufs) {
		return fmt.Errorf("build: memory plan: %d offsets for %d buffers", len(p.Offsets), len(bufs))
	}
	for i, a := range bufs {
		oa := p.Offsets[i]
		if oa < 0 || oa%Align != 0 || oa+a.Bytes > p.Peak {
			return fmt.Errorf("build: memory plan: buffer %s at %d (%d bytes) is misaligned or outside the arena of %d bytes", a.Name, oa, a.Bytes, p.Peak)
		}
		for j := i + 1; j < len(bufs); j++ {
			b, ob := bufs[j], p.Offsets[j]
			if a.Bytes > 0 && b.Bytes > 0 && overlapsInTime(a, b) && oa < ob+b.Bytes && ob < oa+a.Bytes {
				return fmt.Errorf("build: memory plan: %s [%d, %d) and %s [%d, %d) are live together and overlap", a.Name, oa, oa+a.Bytes, b.Name, ob, ob+b.Bytes)
			}
		}
	}
	return nil
}
