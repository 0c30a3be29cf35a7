// Runs one size of a tsr-bench sweep with a sparse allreduce: --algo spardl (SparDLTensor,
// the sparse sum) or --algo topk-allgather (its baseline: a top-k CompressedTensor, the
// average of every rank's decoded payload; -2level / -2level-fp16: the same tensor with
// intra=none / fp16, top-k across hosts on each rank's shard of the host average). One tensor per size, created before
// the warmup, timed like the dense path (barrier, the step, max over ranks), plus the step's time split (spardl), the
// result's non-zeros and, with -c 1, checks that can fail:
//   * the result is bit-identical on every rank (hash, then element-wise min/max);
//   * sparsity: spardl at most k_b non-zeros per block, topk-allgather at most N*k in all;
//   * conservation: sum_r (input_r + old residual_r - new residual_r) = result (spardl) or
//     N * result (topk-allgather), within float tolerance, via a float64 reduce-scatter.
#pragma once

#include "runtime/communicator.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"

namespace tsr::tools::bench {

// Every rank calls it with the same arguments; the returned row is the same on every rank.
// The row's size is the logical f32 size (count * 4) and its wire bytes what a rank sent.
Result<BenchRow> runSparseSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes,
                               const RunnerHooks& hooks);

}  // namespace tsr::tools::bench
