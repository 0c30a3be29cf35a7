/* train_selsync: the linear model of train_linear.c, trained with SelSync ("Accelerating
 * Distributed ML Training via Selective Synchronization") through the C API: every rank takes
 * local SGD steps on its own shard (SelDP would rotate shards; each rank here has its own
 * synthetic shard), and SelSync averages the parameters only on steps where some rank's
 * gradient norm changed by delta or more.
 *
 *   tsrun -np 4 build/bin/example-train-selsync [steps] [delta]
 *
 * Exit status 0 when the loss fell 100-fold, some steps were local and the ranks end with
 * identical parameters (the last step is forced to synchronize with a huge gradient change). */
#include <math.h>

#include "linear_problem.h"

int main(int argc, char** argv) {
  int steps = steps_argument(argc, argv, 2, 300, "tsrun -np N example-train-selsync [steps] [delta]");
  const char* delta = argc > 2 ? argv[2] : "0.05";
  tsr_comm_t comm;
  CHECK(tsr_comm_init(&comm));
  int rank, size;
  CHECK(tsr_comm_rank(comm, &rank));
  CHECK(tsr_comm_size(comm, &size));

  static float x[kSamples][kDim], y[kSamples];
  float w[kDim];
  make_shard(rank, x, y);
  for (int d = 0; d < kDim; ++d) w[d] = 0.5f;

  tsr_selsync_t sel;
  size_t counts[] = {kDim};
  tsr_param_t params[] = {{"delta", delta}, {"ewma_window", "5"}, {"aggregate", "params"}};
  CHECK(tsr_selsync_create(comm, params, 3, counts, 1, &sel));
  double first_loss = -1, loss = 0;
  for (int step = 0; step < steps; ++step) {
    float grad[kDim];
    double local_loss = local_gradient(w, x, y, grad), norm2 = 0;
    for (int d = 0; d < kDim; ++d) {
      norm2 += (double)grad[d] * grad[d];
      w[d] -= 0.1f * grad[d];  /* the local update */
    }
    if (first_loss < 0) first_loss = local_loss;
    loss = local_loss;
    float* buckets[] = {w};
    int synced = 0;
    /* The last step forces a synchronization (a jump in the reported norm). */
    CHECK(tsr_selsync_step(sel, step == steps - 1 ? norm2 * 1e6 + 1 : norm2, buckets, &synced));
    if (rank == 0 && step % 100 == 0) printf("step %4d  loss %.6f  %s\n", step, loss, synced ? "sync" : "local");
  }
  uint64_t synced_steps = 0, local_steps = 0, saved = 0;
  CHECK(tsr_selsync_stats(sel, &synced_steps, &local_steps, &saved));
  double loss_sum = 0;
  CHECK(tsr_allreduce(comm, &loss, &loss_sum, 1, TSR_FLOAT64, TSR_SUM, NULL));
  float* all = malloc(sizeof(float) * kDim * (size_t)size);
  CHECK(tsr_allgather(comm, w, all, kDim, TSR_FLOAT32, NULL));
  int agree = same_on_every_rank(all, w, size);
  free(all);
  double mean_loss = loss_sum / size;
  int ok = agree && mean_loss < first_loss / 100 && local_steps > 0;
  if (rank == 0)
    printf("%s: %d ranks, delta %s, loss %.6f -> %.6f, %llu synchronized / %llu local steps "
           "(LSSR %.2f), %llu bytes saved on rank 0, parameters %s\n",
           ok ? "TRAINED" : "FAILED", size, delta, first_loss, mean_loss,
           (unsigned long long)synced_steps, (unsigned long long)local_steps,
           (double)local_steps / (double)(synced_steps + local_steps), (unsigned long long)saved,
           agree ? "identical on every rank" : "DIFFER between ranks");
  CHECK(tsr_selsync_destroy(sel));
  CHECK(tsr_comm_destroy(comm));
  return ok ? 0 : 1;
}
