/* An example: load a model built by `tune build`, run it on one input and
 * print the top-1 class and the time of a run.
 *
 *   M=$(realpath MODEL)
 *   cc -O2 -I "$M" examples/c/main.c -L "$M" -lmodel -Wl,-rpath,"$M" -o classify
 *   ./classify "$M" [INPUT.bin [OUTPUT.bin]]
 *
 * (the rpath is absolute, so classify runs from any folder).
 *
 * MODEL is the build folder (tessera.h, libmodel.so, weights.bin). INPUT.bin
 * holds the first input's elements as raw float32 (as `tune run --format raw`
 * reads and writes them); without it the input is x[i] = (i % 255) / 255.
 * OUTPUT.bin, when given, receives the first output, raw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tessera.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t elems(int32_t rank, const int64_t *shape) {
  size_t n = 1;
  for (int32_t k = 0; k < rank; k++)
    n *= (size_t)shape[k];
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL [INPUT.bin [OUTPUT.bin]]\n", argv[0]);
    return 2;
  }
  tessera_model *m;
  if (tessera_open(TESSERA_ABI_VERSION, argv[1], &m) != TESSERA_OK) {
    fprintf(stderr, "%s\n", tessera_last_error());
    return 1;
  }
  if (tessera_num_inputs(m) != 1 || tessera_num_outputs(m) < 1) {
    fprintf(stderr, "this example takes a model of one input\n");
    return 1;
  }
  tessera_tensor in = {0}, out = {0};
  const char *in_name, *out_name;
  if (tessera_input_info(m, 0, &in_name, &in.dtype, &in.rank, &in.shape) != TESSERA_OK ||
      tessera_output_info(m, 0, &out_name, &out.dtype, &out.rank, &out.shape) != TESSERA_OK) {
    fprintf(stderr, "%s\n", tessera_last_error());
    return 1;
  }
  if (in.dtype != TESSERA_FLOAT32 || out.dtype != TESSERA_FLOAT32) {
    fprintf(stderr, "this example takes float32 tensors\n");
    return 1;
  }
  size_t nin = elems(in.rank, in.shape), nout = elems(out.rank, out.shape);
  float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
  if (!x || !y)
    return 1;
  if (argc > 2) {
    FILE *f = fopen(argv[2], "rb");
    if (!f || fread(x, sizeof *x, nin, f) != nin) {
      fprintf(stderr, "%s: cannot read %zu float32 values\n", argv[2], nin);
      return 1;
    }
    fclose(f);
  } else {
    for (size_t i = 0; i < nin; i++)
      x[i] = (float)(i % 255) / 255.0f;
  }
  in.data = x;
  out.data = y;
  /* The rest of the outputs, if any: the run writes them all. */
  int32_t n_out = tessera_num_outputs(m);
  tessera_tensor *outs = calloc((size_t)n_out, sizeof *outs);
  outs[0] = out;
  for (int32_t i = 1; i < n_out; i++) {
    tessera_output_info(m, i, NULL, &outs[i].dtype, &outs[i].rank, &outs[i].shape);
    outs[i].data = malloc(elems(outs[i].rank, outs[i].shape) * 8);
  }
  if (tessera_run(m, &in, 1, outs, n_out) != TESSERA_OK) { /* the first run: warm-up */
    fprintf(stderr, "%s\n", tessera_last_error());
    return 1;
  }
  const int runs = 10;
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    if (tessera_run(m, &in, 1, outs, n_out) != TESSERA_OK) {
      fprintf(stderr, "%s\n", tessera_last_error());
      return 1;
    }
    double t = now() - t0;
    if (t < best)
      best = t;
  }
  size_t top = 0;
  for (size_t i = 1; i < nout; i++)
    if (y[i] > y[top])
      top = i;
  printf("%s: top-1 class %zu (%s = %g), %.3f ms per run (best of %d)\n", argv[1], top, out_name, y[top], best * 1e3, runs);
  if (argc > 3) {
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(y, sizeof *y, nout, f) != nout || fclose(f) != 0) {
      fprintf(stderr, "%s: cannot write\n", argv[3]);
      return 1;
    }
  }
  tessera_close(m);
  return 0;
}
