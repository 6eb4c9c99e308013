// Command classify is an example: it loads a model built by `tune build`
// into this process (package tessera/tsrt; no C compiler needed), runs
// it on one input and prints the top-1 class and the time of a run.
//
//	go run ./examples/go MODEL [INPUT.bin [OUTPUT.bin]]
//
// MODEL is the build folder. INPUT.bin holds the first input's elements as
// raw float32 (as `tune run --format raw` reads and writes them); without
// it the input is x[i] = (i % 255) / 255. OUTPUT.bin, when given, receives
// the first output, raw.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tessera-ml/tessera/tsrt"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 1 || len(args) > 3 {
		return fmt.Errorf("usage: classify MODEL [INPUT.bin [OUTPUT.bin]]")
	}
	m, err := tsrt.Open(args[0])
	if err != nil {
		return err
	}
	defer m.Close()
	if len(m.Inputs()) != 1 || m.Inputs()[0].DType != tsrt.Float32 || m.Outputs()[0].DType != tsrt.Float32 {
		return fmt.Errorf("this example takes a model of one float32 input")
	}
	info := m.Inputs()[0]
	x := make([]float32, info.Elems())
	if len(args) > 1 {
		data, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		if len(data) != 4*len(x) {
			return fmt.Errorf("%s: %d bytes, the input takes %d float32 values", args[1], len(data), len(x))
		}
		v, err := tsrt.Values[float32](tsrt.Tensor{DType: tsrt.Float32, Data: data})
		if err != nil {
			return err
		}
		copy(x, v)
	} else {
		for i := range x {
			x[i] = float32(i%255) / 255
		}
	}
	ctx := context.Background()
	in := []tsrt.Tensor{tsrt.NewTensor(info.Shape, x)}
	out, err := m.Run(ctx, in) // the first run: warm-up
	if err != nil {
		return err
	}
	const runs = 10
	best := time.Duration(1 << 62)
	for range runs {
		t0 := time.Now()
		if err := m.RunInto(ctx, in, out); err != nil {
			return err
		}
		best = min(best, time.Since(t0))
	}
	y, err := tsrt.Values[float32](out[0])
	if err != nil {
		return err
	}
	top := 0
	for i, v := range y {
		if v > y[top] {
			top = i
		}
	}
	fmt.Printf("%s: top-1 class %d (%s = %g), %.3f ms per run (best of %d)\n", args[0], top, m.Outputs()[0].Name, y[top], best.Seconds()*1e3, runs)
	if len(args) > 2 {
		return os.WriteFile(args[2], out[0].Data, 0o644)
	}
	return nil
}
