/* GCC 12.2 at -O3 (any -march) miscompiles this reduction: after the two
   inner loops are unrolled, the vectorized outer loop sums the guarded
   elements wrongly (2338 instead of 2016). With -fno-tree-loop-vectorize,
   or at -O2, it is right. A random schedule of GlobalAveragePool (a split
   reduction axis with its guard) met it. */
#include <stdint.h>

__attribute__((noinline)) static float k(const float *X) {
  float s = 0.0f;
  for (int64_t a = 0; a < 7; ++a)
    for (int64_t b = 0; b < 8; ++b)
      for (int64_t c = 0; c < 2; ++c)
        if (c * 8 + b < 9)
          s = s + X[a * 9 + c * 8 + b];
  return s;
}

/* Returns 0 and sets args[0][0] to 1 when the sum is right. */
int tessera_kernel(float *const *args) {
  float X[63];
  for (int i = 0; i < 63; i++)
    X[i] = (float)(i + 1);
  if (k(X) != 2016.0f)
    return 1;
  args[0][0] = 1;
  return 0;
}
