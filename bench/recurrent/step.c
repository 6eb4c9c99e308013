/* What one kernel per recurrent layer could gain over a kernel per step on
 * this machine: a GRU-like recurrence h_t = f(x_t·W + h_{t-1}·R) over T
 * steps, batch 1, with R (H × GATES·H floats) read once a step, run five
 * ways (bench/recurrent/step.sh compiles and alternates them):
 *
 *   serial      one thread, a matrix-vector product then the gates per step
 *   per-step    a parallel region per step's product (how the executor runs
 *               a recurrent layer's step kernel when its schedule has a
 *               parallel loop), the gates on one thread
 *   team        one parallel region for the whole layer: each step's product
 *               a work-shared loop, the gates on thread 0, a barrier
 *   team-split  one region, each thread the product's columns and the gates
 *               of its own half of the hidden units (R's columns permuted so
 *               that a unit's gates are adjacent): one barrier a step
 *   split-1     team-split's loop on one thread (its product against serial's)
 *
 * The gates are cheap arithmetic (no exp), so that the product and the
 * synchronization dominate as they do in a tuned step. Every way computes
 * the same h; the program prints each one's best time per step over REPS
 * runs of T steps and the final h[0] (equal in all five). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef H
#define H 192
#endif
#ifndef GATES
#define GATES 3
#endif
#define G (GATES * H)
#define T 200
#define REPS 200
#define CB 64 /* columns per block of the product */
#define UB 32 /* hidden units per block of team-split */

static float R[H * G] __attribute__((aligned(64)));  /* [G/CB][H][CB] */
static float Rp[H * G] __attribute__((aligned(64))); /* [H/UB][H][GATES·UB] */
static float xw[T * G] __attribute__((aligned(64)));
static float hr[G] __attribute__((aligned(64)));
static float h[2][H] __attribute__((aligned(64)));

static void product_blocks(int b0, int b1, const float *hin) {
	for (int cb = b0; cb < b1; cb++) {
		float acc[CB] __attribute__((aligned(64))) = {0};
		for (int r = 0; r < H; r++) {
			float hv = hin[r];
			const float *w = &R[(cb * H + r) * CB];
#pragma omp simd
			for (int j = 0; j < CB; j++)
				acc[j] += hv * w[j];
		}
		memcpy(&hr[cb * CB], acc, sizeof acc);
	}
}

static float gate(int t, int i, const float *a, const float *hin) {
	float z = 0.5f * (xw[t * G + i] + a[0]);
	float c = 0.1f * (xw[t * G + (GATES - 1) * H + i] + a[GATES - 1]);
	for (int g = 1; g < GATES - 1; g++)
		c += 0.01f * (xw[t * G + g * H + i] + a[g]);
	return c + z * (hin[i] - c);
}

static void gates(int t, const float *hin, float *hout) {
	for (int i = 0; i < H; i++) {
		float a[GATES];
		for (int g = 0; g < GATES; g++)
			a[g] = hr[g * H + i];
		hout[i] = gate(t, i, a, hin);
	}
}

static void product_parallel(const float *hin) {
#pragma omp parallel for
	for (int cb = 0; cb < G / CB; cb++)
		product_blocks(cb, cb + 1, hin);
}

static void product_shared(const float *hin) {
#pragma omp for
	for (int cb = 0; cb < G / CB; cb++)
		product_blocks(cb, cb + 1, hin);
}

static void split_units(int t, int u0, int u1, const float *hin, float *hout) {
	for (int ub = u0; ub < u1; ub++) {
		float acc[GATES * UB] __attribute__((aligned(64))) = {0};
		for (int r = 0; r < H; r++) {
			float hv = hin[r];
			const float *w = &Rp[(ub * H + r) * GATES * UB];
#pragma omp simd
			for (int j = 0; j < GATES * UB; j++)
				acc[j] += hv * w[j];
		}
		for (int j = 0; j < UB; j++) {
			float a[GATES];
			for (int g = 0; g < GATES; g++)
				a[g] = acc[g * UB + j];
			hout[ub * UB + j] = gate(t, ub * UB + j, a, hin);
		}
	}
}

static void run(int mode) {
	switch (mode) {
	case 0:
		for (int t = 0; t < T; t++) {
			product_blocks(0, G / CB, h[t & 1]);
			gates(t, h[t & 1], h[(t + 1) & 1]);
		}
		break;
	case 1:
		for (int t = 0; t < T; t++) {
			product_parallel(h[t & 1]);
			gates(t, h[t & 1], h[(t + 1) & 1]);
		}
		break;
	case 2:
#pragma omp parallel
		for (int t = 0; t < T; t++) {
			product_shared(h[t & 1]);
#pragma omp masked
			gates(t, h[t & 1], h[(t + 1) & 1]);
#pragma omp barrier
		}
		break;
	case 3:
#pragma omp parallel
	{
		int id = omp_get_thread_num(), n = omp_get_num_threads(), nb = H / UB;
		for (int t = 0; t < T; t++) {
			split_units(t, id * nb / n, (id + 1) * nb / n, h[t & 1], h[(t + 1) & 1]);
#pragma omp barrier
		}
	}
		break;
	case 4:
		for (int t = 0; t < T; t++)
			split_units(t, 0, H / UB, h[t & 1], h[(t + 1) & 1]);
		break;
	}
}

int main(int argc, char **argv) {
	static const char *names[] = {"serial", "per-step", "team", "team-split", "split-1"};
	if (argc != 2 || atoi(argv[1]) < 0 || atoi(argv[1]) > 4) {
		fprintf(stderr, "usage: step MODE (0 serial, 1 per-step, 2 team, 3 team-split, 4 split-1)\n");
		return 2;
	}
	int mode = atoi(argv[1]);
	srand(1);
	for (int c = 0; c < G; c++)
		for (int r = 0; r < H; r++) {
			float v = (rand() % 101 - 50) * 1e-3f;
			R[((c / CB) * H + r) * CB + c % CB] = v;
			int g = c / H, i = c % H;
			Rp[((i / UB) * H + r) * GATES * UB + g * UB + i % UB] = v;
		}
	for (int i = 0; i < T * G; i++)
		xw[i] = (rand() % 101 - 50) * 1e-2f;
	double best = 1e30;
	for (int rep = 0; rep < REPS; rep++) {
		memset(h, 0, sizeof h);
		double t0 = omp_get_wtime();
		run(mode);
		double dt = omp_get_wtime() - t0;
		if (dt < best)
			best = dt;
	}
	printf("%s %.3f us/step h0 %.6g\n", names[mode], best * 1e6 / T, h[T & 1][0]);
	return 0;
}
