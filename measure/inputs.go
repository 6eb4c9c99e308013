package measure

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// RandomInputs returns the data the runner gives the input args of a job
// whose Inputs are nil: one slice per non-output arg, in arg order, in
// tir's one-slot-per-element form, floats uniform in [-1, 1) and integers
// as te.RandomSlots draws them, from one PCG stream seeded by seed.
// Callers use it to compute the reference outputs for Compare.
func RandomInputs(args []Arg, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 0x7e55e7a))
	var ins [][]float32
	for _, a := range args {
		if a.Output {
			continue
		}
		buf := make([]float32, max(a.Size, 0))
		te.RandomSlots(a.DType, buf, rng.Float64)
		ins = append(ins, buf)
	}
	return ins
}

// writeInputs writes bufs, the data of the input args, back to back in
// the args' memory layout (tir.PackMemory) as raw native-endian 32-bit
// words, the layout harness.c reads.
func writeInputs(path string, args []Arg, bufs [][]float32) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("measure: input file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var b [4]byte
	k := 0
	for _, a := range args {
		if a.Output || k >= len(bufs) {
			continue
		}
		for _, v := range tir.PackMemory(a.DType, bufs[k]) {
			binary.NativeEndian.PutUint32(b[:], math.Float32bits(v))
			w.Write(b[:])
		}
		k++
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("measure: input file: %w", err)
	}
	return nil
}

// readOutputs reads the output file the harness wrote: one slice per output
// arg, in arg order.
func readOutputs(path string, args []Arg) ([][]float32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("measure: output file: %w", err)
	}
	want := 0
	for _, a := range args {
		if a.Output {
			want += tir.MemoryWords(a.DType, a.Size) * 4
		}
	}
	if len(data) != want {
		return nil, fmt.Errorf("measure: output file has %d bytes, want %d", len(data), want)
	}
	var outs [][]float32
	for _, a := range args {
		if !a.Output {
			continue
		}
		words := tir.MemoryWords(a.DType, a.Size)
		buf := make([]float32, words)
		for i := range buf {
			buf[i] = math.Float32frombits(binary.NativeEndian.Uint32(data[4*i:]))
		}
		data = data[4*words:]
		outs = append(outs, tir.UnpackMemory(a.DType, buf, a.Size))
	}
	return outs, nil
}
