/* Open MPI's MPI_Reduce_scatter_block, MPI_Allgather and MPI_Bcast, with the method of
 * ../shared/tools' allreduce benchmark: per iteration a barrier, one call (f32; sum for
 * reduce_scatter; root 0 for broadcast), the slowest rank's time; the median over iterations;
 * every result checked exactly. Sizes as nccl-tests and tsr-bench count them: the whole
 * buffer (reduce_scatter's input, allgather's output, the broadcast buffer). Prints
 * "op size(B) time(us) busbw(GB/s) ok" rows (busbw factors: (N-1)/N, (N-1)/N, 1).
 * Built and run by shm_collectives.sh.
 *   mpi_collectives reduce_scatter|allgather|broadcast [sizes in bytes, e.g. 4194304,16777216] [iters] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* One call of `op` on `count` elements per rank; returns 1 when the result is wrong. */
static int run_once(const char* op, int rank, int n, size_t count, float* in, float* out, double* dt) {
  int wrong = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (strcmp(op, "reduce_scatter") == 0) {
    MPI_Reduce_scatter_block(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    *dt = MPI_Wtime() - t0;
    for (size_t j = 0; j < count && !wrong; j++)  /* sum over r of (r + 1 + (rank*count + j) % 7) */
      wrong = out[j] != (float)(n * (n + 1) / 2 + n * (int)((rank * count + j) % 7));
  } else if (strcmp(op, "allgather") == 0) {
    MPI_Allgather(in, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
    *dt = MPI_Wtime() - t0;
    for (size_t j = 0; j < count * n && !wrong; j++)
      wrong = out[j] != (float)((int)(j / count) + 1 + (int)(j % count % 7));
  } else {
    MPI_Bcast(in, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    *dt = MPI_Wtime() - t0;
    for (size_t j = 0; j < count && !wrong; j++) wrong = in[j] != (float)(1 + (int)(j % 7));
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char* op = argc > 1 ? argv[1] : "reduce_scatter";
  if (strcmp(op, "reduce_scatter") && strcmp(op, "allgather") && strcmp(op, "broadcast")) {
    if (rank == 0) fprintf(stderr, "mpi_collectives: unknown op '%s' (reduce_scatter, allgather, broadcast)\n", op);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char sizes[256] = "4194304,16777216,67108864";
  if (argc > 2) snprintf(sizes, sizeof sizes, "%s", argv[2]);
  int iters = argc > 3 ? atoi(argv[3]) : 10, warmup = 1;
  int whole = strcmp(op, "broadcast") != 0; /* size counts every rank's block */
  double factor = whole ? (double)(n - 1) / n : 1.0;
  if (rank == 0) printf("# Open MPI %s f32, %d ranks\n#%14s %12s %11s %11s %s\n", op, n, "op", "size(B)", "time(us)", "busbw", "ok");
  for (char* tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
    size_t bytes = (size_t)atol(tok), count = bytes / sizeof(float) / (whole ? n : 1);
    if (count == 0) count = 1;
    float* in = malloc(count * n * sizeof(float));
    float* out = malloc(count * n * sizeof(float));
    double* times = malloc(iters * sizeof(double));
    int bad = 0;
    for (int it = 0; it < warmup + iters; it++) {
      for (size_t j = 0; j < count * n; j++) in[j] = (float)(rank + 1 + (int)(j % 7));
      if (strcmp(op, "broadcast") == 0 && rank != 0) memset(in, 0, count * sizeof(float));
      double dt, dtmax;
      bad |= run_once(op, rank, n, count, in, out, &dt);
      MPI_Allreduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= warmup) times[it - warmup] = dtmax;
    }
    int badall = 0;
    MPI_Reduce(&bad, &badall, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      qsort(times, iters, sizeof(double), cmp);
      double t = times[iters / 2], size = (double)count * sizeof(float) * (whole ? n : 1);
      printf(" %14s %12.0f %11.1f %11.3f %s\n", op, size, t * 1e6, size / t / 1e9 * factor, badall ? "FAIL" : "OK");
      fflush(stdout);
    }
    free(in);
    free(out);
    free(times);
  }
  MPI_Finalize();
  return 0;
}
