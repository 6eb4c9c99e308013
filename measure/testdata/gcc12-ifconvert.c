/* GCC 12.2 at -O3 -march=native (AVX2 or AVX-512) miscompiles this loop:
   the if-converted conditional load reads the wrong elements. With
   -fno-tree-loop-if-convert, or at -O2, or with clang, it is right. */
#include <stdint.h>

__attribute__((noinline)) static void k(const float *restrict X, float *restrict pad) {
  for (int64_t i2 = 0; i2 < 8; ++i2) {
    float loc[10];
    for (int64_t i3 = 0; i3 < 10; ++i3)
      loc[i3] = (i2 >= 1 && i2 < 6 && i3 >= 2 && i3 < 9) ? X[i2 * 7 + i3 - 9] : 0.5f;
    for (int64_t i = 0; i < 10; ++i)
      pad[i2 * 10 + i] = loc[i];
  }
}

/* Returns 0 when the padded copy is right. */
int tessera_kernel(float *const *args) {
  float X[105], P[80];
  for (int i = 0; i < 105; i++)
    X[i] = (float)i;
  k(X, P);
  for (int i2 = 0; i2 < 8; i2++)
    for (int i3 = 0; i3 < 10; i3++) {
      float want = (i2 >= 1 && i2 < 6 && i3 >= 2 && i3 < 9) ? (float)(i2 * 7 + i3 - 9) : 0.5f;
      if (P[i2 * 10 + i3] != want)
        return 1;
    }
  args[0][0] = 1;
  return 0;
}
