#include "algorithms/marsit/marsit_plan.h"

#include <algorithm>

#include "algorithms/dense/ring_phases.h"

namespace tsr::marsit {

using namespace algorithms;
using namespace algorithms::ring_detail;

Result<std::shared_ptr<Plan>> marsitRingPlan(int rank, int size, size_t words, const DenseOptions& options,
                                             bool localPrep) {
  TSR_ASSIGN_OR_RETURN(RingView ring, makeRing(rank, size, options.order));
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "marsit-ring";
  plan->collective = CollectiveKind::kAllreduce;
  plan->dtype = DataType::kI64;  // carrier of the 64-bit words
  plan->op = ReduceOp::kSum;     // unused: hops merge, they do not add
  plan->count = words;
  const size_t esize = sizeof(uint64_t);
  uint32_t start = addCopy(*plan, Slot::kOutput, 0, Slot::kInput, 0, words);
  if (size > 1 && words > 0) {
    Layout L{0, words, esize, 0};
    L.chunks = chunksPerBlock(balancedPart(words, size, 0).count, esize, options.chunkBytes, size);
    size_t stagingElems = maxChunkElems(L, size);
    int window = std::max(1, options.window);
    plan->scratchBytes = window * stagingElems * esize;
    uint32_t first = static_cast<uint32_t>(plan->ops.size());
    std::vector<uint32_t> prep;
    if (localPrep) prep = addLocalPrep(*plan, ring, L, Slot::kOutput);
    addReduceScatter(*plan, ring, L, Slot::kOutput, start, 0, window, stagingElems, 0, true, 0, prep);
    uint32_t merged = addPhaseEnd(*plan, first, start);
    addAllgather(*plan, ring, L, Slot::kOutput, std::vector<uint32_t>(L.chunks, merged),
                 static_cast<uint32_t>((size - 1) * L.chunks));
  } else if (localPrep && words > 0) {
    plan->add({.kind = OpKind::kLocal, .dst = {Slot::kOutput, 0}, .count = words});  // one rank
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

Result<std::shared_ptr<algorithms::Plan>> scalePlan(int rank, int size, size_t scalars,
                                                    const algorithms::DenseOptions& options) {
  return algorithms::rabenseifnerAllreducePlan(rank, size, scalars, DataType::kF64, ReduceOp::kSum, options);
}

}  // namespace tsr::marsit
