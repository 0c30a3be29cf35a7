/* covap_overlap: how much of COVAP's communication hides behind the backward pass.
 * A synthetic backward pass of K buckets, each preceded by a known compute time (a sleep, so
 * the "computation" does not compete with the progress threads for the CPU), hands every
 * bucket to COVAP (interval 1: every bucket is averaged every step) as soon as it is "ready".
 * Three phases, each W warm-up steps then S timed ones, every rank in step:
 *   comm     all buckets handed over at once, then finish_step      -> T_comm
 *   compute  the sleeps alone                                        -> T_comp
 *   overlap  sleep, bucket_ready, sleep, bucket_ready, ..., finish   -> T_over
 * Each T is the mean step time of the slowest rank. The compute per bucket is T_comm / K unless
 * given, so computation and communication are about equal and overlap matters most. Perfect
 * pipelining gives T_over = max(T_comp + T_comm / K, T_comm + T_comp / K) (one bucket of the
 * smaller side is exposed; an estimate from the measured phases, which a run may beat, since
 * buckets handed over one at a time need not take as long as all at once); no overlap gives
 * T_comp + T_comm.
 *
 *   tsrun -np N example-covap-overlap [--buckets K] [--floats F] [--compute-ms C] [--steps S]
 *                                     [--warmup W] [--max-ratio R]
 *
 * Prints one line per phase and a summary (rank 0). Exit status 1 when --max-ratio R is given
 * and T_over / (T_comp + T_comm) > R; 2 for bad options. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera/tessera.h"

#define CHECK(call)                                                    \
  do {                                                                 \
    tsr_status_t st_ = (call);                                         \
    if (st_ != TSR_OK) {                                               \
      fprintf(stderr, "%s failed: %s\n", #call, tsr_last_error());     \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_for(double seconds) {
  if (seconds <= 0) return;
  struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&t, &t) != 0) {
  }
}

typedef enum { kComm, kCompute, kOverlap } phase_t;

typedef struct {
  tsr_comm_t comm;
  tsr_covap_t covap;
  float** grads;
  size_t buckets;
  double compute_per_bucket;
} bench_t;

/* One step of `phase`; returns its wall time on this rank. */
static double step(bench_t* b, phase_t phase) {
  double t0 = now();
  if (phase != kCompute) CHECK(tsr_covap_begin_step(b->covap));
  /* Buckets are declared in the order backprop produces them: bucket 0 (the last layer's) first. */
  for (size_t k = 0; k < b->buckets; ++k) {
    if (phase != kComm) sleep_for(b->compute_per_bucket);
    if (phase != kCompute) CHECK(tsr_covap_bucket_ready(b->covap, k, b->grads[k]));
  }
  if (phase != kCompute) CHECK(tsr_covap_finish_step(b->covap));
  return now() - t0;
}

/* Mean step time over `steps` after `warmup`, the largest over the ranks. */
static double run_phase(bench_t* b, phase_t phase, int warmup, int steps) {
  CHECK(tsr_barrier(b->comm, NULL));
  for (int i = 0; i < warmup; ++i) step(b, phase);
  double sum = 0, slowest = 0;
  for (int i = 0; i < steps; ++i) sum += step(b, phase);
  double mean = sum / steps;
  CHECK(tsr_allreduce(b->comm, &mean, &slowest, 1, TSR_FLOAT64, TSR_MAX, NULL));
  return slowest;
}

static int parse_int(const char* s, int lo, int hi, const char* name) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) {
    fprintf(stderr, "covap_overlap: %s=%s is not an integer in %d..%d\n", name, s, lo, hi);
    exit(2);
  }
  return (int)v;
}

static double parse_double(const char* s, double lo, const char* name) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (!*s || *end || !(v >= lo)) {
    fprintf(stderr, "covap_overlap: %s=%s is not a number >= %g\n", name, s, lo);
    exit(2);
  }
  return v;
}

int main(int argc, char** argv) {
  int buckets = 8, floats = 65536, steps = 5, warmup = 1;
  double compute_ms = -1, max_ratio = -1;
  for (int i = 1; i < argc; i += 2) { /* option, value */
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strncmp(a, "--", 2) != 0) {
      fprintf(stderr, "covap_overlap: unexpected argument \"%s\" (options only: see the header of "
                      "covap_overlap.c)\n", a);
      return 2;
    }
    if (!v) {
      fprintf(stderr, "covap_overlap: %s needs a value (see the header of covap_overlap.c)\n", a);
      return 2;
    }
    if (!strcmp(a, "--buckets")) buckets = parse_int(v, 1, 1024, a);
    else if (!strcmp(a, "--floats")) floats = parse_int(v, 1, 1 << 28, a);
    else if (!strcmp(a, "--steps")) steps = parse_int(v, 1, 100000, a);
    else if (!strcmp(a, "--warmup")) warmup = parse_int(v, 0, 100000, a);
    else if (!strcmp(a, "--compute-ms")) compute_ms = parse_double(v, 0, a);
    else if (!strcmp(a, "--max-ratio")) max_ratio = parse_double(v, 0, a);
    else {
      fprintf(stderr, "covap_overlap: unknown option %s (--buckets, --floats, --compute-ms, "
                      "--steps, --warmup, --max-ratio)\n", a);
      return 2;
    }
  }
  bench_t b = {0};
  CHECK(tsr_comm_init(&b.comm));
  int rank, size;
  CHECK(tsr_comm_rank(b.comm, &rank));
  CHECK(tsr_comm_size(b.comm, &size));
  b.buckets = (size_t)buckets;
  size_t* counts = malloc(sizeof(size_t) * b.buckets);
  b.grads = malloc(sizeof(float*) * b.buckets);
  for (size_t k = 0; k < b.buckets; ++k) {
    counts[k] = (size_t)floats;
    b.grads[k] = malloc(sizeof(float) * (size_t)floats);
    for (int j = 0; j < floats; ++j) b.grads[k][j] = (float)(rank + 1);
  }
  tsr_param_t p[] = {{"interval", "1"}};
  CHECK(tsr_covap_create(b.comm, p, 1, counts, b.buckets, &b.covap));

  uint64_t sent0 = 0, sent1 = 0;
  CHECK(tsr_comm_bytes_sent(b.comm, &sent0));
  double t_comm = run_phase(&b, kComm, warmup, steps);
  CHECK(tsr_comm_bytes_sent(b.comm, &sent1));
  double per_step_bytes = (double)(sent1 - sent0) / (warmup + steps);
  /* The same compute time on every rank: derived from the agreed (slowest) T_comm. */
  b.compute_per_bucket = compute_ms >= 0 ? compute_ms / 1e3 : t_comm / buckets;
  double t_comp = run_phase(&b, kCompute, warmup, steps);
  double t_over = run_phase(&b, kOverlap, warmup, steps);

  double sum = t_comp + t_comm, most = t_comp > t_comm ? t_comp : t_comm;
  /* Perfect pipelining exposes one bucket of the smaller side. */
  double pipelined = t_comp + t_comm / buckets, comm_bound = t_comm + t_comp / buckets;
  if (comm_bound > pipelined) pipelined = comm_bound;
  double ratio = t_over / sum;
  if (rank == 0) {
    printf("covap_overlap: %d ranks, %d buckets x %d floats (%.2f MB per step), interval 1, "
           "%.0f bytes sent per step (rank 0)\n",
           size, buckets, floats, 4.0 * buckets * floats / 1e6, per_step_bytes);
    printf("  comm     %9.2f ms/step\n", t_comm * 1e3);
    printf("  compute  %9.2f ms/step (%.2f ms x %d buckets)\n", t_comp * 1e3,
           b.compute_per_bucket * 1e3, buckets);
    printf("  overlap  %9.2f ms/step\n", t_over * 1e3);
    printf("  overlap / (compute + comm) = %.3f, overlap / max(compute, comm) = %.3f, "
           "perfect pipelining %.2f ms (%.3f of the sum)\n",
           ratio, t_over / most, pipelined * 1e3, pipelined / sum);
  }
  int ok = max_ratio < 0 || ratio <= max_ratio;
  if (rank == 0 && max_ratio >= 0)
    printf("%s: overlap / (compute + comm) = %.3f, limit %.3f\n", ok ? "PASSED" : "FAILED", ratio,
           max_ratio);
  CHECK(tsr_covap_destroy(b.covap));
  for (size_t k = 0; k < b.buckets; ++k) free(b.grads[k]);
  free(b.grads);
  free(counts);
  CHECK(tsr_comm_destroy(b.comm));
  return ok ? 0 : 1;
}
