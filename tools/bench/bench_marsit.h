// Runs one size of a tsr-bench sweep with Marsit (--algo marsit, marsit-torus,
// marsit-2level[-fp16]): one tensor per size, made by name from the tensor registry, timed like the dense path
// (barrier, the step, max over ranks), plus the step's time split and, with -c 1, a check of every element.
// -o avg (the default) is Marsit's estimate of the average, -o sum N times it (the tensor's op=).
#pragma once

#include "runtime/communicator.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"

namespace tsr::tools::bench {

// Every rank calls it with the same arguments; the returned row is the same on every rank.
// The row's size is the logical f32 size (count * 4) and its wire bytes what a rank sent.
Result<BenchRow> runMarsitSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes,
                               const RunnerHooks& hooks);

}  // namespace tsr::tools::bench
