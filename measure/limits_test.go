package measure

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestTooLargeToMeasure: a task whose tensors take more than the memory
// limit is refused before anything is allocated (a Relu on [1,2^40] and a
// 65536² MatMul died with "fatal error: runtime: out of memory" in
// RandomInputs).
func TestTooLargeToMeasure(t *testing.T) {
	x := te.Placeholder("x", 1, 1<<40)
	relu := te.Compute("relu", []int{1, 1 << 40}, func(i []tir.Expr) tir.Expr { return tir.MaxE(x.At(i...), tir.F32(0)) })
	a, b := te.Placeholder("A", 65536, 65536), te.Placeholder("B", 65536, 65536)
	mm := te.Reduce("C", []int{65536, 65536}, te.Sum, []int{65536}, func(i, r []tir.Expr) tir.Expr {
		return tir.MulE(a.At(i[0], r[0]), b.At(r[0], i[1]))
	})
	for _, out := range []*te.Tensor{relu, mm} {
		d, err := te.NewDAG(out)
		if err != nil {
			t.Fatal(err)
		}
		m := &Measurer{Generate: func(*schedule.State) (Program, error) {
			t.Fatal("a candidate of a task too large was generated")
			return Program{}, nil
		}, Verify: true}
		_, err = m.Measure(context.Background(), []Input{{State: schedule.NewState(d)}})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "8.0 GiB") {
			t.Errorf("%s: error %v, want ErrTooLarge naming the 8.0 GiB limit", out.Name, err)
		}
	}
	// Within the limit it passes; a lower limit refuses it.
	small := te.Placeholder("s", 1024)
	d, _ := te.NewDAG(te.Compute("y", []int{1024}, func(i []tir.Expr) tir.Expr { return small.At(i...) }))
	if err := CheckFootprint(d, 0); err != nil {
		t.Errorf("8 KiB task refused: %v", err)
	}
	if err := CheckFootprint(d, 4096); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "8.0 KiB") {
		t.Errorf("8 KiB task under a 4 KiB limit: %v", err)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 8 << 30: "8.0 GiB", 4 << 40: "4.0 TiB", 3 << 50: "3.0 PiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
