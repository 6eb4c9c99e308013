// Command serve loads one built model into this process and runs it from
// many goroutines at once, as a server answering concurrent requests
// would: every output must equal the output of the same input run alone,
// and the process's resident memory is compared with what one model needs
// (its weights, once, and one workspace per concurrent run).
//
//	go run ./bench/serve -model DIR [-goroutines 16] [-runs 500] [-threads 1]
//	go run -race ./bench/serve -model DIR    # the Go side under the race detector
//
// It prints the throughput, the latency of a run (min and median), and
// "resident/(weights+workspaces) = R": the growth of the process's peak
// resident set (VmHWM) from before the model was opened, over the weights
// plus the workspaces the runs could use at once (goroutines × the arena
// and the typed copies of the inputs and outputs) plus the inputs and
// outputs the goroutines hold.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tessera-ml/tessera/tsrt"
)

func main() {
	dir := flag.String("model", "", "the build `DIR` (tune build -o DIR)")
	goroutines := flag.Int("goroutines", 16, "concurrent callers")
	runs := flag.Int("runs", 500, "runs per goroutine")
	threads := flag.Int("threads", 1, "threads of each run (the model's tessera_set_num_threads)")
	inputs := flag.Int("inputs", 4, "distinct random inputs, cycled through by the goroutines")
	flag.Parse()
	if err := run(*dir, *goroutines, *runs, *threads, *inputs); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

func run(dir string, goroutines, runs, threads, nInputs int) error {
	if dir == "" || goroutines < 1 || runs < 1 || nInputs < 1 {
		return fmt.Errorf("want -model DIR, -goroutines ≥ 1, -runs ≥ 1, -inputs ≥ 1")
	}
	before, err := peakRSS()
	if err != nil {
		return err
	}
	m, err := tsrt.Open(dir)
	if err != nil {
		return err
	}
	defer m.Close()
	man := m.Manifest()
	if man == nil {
		return fmt.Errorf("%s: %w", dir, tsrt.ErrNoManifest)
	}
	if err := m.SetThreads(threads); err != nil {
		return err
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	ins := make([][]tsrt.Tensor, nInputs)
	want := make([][][]byte, nInputs)
	ioBytes := 0
	for k := range ins {
		for _, t := range m.Inputs() {
			data := make([]byte, t.Elems()*t.DType.Size())
			if t.DType == tsrt.Float32 {
				v := make([]float32, t.Elems())
				for i := range v {
					v[i] = float32(rng.Float64()*2 - 1)
				}
				data = tsrt.NewTensor(t.Shape, v).Data
			} else {
				for i := range data { // small integers in every dtype's range
					if i%t.DType.Size() == 0 {
						data[i] = byte(rng.IntN(2))
					}
				}
			}
			ins[k] = append(ins[k], tsrt.Tensor{DType: t.DType, Shape: t.Shape, Data: data})
			ioBytes += len(data)
		}
		out, err := m.Run(ctx, ins[k])
		if err != nil {
			return err
		}
		for _, o := range out {
			want[k] = append(want[k], o.Data)
		}
	}
	var outBytes int
	for _, t := range m.Outputs() {
		outBytes += t.Elems() * t.DType.Size()
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
	)
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			outs := make([]tsrt.Tensor, len(m.Outputs()))
			for i, t := range m.Outputs() {
				outs[i] = tsrt.Tensor{DType: t.DType, Shape: t.Shape, Data: make([]byte, t.Elems()*t.DType.Size())}
			}
			lat := make([]time.Duration, 0, runs)
			for r := range runs {
				k := (g + r) % nInputs
				t0 := time.Now()
				err := m.RunInto(ctx, ins[k], outs)
				lat = append(lat, time.Since(t0))
				if err == nil {
					for i := range outs {
						if !bytes.Equal(outs[i].Data, want[k][i]) {
							err = fmt.Errorf("goroutine %d, run %d: output %d differs from the same input run alone", g, r, i)
							break
						}
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = cmp(firstErr, err)
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	after, err := peakRSS()
	if err != nil {
		return err
	}
	slices.Sort(latencies)
	total := goroutines * runs
	fmt.Printf("model %s (%s), %d goroutines × %d runs, %d thread(s) per run\n", dir, man.Target, goroutines, runs, threads)
	fmt.Printf("all %d outputs equal to the same input's run alone\n", total)
	fmt.Printf("throughput = %.1f runs/s; latency min %.3f ms, median %.3f ms\n",
		float64(total)/elapsed.Seconds(), ms(latencies[0]), ms(latencies[len(latencies)/2]))
	work := int64(goroutines) * (man.Memory.ArenaBytes + int64(ioBytes/nInputs+outBytes))
	need := man.Weights.Bytes + work + int64(ioBytes+goroutines*outBytes)
	grown := after - before
	fmt.Printf("resident growth %s; weights %s + workspaces %s + inputs and outputs %s = %s\n",
		mib(grown), mib(man.Weights.Bytes), mib(work), mib(int64(ioBytes+goroutines*outBytes)), mib(need))
	fmt.Printf("resident/(weights+workspaces) = %.2f\n", float64(grown)/float64(need))
	return nil
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// peakRSS returns the process's peak resident set (VmHWM) in bytes.
func peakRSS() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}
