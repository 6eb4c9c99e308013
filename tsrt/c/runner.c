/* runner.c: runs a built model in a process of its own, through tessera.h.
 * The Go package tsrt runs it (OpenChild, child.go) where the model cannot
 * be loaded into the Go process: a library built for another
 * architecture, run under an emulator (qemu-aarch64). In-process runs go
 * through tsrt's Open instead; both speak only the ABI. The library is
 * checked and loaded by tessera_load.h.
 *
 * usage: runner LIB DIR IN_FILE OUT_FILE WARMUP REPEAT [profile]
 *        runner --describe LIB DIR
 *   LIB      the model's shared library (libmodel.so)
 *   DIR      its build folder (weights.bin), or "-" for a --single-file build
 *   IN_FILE  every input, back to back in input order, raw, in its dtype
 *   OUT_FILE where the outputs of the first run go, back to back, raw, in
 *            their dtypes; "-" means: do not write them
 *
 * The model runs once (its outputs are those written), then WARMUP more
 * times untimed, then REPEAT times, each timed on its own.
 *
 * stdout: one "tessera time SECONDS" per timed run, then "tessera done".
 * With "profile", one "tessera step I SECONDS" line per step (the mean
 * over the timed runs) comes before "tessera done".
 *
 * --describe prints one "tessera input DTYPE ELEMS HEXNAME" or "tessera
 * output DTYPE ELEMS HEXNAME" line per tensor, in order (DTYPE: the
 * tessera_dtype number; HEXNAME: the name's bytes in hex, "-" for an
 * empty name), then "tessera done".
 *
 * A model built over a dynamic batch runs at the batch
 * $TESSERA_RUNNER_BATCH (default 1): its batched tensors (leading
 * dimension -1) have that leading dimension, in IN_FILE and OUT_FILE too;
 * --describe gives their elements at batch 1.
 * exit status: 0 ok; 2 a setup error (library, weights, input file);
 * 3 tessera_run failed. The message is on stderr.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera.h"
#include "tessera_load.h"

static void die(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("runner: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(status);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long long parse_count(const char *s, const char *what) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*s == 0 || *end != 0 || v < 0)
    die(2, "bad %s %s", what, s);
  return v;
}

static size_t dtype_size(tessera_dtype t) {
  switch (t) {
  case TESSERA_FLOAT32: case TESSERA_INT32: case TESSERA_UINT32: return 4;
  case TESSERA_INT64: return 8;
  case TESSERA_UINT16: case TESSERA_INT16: case TESSERA_FLOAT16: return 2;
  case TESSERA_UINT8: case TESSERA_INT8: case TESSERA_BOOL: return 1;
  }
  return 0;
}

/* The API, from the library (tessera_load.h). */
static tessera_api api;

/* tensors fills ts with the model's inputs or outputs at this batch and
   value of the dimension given at run time, their data allocated, and
   returns their total bytes. */
static size_t tensors(tessera_model *m, int n, int input, tessera_tensor *ts, const char **names, int64_t batch, int64_t dim) {
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    tessera_tensor *t = &ts[i];
    const int64_t *shape;
    tessera_status st = (input ? api.input_info : api.output_info)(m, i, &names[i], &t->dtype, &t->rank, &shape);
    if (st != TESSERA_OK)
      die(2, "%s", api.last_error());
    int64_t *own = calloc((size_t)t->rank + 1, sizeof *own);
    if (!own)
      die(2, "out of memory");
    for (int k = 0; k < t->rank; k++)
      own[k] = shape[k] == -1 ? batch : shape[k] == -2 ? dim : shape[k];
    t->shape = own;
    size_t bytes = dtype_size(t->dtype);
    for (int k = 0; k < t->rank; k++)
      bytes *= (size_t)t->shape[k];
    if (!(t->data = calloc(1, bytes + 64)))
      die(2, "out of memory");
    total += bytes;
  }
  return total;
}

static size_t tensor_bytes(const tessera_tensor *t) {
  size_t bytes = dtype_size(t->dtype);
  for (int k = 0; k < t->rank; k++)
    bytes *= (size_t)t->shape[k];
  return bytes;
}

int main(int argc, char **argv) {
  int describe = argc == 4 && strcmp(argv[1], "--describe") == 0;
  int profile = argc == 8 && strcmp(argv[7], "profile") == 0;
  if (!describe && argc != 7 && !profile)
    die(2, "usage: runner LIB DIR IN_FILE OUT_FILE WARMUP REPEAT [profile] | runner --describe LIB DIR");
  const char *lib_path = argv[describe ? 2 : 1], *dir = argv[describe ? 3 : 2];
  char why[1024];
  if (tessera_load(lib_path, &api, why, sizeof why) != TESSERA_OK)
    die(2, "%s", why);

  tessera_model *m;
  if (api.open(TESSERA_ABI_VERSION, strcmp(dir, "-") == 0 ? NULL : dir, &m) != TESSERA_OK)
    die(2, "%s", api.last_error());
  int nin = api.num_inputs(m), nout = api.num_outputs(m);
  tessera_tensor *in = calloc((size_t)nin + 1, sizeof *in), *out = calloc((size_t)nout + 1, sizeof *out);
  const char **in_names = calloc((size_t)nin + 1, sizeof *in_names), **out_names = calloc((size_t)nout + 1, sizeof *out_names);
  if (!in || !out || !in_names || !out_names)
    die(2, "out of memory");
  int64_t batch = 1;
  const char *b = getenv("TESSERA_RUNNER_BATCH");
  if (b && *b && !describe && (batch = parse_count(b, "batch (TESSERA_RUNNER_BATCH)")) < 1)
    die(2, "batch %s: want at least 1", b);
  int64_t dim = 1;
  const char *dm = getenv("TESSERA_RUNNER_DIM");
  if (dm && *dm && !describe && (dim = parse_count(dm, "dimension (TESSERA_RUNNER_DIM)")) < 1)
    die(2, "dimension %s: want at least 1", dm);
  size_t want = tensors(m, nin, 1, in, in_names, batch, dim);
  tensors(m, nout, 0, out, out_names, batch, dim);
  if (describe) {
    for (int side = 0; side < 2; side++)
      for (int i = 0; i < (side ? nout : nin); i++) {
        const tessera_tensor *t = side ? &out[i] : &in[i];
        const unsigned char *s = (const unsigned char *)(side ? out_names[i] : in_names[i]);
        printf("tessera %s %d %zu ", side ? "output" : "input", (int)t->dtype, tensor_bytes(t) / dtype_size(t->dtype));
        if (!s || !*s)
          putchar('-');
        for (; s && *s; s++)
          printf("%02x", *s);
        putchar('\n');
      }
    printf("tessera done\n");
    return 0;
  }
  const char *in_path = argv[3], *out_path = argv[4];
  long long warmup = parse_count(argv[5], "warm-up count");
  long long repeat = parse_count(argv[6], "repetition count");

  FILE *f = fopen(in_path, "rb");
  if (!f)
    die(2, "input file %s: cannot open", in_path);
  fseek(f, 0, SEEK_END);
  long have = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (have < 0 || (size_t)have != want)
    die(2, "input file %s has %ld bytes, the model's %d inputs take %zu", in_path, have, nin, want);
  for (int i = 0; i < nin; i++)
    if (fread(in[i].data, 1, tensor_bytes(&in[i]), f) != tensor_bytes(&in[i]))
      die(2, "input file %s: short read", in_path);
  fclose(f);

  if (api.run(m, in, nin, out, nout) != TESSERA_OK)
    die(3, "%s", api.last_error());
  if (strcmp(out_path, "-") != 0) {
    FILE *o = fopen(out_path, "wb");
    if (!o)
      die(2, "output file %s: cannot create", out_path);
    for (int i = 0; i < nout; i++)
      if (fwrite(out[i].data, 1, tensor_bytes(&out[i]), o) != tensor_bytes(&out[i]))
        die(2, "output file %s: short write", out_path);
    if (fclose(o) != 0)
      die(2, "output file %s: write failed", out_path);
  }
  for (long long r = 0; r < warmup; r++)
    if (api.run(m, in, nin, out, nout) != TESSERA_OK)
      die(3, "%s", api.last_error());
  int nsteps = profile ? api.num_steps(m) : 0;
  double *steps = calloc((size_t)nsteps + 1, sizeof *steps);
  if (!steps)
    die(2, "out of memory");
  if (profile && api.profile(m, steps, nsteps) != TESSERA_OK)
    die(2, "%s", api.last_error());
  for (long long r = 0; r < repeat; r++) {
    double t0 = now();
    if (api.run(m, in, nin, out, nout) != TESSERA_OK)
      die(3, "%s", api.last_error());
    printf("tessera time %.9e\n", now() - t0);
  }
  for (int i = 0; i < nsteps; i++)
    printf("tessera step %d %.9e\n", i, steps[i] / (double)repeat);
  printf("tessera done\n");
  fflush(stdout);
  api.close(m);
  return 0;
}
