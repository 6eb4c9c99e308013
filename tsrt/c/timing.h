/* timing.h: the timing protocol of the measurement harnesses (harness.c on
 * the CPU, harness_gpu.c on a device), after the warm-up call:
 *
 *   NUMBER grows until one repetition of NUMBER calls lasts MIN_S (aiming
 *   20% past it from the last estimate; at least one more call, at most
 *   100× more, so one noisy fast call cannot explode it); that repetition is
 *   the first of REPEAT. No further repetition starts once the timed calls
 *   have run BUDGET_S (when not 0). A SLOW candidate (its warm-up past the
 *   cutoff) is timed by one call; with FLUSH, every repetition is one call
 *   after flush().
 *
 * It prints "tessera number N", one "tessera cost SECONDS_PER_CALL" per
 * repetition and "tessera done" (runtime.ParseReport reads them).
 */
#ifndef TESSERA_TIMING_H
#define TESSERA_TIMING_H

#include <stdio.h>
#include <stdlib.h>

typedef struct timing {
  long long number, repeat; /* as given: calls per repetition, repetitions */
  double min_s, budget_s;   /* seconds; 0: no goal, no budget */
  int slow, flush;
} timing;

/* time_and_report runs the protocol: rep(ctx, n) times n calls and returns
   their seconds; flush(ctx), when t.flush, evicts what a repetition must
   not find in the caches. It returns 0, or -1 out of memory. */
static int time_and_report(timing t, double (*rep)(void *, long long), void (*flush)(void *), void *ctx) {
  long long number = t.number < 1 ? 1 : t.number, repeat = t.repeat < 1 ? 1 : t.repeat;
  if (t.slow || t.flush)
    number = 1;
  if (t.slow)
    repeat = 1; /* this one timed call is all */
  double *costs = calloc((size_t)repeat, sizeof *costs);
  if (!costs)
    return -1;
  if (t.flush)
    flush(ctx);
  double s = rep(ctx, number);
  while (s < t.min_s && !t.slow && !t.flush) {
    long long next = number * 100;
    if (s > 0 && (double)number * t.min_s * 1.2 / s < (double)next)
      next = (long long)((double)number * t.min_s * 1.2 / s);
    if (next <= number)
      next = number + 1;
    number = next;
    s = rep(ctx, number);
  }
  costs[0] = s / (double)number;
  double spent = s;
  long long done = 1;
  for (; done < repeat && !(t.budget_s > 0 && spent >= t.budget_s); done++) {
    if (t.flush)
      flush(ctx);
    double sr = rep(ctx, number);
    costs[done] = sr / (double)number;
    spent += sr;
  }
  printf("\ntessera number %lld\n", number);
  for (long long r = 0; r < done; r++)
    printf("tessera cost %.9e\n", costs[r]);
  printf("tessera done\n");
  fflush(stdout);
  free(costs);
  return 0;
}

#endif
