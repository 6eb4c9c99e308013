package measure

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/te"
)

// Limits on what a measurement may take. A model's shapes are checked when
// it is read (graph.MaxElems elements per tensor at most), but a shape
// within that limit can still ask for terabytes: the sizes are checked
// here, before anything is allocated, so that such a task is an error and
// not an out-of-memory crash.

// DefaultMaxMemory is the memory one measurement may take when
// Measurer.MaxMemory is zero: 8 GiB.
const DefaultMaxMemory = 8 << 30

// ErrTooLarge is returned (wrapped) when a task needs more memory to be
// measured than the limit.
var ErrTooLarge = errors.New("too large to measure")

// Footprint returns the bytes measuring d may take: every tensor of the
// DAG (inputs, intermediates and outputs) as float32 at once, which is
// what the reference evaluator holds when it checks a candidate; the
// harness child holds the inputs, outputs and the kernel's temporaries.
func Footprint(d *te.DAG) int64 {
	var n int64
	for _, t := range d.Tensors {
		n += 4 * int64(t.Size())
	}
	return n
}

// CheckFootprint returns an error wrapping ErrTooLarge when measuring d
// takes more than max bytes (DefaultMaxMemory when max <= 0). The error
// names the largest tensor.
func CheckFootprint(d *te.DAG, max int64) error {
	if max <= 0 {
		max = DefaultMaxMemory
	}
	need := Footprint(d)
	if need <= max {
		return nil
	}
	var big *te.Tensor
	for _, t := range d.Tensors {
		if big == nil || t.Size() > big.Size() {
			big = t
		}
	}
	return fmt.Errorf("%w: its %d tensors take %s (the largest, %s%s, %s), more than the %s allowed",
		ErrTooLarge, len(d.Tensors), Bytes(need), big.Name, dims(big.Shape), Bytes(4*int64(big.Size())), Bytes(max))
}

// Bytes prints a byte count with a binary unit: "512 B", "3.0 KiB",
// "8.0 GiB", "4.0 TiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// dims prints a shape as [d0,d1,...].
func dims(shape []int) string {
	return "[" + strings.Trim(strings.ReplaceAll(fmt.Sprint(shape), " ", ","), "[]") + "]"
}
