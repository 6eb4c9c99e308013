/* GCC 12.2 at -O3 with -fopenmp (any -march) miscompiles this parallel
   loop: loop distribution moves the second zeroing loop so that it clears
   the last row of the first block after its sums (7 of the 70 elements
   come out 0). With -fno-tree-loop-distribution, at -O2, or without
   OpenMP it is right. A random schedule of an Einsum (a split reduce axis,
   the head axis outside the parallel loop, two blocks each zeroed and then
   summed) met it. */
#include <stdint.h>

__attribute__((noinline)) static void k(const float *restrict Q, const float *restrict K, float *restrict E) {
#pragma omp parallel for
  for (int64_t j = 0; j < 7; ++j) {
    for (int64_t i = 0; i < 5; ++i)
      E[i * 7 + j] = 0.0f;
    for (int64_t d = 0; d < 4; ++d)
      for (int64_t i = 0; i < 5; ++i)
        E[i * 7 + j] = E[i * 7 + j] + Q[i * 4 + d] * K[j * 4 + d];
    for (int64_t i = 0; i < 5; ++i)
      E[i * 7 + j + 35] = 0.0f;
    for (int64_t d = 0; d < 4; ++d)
      for (int64_t i = 0; i < 5; ++i)
        E[i * 7 + j + 35] = E[i * 7 + j + 35] + Q[20 + i * 4 + d] * K[28 + j * 4 + d];
  }
}

/* Returns 0 and sets args[0][0] to 1 when every element is right. */
int tessera_kernel(float *const *args) {
  float Q[40], K[56], E[70];
  for (int i = 0; i < 40; i++)
    Q[i] = 1.0f;
  for (int i = 0; i < 56; i++)
    K[i] = 1.0f;
  k(Q, K, E);
  for (int i = 0; i < 70; i++)
    if (E[i] != 4.0f)
      return 1;
  args[0][0] = 1;
  return 0;
}
