// tsr-bench results and their formats: the nccl-tests style table, CSV, JSON lines, and the
// peer benchmarks' 11-column format (../shared/tools/bench_mpi_allreduce.c) that
// ../shared/tools/summarize.py reads. Pure: no I/O beyond the strings it returns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/bench_options.h"

namespace tsr::tools::bench {

struct BenchRow {
  size_t bytes = 0;       // message size: the whole buffer (allgather: the gathered output)
  size_t count = 0;       // elements per rank, as passed to the collective
  int iters = 0;
  double timeUs = 0;      // median over iterations of the max over ranks
  double minUs = 0, maxUs = 0;
  uint64_t wireBytes = 0; // bytes this rank sent per op, max over ranks
  int64_t wrong = 0;      // wrong elements over all ranks (-1: not checked)
  std::string algo;
  std::string error;      // a failed collective's message
};

// nccl-tests' bus bandwidth factor: allreduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n,
// broadcast 1.
double busFactor(Collective c, int nranks);
double algbwGBs(const BenchRow& r);
double busbwGBs(const BenchRow& r, Collective c, int nranks);
// 2(n-1)/n * bytes * 8 / rate for allreduce (the physical floor of a ring on one link per
// rank), in microseconds; 0 when rate is 0.
double floorUs(const BenchRow& r, Collective c, int nranks, double rateGbit);

std::string header(const BenchOptions& o, int nranks, const std::string& transportNote);
std::string formatRow(const BenchRow& r, const BenchOptions& o, int nranks);
std::string footer(const std::vector<BenchRow>& rows, const BenchOptions& o, int nranks);
std::string jsonLine(const BenchRow& r, const BenchOptions& o, int nranks);
double averageBusbw(const std::vector<BenchRow>& rows, Collective c, int nranks);

}  // namespace tsr::tools::bench
