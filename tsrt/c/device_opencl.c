/* device_opencl.c: the device runtime of an OpenCL model: the device the
   measurement runner uses, opened and the kernels built the same way
   (opencl_api.h: the ICD loader loaded at run time, no headers needed).
   Included by a GPU model's generated model.c after the kernel source
   (tsm_kernel_source, tsm_kernel_names, TSM_NUM_KERNELS, TSM_NUM_DBUFS,
   tsm_dbuf_bytes) and tessera_model.h (tsr_error). */
/* ---- device runtime: OpenCL, loaded at run time (opencl_api.h) ---- */
#include "opencl_api.h"
static cl_kernel tsm_cl_kernels[TSM_NUM_KERNELS];
static cl_mem tsm_cl_bufs[TSM_NUM_DBUFS];
static int tsm_dev_ready;

static int tsm_dev_init(void) {
  if (tsm_dev_ready)
    return 0;
  char err[1024];
  cl_program prog;
  if (tsr_cl_open(0, err, sizeof err) != 0 || tsr_cl_build(tsm_kernel_source, sizeof tsm_kernel_source - 1, &prog, err, sizeof err) != 0) {
    tsr_error("%s", err);
    return -1;
  }
  cl_int rc;
  for (int k = 0; k < TSM_NUM_KERNELS; k++)
    if (tsm_kernel_names[k] && !(tsm_cl_kernels[k] = tsr_cl.CreateKernel(prog, tsm_kernel_names[k], &rc))) {
      tsr_error("no kernel %s: OpenCL error %d", tsm_kernel_names[k], (int)rc);
      return -1;
    }
  for (int b = 0; b < TSM_NUM_DBUFS; b++)
    if (!(tsm_cl_bufs[b] = tsr_cl.CreateBuffer(tsr_cl_context, CL_MEM_READ_WRITE, tsm_dbuf_bytes[b], NULL, &rc))) {
      tsr_error("out of device memory (%llu bytes): OpenCL error %d", (unsigned long long)tsm_dbuf_bytes[b], (int)rc);
      return -1;
    }
  tsm_dev_ready = 1;
  return 0;
}

static int tsm_dev_upload(int b, const float *host, size_t bytes) {
  cl_int rc = tsr_cl.EnqueueWriteBuffer(tsr_cl_queue, tsm_cl_bufs[b], 1, 0, bytes, host, 0, NULL, NULL);
  if (rc != 0)
    tsr_error("upload: OpenCL error %d", (int)rc);
  return rc;
}

static int tsm_dev_download(float *host, int b, size_t bytes) {
  cl_int rc = tsr_cl.EnqueueReadBuffer(tsr_cl_queue, tsm_cl_bufs[b], 1, 0, bytes, host, 0, NULL, NULL);
  if (rc != 0)
    tsr_error("download: OpenCL error %d", (int)rc);
  return rc;
}

static int tsm_dev_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, int nargs, const int *args) {
  for (int a = 0; a < nargs; a++) {
    cl_int rc = tsr_cl.SetKernelArg(tsm_cl_kernels[k], (cl_uint)a, sizeof(cl_mem), &tsm_cl_bufs[args[a]]);
    if (rc != 0) {
      tsr_error("kernel %s argument %d: OpenCL error %d", tsm_kernel_names[k], a, (int)rc);
      return rc;
    }
  }
  size_t local[3] = {bx, by, bz}, global[3] = {(size_t)gx * bx, (size_t)gy * by, (size_t)gz * bz};
  cl_int rc = tsr_cl.EnqueueNDRangeKernel(tsr_cl_queue, tsm_cl_kernels[k], 3, NULL, global, local, 0, NULL, NULL);
  if (rc != 0)
    tsr_error("launch of %s: OpenCL error %d", tsm_kernel_names[k], (int)rc);
  return rc;
}

static int tsm_dev_finish(void) {
  cl_int rc = tsr_cl.Finish(tsr_cl_queue);
  if (rc != 0)
    tsr_error("OpenCL: error %d", (int)rc);
  return rc;
}
