// Helpers every tsr-bench runner uses: waiting on a posted collective, medians, and finding
// the elements where the ranks' results differ; and the timing loop's pieces the compressed
// runners (bench_marsit.cc, bench_compressed.cc) share.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "algorithms/tensors/tensor.h"
#include "runtime/communicator.h"
#include "tools/bench/bench_report.h"

namespace tsr::tools::bench {

// Waits for a posted collective; `algo` (if given) receives the algorithm that served it.
Status waitFor(Result<runtime::RequestPtr> posted, std::string* algo = nullptr);

double median(std::vector<double> v);

// One blocking step of a tensor on `data`.
Status stepOf(algorithms::Tensor& tensor, float* data);

// Collective. Empty when every rank holds the same bits in `result` (compared by a 64-bit
// hash first); otherwise one flag per element, set where some ranks' values differ.
Result<std::vector<bool>> differsAcrossRanks(runtime::Communicator& comm, const std::vector<float>& result);

// One iteration's step as this rank saw it. `status` is the step's own: a failed step goes
// into the row (the communicator may be broken), not up as an error of the run.
struct TimedStep {
  Status status;
  double us = 0;         // wall time of the step alone
  double sentBytes = 0;  // what this rank sent during it
};

// Collective: a barrier so every rank starts together, then `step` timed on this rank.
template <typename Step>
Result<TimedStep> timeStep(runtime::Communicator& comm, Step&& step) {
  TSR_RETURN_IF_ERROR(waitFor(comm.barrier()));
  uint64_t sentBefore = comm.bytesSent();
  auto t0 = std::chrono::steady_clock::now();
  Status st = step();
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return TimedStep{st, us, static_cast<double>(comm.bytesSent() - sentBefore)};
}

// The slowest rank's figures of every timed (not warm-up) iteration.
struct SlowestRank {
  explicit SlowestRank(size_t fields) : fields(fields) {}
  std::vector<double> times;
  std::vector<std::vector<double>> fields;  // the runner's own split, one series per field
  double maxWire = 0;
};

// Collective, every iteration (warm-up too, so the ranks stay in step): the max over ranks of
// the step's time, bytes sent and `fields` (as many as `into` has); kept only when `timed`.
Status keepSlowest(runtime::Communicator& comm, const TimedStep& step, const std::vector<double>& fields, bool timed,
                   SlowestRank& into);

// Collective: the row's time (median, min, max), wire and wrong columns; `wrong` is this
// rank's count, summed over the ranks, and the column is -1 when nothing was checked.
Status fillTimingColumns(runtime::Communicator& comm, const SlowestRank& slowest, int64_t wrong, bool checked,
                         BenchRow& row);

}  // namespace tsr::tools::bench
