package codegen

import "strings"

// roundHalfBody rounds a float32 to the nearest float16, as a float32
// (tir.MathFuncs' "roundhalf", a Cast to float16): IEEE round to nearest,
// ties to even, on the bits. Normal results keep 10 fraction bits (the
// carry may step the exponent, exactly as rounding does); below 2^-14 a
// result is a multiple of 2^-24, rounded by adding and subtracting 2^23
// to |x|·2^24 < 2^10 (exact: no fast-math); from 65520 on it is ±inf;
// inf and NaN stay. AS_UINT and AS_FLOAT are the dialect's bit casts.
const roundHalfBody = `float tsr_roundhalff(float x) {
  unsigned int u = AS_UINT(x), s = u & 0x80000000u, a = u ^ s;
  if (a >= 0x7f800000u)
    return x;
  if (a >= 0x477ff000u) {
    a = 0x7f800000u;
  } else if (a >= 0x38800000u) {
    a = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
  } else {
    float f = AS_FLOAT(a) * 16777216.0f;
    f = (f + 8388608.0f) - 8388608.0f;
    a = AS_UINT(f * 5.9604644775390625e-8f);
  }
  return AS_FLOAT(s | a);
}
`

// roundHalfC is roundHalfBody for C, its bit casts through memcpy.
var roundHalfC = `static inline unsigned int tsr_as_uint(float x) { unsigned int u; __builtin_memcpy(&u, &x, sizeof u); return u; }
static inline float tsr_as_float(unsigned int u) { float x; __builtin_memcpy(&x, &u, sizeof x); return x; }
static inline ` + strings.NewReplacer("AS_UINT", "tsr_as_uint", "AS_FLOAT", "tsr_as_float").Replace(roundHalfBody)

// roundHalfGPU is roundHalfBody for a GPU dialect: OpenCL's as_uint and
// as_float, or a union in CUDA.
func roundHalfGPU(d Dialect) string {
	if d == OpenCL {
		return "TSR_DEVICE " + strings.NewReplacer("AS_UINT", "as_uint", "AS_FLOAT", "as_float").Replace(roundHalfBody)
	}
	return `TSR_DEVICE unsigned int tsr_as_uint(float x) { union { float f; unsigned int u; } v; v.f = x; return v.u; }
TSR_DEVICE float tsr_as_float(unsigned int u) { union { float f; unsigned int u; } v; v.u = u; return v.f; }
TSR_DEVICE ` + strings.NewReplacer("AS_UINT", "tsr_as_uint", "AS_FLOAT", "tsr_as_float").Replace(roundHalfBody)
}
