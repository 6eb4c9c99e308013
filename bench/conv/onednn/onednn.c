/* onednn.c: the oneDNN contender of bench/conv, a kernel with the benchmark
 * ABI (int tessera_kernel(float *const *args)) that measure's harness loads
 * and times like Tessera's kernels.
 *
 * bench/conv prepends the problem as macros CONV_*: N IC IH IW (input), OC
 * KH KW (weights, OIHW), PAD_T PAD_L PAD_B PAD_R, STRIDE_H STRIDE_W, FUSED
 * (1: bias, then ReLU as a post-op), NHWC (1: input and output in args are
 * channels-last, else NCHW), and ARG_X ARG_W ARG_B ARG_Y, the positions of
 * input, weights, bias and output in args.
 *
 * The convolution is created with format_tag::any for input, weights and
 * output and algorithm auto, so oneDNN picks its best layouts and
 * implementation for this machine and OMP_NUM_THREADS. The first call
 * creates the primitive, reorders the weights (constants, packed once as a
 * runtime does at load) and the input into the chosen layouts, runs the
 * convolution and reorders its output to the layout of args (NCHW or NHWC)
 * into args[CONV_ARG_Y], which is what the harness checks. Every later call runs the convolution alone, in
 * the chosen layouts: what is timed is the kernel with its activations
 * already in its best layout, as in a chain of such convolutions.
 *
 * When the environment names a file in TESSERA_ONEDNN_INFO, the first call
 * writes there the implementation and the layouts oneDNN chose.
 */
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>

#if CONV_NHWC
#define USER_ACT dnnl_nhwc
#else
#define USER_ACT dnnl_nchw
#endif

#define CONV_OH ((CONV_IH + CONV_PAD_T + CONV_PAD_B - CONV_KH) / CONV_STRIDE_H + 1)
#define CONV_OW ((CONV_IW + CONV_PAD_L + CONV_PAD_R - CONV_KW) / CONV_STRIDE_W + 1)

#define CHECK(call)                                                                     \
	do {                                                                            \
		dnnl_status_t s_ = (call);                                              \
		if (s_ != dnnl_success) {                                               \
			fprintf(stderr, "onednn: %s: %s\n", #call, dnnl_status2str(s_)); \
			return 1;                                                       \
		}                                                                       \
	} while (0)

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static dnnl_primitive_t conv;
static dnnl_memory_t src, wei, bia, dst;
static int calls;

/* reorder copies from into to, whatever their layouts. */
static int reorder(dnnl_memory_t from, dnnl_memory_t to) {
	const dnnl_memory_desc_t *fmd, *tmd;
	CHECK(dnnl_memory_get_memory_desc(from, &fmd));
	CHECK(dnnl_memory_get_memory_desc(to, &tmd));
	dnnl_primitive_desc_t pd;
	CHECK(dnnl_reorder_primitive_desc_create(&pd, fmd, engine, tmd, engine, NULL));
	dnnl_primitive_t r;
	dnnl_status_t st = dnnl_primitive_create(&r, pd);
	dnnl_primitive_desc_destroy(pd);
	CHECK(st);
	dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
	CHECK(dnnl_primitive_execute(r, stream, 2, args));
	CHECK(dnnl_stream_wait(stream));
	dnnl_primitive_destroy(r);
	return 0;
}

/* layout writes the layout of md in oneDNN's notation: the dimensions a, b,
 * c, d from the outermost, a blocked one in capitals, then the inner blocks
 * ("aBcd16b" is nChw16c). */
static void layout(const dnnl_memory_desc_t *md, char *s, size_t n) {
	if (md->format_kind != dnnl_blocked) {
		snprintf(s, n, "format kind %d", (int)md->format_kind);
		return;
	}
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
	int nd = md->ndims, order[DNNL_MAX_NDIMS], blocked[DNNL_MAX_NDIMS] = {0};
	for (int i = 0; i < b->inner_nblks; i++)
		blocked[b->inner_idxs[i]] = 1;
	for (int i = 0; i < nd; i++) {
		int j = i;
		for (; j > 0 && b->strides[order[j - 1]] < b->strides[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	size_t k = 0;
	for (int i = 0; i < nd && k + 1 < n; i++)
		s[k++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
	s[k] = 0;
	for (int i = 0; i < b->inner_nblks && k < n; i++)
		k += (size_t)snprintf(s + k, n - k, "%lld%c", (long long)b->inner_blks[i], 'a' + (int)b->inner_idxs[i]);
}

/* info writes oneDNN's choices to $TESSERA_ONEDNN_INFO, if set. */
static void info(const_dnnl_primitive_desc_t pd) {
	const char *path = getenv("TESSERA_ONEDNN_INFO");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	const char *impl = "?";
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	fprintf(f, "oneDNN %d.%d.%d impl %s", dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, impl);
	const dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
	const char *name[3] = {"input", "weights", "output"};
	for (int i = 0; i < 3; i++) {
		char s[256];
		layout(dnnl_primitive_desc_query_md(pd, q[i], 0), s, sizeof s);
		fprintf(f, ", %s %s", name[i], s);
	}
	fputc('\n', f);
	fclose(f);
}

/* setup creates the convolution in oneDNN's chosen layouts and moves the
 * input and the weights into them. */
static int setup(float *const *args) {
	CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
	CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
	dnnl_dims_t sdims = {CONV_N, CONV_IC, CONV_IH, CONV_IW}, wdims = {CONV_OC, CONV_IC, CONV_KH, CONV_KW}, bdims = {CONV_OC}, ddims = {CONV_N, CONV_OC, CONV_OH, CONV_OW};
	dnnl_dims_t strides = {CONV_STRIDE_H, CONV_STRIDE_W}, pad_l = {CONV_PAD_T, CONV_PAD_L}, pad_r = {CONV_PAD_B, CONV_PAD_R};
	dnnl_memory_desc_t s_any, w_any, d_any, b_md, s_user, w_user;
	CHECK(dnnl_memory_desc_init_by_tag(&s_any, 4, sdims, dnnl_f32, dnnl_format_tag_any));
	CHECK(dnnl_memory_desc_init_by_tag(&w_any, 4, wdims, dnnl_f32, dnnl_format_tag_any));
	CHECK(dnnl_memory_desc_init_by_tag(&d_any, 4, ddims, dnnl_f32, dnnl_format_tag_any));
	CHECK(dnnl_memory_desc_init_by_tag(&b_md, 1, bdims, dnnl_f32, dnnl_x));
	CHECK(dnnl_memory_desc_init_by_tag(&s_user, 4, sdims, dnnl_f32, USER_ACT));
	CHECK(dnnl_memory_desc_init_by_tag(&w_user, 4, wdims, dnnl_f32, dnnl_oihw));

	dnnl_convolution_desc_t cd;
	CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_auto, &s_any, &w_any,
						 CONV_FUSED ? &b_md : NULL, &d_any, strides, pad_l, pad_r));
	dnnl_primitive_attr_t attr;
	CHECK(dnnl_primitive_attr_create(&attr));
	if (CONV_FUSED) {
		dnnl_post_ops_t po;
		CHECK(dnnl_post_ops_create(&po));
		CHECK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
		CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
		dnnl_post_ops_destroy(po);
	}
	dnnl_primitive_desc_t pd;
	dnnl_status_t st = dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL);
	dnnl_primitive_attr_destroy(attr);
	CHECK(st);
	info(pd);

	CHECK(dnnl_memory_create(&src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), engine, DNNL_MEMORY_ALLOCATE));
	CHECK(dnnl_memory_create(&wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), engine, DNNL_MEMORY_ALLOCATE));
	CHECK(dnnl_memory_create(&dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), engine, DNNL_MEMORY_ALLOCATE));
	if (CONV_FUSED)
		CHECK(dnnl_memory_create(&bia, &b_md, engine, args[CONV_ARG_B]));
	st = dnnl_primitive_create(&conv, pd);
	dnnl_primitive_desc_destroy(pd);
	CHECK(st);

	dnnl_memory_t user;
	CHECK(dnnl_memory_create(&user, &s_user, engine, args[CONV_ARG_X]));
	int rc = reorder(user, src);
	dnnl_memory_destroy(user);
	if (rc)
		return rc;
	CHECK(dnnl_memory_create(&user, &w_user, engine, args[CONV_ARG_W]));
	rc = reorder(user, wei);
	dnnl_memory_destroy(user);
	return rc;
}

/* output reorders the convolution's output into y, in the layout of args. */
static int output(float *y) {
	dnnl_dims_t ddims = {CONV_N, CONV_OC, CONV_OH, CONV_OW};
	dnnl_memory_desc_t d_user;
	CHECK(dnnl_memory_desc_init_by_tag(&d_user, 4, ddims, dnnl_f32, USER_ACT));
	dnnl_memory_t user;
	CHECK(dnnl_memory_create(&user, &d_user, engine, y));
	int rc = reorder(dst, user);
	dnnl_memory_destroy(user);
	return rc;
}

int tessera_kernel(float *const *args) {
	if (calls == 0 && setup(args) != 0)
		return 1;
	dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}, {DNNL_ARG_BIAS, bia}};
	CHECK(dnnl_primitive_execute(conv, stream, CONV_FUSED ? 4 : 3, a));
	CHECK(dnnl_stream_wait(stream));
	if (calls++ == 0)
		return output(args[CONV_ARG_Y]);
	return 0;
}
