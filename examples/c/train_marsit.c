/* train_marsit: the linear model of train_linear.c trained with a compressed gradient: the
 * gradient is a tsr_tensor with algorithm=marsit (one bit per element on the wire, the sign
 * error kept as compensation and fed back next step) or algorithm=dense, for comparison.
 *
 *   tsrun -np 4 build/bin/example-train-marsit [steps] [marsit|dense] [ring|torus]
 *
 * The gradient goes out non-blocking (tsr_tensor_allreduce with a request) while the loss is
 * averaged. Exit status 0 only when the loss fell 100-fold, the residual is finite and the
 * weights are identical on every rank. */
#include <math.h>

#include "linear_problem.h"

int main(int argc, char** argv) {
  int steps = steps_argument(argc, argv, 3, 300, "tsrun -np N example-train-marsit [steps] [marsit|dense] [ring|torus]");
  const char* algorithm = argc > 2 ? argv[2] : "marsit";
  const char* topology = argc > 3 ? argv[3] : "ring";
  tsr_comm_t comm;
  CHECK(tsr_comm_init(&comm));
  int rank, size;
  CHECK(tsr_comm_rank(comm, &rank));
  CHECK(tsr_comm_size(comm, &size));

  static float x[kSamples][kDim], y[kSamples];
  float w[kDim], grad[kDim], residual[kDim];
  make_shard(rank, x, y);
  for (int d = 0; d < kDim; ++d) w[d] = rank == 0 ? 0.5f : 99.0f; /* only rank 0's survive */
  CHECK(tsr_broadcast(comm, w, w, kDim, TSR_FLOAT32, 0, NULL));

  tsr_tensor_t tensor;
  tsr_param_t marsit[] = {{"algorithm", algorithm}, {"topology", topology}};
  CHECK(tsr_tensor_create(comm, "w.grad", kDim, TSR_FLOAT32, marsit,
                          strcmp(algorithm, "dense") == 0 ? 1 : 2, &tensor));
  const char* served = "";
  CHECK(tsr_tensor_info(tensor, NULL, &served));

  double first_loss = -1, loss = 0;
  for (int step = 0; step < steps; ++step) {
    double local_loss = local_gradient(w, x, y, grad);
    tsr_request_t req;
    CHECK(tsr_tensor_allreduce(tensor, grad, &req));
    /* Overlap: the loss is averaged while the gradient is in flight. */
    double loss_sum = 0;
    CHECK(tsr_allreduce(comm, &local_loss, &loss_sum, 1, TSR_FLOAT64, TSR_SUM, NULL));
    loss = loss_sum / size;
    CHECK(tsr_wait(req));
    CHECK(tsr_request_free(req));
    /* A decaying rate: sign steps have a fixed size, so they settle only as it shrinks. */
    float lr = 0.1f / (1.0f + step / 50.0f);
    for (int d = 0; d < kDim; ++d) w[d] -= lr * grad[d];
    if (first_loss < 0) first_loss = loss;
    if (rank == 0 && (step % 50 == 0 || step == steps - 1))
      printf("step %4d  loss %.6f\n", step, loss);
  }

  /* Every rank must hold the same weights. */
  float* all = malloc(sizeof(float) * kDim * (size_t)size);
  CHECK(tsr_allgather(comm, w, all, kDim, TSR_FLOAT32, NULL));
  int agree = same_on_every_rank(all, w, size);
  free(all);
  CHECK(tsr_tensor_residual(tensor, residual));
  double residual_norm = 0;
  for (int d = 0; d < kDim; ++d) residual_norm += (double)residual[d] * residual[d];
  int ok = agree && loss < first_loss / 100 && isfinite(residual_norm);
  if (rank == 0)
    printf("%s: %s, %d ranks, loss %.6f -> %.6f, |residual| %.3g, weights %s\n",
           ok ? "TRAINED" : "FAILED", served, size, first_loss, loss, sqrt(residual_norm),
           agree ? "identical on every rank" : "DIFFER between ranks");
  CHECK(tsr_tensor_destroy(tensor));
  CHECK(tsr_comm_destroy(comm));
  return ok ? 0 : 1;
}
