/* harness_cuda.c: the CUDA part of the GPU runner (see harness_gpu.c).
 * The driver, NVRTC, the device and the kernels' compilation are
 * cuda_api.h's, the same as a built model's (device_cuda.c); kernels are
 * timed with CUDA events. */

#include "cuda_api.h"

static CUmodule module;
static CUfunction *functions;
static CUevent ev_start, ev_end;
static CUdeviceptr flush_buf;
static size_t flush_bytes;

static void check(CUresult rc, const char *what) {
	if (rc != CUDA_SUCCESS)
		die(EXIT_RUN, "%s failed: %s (%d)", what, tsr_cu_errname(rc), rc);
}

static void api_init(void) {
	runner_name = "tessera-cuda";
	char err[1024];
	if (tsr_cuda_open(err, sizeof err) != 0)
		die(EXIT_NODEV, "%s", err);
}

static void api_init_compiler(const char *arch) {
	if (!arch) {
		api_init();
		return;
	}
	runner_name = "tessera-cuda";
	char err[1024];
	if (tsr_cuda_open_compiler(arch, err, sizeof err) != 0)
		die(EXIT_NODEV, "%s", err);
}

static void api_probe(void) {
	char name[256] = {0};
	tsr_cu.DeviceGetName(name, sizeof name - 1, tsr_cu_device);
	int drv = 0, rmaj = 0, rmin = 0, threads = 0, shared = 0, sms = 0;
	tsr_cu.DriverGetVersion(&drv);
	tsr_rtc.Version(&rmaj, &rmin);
	tsr_cu.DeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, tsr_cu_device);
	tsr_cu.DeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, tsr_cu_device);
	tsr_cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, tsr_cu_device);
	printf("tessera device %s\n", name);
	printf("tessera driver CUDA %d.%d\n", drv / 1000, drv % 1000 / 10);
	printf("tessera compiler NVRTC %d.%d\n", rmaj, rmin);
	printf("tessera arch sm_%d%d gpu\n", tsr_cu_cc_major, tsr_cu_cc_minor);
	printf("tessera max_threads %d\n", threads);
	printf("tessera shared_bytes %d\n", shared);
	printf("tessera processors %d\n", sms);
}

static void api_compile(const char *src, size_t len, const char *out) {
	(void)len;
	static char err[64 << 10];
	char *bin = NULL;
	size_t n = 0;
	int rc = tsr_cuda_compile(src, "kernels.cu", &bin, &n, err, sizeof err);
	if (rc != 0)
		die(rc == -2 ? EXIT_NODEV : EXIT_BUILD, "%s", err);
	write_file(out, bin, n);
	free(bin);
}

static void api_load(const char *prog, size_t len, launch_t *ls, int nl) {
	(void)len;
	check(tsr_cu.ModuleLoadData(&module, prog), "cuModuleLoadData");
	functions = calloc((size_t)nl, sizeof *functions);
	if (!functions)
		die(EXIT_SETUP, "out of memory");
	for (int l = 0; l < nl; l++) {
		CUresult rc = tsr_cu.ModuleGetFunction(&functions[l], module, ls[l].name);
		if (rc != CUDA_SUCCESS)
			die(EXIT_RUN, "no kernel %s: %s", ls[l].name, tsr_cu_errname(rc));
	}
	if (!ev_start) {
		check(tsr_cu.EventCreate(&ev_start, 0), "cuEventCreate");
		check(tsr_cu.EventCreate(&ev_end, 0), "cuEventCreate");
	}
}

/* api_release frees a job's buffers and unloads its module, for the next
 * job of a serving runner. */
static void api_release(void **bufs, int nbufs, int nl) {
	(void)nl;
	for (int b = 0; b < nbufs; b++)
		check(tsr_cu.MemFree((CUdeviceptr)(uintptr_t)bufs[b]), "cuMemFree_v2");
	check(tsr_cu.ModuleUnload(module), "cuModuleUnload");
	free(functions);
	functions = NULL;
}

static void *api_alloc(size_t bytes) {
	CUdeviceptr p = 0;
	check(tsr_cu.MemAlloc(&p, bytes), "cuMemAlloc_v2");
	return (void *)(uintptr_t)p;
}

static void api_upload(void *d, const float *host, size_t bytes) {
	if (bytes)
		check(tsr_cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)d, host, bytes), "cuMemcpyHtoD_v2");
}

static void api_download(float *host, void *d, size_t bytes) {
	if (bytes)
		check(tsr_cu.MemcpyDtoH(host, (CUdeviceptr)(uintptr_t)d, bytes), "cuMemcpyDtoH_v2");
}

static void api_fill(void *d, unsigned char byte, size_t bytes) {
	if (bytes)
		check(tsr_cu.MemsetD8((CUdeviceptr)(uintptr_t)d, byte, bytes), "cuMemsetD8_v2");
	check(tsr_cu.CtxSynchronize(), "cuCtxSynchronize");
}

static double api_time(launch_t *ls, int nl, void **bufs, long long number) {
	void *params[64];
	CUdeviceptr values[64];
	check(tsr_cu.EventRecord(ev_start, NULL), "cuEventRecord");
	for (long long n = 0; n < number; n++) {
		for (int l = 0; l < nl; l++) {
			for (int a = 0; a < ls[l].nargs; a++) {
				values[a] = (CUdeviceptr)(uintptr_t)bufs[ls[l].args[a]];
				params[a] = &values[a];
			}
			CUresult rc = tsr_cu.LaunchKernel(functions[l], ls[l].grid[0], ls[l].grid[1], ls[l].grid[2],
			                              ls[l].block[0], ls[l].block[1], ls[l].block[2], 0, NULL, params, NULL);
			if (rc != CUDA_SUCCESS)
				die(EXIT_RUN, "launch of %s failed: %s", ls[l].name, tsr_cu_errname(rc));
		}
	}
	check(tsr_cu.EventRecord(ev_end, NULL), "cuEventRecord");
	check(tsr_cu.EventSynchronize(ev_end), "cuEventSynchronize");
	float ms = 0;
	check(tsr_cu.EventElapsedTime(&ms, ev_start, ev_end), "cuEventElapsedTime");
	return (double)ms * 1e-3;
}

static void api_flush(void) {
	if (!flush_buf) {
		int l2 = 0;
		tsr_cu.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, tsr_cu_device);
		flush_bytes = l2 > 0 ? 2 * (size_t)l2 : 64u << 20;
		flush_buf = (CUdeviceptr)(uintptr_t)api_alloc(flush_bytes);
	}
	api_fill((void *)(uintptr_t)flush_buf, 0, flush_bytes);
}
