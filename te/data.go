package te

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// DType is the element type of t's buffer.
func (t *Tensor) DType() tir.DType { return t.Buf.DType }

// RandomSlots fills slots (tir's one-slot-per-element form) with random
// data of type dt from uniform, a source of numbers in [0, 1): floats
// uniform in [-1, 1); 8- and 16-bit integers over their whole range; int32
// over ±2^20 (an int32 input is a bias or an accumulator: values that
// leave room for the arithmetic after it).
func RandomSlots(dt tir.DType, slots []float32, uniform func() float64) {
	if !dt.IntElem() {
		for i := range slots {
			slots[i] = float32(uniform()*2 - 1)
		}
		return
	}
	lo, hi := dt.Range()
	if dt == tir.Int32 {
		lo, hi = -1<<20, 1<<20
	}
	for i := range slots {
		v := lo + int64(uniform()*float64(hi-lo+1))
		slots[i] = tir.IntSlot(min(v, hi))
	}
}

// Mismatch returns the first element of got that differs from want, the
// reference evaluator's output of type dt, and a description of it; -1
// when they agree. Integer outputs must be equal; float outputs within
// tol·(1+|want|), NaN matching NaN only.
func Mismatch(dt tir.DType, got, want []float32, tol float64) (int, string) {
	if len(got) != len(want) {
		return 0, fmt.Sprintf("%d elements, want %d", len(got), len(want))
	}
	if dt.IntElem() {
		for i := range want {
			if g, w := tir.SlotInt(dt, got[i]), tir.SlotInt(dt, want[i]); g != w {
				return i, fmt.Sprintf("got %d, want %d", g, w)
			}
		}
		return -1, ""
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			return i, fmt.Sprintf("got %v, want %v", got[i], want[i])
		}
	}
	return -1, ""
}
