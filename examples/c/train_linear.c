/* train_linear: data-parallel training of a linear model through Tessera's C API.
 *
 *   tsrun -np 4 build/bin/example-train-linear [steps]
 *
 * Each rank owns a shard of a synthetic regression problem (y = w* . x + noise). Every step it
 * computes its local gradient, averages it with the other ranks through a non-blocking
 * tsr_allreduce (computing the loss meanwhile), and takes an SGD step. The weights start from
 * rank 0's (tsr_broadcast) and stay identical on every rank, which the end checks with an
 * allgather. Exit status 0 only when the loss fell 100-fold and the ranks agree. */
#include <math.h>

#include "linear_problem.h"

int main(int argc, char** argv) {
  int steps = steps_argument(argc, argv, 1, 200, "tsrun -np N example-train-linear [steps]");
  tsr_comm_t comm;
  CHECK(tsr_comm_init(&comm));
  int rank, size;
  CHECK(tsr_comm_rank(comm, &rank));
  CHECK(tsr_comm_size(comm, &size));

  static float x[kSamples][kDim], y[kSamples];
  float w[kDim], grad[kDim], avg[kDim];
  make_shard(rank, x, y);
  for (int d = 0; d < kDim; ++d) w[d] = rank == 0 ? 0.5f : 99.0f; /* only rank 0's survive */
  CHECK(tsr_broadcast(comm, w, w, kDim, TSR_FLOAT32, 0, NULL));

  double first_loss = -1, loss = 0;
  for (int step = 0; step < steps; ++step) {
    double local_loss = local_gradient(w, x, y, grad);
    tsr_request_t req;
    CHECK(tsr_allreduce(comm, grad, avg, kDim, TSR_FLOAT32, TSR_AVG, &req));
    /* Overlap: the loss is averaged while the gradient is in flight. */
    double loss_sum = 0;
    CHECK(tsr_allreduce(comm, &local_loss, &loss_sum, 1, TSR_FLOAT64, TSR_SUM, NULL));
    loss = loss_sum / size;
    CHECK(tsr_wait(req));
    CHECK(tsr_request_free(req));
    for (int d = 0; d < kDim; ++d) w[d] -= 0.1f * avg[d];
    if (first_loss < 0) first_loss = loss;
    if (rank == 0 && (step % 50 == 0 || step == steps - 1))
      printf("step %4d  loss %.6f\n", step, loss);
  }

  /* Every rank must hold the same weights. */
  float* all = malloc(sizeof(float) * kDim * (size_t)size);
  CHECK(tsr_allgather(comm, w, all, kDim, TSR_FLOAT32, NULL));
  int agree = same_on_every_rank(all, w, size);
  free(all);
  int ok = agree && loss < first_loss / 100;
  if (rank == 0)
    printf("%s: %d ranks, loss %.6f -> %.6f, weights %s\n", ok ? "TRAINED" : "FAILED", size,
           first_loss, loss, agree ? "identical on every rank" : "DIFFER between ranks");
  CHECK(tsr_comm_destroy(comm));
  return ok ? 0 : 1;
}
