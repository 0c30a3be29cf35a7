#include "algorithms/marsit/hier_plan.h"

#include <algorithm>

#include "algorithms/dense/host_grid_plans.h"
#include "algorithms/dense/ring_phases.h"

namespace tsr::marsit {

using namespace algorithms;
using namespace algorithms::ring_detail;

Result<HierPlans> marsitHierPlans(int rank, int size, size_t count, DataType intraType,
                                  const std::vector<std::vector<int>>& grid, const DenseOptions& options,
                                  bool localPrep) {
  TSR_ASSIGN_OR_RETURN(GridPlace place, placeInGrid(grid, rank, size, "two-level marsit"));
  const int x = place.x, y = place.y;
  TSR_ASSIGN_OR_RETURN(RingView rowRing, makeGroupRing(rank, place.rowRanks));
  TSR_ASSIGN_OR_RETURN(RingView colRing, makeGroupRing(rank, place.columnRanks));
  const int window = std::max(1, options.window);

  HierPlans out;
  const size_t unit = 64 * static_cast<size_t>(x);
  out.padded = (count + unit - 1) / unit * unit;
  out.shardCount = out.padded / x;
  out.shardOffset = out.shardCount * place.col;

  // 1. Row reduce-scatter (average) of the padded vector in the intra-host type.
  TSR_ASSIGN_OR_RETURN(out.rowReduceScatter,
                       rowAverageScatterPlan(rank, size, place, out.padded, intraType, options, "marsit-2level-intra"));

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
    colL.chunks =
        chunksPerBlock(std::max<size_t>(1, balancedPart(shardWords, y, 0).count), 8, options.chunkBytes, size, 3);
    Layout rowL{0, words, 8, 0};
    rowL.chunks = chunksPerBlock(shardWords, 8, options.chunkBytes, size, 3);
    bits->scratchBytes = window * maxChunkElems(colL, y) * 8;
    uint32_t colIds = static_cast<uint32_t>((y - 1) * colL.chunks);
    uint32_t first = static_cast<uint32_t>(bits->ops.size());
    std::vector<uint32_t> prep;  // pipelined packing of this rank's row block
    if (localPrep) prep = addLocalPrep(*bits, colRing, colL, Slot::kOutput);
    addReduceScatter(*bits, colRing, colL, Slot::kOutput, begin, 0, window, maxChunkElems(colL, y), 0, true, 0, prep);
    uint32_t merged = addPhaseEnd(*bits, first, begin);
    first = static_cast<uint32_t>(bits->ops.size());
    addAllgather(*bits, colRing, colL, Slot::kOutput, std::vector<uint32_t>(colL.chunks, merged), colIds);
    uint32_t gathered = addPhaseEnd(*bits, first, merged);
    addAllgather(*bits, rowRing, rowL, Slot::kOutput, std::vector<uint32_t>(rowL.chunks, gathered), 2 * colIds);
  }
  TSR_RETURN_IF_ERROR(bits->finalize());
  out.bits = bits;
  return out;
}

}  // namespace tsr::marsit
