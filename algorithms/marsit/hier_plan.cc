#include "algorithms/marsit/hier_plan.h"

#include <algorithm>

#include "algorithms/dense/ring_phases.h"

namespace tsr::marsit {

using namespace algorithms;
using namespace algorithms::ring_detail;

namespace {

Status findInGrid(const std::vector<std::vector<int>>& grid, int rank, int size, int* row, int* col) {
  size_t cells = 0;
  *row = *col = -1;
  for (size_t r = 0; r < grid.size(); ++r) {
    if (grid[r].size() != grid[0].size())
      return Status(Code::kInvalidArgument, "two-level marsit: grid rows differ in length");
    for (size_t c = 0; c < grid[r].size(); ++c, ++cells)
      if (grid[r][c] == rank) *row = static_cast<int>(r), *col = static_cast<int>(c);
  }
  if (cells != static_cast<size_t>(size) || *row < 0)
    return Status(Code::kInvalidArgument, "two-level marsit: the grid does not hold rank " +
                                              std::to_string(rank) + " of " + std::to_string(size));
  return Status::ok();
}

}  // namespace

Result<HierPlans> marsitHierPlans(int rank, int size, size_t count, DataType intraType,
                                  const std::vector<std::vector<int>>& grid, const DenseOptions& options) {
  int row = -1, col = -1;
  TSR_RETURN_IF_ERROR(findInGrid(grid, rank, size, &row, &col));
  const int x = static_cast<int>(grid[0].size()), y = static_cast<int>(grid.size());
  std::vector<int> column;
  for (int r = 0; r < y; ++r) column.push_back(grid[r][col]);
  TSR_ASSIGN_OR_RETURN(RingView rowRing, makeGroupRing(rank, grid[row]));
  TSR_ASSIGN_OR_RETURN(RingView colRing, makeGroupRing(rank, column));
  const int window = std::max(1, options.window);

  HierPlans out;
  const size_t unit = 64 * static_cast<size_t>(x);
  out.padded = (count + unit - 1) / unit * unit;
  out.shardCount = out.padded / x;
  out.shardOffset = out.shardCount * col;

  // 1. Row reduce-scatter (average) of the padded vector in the intra-host type.
  auto rs = std::make_shared<Plan>();
  rs->algorithm = "marsit-2level-intra";
  rs->collective = CollectiveKind::kReduceScatter;
  rs->dtype = intraType;
  rs->op = ReduceOp::kAvg;
  rs->count = out.padded;
  const size_t esize = dataTypeSize(intraType);
  uint32_t start = addCopy(*rs, Slot::kOutput, 0, Slot::kInput, 0, out.padded);
  if (x > 1 && out.padded > 0) {
    Layout L{0, out.padded, esize, 0};
    L.chunks = chunksPerBlock(out.shardCount, esize, options.chunkBytes, size);
    size_t staging = maxChunkElems(L, x);
    rs->scratchBytes = window * staging * esize;
    uint32_t first = static_cast<uint32_t>(rs->ops.size());
    addReduceScatter(*rs, rowRing, L, Slot::kOutput, start, 0, window, staging, 0);
    uint32_t end = addPhaseEnd(*rs, first, start);
    PlanOp divide;
    divide.kind = OpKind::kDivide;
    divide.dst = {Slot::kOutput, out.shardOffset * esize};
    divide.count = out.shardCount;
    divide.divisor = static_cast<uint64_t>(x);
    divide.deps = {end};
    rs->add(divide);
  }
  TSR_RETURN_IF_ERROR(rs->finalize());
  out.rowReduceScatter = rs;

  // 3. Bits: column merge and all-gather of this row block, then the row all-gather.
  auto bits = std::make_shared<Plan>();
  bits->algorithm = "marsit-2level";
  bits->collective = CollectiveKind::kAllreduce;
  bits->dtype = DataType::kI64;
  bits->op = ReduceOp::kSum;
  const size_t words = out.padded / 64, shardWords = out.shardCount / 64;
  bits->count = words;
  uint32_t begin = addCopy(*bits, Slot::kOutput, 0, Slot::kInput, 0, words);
  if (words > 0) {
    Layout colL{out.shardOffset / 64, shardWords, 8, 0};
    colL.chunks = chunksPerBlock(std::max<size_t>(1, balancedPart(shardWords, y, 0).count), 8,
                                 options.chunkBytes, size, 3);
    Layout rowL{0, words, 8, 0};
    rowL.chunks = chunksPerBlock(shardWords, 8, options.chunkBytes, size, 3);
    bits->scratchBytes = window * maxChunkElems(colL, y) * 8;
    uint32_t colIds = static_cast<uint32_t>((y - 1) * colL.chunks);
    uint32_t first = static_cast<uint32_t>(bits->ops.size());
    addReduceScatter(*bits, colRing, colL, Slot::kOutput, begin, 0, window, maxChunkElems(colL, y), 0,
                     true, 0);
    uint32_t merged = addPhaseEnd(*bits, first, begin);
    first = static_cast<uint32_t>(bits->ops.size());
    addAllgather(*bits, colRing, colL, Slot::kOutput, std::vector<uint32_t>(colL.chunks, merged), colIds);
    uint32_t gathered = addPhaseEnd(*bits, first, merged);
    addAllgather(*bits, rowRing, rowL, Slot::kOutput, std::vector<uint32_t>(rowL.chunks, gathered),
                 2 * colIds);
  }
  TSR_RETURN_IF_ERROR(bits->finalize());
  out.bits = bits;
  return out;
}

}  // namespace tsr::marsit
