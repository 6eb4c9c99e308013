/* u8s8s32.c: the oneDNN contender of bench/gemm -dtype int8, a kernel
 * with the benchmark ABI (int tessera_kernel(float *const *args)) that
 * measure's harness loads and times like Tessera's kernels.
 *
 * bench/gemm prepends GEMM_N, the matrix size. args[0] is A (N×N uint8,
 * row-major), args[1] B (N×N int8), args[2] C (N×N int32): C = A·B with
 * zero offsets, computed by oneDNN's dnnl_gemm_u8s8s32 on as many threads
 * as OpenMP is given. Like BLAS, it packs its operands on every call.
 */
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>

int tessera_kernel(float *const *args) {
	const uint8_t *a = (const uint8_t *)args[0];
	const int8_t *b = (const int8_t *)args[1];
	int32_t *c = (int32_t *)args[2];
	const int32_t co = 0;
	return dnnl_gemm_u8s8s32('N', 'N', 'F', GEMM_N, GEMM_N, GEMM_N, 1.0f, a, GEMM_N, 0, b, GEMM_N, 0, 0.0f, c, GEMM_N, &co) == dnnl_success ? 0 : 1;
}
