/* linear_problem.h: the scaffolding train_linear.c, train_marsit.c and train_selsync.c share
 * (the error check, the synthetic regression shard, the local gradient and the comparison of
 * the ranks' weights), so each example is left with the Tessera calls it demonstrates.
 * Header-only (static functions) so every example still builds from its one .c file. */
#ifndef TSR_EXAMPLES_LINEAR_PROBLEM_H_
#define TSR_EXAMPLES_LINEAR_PROBLEM_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"

enum { kDim = 32, kSamples = 256 };

/* Any failed Tessera call ends the example with the library's message. */
#define CHECK(call)                                                \
  do {                                                             \
    tsr_status_t st_ = (call);                                     \
    if (st_ != TSR_OK) {                                           \
      fprintf(stderr, "%s failed: %s\n", #call, tsr_last_error()); \
      exit(1);                                                     \
    }                                                              \
  } while (0)

/* The step count in argv[1] (default `dflt`) of an example that takes at most `max_args`
 * arguments: a count that is not a whole number in 1..1000000, or a stray argument, ends it
 * with its usage and exit status 2 before any rank trains (as tsrun reports a usage error). */
static int steps_argument(int argc, char** argv, int max_args, int dflt, const char* usage) {
  if (argc - 1 > max_args) {
    fprintf(stderr, "%s: %d arguments, at most %d (\"%s\" is one too many)\nusage: %s\n", argv[0], argc - 1, max_args,
            argv[max_args + 1], usage);
    exit(2);
  }
  if (argc < 2) return dflt;
  char* end = NULL;
  long steps = strtol(argv[1], &end, 10);
  if (end == argv[1] || *end || steps < 1 || steps > 1000000) {
    fprintf(stderr, "%s: steps=\"%s\" is not a whole number in 1..1000000\nusage: %s\n", argv[0], argv[1], usage);
    exit(2);
  }
  return (int)steps;
}

/* Small deterministic generator, so every run and rank is reproducible. */
static double uniform(unsigned long long* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

/* This rank's shard of y = w* . x + noise: w* is the same on every rank, the samples are not. */
static void make_shard(int rank, float x[kSamples][kDim], float y[kSamples]) {
  float w_true[kDim];
  unsigned long long seed = 12345;
  for (int d = 0; d < kDim; ++d) w_true[d] = (float)uniform(&seed);
  seed = 1000 + (unsigned long long)rank; /* each rank its own shard */
  for (int i = 0; i < kSamples; ++i) {
    double dot = 0;
    for (int d = 0; d < kDim; ++d) dot += w_true[d] * (x[i][d] = (float)uniform(&seed));
    y[i] = (float)(dot + 0.001 * uniform(&seed));
  }
}

/* The mean squared error of w on the shard: writes its gradient to grad, returns the loss. */
static double local_gradient(const float w[kDim], float x[kSamples][kDim], const float y[kSamples], float grad[kDim]) {
  memset(grad, 0, sizeof(float) * kDim);
  double loss = 0;
  for (int i = 0; i < kSamples; ++i) {
    double err = -y[i];
    for (int d = 0; d < kDim; ++d) err += w[d] * x[i][d];
    for (int d = 0; d < kDim; ++d) grad[d] += (float)(2.0 * err * x[i][d] / kSamples);
    loss += err * err / kSamples;
  }
  return loss;
}

/* 1 when every rank's weights in `all` (an allgather of w over `size` ranks) equal this one's. */
static int same_on_every_rank(const float* all, const float w[kDim], int size) {
  int agree = 1;
  for (int r = 0; r < size; ++r) agree &= memcmp(all + r * kDim, w, sizeof(float) * kDim) == 0;
  return agree;
}

#endif /* TSR_EXAMPLES_LINEAR_PROBLEM_H_ */
