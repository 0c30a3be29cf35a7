// Builders of dense collective plans (see algorithms/plan/plan.h for the plan vocabulary).
// Each takes this rank's view of the job and returns its Plan; all ranks' plans together form
// the collective. The ring follows `order` (ring position -> rank), which topology/ makes
// host- and locality-aware; by default it is 0, 1, ..., N-1.
#pragma once

#include <memory>
#include <vector>

#include "algorithms/plan/plan.h"

namespace tsr::algorithms {

struct DenseOptions {
  size_t chunkBytes = 512 * 1024;  // pipelining unit of the ring and the tree
  int window = 4;                  // receive-and-reduce chunks in flight per rank
  // Schedule phases (Rabenseifner, doubling, Bruck) send a transfer's consecutive chunks that
  // are smaller than min(chunkBytes, this) as one message: at hundreds of ranks a halving step's
  // blocks are a few KiB each, and a message per block costs more than its bytes.
  size_t minMessageBytes = 64 * 1024;
  std::vector<int> order;  // ring order; empty = identity
  // Ring reduce-scatter chunks are reduced where they land in the transport's receive buffer
  // (PlanOp::onArrival): no staging copy, no staging window, every receive posted at once.
  // The same on every rank (the communicator decides from the job: TSR_ARRIVAL_REDUCE).
  bool reduceOnArrival = false;
};

// allreduce: input and output hold `count` elements; output may equal input.
Result<std::shared_ptr<Plan>> ringAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                const DenseOptions& options);
// allreduce over a 2D torus: grid[row][col] = rank (X = columns >= 2, Y = rows >= 2; a row is
// one host's ranks). NotSupported for a degenerate grid (the caller uses the ring).
Result<std::shared_ptr<Plan>> torusAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                 const std::vector<std::vector<int>>& grid,
                                                 const DenseOptions& options);
// Two-level allreduce on the same grid (rows are hosts): row reduce-scatter over each host's
// ring, Rabenseifner across hosts among the ranks holding the same row block, row all-gather.
// Unlike the torus it also serves one rank per host or one host (then it is plain
// Rabenseifner or the ring's phases); NotSupported only for a grid that is not one.
Result<std::shared_ptr<Plan>> hierAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                const std::vector<std::vector<int>>& grid, const DenseOptions& options);
// allreduce by recursive halving then doubling (Rabenseifner), with the fold of the extra
// ranks for N not a power of two (topology/recursive_schedule.h): 2 log2 P steps, so the
// latency-bound choice for small and medium buffers.
Result<std::shared_ptr<Plan>> rabenseifnerAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                        const DenseOptions& options);
// allreduce by recursive doubling (topology/recursive_schedule.h): log2 P steps, each moving
// the whole buffer: for tiny buffers.
Result<std::shared_ptr<Plan>> doublingAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                    const DenseOptions& options);
// Marsit's torus on `words` 64-bit sign words (algorithms/marsit): the same phases, hops
// merge bits (plan.h kRecvMerge) instead of adding; in place. localPrep: each row chunk is
// packed by a kLocal op (ring_phases.h addLocalPrep) that its sends and merges wait for.
Result<std::shared_ptr<Plan>> torusSignMergePlan(int rank, int size, size_t words,
                                                 const std::vector<std::vector<int>>& grid, const DenseOptions& options,
                                                 bool localPrep = false);
// allgather: input holds `count` elements, output size*count in rank order.
Result<std::shared_ptr<Plan>> ringAllgatherPlan(int rank, int size, size_t count, DataType dtype,
                                                const DenseOptions& options);
// allgather by Bruck's algorithm (topology/bruck_schedule.h): ceil(log2 N) steps.
Result<std::shared_ptr<Plan>> bruckAllgatherPlan(int rank, int size, size_t count, DataType dtype,
                                                 const DenseOptions& options);
// reduce-scatter: input holds size*count elements, output the `count` of block `rank`.
Result<std::shared_ptr<Plan>> ringReduceScatterPlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                    const DenseOptions& options);
// broadcast from root over a binomial tree, chunked; input is read on the root only. Beside
// the tree, the dissemination rounds below (message ids 0..rounds-1) make every rank wait until
// every rank's arguments agree with its own (tree_plans.cc).
Result<std::shared_ptr<Plan>> binomialBroadcastPlan(int rank, int size, int root, size_t count, DataType dtype,
                                                    const DenseOptions& options);
// barrier: dissemination, ceil(log2 N) rounds of empty messages.
Result<std::shared_ptr<Plan>> disseminationBarrierPlan(int rank, int size);
// The dissemination rounds as ops appended to `plan` (message ids 0..rounds-1; round k is
// sent once round k-1 was heard), and how many there are for `size` ranks.
void addDisseminationRounds(Plan& plan, int rank, int size);
uint32_t disseminationRounds(int size);

}  // namespace tsr::algorithms
