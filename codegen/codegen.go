// Package codegen turns a lowered tir.PrimFunc into source code for a target.
//
// The CPU target is C (gcc or clang, GNU C11 with vector extensions and
// OpenMP). Each kernel becomes
//
//	static int tsr_impl_NAME(float *restrict A, const float *restrict B, ...) { ... }
//	int NAME(float *const *args) { return tsr_impl_NAME(args[0], args[1], ...); }
//
// where args[i] is f.Params[i], a dense row-major array; a kernel with heap
// buffers (intermediates too large for the stack) takes one more argument,
// its workspace (CSource.Workspace), so that concurrent calls each use
// their caller's memory. The C is shaped the
// way DESIGN.md ("What the C must look like to be fast") says it must be:
//
//   - Vectorized loops become explicit GCC vector-extension code
//     (vector.go): contiguous vector loads/stores, broadcasts, gathers and
//     scatters built lane by lane, masks for conditions, and a scalar loop
//     (with "#pragma omp simd" when that is legal) when a loop does not fit.
//   - Unrolled loops, and serial loops under a "auto_unroll_max_step" pragma
//     that are small enough, are unrolled in the emitted source (unroll.go);
//     every index is then simplified with the loop ranges in scope.
//   - Local buffers whose every access has a constant index after unrolling
//     become individual scalar or vector variables (scalarize.go), so that
//     the compiler keeps an accumulator tile in registers; inside such a
//     tile the polynomial vector functions are calls, so that their
//     constants do not take the tile's registers.
//   - Runs of gathering copies (a layout change vectorized along a strided
//     source axis) become row loads, register transposes and stores
//     (transpose.go).
//   - The outermost parallel loop becomes "#pragma omp parallel for".
//
// Floor division and modulo follow floor semantics; they are emitted as
// plain C "/" and "%" only where interval analysis proves the operands
// non-negative and positive. Select is lazy everywhere, including in vector
// code: a branch that might read out of bounds is evaluated lane by lane.
package codegen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tessera-ml/tessera/tir"
)

// COptions configures the C code generator.
type COptions struct {
	// VectorBits is the width in bits of the machine's vector registers
	// (the cpu target's machine model): 512 on AVX-512, 256 on AVX2, 128
	// on SSE and NEON. Vector types are at most that wide: a vectorized
	// loop longer than VectorBits/32 lanes is split into chunks of that many
	// lanes, so every vector value is one register. It must be set.
	VectorBits int
	// Dim gives every kernel one more parameter, the value of a dimension
	// that varies at run time, named DimParam: the entry is "int
	// NAME(float *const *args, int64_t tsr_dim)". The kernel printed at
	// one value does not read it; a Family's kernels, printed over a range
	// of values, compute their extents and strides from it.
	Dim bool
}

// DimParam is the C name of a kernel's dynamic dimension (COptions.Dim).
const DimParam = "tsr_dim"

// CSource is a C translation unit of kernels and what their callers must
// give them besides their parameters.
type CSource struct {
	Code string
	// Workspace is, per kernel in the order given, the bytes of scratch
	// memory it needs (its heap buffers outside parallel loops): a caller
	// passes a 64-byte aligned block of that many bytes as args[n], after
	// the n parameters, and may reuse it once the call returns. 0: the
	// kernel takes the parameters only.
	Workspace []int
}

// C returns a complete C translation unit holding one kernel, exported as
// "int NAME(float *const *args)" where NAME is f.Name.
func C(f *tir.PrimFunc, opts COptions) (*CSource, error) {
	return CModule([]*tir.PrimFunc{f}, opts)
}

// CModule returns one C translation unit holding several kernels; their
// names must be distinct C identifiers. Helpers and vector types are
// emitted once.
func CModule(fs []*tir.PrimFunc, opts COptions) (*CSource, error) {
	m, err := newModule(opts)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	src := &CSource{}
	var bodies []string
	for _, f := range fs {
		if f == nil {
			return nil, fmt.Errorf("codegen: nil PrimFunc")
		}
		if err := checkKernelName(f.Name); err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("codegen: two kernels named %q in one module", f.Name)
		}
		seen[f.Name] = true
		body, ws, err := m.kernel(f)
		if err != nil {
			return nil, fmt.Errorf("codegen: kernel %s: %w", f.Name, err)
		}
		bodies = append(bodies, body)
		src.Workspace = append(src.Workspace, ws)
	}
	var b strings.Builder
	b.WriteString(m.prelude())
	for _, body := range bodies {
		b.WriteString("\n")
		b.WriteString(body)
	}
	src.Code = b.String()
	return src, nil
}

// module holds what the kernels of one translation unit share.
type module struct {
	opts  COptions
	lanes int          // native lane count for float32: VectorBits/32
	used  map[int]bool // lane counts whose vector types and helpers are needed
	// bf16Dots: a kernel calls tsr_dot2bf (vdotBF16): only a module
	// that calls them gets their helpers. (They included <immintrin.h>
	// then, whose parsing was two thirds of a small float kernel's
	// compile on a Zen 5, 0.27 of 0.42 s; now they write the instruction
	// as inline assembly.)
	bf16Dots bool
}

func newModule(opts COptions) (*module, error) {
	bits := opts.VectorBits
	if bits == 0 {
		return nil, fmt.Errorf("codegen: VectorBits is not set (the target's machine model gives the vector width)")
	}
	if bits < 64 || bits > 2048 || bits&(bits-1) != 0 {
		return nil, fmt.Errorf("codegen: VectorBits %d is not a power of two in [64, 2048]", opts.VectorBits)
	}
	return &module{opts: opts, lanes: bits / 32, used: map[int]bool{}}, nil
}

func checkKernelName(name string) error {
	if !isCIdent(name) {
		return fmt.Errorf("codegen: kernel name %q is not a C identifier", name)
	}
	if strings.HasPrefix(name, "tsr_") || reservedC[name] {
		return fmt.Errorf("codegen: kernel name %q is reserved", name)
	}
	return nil
}

func isCIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// reservedC are identifiers the generated code must not declare: C keywords
// and the library names it calls or includes.
var reservedC = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`auto break case char const continue default do double
		else enum extern float for goto if inline int long register restrict return short
		signed sizeof static struct switch typedef union unsigned void volatile while
		_Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn
		_Static_assert _Thread_local bool true false asm typeof main args
		int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t
		intptr_t uintptr_t ptrdiff_t NULL INFINITY NAN INT64_MIN INT64_MAX INT32_MIN INT32_MAX
		abort free aligned_alloc`) {
		m[w] = true
	}
	for _, mf := range tir.MathFuncs {
		m[mf.C] = true
	}
	return m
}()

// sortedKeys returns the keys of a set of lane counts in increasing order.
func sortedKeys(m map[int]bool) []int {
	var ks []int
	for k, ok := range m {
		if ok {
			ks = append(ks, k)
		}
	}
	sort.Ints(ks)
	return ks
}
