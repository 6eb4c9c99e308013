package assemble

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPlanMemory(t *testing.T) {
	for _, c := range []struct {
		name       string
		bufs       []Buffer
		wantPeak   int64
		wantOffset []int64 // nil: not checked
	}{
		{name: "empty", bufs: nil, wantPeak: 0},
		{name: "one", bufs: []Buffer{{"a", 100, 0, 0}}, wantPeak: 128, wantOffset: []int64{0}},
		{
			// A chain: each tensor dies as the next one's successor is
			// written, so two slots suffice.
			name:     "chain",
			bufs:     []Buffer{{"a", 256, 0, 1}, {"b", 256, 1, 2}, {"c", 256, 2, 3}, {"d", 256, 3, 4}},
			wantPeak: 512, wantOffset: []int64{0, 256, 0, 256},
		},
		{
			name:     "all live together",
			bufs:     []Buffer{{"a", 64, 0, 3}, {"b", 128, 0, 3}, {"c", 192, 0, 3}},
			wantPeak: 384, wantOffset: []int64{320, 192, 0},
		},
		{
			// The small late tensor fits in the gap the dead large one
			// left between two live ones (best fit), not above them.
			name: "best fit gap",
			bufs: []Buffer{
				{"big", 1024, 0, 1}, {"low", 512, 0, 5}, {"high", 512, 0, 5},
				{"small", 256, 2, 3}, {"tiny", 64, 2, 3},
			},
			wantPeak: 2048, wantOffset: []int64{0, 1024, 1536, 0, 256},
		},
		{
			name: "residual block", // x lives across the block, its branch reuses memory
			bufs: []Buffer{
				{"x", 400, 0, 3}, {"b1", 400, 1, 2}, {"b2", 400, 2, 3}, {"y", 400, 3, 4}, {"z", 400, 4, 5},
			},
			wantPeak: 3 * 448,
		},
		{name: "zero bytes", bufs: []Buffer{{"a", 0, 0, 1}, {"b", 64, 0, 1}}, wantPeak: 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanMemory(c.bufs)
			if err != nil {
				t.Fatal(err)
			}
			if p.Peak != c.wantPeak {
				t.Errorf("peak %d, want %d (offsets %v)", p.Peak, c.wantPeak, p.Offsets)
			}
			if c.wantOffset != nil && !slices.Equal(p.Offsets, c.wantOffset) {
				t.Errorf("offsets %v, want %v", p.Offsets, c.wantOffset)
			}
			if p.LiveMax > p.Peak || p.Peak > p.Sum {
				t.Errorf("live max %d ≤ peak %d ≤ sum %d does not hold", p.LiveMax, p.Peak, p.Sum)
			}
		})
	}
}

func TestPlanMemoryRejects(t *testing.T) {
	for _, b := range []Buffer{{"neg", -1, 0, 0}, {"backwards", 4, 3, 2}, {"before start", 4, -1, 0}} {
		if _, err := PlanMemory([]Buffer{b}); err == nil {
			t.Errorf("%s: no error", b.Name)
		}
	}
}

// TestPlanMemoryRandom places random lifetimes and sizes: PlanMemory checks
// its own result (no two live buffers overlap), and Check must catch a
// planted overlap.
func TestPlanMemoryRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		bufs := make([]Buffer, n)
		for i := range bufs {
			first := rng.IntN(30)
			bufs[i] = Buffer{Name: string(rune('a' + i%26)), Bytes: int64(1 + rng.IntN(5000)), First: first, Last: first + rng.IntN(8)}
		}
		p, err := PlanMemory(bufs)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if p.LiveMax > p.Peak || p.Peak > p.Sum {
			t.Fatalf("trial %d: live max %d ≤ peak %d ≤ sum %d does not hold", trial, p.LiveMax, p.Peak, p.Sum)
		}
		// Move a buffer onto one it shares a step with: Check must object.
		for i := range bufs {
			for j := range bufs {
				if i != j && overlapsInTime(bufs[i], bufs[j]) {
					bad := *p
					bad.Offsets = slices.Clone(p.Offsets)
					bad.Offsets[i] = bad.Offsets[j]
					if bad.Check(bufs) == nil {
						t.Fatalf("trial %d: Check accepts %s and %s at the same offset", trial, bufs[i].Name, bufs[j].Name)
					}
					goto next
				}
			}
		}
	next:
	}
}
