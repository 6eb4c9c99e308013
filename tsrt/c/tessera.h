/* tessera.h: the C ABI of every model built by tessera's `tune build`.
 *
 * A built model is a shared library (libmodel.so) and, unless it was built
 * with --single-file, its weights file (weights.bin) in the same folder.
 * The library exports only the functions below; its kernels and helpers are
 * hidden, so several models live in one process when each library is
 * loaded with dlopen(path, RTLD_NOW | RTLD_LOCAL), as the Go and Python
 * packages do.
 *
 *   tessera_model *m;
 *   if (tessera_open(TESSERA_ABI_VERSION, "build/resnet18", &m) != TESSERA_OK)
 *     fprintf(stderr, "%s\n", tessera_last_error());
 *   ...
 *   tessera_run(m, inputs, 1, outputs, 1);
 *   tessera_close(m);
 *
 * One opened model serves concurrent tessera_run calls from any number of
 * threads: the weights are shared read-only, and each call takes a
 * workspace of its own from the model's pool. Weights of 2 MiB or more are
 * copied into (transparent) huge pages when the kernel gives them, and so
 * is an arena that large: a run streams its weights, and in 4 KiB pages it
 * pays a TLB miss and a prefetcher restart every page. Set
 * TESSERA_NO_HUGE_PAGES in the environment to keep the weights file's own
 * pages (shared through the page cache by every process that maps it).
 * The kernels run on OpenMP, which keeps a pool of worker threads for each
 * thread that calls tessera_run: call it from a stable set of threads (a
 * program's own workers), not from a new thread per call, or the pools
 * multiply and their workers sleep between parallel loops (the Go package
 * makes its calls from a few locked threads for this reason).
 *
 * Every function that can fail returns a tessera_status; on failure
 * tessera_last_error() describes it (per thread: the message of this
 * thread's last failed call).
 *
 * Handles: every function checks that its model is one tessera_open
 * returned and that it is not closed (TESSERA_INVALID_ARGUMENT, "the model
 * is closed"). tessera_close waits for the runs in progress on the model,
 * then frees its weights, workspaces and device state; the handle's own
 * few bytes (a magic number and a closed flag) are kept for the life of
 * the process, so a late call on a closed handle, from any thread, is an
 * error and never a use of freed memory. A pointer that tessera_open never
 * returned is undefined behaviour, as in any C API: it is checked for the
 * magic number, which catches most mistakes, but reading it may fault.
 *
 * The library must be whole before it is loaded: a truncated or foreign
 * file can kill the process inside dlopen, before any function here runs.
 * Programs that load models they did not build should load them with
 * tessera_load.h, which checks the file against the build's manifest
 * (size, SHA-256, ELF class and machine) first, as the Go and Python
 * packages do.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. tessera_open refuses a caller compiled
   against another version. */
#define TESSERA_ABI_VERSION 4

/* Element types: ONNX's TensorProto numbers. */
typedef enum tessera_dtype {
  TESSERA_FLOAT32 = 1,
  TESSERA_UINT8 = 2,
  TESSERA_INT8 = 3,
  TESSERA_UINT16 = 4,
  TESSERA_INT16 = 5,
  TESSERA_INT32 = 6,
  TESSERA_INT64 = 7,
  TESSERA_BOOL = 9, /* one byte per element, 0 or 1 */
  TESSERA_FLOAT16 = 10,
  TESSERA_UINT32 = 12
} tessera_dtype;

typedef enum tessera_status {
  TESSERA_OK = 0,
  TESSERA_INVALID_ARGUMENT = 1, /* a NULL pointer, an index or count out of range */
  TESSERA_SHAPE_MISMATCH = 2,   /* a tensor of another shape than the model's */
  TESSERA_DTYPE_MISMATCH = 3,   /* a tensor of another element type than the model's */
  TESSERA_BAD_WEIGHTS = 4,      /* a missing, truncated, corrupt or foreign weights file */
  TESSERA_ABI_MISMATCH = 5,     /* the caller's TESSERA_ABI_VERSION is not the library's */
  TESSERA_UNSUPPORTED_CPU = 6,  /* the processor lacks an extension the library was compiled for */
  TESSERA_OUT_OF_MEMORY = 7,
  TESSERA_KERNEL_FAILED = 8,    /* a kernel or the device reported an error */
  TESSERA_DEVICE_ERROR = 9,     /* a GPU build found no usable device or driver */
  TESSERA_VALUE_OUT_OF_RANGE = 10, /* a value the model cannot take: an index outside its axis, an integer
                                      beyond +-2^24 (float32 computation would round it) */
  TESSERA_NOT_FOUND = 11,       /* no model folder, library or weights file at the path */
  TESSERA_BAD_LIBRARY = 12      /* a truncated, damaged or foreign library (the loaders: tessera_load.h, Go, Python) */
} tessera_status;

typedef struct tessera_model tessera_model;

/* A tensor: dense, row-major. For inputs data is read; for outputs it is
   written and must hold the output's elements. name is optional in
   tessera_run (NULL: not checked; else it must be the name of the model's
   tensor at that position) and required in tessera_run_named. */
typedef struct tessera_tensor {
  tessera_dtype dtype;
  int32_t rank;
  const int64_t *shape; /* rank dimensions */
  void *data;
  const char *name;
} tessera_tensor;

/* tessera_abi_version returns the library's TESSERA_ABI_VERSION. */
uint32_t tessera_abi_version(void);

/* tessera_open opens the model of this library. path is its build folder
   (holding weights.bin), a weights file, or NULL for a library built with
   --single-file (the weights inside it). abi_version is the caller's
   TESSERA_ABI_VERSION. On success *model is set; tessera_close frees it.
   A path where nothing is (or a folder without weights.bin) is
   TESSERA_NOT_FOUND; weights that are not this build's, or damaged (the
   checksum of a weights file, or of the weights inside a --single-file
   library, is checked), TESSERA_BAD_WEIGHTS. */
tessera_status tessera_open(uint32_t abi_version, const char *path, tessera_model **model);

/* tessera_close frees a model after the runs in progress on it end; NULL
   and a closed model are ignored. Calls on it afterwards fail (see
   Handles, above). */
void tessera_close(tessera_model *model);

/* The model's inputs and outputs, by index. name, dtype, rank and shape may
   each be NULL when not wanted; the strings and shapes live as long as the
   model. In a model built over a dynamic batch (tessera_batch_range), a
   batched tensor's leading dimension is -1; in one built over a dimension
   given at run time (tessera_dim_range, a sequence length), the dimensions
   that are it are -2: each run gives them. */
int32_t tessera_num_inputs(const tessera_model *model);
int32_t tessera_num_outputs(const tessera_model *model);
tessera_status tessera_input_info(const tessera_model *model, int32_t i, const char **name,
                                  tessera_dtype *dtype, int32_t *rank, const int64_t **shape);
tessera_status tessera_output_info(const tessera_model *model, int32_t i, const char **name,
                                   tessera_dtype *dtype, int32_t *rank, const int64_t **shape);

/* tessera_batch_range gives the dynamic batch of a model built over a
   range of it (tune build --range N=lo..hi): its name and its range, lo..hi
   inclusive. A model of static shapes gives NULL, 0 and 0. Any argument
   but model may be NULL. */
tessera_status tessera_batch_range(const tessera_model *model, const char **name, int64_t *lo, int64_t *hi);

/* tessera_dim_range gives the dimension a model built over one takes at
   run time (tune build --range S=lo..hi, a sequence length): its name and
   range. A model without one gives NULL, 0 and 0. Any argument but model
   may be NULL. */
tessera_status tessera_dim_range(const tessera_model *model, const char **name, int64_t *lo, int64_t *hi);

/* tessera_run runs the model once: inputs[i] is input i, outputs[i] output
   i, each of the dtype and shape the model declares, a batched tensor's
   leading dimension the run's batch and the dimensions that are the
   dimension given at run time its value (the same in all of them, within
   the model's ranges: else TESSERA_SHAPE_MISMATCH). A tensor whose name
   is set must be the model's tensor of that name. Outputs must not
   overlap each other or the inputs. Safe to call from many threads at once
   on one model.
   Integer inputs reach the kernels as float32: a value beyond +-2^24
   (where float32 rounds) is TESSERA_VALUE_OUT_OF_RANGE, as is an integer
   output beyond it or beyond its dtype's range, and an index that a
   Gather, GatherElements, GatherND, ScatterElements or ScatterND would
   read outside its axis (the message names the node and the element). */
tessera_status tessera_run(tessera_model *model, const tessera_tensor *inputs, int32_t num_inputs,
                           const tessera_tensor *outputs, int32_t num_outputs);

/* tessera_run_named is tessera_run with the tensors in any order, matched
   by name: every tensor's name must be set, each input and output given
   once. */
tessera_status tessera_run_named(tessera_model *model, const tessera_tensor *inputs, int32_t num_inputs,
                                 const tessera_tensor *outputs, int32_t num_outputs);

/* tessera_set_num_threads sets the threads each later tessera_run of this
   model uses (0: the default, OMP_NUM_THREADS or every core). */
tessera_status tessera_set_num_threads(tessera_model *model, int32_t threads);

/* Profiling: the executor runs tessera_num_steps kernel calls. While
   seconds is set (tessera_profile), every tessera_run of this model adds
   the time of each step to seconds[step], an array of n doubles the
   caller owns (n at least tessera_num_steps, else
   TESSERA_INVALID_ARGUMENT); NULL stops it. A GPU build cannot time its
   steps: TESSERA_INVALID_ARGUMENT. tessera_step_name names step i (its
   group and ops). */
int32_t tessera_num_steps(const tessera_model *model);
const char *tessera_step_name(const tessera_model *model, int32_t i);
tessera_status tessera_profile(tessera_model *model, double *seconds, int32_t n);

/* tessera_target returns the target the library was built for (its
   records' target key: the CPU level and flags, or the GPU). */
const char *tessera_target(const tessera_model *model);

/* tessera_last_error describes this thread's last failed call ("" if none). */
const char *tessera_last_error(void);

/* tessera_status_name returns the enumerator's name ("TESSERA_OK", ...). */
const char *tessera_status_name(tessera_status status);

#ifdef __cplusplus
}
#endif

#endif
