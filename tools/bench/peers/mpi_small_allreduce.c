/* Open MPI's MPI_Allreduce on small messages (../shared/tools' benchmark starts at 1 MiB), with
 * the same method: per iteration a barrier, one in-place f32 sum, the slowest rank's time; the
 * median over iterations. Prints "size(B) time(us)" rows. Built and run by small_latency.sh.
 *   mpi_small_allreduce [sizes in bytes, e.g. 8,64,512,4096,32768] [iters] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  char sizes[256] = "8,64,512,4096,32768";
  if (argc > 1) snprintf(sizes, sizeof sizes, "%s", argv[1]);
  int iters = argc > 2 ? atoi(argv[2]) : 200;
  if (rank == 0) printf("# Open MPI MPI_Allreduce f32 sum in place, %d ranks\n#%12s %11s %s\n", n, "size(B)", "time(us)", "ok");
  for (char* tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
    size_t count = (size_t)atol(tok) / sizeof(float);
    if (count == 0) count = 1;
    float* buf = malloc(count * sizeof(float));
    double* times = malloc(iters * sizeof(double));
    int bad = 0;
    for (int it = 0; it < iters + 10; it++) {
      for (size_t j = 0; j < count; j++) buf[j] = (float)(rank + 1);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double dt = MPI_Wtime() - t0, dtmax;
      for (size_t j = 0; j < count; j++)
        if (buf[j] != (float)(n * (n + 1) / 2)) { bad = 1; break; }
      MPI_Allreduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 10) times[it - 10] = dtmax;
    }
    int badall = 0;
    MPI_Reduce(&bad, &badall, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      qsort(times, iters, sizeof(double), cmp);
      printf(" %12zu %11.1f %s\n", count * sizeof(float), times[iters / 2] * 1e6, badall ? "FAIL" : "OK");
      fflush(stdout);
    }
    free(buf);
    free(times);
  }
  MPI_Finalize();
  return 0;
}
