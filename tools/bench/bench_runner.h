// Runs one size of a tsr-bench sweep on a communicator: fills the inputs, times every
// iteration (barrier, one collective, max over ranks), counts wire bytes and wrong elements.
#pragma once

#include "runtime/communicator.h"
#include "tools/bench/bench_report.h"

namespace tsr::tools::bench {

struct RunnerHooks {
  int plantWrongOnRank = -1;  // test hook: this rank corrupts one result element
};

// Every rank calls it with the same arguments; the returned row is the same on every rank.
Result<BenchRow> runSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes, const RunnerHooks& hooks);

}  // namespace tsr::tools::bench
