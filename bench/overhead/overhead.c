/* overhead.c: what opening a built model and calling it cost, through the C
 * ABI: the time of tessera_open + tessera_close, of tessera_run on fixed
 * inputs (one thread), and, where the build folder has tessera_load.h, of
 * checking the library before it is loaded (tessera_verify_library: its ELF
 * header and its size and SHA-256 against the manifest). Compile it against
 * the build folder's own header, so that builds of other versions compare:
 *
 *   cc -O2 -I DIR bench/overhead/overhead.c -L DIR -lmodel -Wl,-rpath,DIR -o overhead
 *   OMP_NUM_THREADS=1 ./overhead DIR [OPENS [RUNS]]
 *
 * It prints "open ms min median", "run us min median" (RUNS runs in 20
 * batches: per-run time of each batch) and "verify ms min median". Compare
 * two builds by alternating their processes (bench/overhead/compare.sh).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera.h"
#if __has_include("tessera_load.h")
#include "tessera_load.h"
#define HAVE_LOAD 1
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *what, double *v, int n, double scale) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("%s %.4f %.4f\n", what, v[0] * scale, v[n / 2] * scale);
}

static size_t dtype_size(tessera_dtype t) {
  switch (t) {
  case TESSERA_FLOAT32: case TESSERA_INT32: case TESSERA_UINT32: return 4;
  case TESSERA_INT64: return 8;
  case TESSERA_UINT16: case TESSERA_INT16: case TESSERA_FLOAT16: return 2;
  default: return 1;
  }
}

static void tensors(tessera_model *m, int input, tessera_tensor *ts, int n) {
  for (int i = 0; i < n; i++) {
    memset(&ts[i], 0, sizeof ts[i]);
    (input ? tessera_input_info : tessera_output_info)(m, i, NULL, &ts[i].dtype, &ts[i].rank, &ts[i].shape);
    size_t e = dtype_size(ts[i].dtype);
    for (int k = 0; k < ts[i].rank; k++)
      e *= (size_t)ts[i].shape[k];
    ts[i].data = calloc(1, e + 64);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: overhead DIR [OPENS [RUNS]]\n");
    return 2;
  }
  const char *dir = argv[1];
  int opens = argc > 2 ? atoi(argv[2]) : 30, runs = argc > 3 ? atoi(argv[3]) : 2000;
  double *t = calloc((size_t)(opens > 20 ? opens : 20), sizeof *t);
  tessera_model *m;
  for (int i = 0; i < opens; i++) {
    double t0 = now();
    if (tessera_open(TESSERA_ABI_VERSION, dir, &m) != TESSERA_OK) {
      fprintf(stderr, "%s\n", tessera_last_error());
      return 1;
    }
    tessera_close(m);
    t[i] = now() - t0;
  }
  report("open ms", t, opens, 1e3);
  if (tessera_open(TESSERA_ABI_VERSION, dir, &m) != TESSERA_OK)
    return 1;
  tessera_set_num_threads(m, 1);
  int nin = tessera_num_inputs(m), nout = tessera_num_outputs(m);
  tessera_tensor in[16], out[16];
  tensors(m, 1, in, nin);
  tensors(m, 0, out, nout);
  for (int i = 0; i < 3; i++)
    tessera_run(m, in, nin, out, nout);
  int batch = runs / 20 > 0 ? runs / 20 : 1;
  for (int b = 0; b < 20; b++) {
    double t0 = now();
    for (int i = 0; i < batch; i++)
      if (tessera_run(m, in, nin, out, nout) != TESSERA_OK) {
        fprintf(stderr, "%s\n", tessera_last_error());
        return 1;
      }
    t[b] = (now() - t0) / batch;
  }
  report("run us", t, 20, 1e6);
  tessera_close(m);
#ifdef HAVE_LOAD
  char lib[4096], why[1024];
  snprintf(lib, sizeof lib, "%s/libmodel.so", dir);
  for (int i = 0; i < opens; i++) {
    double t0 = now();
    if (tessera_verify_library(lib, why, sizeof why) != TESSERA_OK) {
      fprintf(stderr, "%s\n", why);
      return 1;
    }
    t[i] = now() - t0;
  }
  report("verify ms", t, opens, 1e3);
#endif
  return 0;
}
