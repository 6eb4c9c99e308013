/* runtime.c: tessera.h for every built model, on top of the tsr_model a
 * generated model.c defines (tessera_model.h).
 *
 * Opening maps the weights file read-only (or takes the weights inside a
 * --single-file library) and checks its header, size and checksum against
 * the build's, then copies weights of 2 MiB or more into huge pages (unless
 * TESSERA_NO_HUGE_PAGES is set: then the file's pages are shared by every
 * run and, through the page cache, by every process that opens the same
 * file); every run shares them. A run takes a context
 * (the arena of intermediate tensors, the float32 copies of non-float32
 * inputs and outputs, a step profile) from the model's pool, or makes one,
 * and gives it back: concurrent runs each have their own, and a model that
 * serves N callers at once holds N arenas and one copy of the weights.
 *
 * A handle carries a magic number while open. tessera_close marks it
 * closed, waits for the runs in progress (they count themselves in and out
 * under the model's lock), frees everything the model holds, and keeps the
 * handle's own struct on a list for the life of the process: a late call
 * on it reads "closed" instead of freed memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera_model.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the weights file is little-endian"
#endif

#define API __attribute__((visibility("default")))
#if defined(__x86_64__)
/* Compiled for the base level: runs on any x86-64 before the processor's
   extensions are checked. */
#define BASE __attribute__((target("arch=x86-64"), noinline))
#else
#define BASE __attribute__((noinline))
#endif

enum {
  header_bytes = 64,
  max_threads = 4096, /* a run's most threads: OpenMP would try to start any number */
};

typedef struct ctx {
  struct ctx *next;
  float *arena;
  void *arena_map; /* the arena's huge-page mapping, or NULL (arena from malloc) */
  size_t arena_map_bytes;
  float **in;       /* per input: its float32 copy, or NULL (float32 inputs are used in place) */
  float **out;      /* per output: likewise */
  double *profile;  /* num_steps seconds of this run, or NULL */
} ctx;

enum {
  model_open = 0x4f70656e,   /* "Open": a live handle */
  model_closed = 0x436c6f73, /* "Clos": tessera_close has run */
};

struct tessera_model {
  uint32_t magic;   /* model_open or model_closed, read atomically */
  const tsr_model_desc *d;
  void *map;        /* the mapped weights file or their huge-page copy, or NULL */
  size_t map_bytes;
  float *weights;   /* the payload */
  pthread_mutex_t lock;
  ctx *pool;        /* contexts not in use */
  int threads;      /* 0: OpenMP's default */
  double *profile;  /* the caller's step array, or NULL */
  pthread_mutex_t serial; /* held by a run of a serial (GPU) model */
  int device;       /* this model set the library's device up */
  int running;      /* runs in progress (under lock) */
  pthread_cond_t idle; /* signalled when running drops to 0 on a closed model */
  tessera_model *next_closed; /* the list of closed handles */
};

/* Closed handles, kept so that a late call finds them closed. */
static pthread_mutex_t closed_lock = PTHREAD_MUTEX_INITIALIZER;
static tessera_model *closed_models;

/* The open models of a GPU build's library: at most one, whose device
   state the library holds. */
static int device_opens;

static _Thread_local char last_error[1024];

static tessera_status fail(tessera_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return st;
}

TSR_HIDDEN void tsr_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

API const char *tessera_last_error(void) { return last_error; }

API uint32_t tessera_abi_version(void) { return TESSERA_ABI_VERSION; }

API const char *tessera_status_name(tessera_status st) {
  switch (st) {
  case TESSERA_OK: return "TESSERA_OK";
  case TESSERA_INVALID_ARGUMENT: return "TESSERA_INVALID_ARGUMENT";
  case TESSERA_SHAPE_MISMATCH: return "TESSERA_SHAPE_MISMATCH";
  case TESSERA_DTYPE_MISMATCH: return "TESSERA_DTYPE_MISMATCH";
  case TESSERA_BAD_WEIGHTS: return "TESSERA_BAD_WEIGHTS";
  case TESSERA_ABI_MISMATCH: return "TESSERA_ABI_MISMATCH";
  case TESSERA_UNSUPPORTED_CPU: return "TESSERA_UNSUPPORTED_CPU";
  case TESSERA_OUT_OF_MEMORY: return "TESSERA_OUT_OF_MEMORY";
  case TESSERA_KERNEL_FAILED: return "TESSERA_KERNEL_FAILED";
  case TESSERA_DEVICE_ERROR: return "TESSERA_DEVICE_ERROR";
  case TESSERA_VALUE_OUT_OF_RANGE: return "TESSERA_VALUE_OUT_OF_RANGE";
  case TESSERA_NOT_FOUND: return "TESSERA_NOT_FOUND";
  case TESSERA_BAD_LIBRARY: return "TESSERA_BAD_LIBRARY";
  }
  return "TESSERA_UNKNOWN_STATUS";
}

static const char *dtype_name(tessera_dtype t) {
  switch (t) {
  case TESSERA_FLOAT32: return "float32";
  case TESSERA_UINT8: return "uint8";
  case TESSERA_INT8: return "int8";
  case TESSERA_UINT16: return "uint16";
  case TESSERA_INT16: return "int16";
  case TESSERA_INT32: return "int32";
  case TESSERA_INT64: return "int64";
  case TESSERA_BOOL: return "bool";
  case TESSERA_FLOAT16: return "float16";
  case TESSERA_UINT32: return "uint32";
  }
  return "an unknown dtype";
}

/* live says why m cannot be used by fn (NULL, closed, not a model), or
   returns OK. */
static tessera_status live(const tessera_model *m, const char *fn) {
  if (!m)
    return fail(TESSERA_INVALID_ARGUMENT, "%s: model is NULL", fn);
  switch (__atomic_load_n(&m->magic, __ATOMIC_ACQUIRE)) {
  case model_open: return TESSERA_OK;
  case model_closed: return fail(TESSERA_INVALID_ARGUMENT, "%s: the model is closed", fn);
  }
  return fail(TESSERA_INVALID_ARGUMENT, "%s: not a model tessera_open returned", fn);
}

/* checksum is FNV-1a over little-endian 64-bit words, as assemble/weights.go. */
static uint64_t checksum(const unsigned char *p, uint64_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    h ^= v;
    h *= 1099511628211ULL;
  }
  return h;
}

static void *alloc64(uint64_t bytes) {
  return aligned_alloc(64, bytes == 0 ? 64 : (bytes + 63) / 64 * 64);
}

enum { huge_page_bytes = 2 << 20 };

/* huge_pages maps bytes of anonymous memory at a 2 MiB boundary and asks
   the kernel to back it by transparent huge pages (their "madvise" mode is
   Debian's default). A model streams hundreds of megabytes of weights per
   run: in 4 KiB pages every page costs a TLB miss, and the processor's
   prefetchers stop at every page boundary (ViT-B/32's matmuls ran 17-30%
   slower in the model than alone). On success *base and *len are the
   mapping to unmap; NULL when the memory cannot be mapped, when the
   kernel refuses the advice (built without transparent huge pages) or
   when TESSERA_NO_HUGE_PAGES is set: then the caller keeps what it had. */
static void *huge_pages(size_t bytes, void **base, size_t *len) {
  *base = NULL;
  if (getenv("TESSERA_NO_HUGE_PAGES"))
    return NULL;
  size_t body = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  *len = body + huge_page_bytes;
  *base = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (*base == MAP_FAILED) {
    *base = NULL;
    return NULL;
  }
  char *p = (char *)(((uintptr_t)*base + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes);
#ifdef MADV_HUGEPAGE
  if (madvise(p, body, MADV_HUGEPAGE) == 0)
    return p;
#endif
  munmap(*base, *len);
  *base = NULL;
  return NULL;
}

/* weights_to_huge_pages copies the weights (n bytes) into huge pages and
   drops the file's mapping, unless they are smaller than one huge page or
   huge_pages gives none (then the pages stay the file's, shared through
   the page cache by every process that maps it). */
static void weights_to_huge_pages(tessera_model *m, size_t n) {
  if (n < huge_page_bytes)
    return;
  void *base;
  size_t len;
  float *w = huge_pages(n, &base, &len);
  if (!w)
    return;
  memcpy(w, m->weights, n);
  if (m->map)
    munmap(m->map, m->map_bytes);
  m->map = base;
  m->map_bytes = len;
  m->weights = w;
}

/* map_weights maps the weights file at path (a folder: its weights.bin)
   and checks it against the build. */
static tessera_status map_weights(tessera_model *m, const char *path) {
  const tsr_model_desc *d = m->d;
  char buf[4096];
  struct stat st;
  if (stat(path, &st) != 0)
    return fail(errno == ENOENT || errno == ENOTDIR ? TESSERA_NOT_FOUND : TESSERA_BAD_WEIGHTS,
                "%s: %s (no model folder or weights file there)", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    if (snprintf(buf, sizeof buf, "%s/weights.bin", path) >= (int)sizeof buf)
      return fail(TESSERA_INVALID_ARGUMENT, "path %s is too long", path);
    path = buf;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(errno == ENOENT ? TESSERA_NOT_FOUND : TESSERA_BAD_WEIGHTS, "weights %s: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0) {
    close(fd);
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: %s", path, strerror(errno));
  }
  uint64_t size = (uint64_t)st.st_size;
  if (size < header_bytes) {
    close(fd);
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: not a tessera weights file (%llu bytes, shorter than its %d-byte header)", path,
                (unsigned long long)size, header_bytes);
  }
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: mmap: %s", path, strerror(errno));
  m->map = p;
  m->map_bytes = size;
  const unsigned char *h = p;
  uint64_t n, sum;
  memcpy(&n, h + 8, 8);
  memcpy(&sum, h + 16, 8);
  if (memcmp(h, d->weights_magic, 8) != 0)
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: not a tessera weights file (no %.8s header)", path, d->weights_magic);
  if (n != d->weights_bytes || sum != d->weights_checksum)
    return fail(TESSERA_BAD_WEIGHTS,
                "weights %s: %llu bytes with checksum %016llx, this library was built with %llu bytes with checksum %016llx (the weights of another build?)",
                path, (unsigned long long)n, (unsigned long long)sum, (unsigned long long)d->weights_bytes,
                (unsigned long long)d->weights_checksum);
  if (size - header_bytes < n)
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: truncated (%llu bytes of payload, its header announces %llu)", path,
                (unsigned long long)(size - header_bytes), (unsigned long long)n);
  if (size - header_bytes > n)
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: bytes after the %llu its header announces", path, (unsigned long long)n);
  if (checksum(h + header_bytes, n) != sum)
    return fail(TESSERA_BAD_WEIGHTS, "weights %s: corrupt (the data does not match the header's checksum)", path);
  m->weights = (float *)(h + header_bytes);
  return TESSERA_OK;
}

static void free_ctx(const tsr_model_desc *d, ctx *c) {
  if (!c)
    return;
  if (c->arena_map)
    munmap(c->arena_map, c->arena_map_bytes);
  else
    free(c->arena);
  for (int i = 0; c->in && i < d->num_inputs; i++)
    free(c->in[i]);
  for (int i = 0; c->out && i < d->num_outputs; i++)
    free(c->out[i]);
  free(c->in);
  free(c->out);
  free(c->profile);
  free(c);
}

/* extent returns dimension k of tensor t in a run at this batch and value
   of the dimension given at run time. */
static int64_t extent(const tsr_tensor_desc *t, int k, int64_t batch, int64_t dim) {
  return t->shape[k] == -1 ? batch : t->shape[k] == -2 ? dim : t->shape[k];
}

/* elems returns the elements of tensor t in a run at this batch and value
   of the dimension given at run time. */
static uint64_t elems(const tsr_tensor_desc *t, int64_t batch, int64_t dim) {
  uint64_t n = 1;
  for (int k = 0; k < t->rank; k++)
    n *= (uint64_t)extent(t, k, batch, dim);
  return n;
}

/* most_elems returns the elements of tensor t at the model's largest batch
   and value. */
static uint64_t most_elems(const tsr_model_desc *d, const tsr_tensor_desc *t) {
  return elems(t, d->batch_name ? d->batch_hi : 1, d->dim_name ? d->dim_hi : 1);
}

static ctx *new_ctx(const tsr_model_desc *d) {
  ctx *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->in = calloc((size_t)d->num_inputs + 1, sizeof *c->in);
  c->out = calloc((size_t)d->num_outputs + 1, sizeof *c->out);
  if (d->arena_bytes >= huge_page_bytes)
    c->arena = huge_pages(d->arena_bytes, &c->arena_map, &c->arena_map_bytes);
  if (!c->arena)
    c->arena = alloc64(d->arena_bytes);
  c->profile = calloc((size_t)d->num_steps + 1, sizeof *c->profile);
  if (!c->in || !c->out || !c->arena || !c->profile)
    goto fail;
  for (int i = 0; i < d->num_inputs; i++)
    if (d->inputs[i].dtype != TESSERA_FLOAT32 && !(c->in[i] = alloc64(most_elems(d, &d->inputs[i]) * sizeof(float))))
      goto fail;
  for (int i = 0; i < d->num_outputs; i++)
    if (d->outputs[i].dtype != TESSERA_FLOAT32 && !(c->out[i] = alloc64(most_elems(d, &d->outputs[i]) * sizeof(float))))
      goto fail;
  return c;
fail:
  free_ctx(d, c);
  return NULL;
}

static tessera_status open_model(uint32_t abi, const char *path, tessera_model **out);
static void release(tessera_model *m);
static tessera_status run_in(tessera_model *m, ctx *c, const tessera_tensor *inputs, const tessera_tensor *outputs, int64_t batch,
                             int64_t dim, double *profile);

/* tessera_open is compiled for the base level, like tsr_model.cpu_check:
   the processor's extensions are checked before any code compiled for the
   library's -march runs. */
API BASE tessera_status tessera_open(uint32_t abi, const char *path, tessera_model **out) {
  last_error[0] = 0;
  if (!out)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_open: model is NULL");
  *out = NULL;
  if (abi != TESSERA_ABI_VERSION)
    return fail(TESSERA_ABI_MISMATCH, "tessera_open: the caller was compiled against tessera.h ABI version %u, this library implements version %u",
                abi, TESSERA_ABI_VERSION);
  const char *missing = tsr_model.cpu_check();
  if (missing)
    return fail(TESSERA_UNSUPPORTED_CPU, "tessera_open: this processor lacks %s, which this library (%s) was compiled to use (tune build --cpu LEVEL builds for an older one)",
                missing, tsr_model.target);
  return open_model(abi, path, out);
}

static tessera_status open_model(uint32_t abi, const char *path, tessera_model **out) {
  (void)abi;
  tessera_model *m = calloc(1, sizeof *m);
  if (!m)
    return fail(TESSERA_OUT_OF_MEMORY, "tessera_open: out of memory");
  m->d = &tsr_model;
  m->magic = model_open;
  pthread_mutex_init(&m->lock, NULL);
  pthread_mutex_init(&m->serial, NULL);
  pthread_cond_init(&m->idle, NULL);
  tessera_status st = TESSERA_OK;
  struct stat ps;
  if (tsr_model.embedded_weights && (!path || (stat(path, &ps) == 0 && S_ISDIR(ps.st_mode)))) {
    /* A --single-file library: its weights file is inside it, header and
       all, just before the payload. */
    const unsigned char *h = tsr_model.embedded_weights - header_bytes;
    uint64_t n, sum;
    memcpy(&n, h + 8, 8);
    memcpy(&sum, h + 16, 8);
    if (memcmp(h, tsr_model.weights_magic, 8) != 0 || n != tsr_model.weights_bytes || sum != tsr_model.weights_checksum)
      st = fail(TESSERA_BAD_WEIGHTS, "tessera_open: the weights inside this library are damaged (their header is not the build's)");
    else if (checksum(tsr_model.embedded_weights, n) != sum)
      st = fail(TESSERA_BAD_WEIGHTS, "tessera_open: the weights inside this library are damaged (the data does not match their checksum)");
    m->weights = (float *)tsr_model.embedded_weights;
  } else if (path) {
    st = map_weights(m, path);
  } else {
    st = fail(TESSERA_INVALID_ARGUMENT, "tessera_open: no path given, and the weights are not inside this library (it was not built with --single-file)");
  }
  if (st == TESSERA_OK && !tsr_model.setup)
    weights_to_huge_pages(m, m->d->weights_bytes);
  if (st == TESSERA_OK && tsr_model.setup && __atomic_fetch_add(&device_opens, 1, __ATOMIC_ACQ_REL) != 0) {
    __atomic_fetch_sub(&device_opens, 1, __ATOMIC_ACQ_REL);
    st = fail(TESSERA_INVALID_ARGUMENT, "tessera_open: this GPU build's library has a model open already (its device state is the library's: close that one first)");
  } else if (st == TESSERA_OK && tsr_model.setup) {
    m->device = 1;
    last_error[0] = 0;
    if (tsr_model.setup(m->weights) != 0) {
      char why[sizeof last_error];
      snprintf(why, sizeof why, "%s", last_error[0] ? last_error : "the device setup failed");
      st = fail(TESSERA_DEVICE_ERROR, "tessera_open: %s", why);
    }
  }
  if (st == TESSERA_OK) {
    /* One context up front: a model that cannot hold one run fails here. */
    ctx *c = new_ctx(m->d);
    if (!c)
      st = fail(TESSERA_OUT_OF_MEMORY, "tessera_open: out of memory (an arena of %llu bytes)", (unsigned long long)m->d->arena_bytes);
    m->pool = c;
  }
  if (st != TESSERA_OK) {
    release(m);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->serial);
    pthread_cond_destroy(&m->idle);
    free(m);
    return st;
  }
  *out = m;
  return TESSERA_OK;
}

/* release frees what an open model holds, but not the handle. */
static void release(tessera_model *m) {
  for (ctx *c = m->pool, *next; c; c = next) {
    next = c->next;
    free_ctx(m->d, c);
  }
  m->pool = NULL;
  if (m->map)
    munmap(m->map, m->map_bytes);
  m->map = NULL;
  m->weights = NULL;
  if (m->device)
    __atomic_fetch_sub(&device_opens, 1, __ATOMIC_ACQ_REL);
  m->device = 0;
}

API void tessera_close(tessera_model *m) {
  if (!m || __atomic_load_n(&m->magic, __ATOMIC_ACQUIRE) != model_open)
    return;
  pthread_mutex_lock(&m->lock);
  if (m->magic != model_open) { /* another thread's close came first */
    pthread_mutex_unlock(&m->lock);
    return;
  }
  __atomic_store_n(&m->magic, model_closed, __ATOMIC_RELEASE);
  while (m->running > 0)
    pthread_cond_wait(&m->idle, &m->lock);
  m->profile = NULL;
  release(m);
  pthread_mutex_unlock(&m->lock);
  pthread_mutex_lock(&closed_lock);
  m->next_closed = closed_models;
  closed_models = m;
  pthread_mutex_unlock(&closed_lock);
}

API int32_t tessera_num_inputs(const tessera_model *m) {
  return live(m, "tessera_num_inputs") == TESSERA_OK ? m->d->num_inputs : 0;
}
API int32_t tessera_num_outputs(const tessera_model *m) {
  return live(m, "tessera_num_outputs") == TESSERA_OK ? m->d->num_outputs : 0;
}
API int32_t tessera_num_steps(const tessera_model *m) {
  return live(m, "tessera_num_steps") == TESSERA_OK ? m->d->num_steps : 0;
}
API const char *tessera_target(const tessera_model *m) {
  return live(m, "tessera_target") == TESSERA_OK ? m->d->target : NULL;
}

API const char *tessera_step_name(const tessera_model *m, int32_t i) {
  if (live(m, "tessera_step_name") != TESSERA_OK)
    return NULL;
  if (i < 0 || i >= m->d->num_steps) {
    fail(TESSERA_INVALID_ARGUMENT, "tessera_step_name: step %d out of range [0, %d)", i, m->d->num_steps);
    return NULL;
  }
  return m->d->step_names[i];
}

static tessera_status info(const char *fn, const tessera_model *m, int32_t i, int32_t n, const tsr_tensor_desc *ts,
                           const char **name, tessera_dtype *dtype, int32_t *rank, const int64_t **shape) {
  tessera_status st = live(m, fn);
  if (st != TESSERA_OK)
    return st;
  if (i < 0 || i >= n)
    return fail(TESSERA_INVALID_ARGUMENT, "%s: index %d out of range [0, %d)", fn, i, n);
  if (name)
    *name = ts[i].name;
  if (dtype)
    *dtype = ts[i].dtype;
  if (rank)
    *rank = ts[i].rank;
  if (shape)
    *shape = ts[i].shape;
  return TESSERA_OK;
}

API tessera_status tessera_input_info(const tessera_model *m, int32_t i, const char **name, tessera_dtype *dtype,
                                      int32_t *rank, const int64_t **shape) {
  tessera_status st = live(m, "tessera_input_info");
  return st != TESSERA_OK ? st : info("tessera_input_info", m, i, m->d->num_inputs, m->d->inputs, name, dtype, rank, shape);
}

API tessera_status tessera_output_info(const tessera_model *m, int32_t i, const char **name, tessera_dtype *dtype,
                                       int32_t *rank, const int64_t **shape) {
  tessera_status st = live(m, "tessera_output_info");
  return st != TESSERA_OK ? st : info("tessera_output_info", m, i, m->d->num_outputs, m->d->outputs, name, dtype, rank, shape);
}

API tessera_status tessera_set_num_threads(tessera_model *m, int32_t threads) {
  tessera_status st = live(m, "tessera_set_num_threads");
  if (st != TESSERA_OK)
    return st;
  if (threads < 0 || threads > max_threads)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_set_num_threads: %d threads (want 0, the default, to %d)", threads, max_threads);
  __atomic_store_n(&m->threads, threads, __ATOMIC_RELAXED);
  return TESSERA_OK;
}

API tessera_status tessera_profile(tessera_model *m, double *seconds, int32_t n) {
  tessera_status st = live(m, "tessera_profile");
  if (st != TESSERA_OK)
    return st;
  if (m->d->no_profile && seconds)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_profile: %s", m->d->no_profile);
  if (seconds && n < m->d->num_steps)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_profile: an array of %d doubles for the model's %d steps", n, m->d->num_steps);
  pthread_mutex_lock(&m->lock);
  if (m->magic != model_open) {
    pthread_mutex_unlock(&m->lock);
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_profile: the model is closed");
  }
  m->profile = seconds;
  pthread_mutex_unlock(&m->lock);
  return TESSERA_OK;
}

/* check says why tensor t cannot be the model's tensor d in a run at this
   batch, or returns OK. */
static tessera_status check(const char *what, int32_t i, const tessera_tensor *t, const tsr_tensor_desc *d, int64_t batch, int64_t dim) {
  if (t->name && strcmp(t->name, d->name) != 0)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run: %s %d is named \"%.200s\", the model's %s %d is \"%s\"", what, i, t->name, what, i, d->name);
  if (!t->data)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run: %s %d (%s): data is NULL", what, i, d->name);
  if (t->dtype != d->dtype)
    return fail(TESSERA_DTYPE_MISMATCH, "tessera_run: %s %d (%s) is %s, the model's is %s", what, i, d->name,
                dtype_name(t->dtype), dtype_name(d->dtype));
  int same = t->rank == d->rank && (t->rank == 0 || t->shape);
  for (int k = 0; same && k < d->rank; k++)
    same = t->shape[k] == extent(d, k, batch, dim);
  if (!same) {
    char got[256] = "", want[256] = "";
    size_t g = 0, w = 0;
    for (int k = 0; k < t->rank && k < 8 && t->shape && g < sizeof got - 24; k++)
      g += (size_t)snprintf(got + g, sizeof got - g, "%s%lld", k ? "," : "", (long long)t->shape[k]);
    for (int k = 0; k < d->rank && w < sizeof want - 24; k++)
      w += (size_t)snprintf(want + w, sizeof want - w, "%s%lld", k ? "," : "", (long long)extent(d, k, batch, dim));
    return fail(TESSERA_SHAPE_MISMATCH, "tessera_run: %s %d (%s) has shape [%s]%s, the model's is [%s]", what, i, d->name, got,
                t->rank > 0 && !t->shape ? " (shape is NULL)" : "", want);
  }
  return TESSERA_OK;
}

/* The largest integer magnitude float32 holds exactly, and so every
   integer the kernels compute with (graph.MaxExactInt). */
#define EXACT_INT 16777216.0

/* half_to_float is the float32 of an IEEE half-precision value (exact). */
static float half_to_float(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0x1fu)
    u = s | 0x7f800000u | (m << 13); /* inf, NaN (its payload kept) */
  else if (e != 0)
    u = s | ((e + 112u) << 23) | (m << 13);
  else if (m == 0)
    u = s;
  else { /* subnormal: m * 2^-24, exact in float32 */
    float f = (float)m * 5.9604644775390625e-8f;
    memcpy(&u, &f, sizeof u);
    u |= s;
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* float_to_half is the IEEE half-precision value nearest x (ties to even,
   +-inf from 65520 on, NaN kept). Outputs of float16 reach it already
   rounded to float16 (a Cast's tsr_roundhalff), so it is exact there. */
static uint16_t float_to_half(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return s | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu); /* NaN, quiet */
  if (a >= 0x477ff000u)
    return s | 0x7c00u;
  if (a >= 0x38800000u) { /* normal: round the 23 fraction bits to 10 */
    a = (a + 0xfffu + ((a >> 13) & 1u)) >> 13;
    return s | (uint16_t)(a - (112u << 10));
  }
  /* below 2^-14: a multiple of 2^-24, rounded to nearest even */
  float f;
  memcpy(&f, &a, sizeof f);
  f = (f * 16777216.0f + 8388608.0f) - 8388608.0f;
  return s | (uint16_t)f;
}

/* to_float converts input i (name) of n elements to float32, or says
   which element float32 would round. */
static tessera_status to_float(float *dst, const void *src, tessera_dtype t, uint64_t n, int32_t i, const char *name) {
  uint64_t bad = n;
  long long v = 0;
#define WIDE(T)                                                                                                        \
  for (uint64_t k = 0; k < n; k++) {                                                                                   \
    T x = ((const T *)src)[k];                                                                                         \
    if (x > (T)EXACT_INT || (double)x < -EXACT_INT) {                                                                  \
      bad = k, v = (long long)x;                                                                                       \
      break;                                                                                                           \
    }                                                                                                                  \
    dst[k] = (float)x;                                                                                                 \
  }
  switch (t) {
  case TESSERA_UINT8: for (uint64_t k = 0; k < n; k++) dst[k] = (float)((const uint8_t *)src)[k]; break;
  case TESSERA_INT8: for (uint64_t k = 0; k < n; k++) dst[k] = (float)((const int8_t *)src)[k]; break;
  case TESSERA_UINT16: for (uint64_t k = 0; k < n; k++) dst[k] = (float)((const uint16_t *)src)[k]; break;
  case TESSERA_INT16: for (uint64_t k = 0; k < n; k++) dst[k] = (float)((const int16_t *)src)[k]; break;
  case TESSERA_INT32: WIDE(int32_t) break;
  case TESSERA_UINT32: WIDE(uint32_t) break;
  case TESSERA_INT64: WIDE(int64_t) break;
  case TESSERA_BOOL: for (uint64_t k = 0; k < n; k++) dst[k] = ((const uint8_t *)src)[k] ? 1.0f : 0.0f; break;
  case TESSERA_FLOAT16: for (uint64_t k = 0; k < n; k++) dst[k] = half_to_float(((const uint16_t *)src)[k]); break;
  default: break;
  }
#undef WIDE
  if (bad < n)
    return fail(TESSERA_VALUE_OUT_OF_RANGE,
                "tessera_run: input %d (%s) element %llu is %lld: integers reach this model's kernels as float32, exact only within +-16777216",
                i, name, (unsigned long long)bad, v);
  return TESSERA_OK;
}

/* from_float converts output i (name) of n elements from float32, or says
   which element its dtype cannot hold exactly (NaN, beyond the dtype, or
   beyond +-2^24, where the float32 the kernels computed it in was
   rounded). */
static tessera_status from_float(void *dst, const float *src, tessera_dtype t, uint64_t n, int32_t i, const char *name) {
  /* 2^24 itself may be 2^24 + 1 rounded: only values below it are sure. */
  double lo = -(EXACT_INT - 1), hi = EXACT_INT - 1;
  switch (t) {
  case TESSERA_UINT8: lo = 0, hi = 255; break;
  case TESSERA_INT8: lo = -128, hi = 127; break;
  case TESSERA_UINT16: lo = 0, hi = 65535; break;
  case TESSERA_INT16: lo = -32768, hi = 32767; break;
  case TESSERA_UINT32: lo = 0; break;
  case TESSERA_BOOL:
    for (uint64_t k = 0; k < n; k++)
      ((uint8_t *)dst)[k] = src[k] != 0.0f;
    return TESSERA_OK;
  case TESSERA_FLOAT16:
    for (uint64_t k = 0; k < n; k++)
      ((uint16_t *)dst)[k] = float_to_half(src[k]);
    return TESSERA_OK;
  default: break;
  }
  for (uint64_t k = 0; k < n; k++) {
    double x = __builtin_rint((double)src[k]);
    if (!(x >= lo && x <= hi))
      return fail(TESSERA_VALUE_OUT_OF_RANGE,
                  "tessera_run: output %d (%s) element %llu is %g, which %s cannot hold exactly (its kernels compute in float32, exact below 2^24 = 16777216)",
                  i, name, (unsigned long long)k, (double)src[k], dtype_name(t));
    switch (t) {
    case TESSERA_UINT8: ((uint8_t *)dst)[k] = (uint8_t)x; break;
    case TESSERA_INT8: ((int8_t *)dst)[k] = (int8_t)x; break;
    case TESSERA_UINT16: ((uint16_t *)dst)[k] = (uint16_t)x; break;
    case TESSERA_INT16: ((int16_t *)dst)[k] = (int16_t)x; break;
    case TESSERA_INT32: ((int32_t *)dst)[k] = (int32_t)x; break;
    case TESSERA_UINT32: ((uint32_t *)dst)[k] = (uint32_t)x; break;
    case TESSERA_INT64: ((int64_t *)dst)[k] = (int64_t)x; break;
    default: break;
    }
  }
  return TESSERA_OK;
}

TSR_HIDDEN int tsr_check_indices(const float *p, int64_t n, int k, const int64_t *lo, const int64_t *hi, const char *what) {
  for (int64_t j = 0; j < n; j++) {
    float v = p[j];
    int b = k > 1 ? (int)(j % k) : 0;
    if (!(v >= (float)lo[b] && v <= (float)hi[b])) {
      tsr_error("%s: element %lld is %g, outside [%lld, %lld]", what, (long long)j, (double)v, (long long)lo[b], (long long)hi[b]);
      return TSR_VALUE_OUT_OF_RANGE;
    }
  }
  return 0;
}

/* run_batch sets *batch to the batch of a run of a model built over one:
   the leading dimension of its first batched input, which must lie in the
   model's range. */
static tessera_status run_batch(const tsr_model_desc *d, const tessera_tensor *inputs, int64_t *batch) {
  for (int i = 0; i < d->num_inputs; i++) {
    if (!d->inputs[i].batched)
      continue;
    if (inputs[i].rank != d->inputs[i].rank || !inputs[i].shape)
      return fail(TESSERA_SHAPE_MISMATCH, "tessera_run: input %d (%s) has rank %d%s, the model's is %d (its leading dimension the batch %s)", i,
                  d->inputs[i].name, inputs[i].rank, inputs[i].shape ? "" : " and no shape", d->inputs[i].rank, d->batch_name);
    int64_t n = inputs[i].shape[0];
    if (n < d->batch_lo || n > d->batch_hi)
      return fail(TESSERA_SHAPE_MISMATCH, "tessera_run: input %d (%s) has batch %s=%lld, outside the range %lld..%lld the model was built for",
                  i, d->inputs[i].name, d->batch_name, (long long)n, (long long)d->batch_lo, (long long)d->batch_hi);
    *batch = n;
    return TESSERA_OK;
  }
  return TESSERA_OK;
}

/* run_dim sets *dim to the value of the dimension given at run time of a
   run of a model built over one: where its first input that has it has
   it, which must lie in the model's range. */
static tessera_status run_dim(const tsr_model_desc *d, const tessera_tensor *inputs, int64_t *dim) {
  for (int i = 0; i < d->num_inputs; i++)
    for (int k = 0; k < d->inputs[i].rank; k++) {
      if (d->inputs[i].shape[k] != -2)
        continue;
      if (inputs[i].rank != d->inputs[i].rank || !inputs[i].shape)
        return fail(TESSERA_SHAPE_MISMATCH, "tessera_run: input %d (%s) has rank %d%s, the model's is %d (its dimension %d the dimension %s)", i,
                    d->inputs[i].name, inputs[i].rank, inputs[i].shape ? "" : " and no shape", d->inputs[i].rank, k, d->dim_name);
      int64_t n = inputs[i].shape[k];
      if (n < d->dim_lo || n > d->dim_hi)
        return fail(TESSERA_SHAPE_MISMATCH, "tessera_run: input %d (%s) has %s=%lld in its dimension %d, outside the range %lld..%lld the model was built for",
                    i, d->inputs[i].name, d->dim_name, (long long)n, k, (long long)d->dim_lo, (long long)d->dim_hi);
      *dim = n;
      return TESSERA_OK;
    }
  return TESSERA_OK;
}

API tessera_status tessera_dim_range(const tessera_model *m, const char **name, int64_t *lo, int64_t *hi) {
  tessera_status st = live(m, "tessera_dim_range");
  if (st != TESSERA_OK)
    return st;
  if (name)
    *name = m->d->dim_name;
  if (lo)
    *lo = m->d->dim_name ? m->d->dim_lo : 0;
  if (hi)
    *hi = m->d->dim_name ? m->d->dim_hi : 0;
  return TESSERA_OK;
}

API tessera_status tessera_batch_range(const tessera_model *m, const char **name, int64_t *lo, int64_t *hi) {
  tessera_status st = live(m, "tessera_batch_range");
  if (st != TESSERA_OK)
    return st;
  if (name)
    *name = m->d->batch_name;
  if (lo)
    *lo = m->d->batch_name ? m->d->batch_lo : 0;
  if (hi)
    *hi = m->d->batch_name ? m->d->batch_hi : 0;
  return TESSERA_OK;
}

API tessera_status tessera_run(tessera_model *m, const tessera_tensor *inputs, int32_t num_inputs,
                               const tessera_tensor *outputs, int32_t num_outputs) {
  tessera_status st = live(m, "tessera_run");
  if (st != TESSERA_OK)
    return st;
  const tsr_model_desc *d = m->d;
  if (num_inputs != d->num_inputs || num_outputs != d->num_outputs)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run: %d inputs and %d outputs given, the model has %d and %d", num_inputs,
                num_outputs, d->num_inputs, d->num_outputs);
  if ((d->num_inputs > 0 && !inputs) || (d->num_outputs > 0 && !outputs))
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run: %s is NULL", !inputs ? "inputs" : "outputs");
  int64_t batch = 1;
  if (d->batch_name && (st = run_batch(d, inputs, &batch)) != TESSERA_OK)
    return st;
  int64_t dim = d->dim_name ? d->dim_hi : 1;
  if (d->dim_name && (st = run_dim(d, inputs, &dim)) != TESSERA_OK)
    return st;
  for (int i = 0; i < d->num_inputs; i++)
    if ((st = check("input", i, &inputs[i], &d->inputs[i], batch, dim)) != TESSERA_OK)
      return st;
  for (int i = 0; i < d->num_outputs; i++)
    if ((st = check("output", i, &outputs[i], &d->outputs[i], batch, dim)) != TESSERA_OK)
      return st;

  pthread_mutex_lock(&m->lock);
  if (m->magic != model_open) { /* closed since live() */
    pthread_mutex_unlock(&m->lock);
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run: the model is closed");
  }
  m->running++;
  ctx *c = m->pool;
  if (c)
    m->pool = c->next;
  double *profile = m->profile;
  pthread_mutex_unlock(&m->lock);
  if (!c && !(c = new_ctx(d)))
    st = fail(TESSERA_OUT_OF_MEMORY, "tessera_run: out of memory (an arena of %llu bytes)", (unsigned long long)d->arena_bytes);
  else
    st = run_in(m, c, inputs, outputs, batch, dim, profile);

  pthread_mutex_lock(&m->lock);
  if (c) {
    if (st == TESSERA_OK && profile && m->profile == profile)
      for (int s = 0; s < d->num_steps; s++)
        profile[s] += c->profile[s];
    c->next = m->pool;
    m->pool = c;
  }
  if (--m->running == 0 && m->magic != model_open)
    pthread_cond_broadcast(&m->idle);
  pthread_mutex_unlock(&m->lock);
  return st;
}

/* run_in runs the model in context c on checked tensors. */
static tessera_status run_in(tessera_model *m, ctx *c, const tessera_tensor *inputs, const tessera_tensor *outputs, int64_t batch,
                             int64_t dim, double *profile) {
  const tsr_model_desc *d = m->d;
  tessera_status st;
  const float *in[d->num_inputs + 1];
  float *out[d->num_outputs + 1];
  for (int i = 0; i < d->num_inputs; i++) {
    if (c->in[i]) {
      if ((st = to_float(c->in[i], inputs[i].data, d->inputs[i].dtype, elems(&d->inputs[i], batch, dim), i, d->inputs[i].name)) != TESSERA_OK)
        return st;
      in[i] = c->in[i];
    } else {
      in[i] = inputs[i].data;
    }
  }
  for (int i = 0; i < d->num_outputs; i++)
    out[i] = c->out[i] ? c->out[i] : outputs[i].data;
  if (profile)
    memset(c->profile, 0, (size_t)d->num_steps * sizeof *c->profile);

  int threads = __atomic_load_n(&m->threads, __ATOMIC_RELAXED);
  int before = omp_get_max_threads();
  if (threads > 0)
    omp_set_num_threads(threads); /* this thread's setting: other callers keep theirs */
  last_error[0] = 0;
  if (d->serial)
    pthread_mutex_lock(&m->serial);
  int rc = d->execute(in, out, m->weights, c->arena, profile ? c->profile : NULL, batch, dim);
  if (d->serial)
    pthread_mutex_unlock(&m->serial);
  if (threads > 0)
    omp_set_num_threads(before);
  char why[sizeof last_error];
  snprintf(why, sizeof why, "%s", last_error);
  if (rc == TSR_VALUE_OUT_OF_RANGE)
    return fail(TESSERA_VALUE_OUT_OF_RANGE, "tessera_run: %s", why);
  if (rc != 0 && why[0])
    return fail(TESSERA_KERNEL_FAILED, "tessera_run: %s", why);
  if (rc != 0)
    return fail(TESSERA_KERNEL_FAILED, "tessera_run: a kernel returned %d", rc);
  for (int i = 0; i < d->num_outputs; i++)
    if (c->out[i] &&
        (st = from_float(outputs[i].data, c->out[i], d->outputs[i].dtype, elems(&d->outputs[i], batch, dim), i, d->outputs[i].name)) != TESSERA_OK)
      return st;
  return TESSERA_OK;
}

/* order puts the n named tensors ts into the model's order (into out,
   num of them), or says which name is missing, unknown or twice. */
static tessera_status order(const char *what, const tessera_tensor *ts, int32_t n, const tsr_tensor_desc *ds, int32_t num,
                            tessera_tensor *out) {
  if (n != num)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run_named: %d %ss given, the model has %d", n, what, num);
  if (n > 0 && !ts)
    return fail(TESSERA_INVALID_ARGUMENT, "tessera_run_named: %ss is NULL", what);
  for (int32_t j = 0; j < num; j++)
    out[j].name = NULL;
  for (int32_t i = 0; i < n; i++) {
    if (!ts[i].name)
      return fail(TESSERA_INVALID_ARGUMENT, "tessera_run_named: %s %d has no name", what, i);
    int32_t j = 0;
    while (j < num && strcmp(ts[i].name, ds[j].name) != 0)
      j++;
    if (j == num)
      return fail(TESSERA_INVALID_ARGUMENT, "tessera_run_named: the model has no %s named \"%.200s\"", what, ts[i].name);
    if (out[j].name)
      return fail(TESSERA_INVALID_ARGUMENT, "tessera_run_named: %s \"%s\" given twice", what, ds[j].name);
    out[j] = ts[i];
  }
  return TESSERA_OK;
}

API tessera_status tessera_run_named(tessera_model *m, const tessera_tensor *inputs, int32_t num_inputs,
                                     const tessera_tensor *outputs, int32_t num_outputs) {
  tessera_status st = live(m, "tessera_run_named");
  if (st != TESSERA_OK)
    return st;
  const tsr_model_desc *d = m->d;
  tessera_tensor in[d->num_inputs + 1], out[d->num_outputs + 1];
  if ((st = order("input", inputs, num_inputs, d->inputs, d->num_inputs, in)) != TESSERA_OK ||
      (st = order("output", outputs, num_outputs, d->outputs, d->num_outputs, out)) != TESSERA_OK)
    return st;
  return tessera_run(m, in, d->num_inputs, out, d->num_outputs);
}
