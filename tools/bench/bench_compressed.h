// Runs one size of a tsr-bench sweep with a compressed or SparDL tensor made by name from the
// tensor registry: --algo spardl (the sparse sum), topk (its baseline: top-k all-gathered, the
// average of every rank's decoded payload; -2level / -2level-fp16: average in each host, top-k
// across hosts on each rank's shard) or onebit; -o sum|avg is the tensor's op= (a row says
// which reduction it left). One tensor per size, created before the
// warmup, timed like the dense path (barrier, the step, max over ranks), plus the step's time
// split (spardl), the result's non-zeros and, with -c 1, checks that can fail:
//   * the result is bit-identical on every rank (hash, then element-wise min/max);
//   * sparsity: spardl at most k_b non-zeros per block, topk at most N*k in all;
//   * conservation: sum_r (input_r + old residual_r - new residual_r) = result (-o sum) or
//     N * result (-o avg), within float tolerance, via a float64 reduce-scatter.
#pragma once

#include "runtime/communicator.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"

namespace tsr::tools::bench {

// Every rank calls it with the same arguments; the returned row is the same on every rank.
// The row's size is the logical f32 size (count * 4) and its wire bytes what a rank sent.
Result<BenchRow> runCompressedSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes,
                                   const RunnerHooks& hooks);

}  // namespace tsr::tools::bench
