#include "algorithms/dense/host_grid_plans.h"

#include <algorithm>

#include "algorithms/dense/ring_phases.h"

namespace tsr::algorithms {

using namespace ring_detail;

Result<GridPlace> placeInGrid(const std::vector<std::vector<int>>& grid, int rank, int size, const std::string& who) {
  if (grid.empty() || grid[0].empty()) return Status(Code::kInvalidArgument, who + ": the host grid is empty");
  GridPlace p;
  p.x = static_cast<int>(grid[0].size());
  p.y = static_cast<int>(grid.size());
  std::vector<int> seen(size > 0 ? size : 0, 0);
  for (int r = 0; r < p.y; ++r) {
    if (static_cast<int>(grid[r].size()) != p.x)
      return Status(Code::kInvalidArgument, who + ": grid row " + std::to_string(r) + " has " +
                                                std::to_string(grid[r].size()) + " ranks, row 0 has " +
                                                std::to_string(p.x));
    for (int c = 0; c < p.x; ++c) {
      int q = grid[r][c];
      if (q < 0 || q >= size || seen[q]++)
        return Status(Code::kInvalidArgument,
                      who + ": rank " + std::to_string(q) + " is outside or repeated in the host grid");
      if (q == rank) p.row = r, p.col = c;
    }
  }
  if (p.x * p.y != size || p.row < 0)
    return Status(Code::kInvalidArgument,
                  who + ": the grid does not hold rank " + std::to_string(rank) + " of " + std::to_string(size));
  p.rowRanks = grid[p.row];
  for (int r = 0; r < p.y; ++r) p.columnRanks.push_back(grid[r][p.col]);
  return p;
}

Result<std::shared_ptr<Plan>> rowAverageScatterPlan(int rank, int size, const GridPlace& place, size_t padded,
                                                    DataType dtype, const DenseOptions& options,
                                                    const std::string& algorithm) {
  const int x = place.x;
  if (x < 1 || padded % static_cast<size_t>(x) != 0)
    return Status(Code::kInvalidArgument, algorithm + ": " + std::to_string(padded) + " elements do not split into " +
                                              std::to_string(x) + " row blocks");
  TSR_ASSIGN_OR_RETURN(RingView rowRing, makeGroupRing(rank, place.rowRanks));
  const size_t block = padded / x, esize = dataTypeSize(dtype);
  auto rs = std::make_shared<Plan>();
  rs->algorithm = algorithm;
  rs->collective = CollectiveKind::kReduceScatter;
  rs->dtype = dtype;
  rs->op = ReduceOp::kAvg;
  rs->count = padded;
  uint32_t start = addCopy(*rs, Slot::kOutput, 0, Slot::kInput, 0, padded);
  if (x > 1 && padded > 0) {
    const int window = std::max(1, options.window);
    Layout L{0, padded, esize, 0};
    L.chunks = chunksPerBlock(block, esize, options.chunkBytes, size);
    size_t staging = maxChunkElems(L, x);
    rs->scratchBytes = window * staging * esize;
    uint32_t first = static_cast<uint32_t>(rs->ops.size());
    addReduceScatter(*rs, rowRing, L, Slot::kOutput, start, 0, window, staging, 0);
    uint32_t end = addPhaseEnd(*rs, first, start);
    PlanOp divide;
    divide.kind = OpKind::kDivide;
    divide.dst = {Slot::kOutput, block * place.col * esize};
    divide.count = block;
    divide.divisor = static_cast<uint64_t>(x);
    divide.deps = {end};
    rs->add(divide);
  }
  TSR_RETURN_IF_ERROR(rs->finalize());
  return rs;
}

Result<std::shared_ptr<Plan>> groupAllgatherPlan(int rank, int size, const std::vector<int>& members, size_t block,
                                                 DataType dtype, const DenseOptions& options,
                                                 const std::string& algorithm) {
  TSR_ASSIGN_OR_RETURN(RingView ring, makeGroupRing(rank, members));
  const size_t esize = dataTypeSize(dtype), n = members.size();
  auto plan = std::make_shared<Plan>();
  plan->algorithm = algorithm;
  plan->collective = CollectiveKind::kAllgather;
  plan->dtype = dtype;
  plan->count = block;
  uint32_t copy = addCopy(*plan, Slot::kOutput, static_cast<size_t>(ring.pos) * block * esize, Slot::kInput, 0, block);
  if (n > 1 && block > 0) {
    Layout L{0, n * block, esize, chunksPerBlock(block, esize, options.chunkBytes, size)};
    addAllgather(*plan, ring, L, Slot::kOutput, std::vector<uint32_t>(L.chunks, copy), 0);
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace tsr::algorithms
