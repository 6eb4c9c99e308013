/* harness_opencl.c: the OpenCL part of the GPU runner (see harness_gpu.c).
 * The driver, the device and the program builds are opencl_api.h's, the
 * same as a built model's (device_opencl.c). The OpenCL programs are
 * built with the driver's compiler; "compile" checks that a source builds
 * and keeps the source as the program "run" builds again (drivers cache
 * their builds). */

#include "opencl_api.h"

static cl_program program;
static cl_kernel *kernels;
static cl_mem flush_buf;
static size_t flush_bytes;

static void check(cl_int rc, const char *what) {
	if (rc != CL_SUCCESS)
		die(EXIT_RUN, "%s failed: OpenCL error %d", what, (int)rc);
}

static void api_init(void) {
	runner_name = "tessera-opencl";
	char err[1024];
	if (tsr_cl_open(1, err, sizeof err) != 0)
		die(EXIT_NODEV, "%s", err);
}

static void info_string(cl_uint what, int device, char *buf, size_t n) {
	size_t got = 0;
	cl_int rc = device ? tsr_cl.GetDeviceInfo(tsr_cl_device, what, n - 1, buf, &got) : tsr_cl.GetPlatformInfo(tsr_cl_platform, what, n - 1, buf, &got);
	if (rc != CL_SUCCESS)
		got = 0;
	buf[got < n ? got : n - 1] = 0;
	for (char *c = buf; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

/* api_init_compiler: OpenCL builds a program for its device, so the
   device is opened whatever the arch. */
static void api_init_compiler(const char *arch) {
	(void)arch;
	api_init();
}

static void api_probe(void) {
	char name[256], driver[256], cver[256], pname[256], pver[256], dver[256];
	info_string(CL_DEVICE_NAME, 1, name, sizeof name);
	info_string(CL_DRIVER_VERSION, 1, driver, sizeof driver);
	info_string(CL_DEVICE_OPENCL_C_VERSION, 1, cver, sizeof cver);
	info_string(CL_DEVICE_VERSION, 1, dver, sizeof dver);
	info_string(CL_PLATFORM_NAME, 0, pname, sizeof pname);
	info_string(CL_PLATFORM_VERSION, 0, pver, sizeof pver);
	size_t wg = 0;
	cl_ulong local = 0, type = 0;
	cl_uint units = 0;
	tsr_cl.GetDeviceInfo(tsr_cl_device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
	tsr_cl.GetDeviceInfo(tsr_cl_device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
	tsr_cl.GetDeviceInfo(tsr_cl_device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
	tsr_cl.GetDeviceInfo(tsr_cl_device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
	printf("tessera device %s\n", name);
	printf("tessera driver %s (%s, %s)\n", driver, pname, pver);
	printf("tessera compiler %s\n", cver);
	printf("tessera arch %s%s\n", dver, (type & CL_DEVICE_TYPE_GPU) ? " gpu" : " not-gpu");
	printf("tessera max_threads %zu\n", wg);
	printf("tessera shared_bytes %llu\n", (unsigned long long)local);
	printf("tessera processors %u\n", units);
}

static void build(const char *src, size_t len) {
	static char err[64 << 10];
	if (tsr_cl_build(src, len, &program, err, sizeof err) != 0)
		die(EXIT_BUILD, "%s", err);
}

static void api_compile(const char *src, size_t len, const char *out) {
	build(src, len);
	write_file(out, src, len);
}

static void api_load(const char *prog, size_t len, launch_t *ls, int nl) {
	build(prog, len);
	kernels = calloc((size_t)nl, sizeof *kernels);
	if (!kernels)
		die(EXIT_SETUP, "out of memory");
	for (int l = 0; l < nl; l++) {
		cl_int rc;
		kernels[l] = tsr_cl.CreateKernel(program, ls[l].name, &rc);
		if (rc != CL_SUCCESS)
			die(EXIT_RUN, "no kernel %s: OpenCL error %d", ls[l].name, (int)rc);
	}
}

/* api_release frees a job's buffers, kernels and program, for the next
 * job of a serving runner. */
static void api_release(void **bufs, int nbufs, int nl) {
	for (int b = 0; b < nbufs; b++)
		check(tsr_cl.ReleaseMemObject((cl_mem)bufs[b]), "clReleaseMemObject");
	for (int l = 0; l < nl; l++)
		check(tsr_cl.ReleaseKernel(kernels[l]), "clReleaseKernel");
	check(tsr_cl.ReleaseProgram(program), "clReleaseProgram");
	free(kernels);
	kernels = NULL;
}

static void *api_alloc(size_t bytes) {
	cl_int rc;
	cl_mem m = tsr_cl.CreateBuffer(tsr_cl_context, CL_MEM_READ_WRITE, bytes, NULL, &rc);
	check(rc, "clCreateBuffer");
	return m;
}

static void api_upload(void *d, const float *host, size_t bytes) {
	if (bytes)
		check(tsr_cl.EnqueueWriteBuffer(tsr_cl_queue, (cl_mem)d, 1, 0, bytes, host, 0, NULL, NULL), "clEnqueueWriteBuffer");
}

static void api_download(float *host, void *d, size_t bytes) {
	if (bytes)
		check(tsr_cl.EnqueueReadBuffer(tsr_cl_queue, (cl_mem)d, 1, 0, bytes, host, 0, NULL, NULL), "clEnqueueReadBuffer");
}

static void api_fill(void *d, unsigned char byte, size_t bytes) {
	if (bytes >= 4)
		check(tsr_cl.EnqueueFillBuffer(tsr_cl_queue, (cl_mem)d, &byte, 1, 0, bytes / 4 * 4, 0, NULL, NULL), "clEnqueueFillBuffer");
	check(tsr_cl.Finish(tsr_cl_queue), "clFinish");
}

/* api_time enqueues number calls and returns the device time from the start
 * of the first launch to the end of the last. */
static double api_time(launch_t *ls, int nl, void **bufs, long long number) {
	cl_event first = NULL, last = NULL;
	for (long long n = 0; n < number; n++) {
		for (int l = 0; l < nl; l++) {
			for (int a = 0; a < ls[l].nargs; a++)
				check(tsr_cl.SetKernelArg(kernels[l], (cl_uint)a, sizeof(cl_mem), &bufs[ls[l].args[a]]), "clSetKernelArg");
			size_t local[3], global[3];
			for (int d = 0; d < 3; d++) {
				local[d] = ls[l].block[d];
				global[d] = (size_t)ls[l].grid[d] * ls[l].block[d];
			}
			int edge_first = n == 0 && l == 0, edge_last = n == number - 1 && l == nl - 1;
			cl_event ev = NULL;
			cl_int rc = tsr_cl.EnqueueNDRangeKernel(tsr_cl_queue, kernels[l], 3, NULL, global, local, 0, NULL, (edge_first || edge_last) ? &ev : NULL);
			if (rc != CL_SUCCESS)
				die(EXIT_RUN, "launch of %s failed: OpenCL error %d", ls[l].name, (int)rc);
			if (edge_first)
				first = ev;
			if (edge_last) {
				if (last && last != first)
					tsr_cl.ReleaseEvent(last);
				last = ev;
			}
		}
	}
	check(tsr_cl.Finish(tsr_cl_queue), "clFinish");
	cl_ulong start = 0, end = 0;
	check(tsr_cl.GetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL), "clGetEventProfilingInfo");
	check(tsr_cl.GetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL), "clGetEventProfilingInfo");
	tsr_cl.ReleaseEvent(first);
	if (last != first)
		tsr_cl.ReleaseEvent(last);
	return end > start ? (double)(end - start) * 1e-9 : 0;
}

static void api_flush(void) {
	if (!flush_buf) {
		cl_ulong cache = 0;
		tsr_cl.GetDeviceInfo(tsr_cl_device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL);
		flush_bytes = (size_t)(cache ? 2 * cache : 64u << 20);
		flush_buf = api_alloc(flush_bytes);
	}
	api_fill(flush_buf, 0, flush_bytes);
}
