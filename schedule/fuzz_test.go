package schedule_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
)

// byteSource feeds the fuzzer's bytes to the random step generator, so
// coverage guidance steers the choice of steps; once they are used up, a
// generator seeded from them takes over.
type byteSource struct {
	data []byte
	rest *rand.PCG
}

func (b *byteSource) Uint64() uint64 {
	if len(b.data) >= 8 {
		v := binary.LittleEndian.Uint64(b.data)
		b.data = b.data[8:]
		return v
	}
	if b.rest == nil {
		var buf [8]byte
		copy(buf[:], b.data)
		b.rest = rand.NewPCG(binary.LittleEndian.Uint64(buf[:]), 0x7e55e7a)
	}
	return b.rest.Uint64()
}

// FuzzSteps: any sequence of steps the generator derives from the input
// (GPU steps included) either fails to apply or lower with an error, or
// computes exactly what the reference evaluator computes, on the CPU and
// (through the thread-emulating interpreter, without a race) on a GPU. It
// never panics.
func FuzzSteps(f *testing.F) {
	f.Add([]byte("split and fuse"))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	dags := []*schedule.State{
		schedule.NewState(matmulRelu(5, 6, 4)),
		schedule.NewState(conv3x3(2, 5, 4, 2)),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		s0 := dags[int(data[0])%len(dags)]
		s := schedtest.RandomGPUState(rand.New(&byteSource{data: data[1:]}), s0, 12)
		if fn, err := schedule.Lower(s, "kernel"); err == nil {
			if err := runAndCompare(s.DAG, fn, 1); err != nil {
				t.Fatalf("%v\nsteps: %v\nlowered:\n%v", err, s.Steps, fn)
			}
		}
		if fn, err := schedule.LowerGPU(s, "kernel"); err == nil {
			if err := schedtest.CheckGPU(s.DAG, fn, 1); err != nil {
				t.Fatalf("gpu: %v\nsteps: %v\nlowered:\n%v", err, s.Steps, fn)
			}
		}
	})
}

// FuzzDecodeSteps: decoding arbitrary bytes as a step list and replaying it
// gives an error or a state that lowers correctly, for the CPU and for a
// GPU; never a panic.
func FuzzDecodeSteps(f *testing.F) {
	seed, _ := schedule.MarshalSteps(gemmSteps(2, 2, 2, 4, 2))
	f.Add(seed)
	f.Add([]byte(`[["SP",2,0,[2]],["CA",2,3,0]]`))
	f.Add([]byte(`[["RF",2,0]]`))
	f.Add([]byte(`[["SP",2,0,[2]],["SP",2,2,[4]],["CHR",0,"shared",[2]],["FU",1,[0,1]],["FFSP",1,0,[0,1],0],["AN",1,1,"threadIdx.x"]]`))
	a := matmulRelu(4, 8, 4)
	s0 := schedule.NewState(a)
	f.Fuzz(func(t *testing.T, data []byte) {
		steps, err := schedule.UnmarshalSteps(data)
		if err != nil || len(steps) > 64 {
			return
		}
		s, err := schedule.Replay(s0, steps)
		if err != nil {
			return
		}
		if fn, err := schedule.Lower(s, "kernel"); err == nil {
			if err := runAndCompare(a, fn, 1); err != nil {
				t.Fatalf("%v\nsteps: %v\nlowered:\n%v", err, s.Steps, fn)
			}
		}
		if fn, err := schedule.LowerGPU(s, "kernel"); err == nil {
			if err := schedtest.CheckGPU(a, fn, 1); err != nil {
				t.Fatalf("gpu: %v\nsteps: %v\nlowered:\n%v", err, s.Steps, fn)
			}
		}
	})
}
