/* device_cuda.c: the device runtime of a CUDA model: the device the
   measurement runner uses, opened and the kernels compiled the same way
   (cuda_api.h: the driver and NVRTC loaded at run time, the primary
   context, NVRTC for the device's own architecture), at tessera_open.
   Included by a GPU model's generated model.c after the kernel source
   (tsm_kernel_source, tsm_kernel_names, TSM_NUM_KERNELS, TSM_NUM_DBUFS,
   tsm_dbuf_bytes) and tessera_model.h (tsr_error). */
/* ---- device runtime: CUDA driver and NVRTC, loaded at run time (cuda_api.h) ---- */
#include "cuda_api.h"
static CUfunction tsm_cu_fns[TSM_NUM_KERNELS];
static CUdeviceptr tsm_cu_bufs[TSM_NUM_DBUFS];
static int tsm_dev_ready;

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

static int tsm_dev_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, int nargs, const int *args) {
  void *params[64];
  for (int a = 0; a < nargs && a < 64; a++)
    params[a] = &tsm_cu_bufs[args[a]];
  CUresult rc = tsr_cu.LaunchKernel(tsm_cu_fns[k], gx, gy, gz, bx, by, bz, 0, NULL, params, NULL);
  if (rc != CUDA_SUCCESS)
    tsr_error("launch of %s: %s", tsm_kernel_names[k], tsr_cu_errname(rc));
  return rc;
}

static int tsm_dev_finish(void) {
  CUresult rc = tsr_cu.CtxSynchronize();
  if (rc != CUDA_SUCCESS)
    tsr_error("CUDA: %s", tsr_cu_errname(rc));
  return rc;
}
