/* device_cuda.c: the device runtime of a CUDA model: the device the
   measurement runner uses, opened and the kernels compiled the same way
   (cuda_api.h: the driver and NVRTC loaded at run time, the primary
   context, NVRTC for the device's own architecture), at tessera_open.
   Included by a GPU model's generated model.c after the kernel source
   (tsm_kernel_source, tsm_kernel_names, TSM_NUM_KERNELS, TSM_NUM_DBUFS,
   tsm_dbuf_bytes) and tessera_model.h (tsr_error).

   The kernels run on a stream of the model's own. The first run launches
   them one by one and records the launches; after it, they are captured
   into one CUDA graph, and every later run launches the graph: one call
   instead of one per kernel (a model's launches are the same every run:
   its buffers are fixed at tessera_open). TESSERA_CUDA_GRAPH=0 keeps the
   launches one by one; so does a driver without graphs, and a capture
   that fails (the run that tried it has already computed its outputs). */
/* ---- device runtime: CUDA driver and NVRTC, loaded at run time (cuda_api.h) ---- */
#include "cuda_api.h"
static CUfunction tsm_cu_fns[TSM_NUM_KERNELS];
static CUdeviceptr tsm_cu_bufs[TSM_NUM_DBUFS];
static int tsm_dev_ready;
static CUstream tsm_cu_stream;

/* The launches of the first run, replayed into the graph. */
typedef struct {
  int k, nargs;
  unsigned grid[3], block[3];
  const int *args; /* the generated code's static array */
} tsm_cu_launch;
static tsm_cu_launch *tsm_cu_rec;
static int tsm_cu_nrec, tsm_cu_caprec;
/* tsm_cu_graph: 0 recording the first run's launches, 1 the graph is
   ready, -1 launches one by one. */
static int tsm_cu_graph;
static CUgraphExec tsm_cu_exec;

static int tsm_dev_init(void) {
  if (tsm_dev_ready)
    return 0;
  char err[1024], *bin = NULL;
  size_t size = 0;
  if (tsr_cuda_open(err, sizeof err) != 0 || tsr_cuda_compile(tsm_kernel_source, "model.cu", &bin, &size, err, sizeof err) != 0) {
    tsr_error("%s", err);
    return -1;
  }
  CUmodule mod;
  CUresult rc = tsr_cu.ModuleLoadData(&mod, bin);
  free(bin);
  if (rc != CUDA_SUCCESS) {
    tsr_error("loading the kernels failed: %s", tsr_cu_errname(rc));
    return -1;
  }
  for (int k = 0; k < TSM_NUM_KERNELS; k++)
    if (tsm_kernel_names[k] && (rc = tsr_cu.ModuleGetFunction(&tsm_cu_fns[k], mod, tsm_kernel_names[k])) != CUDA_SUCCESS) {
      tsr_error("no kernel %s: %s", tsm_kernel_names[k], tsr_cu_errname(rc));
      return -1;
    }
  for (int b = 0; b < TSM_NUM_DBUFS; b++)
    if ((rc = tsr_cu.MemAlloc(&tsm_cu_bufs[b], tsm_dbuf_bytes[b])) != CUDA_SUCCESS) {
      tsr_error("out of device memory (%llu bytes): %s", (unsigned long long)tsm_dbuf_bytes[b], tsr_cu_errname(rc));
      return -1;
    }
  /* A blocking stream: it waits for the uploads, which run on the legacy
     default stream, as kernels launched there would. */
  tsm_cu_graph = -1;
  if (tsr_cug.StreamCreate && tsr_cug.StreamCreate(&tsm_cu_stream, 0) != CUDA_SUCCESS)
    tsm_cu_stream = NULL;
  const char *g = getenv("TESSERA_CUDA_GRAPH");
  int have = tsm_cu_stream != NULL;
  for (size_t i = 0; i < sizeof tsr_cug_names / sizeof tsr_cug_names[0]; i++)
    have = have && ((void **)&tsr_cug)[i] != NULL;
  if (have && !(g && strcmp(g, "0") == 0))
    tsm_cu_graph = 0;
  tsm_dev_ready = 1;
  return 0;
}

static int tsm_dev_upload(int b, const float *host, size_t bytes) {
  CUresult rc = tsr_cu.MemcpyHtoD(tsm_cu_bufs[b], host, bytes);
  if (rc != CUDA_SUCCESS)
    tsr_error("upload: %s", tsr_cu_errname(rc));
  return rc;
}

static int tsm_dev_download(float *host, int b, size_t bytes) {
  CUresult rc = tsr_cu.MemcpyDtoH(host, tsm_cu_bufs[b], bytes);
  if (rc != CUDA_SUCCESS)
    tsr_error("download: %s", tsr_cu_errname(rc));
  return rc;
}

/* tsm_cu_launch_one launches kernel k on the model's stream. */
static CUresult tsm_cu_launch_one(const tsm_cu_launch *l) {
  void *params[64];
  for (int a = 0; a < l->nargs && a < 64; a++)
    params[a] = &tsm_cu_bufs[l->args[a]];
  return tsr_cu.LaunchKernel(tsm_cu_fns[l->k], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], 0,
                             tsm_cu_stream, params, NULL);
}

static int tsm_dev_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, int nargs, const int *args) {
  if (tsm_cu_graph == 1)
    return 0; /* the graph holds this launch */
  tsm_cu_launch l = {k, nargs, {gx, gy, gz}, {bx, by, bz}, args};
  CUresult rc = tsm_cu_launch_one(&l);
  if (rc != CUDA_SUCCESS) {
    tsr_error("launch of %s: %s", tsm_kernel_names[k], tsr_cu_errname(rc));
    return rc;
  }
  if (tsm_cu_graph == 0) {
    if (tsm_cu_nrec == tsm_cu_caprec) {
      int cap = tsm_cu_caprec ? 2 * tsm_cu_caprec : 64;
      tsm_cu_launch *r = realloc(tsm_cu_rec, (size_t)cap * sizeof *r);
      if (!r) {
        tsm_cu_graph = -1;
        return 0;
      }
      tsm_cu_rec = r;
      tsm_cu_caprec = cap;
    }
    tsm_cu_rec[tsm_cu_nrec++] = l;
  }
  return 0;
}

/* tsm_cu_capture captures the recorded launches into the graph; on any
   failure the model launches one by one from then on. */
static void tsm_cu_capture(void) {
  CUgraph graph = NULL;
  int ok = tsm_cu_nrec > 0 && tsr_cug.StreamBeginCapture(tsm_cu_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS;
  if (ok) {
    for (int i = 0; i < tsm_cu_nrec; i++)
      ok = ok && tsm_cu_launch_one(&tsm_cu_rec[i]) == CUDA_SUCCESS;
    ok = tsr_cug.StreamEndCapture(tsm_cu_stream, &graph) == CUDA_SUCCESS && ok;
  }
  ok = ok && graph && tsr_cug.GraphInstantiateWithFlags(&tsm_cu_exec, graph, 0) == CUDA_SUCCESS;
  if (graph)
    tsr_cug.GraphDestroy(graph);
  tsm_cu_graph = ok ? 1 : -1;
  if (!ok && getenv("TESSERA_CUDA_GRAPH"))
    fprintf(stderr, "tessera: CUDA graph capture failed; the kernels launch one by one\n");
  free(tsm_cu_rec);
  tsm_cu_rec = NULL;
  tsm_cu_nrec = tsm_cu_caprec = 0;
}

static int tsm_dev_finish(void) {
  CUresult rc = CUDA_SUCCESS;
  if (tsm_cu_graph == 1 && (rc = tsr_cug.GraphLaunch(tsm_cu_exec, tsm_cu_stream)) != CUDA_SUCCESS) {
    tsr_error("CUDA graph launch: %s", tsr_cu_errname(rc));
    return rc;
  }
  rc = tsm_cu_stream ? tsr_cug.StreamSynchronize(tsm_cu_stream) : tsr_cu.CtxSynchronize();
  if (rc != CUDA_SUCCESS) {
    tsr_error("CUDA: %s", tsr_cu_errname(rc));
    return rc;
  }
  if (tsm_cu_graph == 0)
    tsm_cu_capture();
  return rc;
}
