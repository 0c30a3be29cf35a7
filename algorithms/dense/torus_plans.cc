// 2D-torus allreduce (topology/torus_schedule.h): grid[row][col] = rank, a row being one
// host's ranks in locality order. Phases, each a ring over a group, separated by joins:
//  1. row reduce-scatter of the whole buffer: column position c ends with row-block c summed
//     over its row;
//  2. column allreduce of row-block c (reduce-scatter then all-gather over the column ring):
//     every rank at position c now holds row-block c summed over everyone;
//  3. (avg) divide row-block c by N;
//  4. row all-gather of the row-blocks.
// Only phase 2 crosses hosts, with 1/X of the buffer.
#include <algorithm>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/ring_phases.h"
#include "algorithms/dense/schedule_phase.h"
#include "topology/recursive_schedule.h"

namespace tsr::algorithms {

using namespace ring_detail;

namespace {

// Finds `rank` in the grid; checks that the grid is a full X x Y grid of 0..N-1.
Status locate(const std::vector<std::vector<int>>& grid, int rank, int size, int* row, int* col) {
  if (grid.empty() || grid[0].empty()) return Status(Code::kNotSupported, "torus: empty grid");
  size_t x = grid[0].size();
  std::vector<int> seen(size, 0);
  *row = *col = -1;
  for (size_t r = 0; r < grid.size(); ++r) {
    if (grid[r].size() != x)
      return Status(Code::kInvalidArgument, "torus: row " + std::to_string(r) + " has " +
                                                std::to_string(grid[r].size()) + " ranks, row 0 has " +
                                                std::to_string(x));
    for (size_t c = 0; c < x; ++c) {
      int q = grid[r][c];
      if (q < 0 || q >= size || seen[q]++)
        return Status(Code::kInvalidArgument,
                      "torus: rank " + std::to_string(q) + " is missing from, repeated in or outside the grid");
      if (q == rank) *row = static_cast<int>(r), *col = static_cast<int>(c);
    }
  }
  if (grid.size() * x != static_cast<size_t>(size) || *row < 0)
    return Status(Code::kInvalidArgument, "torus: a " + std::to_string(grid.size()) + " x " + std::to_string(x) +
                                              " grid does not cover " + std::to_string(size) + " ranks");
  return Status::ok();
}

// How the column (across hosts) allreduces its row block: a ring (the torus), a ring that
// merges sign bits (Marsit's torus), or Rabenseifner (two-level "hier").
enum class Column { kRing, kSignMerge, kRabenseifner };

// The dense torus, or with kSignMerge Marsit's torus on 64-bit sign words: hops merge instead
// of reducing (row phase round 0, column phase round 1; a column hop's sides stand for whole
// rows, (k+1)X : X workers, the same odds as (k+1) : 1) and nothing is divided.
Result<std::shared_ptr<Plan>> buildTorus(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                         const std::vector<std::vector<int>>& grid, const DenseOptions& options,
                                         Column columnKind, bool localPrep = false) {
  const bool signMerge = columnKind == Column::kSignMerge;
  int row = -1, col = -1;
  TSR_RETURN_IF_ERROR(locate(grid, rank, size, &row, &col));
  const int x = static_cast<int>(grid[0].size()), y = static_cast<int>(grid.size());
  if (columnKind != Column::kRabenseifner && (x < 2 || y < 2))
    return Status(Code::kNotSupported,
                  "torus: a " + std::to_string(y) + " x " + std::to_string(x) + " grid is a ring; use the ring");
  std::vector<int> column;
  for (int r = 0; r < y; ++r) column.push_back(grid[r][col]);
  TSR_ASSIGN_OR_RETURN(RingView rowRing, makeGroupRing(rank, grid[row]));
  TSR_ASSIGN_OR_RETURN(RingView colRing, makeGroupRing(rank, column));

  auto plan = std::make_shared<Plan>();
  plan->algorithm = signMerge ? "marsit-torus" : columnKind == Column::kRing ? "torus" : "hier";
  plan->collective = CollectiveKind::kAllreduce;
  plan->dtype = dtype;
  plan->op = op;
  plan->count = count;
  const size_t esize = dataTypeSize(dtype);
  uint32_t start = addCopy(*plan, Slot::kOutput, 0, Slot::kInput, 0, count);
  if (count > 0) {
    const int window = std::max(1, options.window);
    Layout rowL{0, count, esize, 0};
    rowL.chunks = chunksPerBlock(balancedPart(count, x, 0).count, esize, options.chunkBytes, size, 4);
    Range mine = balancedPart(count, x, rowRing.blockOwner(rowRing.pos));
    Layout colL{mine.offset, mine.count, esize, 0};
    colL.chunks =
        chunksPerBlock(std::max<size_t>(1, balancedPart(mine.count, y, 0).count), esize, options.chunkBytes, size, 4);
    size_t rowStaging = maxChunkElems(rowL, x), colStaging = maxChunkElems(colL, y);
    plan->scratchBytes = window * std::max(rowStaging, colStaging) * esize;
    // Message ids: the four phases take disjoint ranges, the same on every rank (column
    // blocks differ in size, so the column phases reserve room for the largest).
    size_t colChunksMax = chunksPerBlock(std::max<size_t>(1, balancedPart(balancedPart(count, x, 0).count, y, 0).count),
                                         esize, options.chunkBytes, size, 4);
    uint32_t rowIds = static_cast<uint32_t>((x - 1) * rowL.chunks);
    uint32_t colIds = static_cast<uint32_t>((y - 1) * colChunksMax);
    auto phase = [&] { return static_cast<uint32_t>(plan->ops.size()); };
    uint32_t first = phase();
    // Pipelined packing: each row chunk's sends and merges wait for that chunk's kLocal op.
    std::vector<uint32_t> prep;
    if (localPrep) prep = addLocalPrep(*plan, rowRing, rowL, Slot::kOutput);
    addReduceScatter(*plan, rowRing, rowL, Slot::kOutput, start, 0, window, rowStaging, 0, signMerge, 0, prep);
    uint32_t end1 = addPhaseEnd(*plan, first, start);
    uint32_t end3 = end1;
    if (columnKind == Column::kRabenseifner) {
      // Across hosts, the shards of one row block allreduce by halving and doubling (both
      // row phases are done or not started, so the staging window at scratch 0 is free).
      topology::Schedule halving = topology::rabenseifnerAllreduce(y);
      SchedulePhase across{&halving, column, Slot::kOutput, mine.offset, mine.count, rowIds, 0};
      TSR_ASSIGN_OR_RETURN(PhaseExtent extent, schedulePhaseExtent(across, esize, options));
      plan->scratchBytes = std::max(plan->scratchBytes, extent.stagingBytes);
      TSR_ASSIGN_OR_RETURN(end3, addSchedulePhase(*plan, rank, across, end1, options));
      // The row all-gather's ids follow at rowIds + 2 colIds on every column: reserve room for
      // the largest row block's phase, not this column's.
      SchedulePhase largest = across;
      largest.count = balancedPart(count, x, 0).count;
      TSR_ASSIGN_OR_RETURN(PhaseExtent most, schedulePhaseExtent(largest, esize, options));
      colIds = most.messageIds / 2 + 1;
    } else {
      first = phase();
      addReduceScatter(*plan, colRing, colL, Slot::kOutput, end1, 0, window, colStaging, rowIds, signMerge, 1);
      uint32_t end2 = addPhaseEnd(*plan, first, end1);
      first = phase();
      addAllgather(*plan, colRing, colL, Slot::kOutput, std::vector<uint32_t>(colL.chunks, end2), rowIds + colIds);
      end3 = addPhaseEnd(*plan, first, end2);
    }
    if (!signMerge && op == ReduceOp::kAvg && mine.count)
      end3 = plan->add({.kind = OpKind::kDivide,
                        .dst = {Slot::kOutput, mine.offset * esize},
                        .count = mine.count,
                        .divisor = static_cast<uint64_t>(size),
                        .deps = {end3}});
    addAllgather(*plan, rowRing, rowL, Slot::kOutput, std::vector<uint32_t>(rowL.chunks, end3), rowIds + 2 * colIds);
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace

Result<std::shared_ptr<Plan>> torusAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                 const std::vector<std::vector<int>>& grid,
                                                 const DenseOptions& options) {
  return buildTorus(rank, size, count, dtype, op, grid, options, Column::kRing);
}

Result<std::shared_ptr<Plan>> hierAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                const std::vector<std::vector<int>>& grid,
                                                const DenseOptions& options) {
  return buildTorus(rank, size, count, dtype, op, grid, options, Column::kRabenseifner);
}

Result<std::shared_ptr<Plan>> torusSignMergePlan(int rank, int size, size_t words,
                                                 const std::vector<std::vector<int>>& grid, const DenseOptions& options,
                                                 bool localPrep) {
  return buildTorus(rank, size, words, DataType::kI64, ReduceOp::kSum, grid, options, Column::kSignMerge, localPrep);
}

}  // namespace tsr::algorithms
