package schedule

import (
	"fmt"

	"github.com/tessera-ml/tessera/tir"
)

// GPULimits are what a GPU allows one kernel, and the warp size and
// multiprocessor count the sketch rules tile for. A target fills them from
// its device.
type GPULimits struct {
	WarpSize           int // threads that run in lock step (32 on NVIDIA)
	MaxThreadsPerBlock int
	MaxSharedBytes     int // shared memory of one block
	MaxVThread         int // extent of a virtual thread loop (Ansor: 8)
	Processors         int // multiprocessors (OpenCL: compute units); 0: unknown
	// VectorLanes is the float32 lanes of the widest vector load and
	// store a kernel makes (codegen.GPUVectorLanes: a float4); it bounds
	// vectorized loops and cooperative fetches. 0: none are vectorized.
	VectorLanes int
}

// maxGridYZ bounds the y and z dimensions of a grid (CUDA's limit; OpenCL
// devices allow at least as much).
const maxGridYZ = 65535

// Check returns an error naming the first kernel of f (lowered by
// LowerGPU) that is over the limits.
func (lim GPULimits) Check(f *tir.PrimFunc) error {
	ks, _, err := tir.Kernels(f)
	if err != nil {
		return err
	}
	for i, k := range ks {
		if n := k.Threads(); lim.MaxThreadsPerBlock > 0 && n > lim.MaxThreadsPerBlock {
			return fmt.Errorf("kernel %d: %d threads per block, more than %d", i, n, lim.MaxThreadsPerBlock)
		}
		if k.Grid[1] > maxGridYZ || k.Grid[2] > maxGridYZ {
			return fmt.Errorf("kernel %d: grid %v is too tall", i, k.Grid)
		}
		shared := 0
		var bad error
		tir.WalkStmt(k.Body, func(s tir.Stmt) bool {
			switch s := s.(type) {
			case *tir.Allocate:
				if s.Buf.Scope == tir.Shared {
					shared += 4 * s.Buf.Size()
				}
			case *tir.For:
				if s.Kind == tir.ThreadBound && s.Thread == "vthread" && lim.MaxVThread > 0 && s.Extent > lim.MaxVThread && bad == nil {
					bad = fmt.Errorf("kernel %d: %d virtual threads, more than %d", i, s.Extent, lim.MaxVThread)
				}
			}
			return true
		})
		if bad != nil {
			return bad
		}
		if lim.MaxSharedBytes > 0 && shared > lim.MaxSharedBytes {
			return fmt.Errorf("kernel %d: %d bytes of shared memory, more than %d", i, shared, lim.MaxSharedBytes)
		}
	}
	return nil
}

// Lower is LowerGPU followed by Check: the lowering of a GPU target, which
// drops the states its device cannot run.
func (lim GPULimits) Lower(s *State, name string) (*tir.PrimFunc, error) {
	f, err := LowerGPU(s, name)
	if err != nil {
		return nil, err
	}
	if err := lim.Check(f); err != nil {
		return nil, fmt.Errorf("lower for gpu: over the device's limits: %w", err)
	}
	return f, nil
}
