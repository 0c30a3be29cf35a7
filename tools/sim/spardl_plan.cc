#include "tools/sim/spardl_plan.h"

#include <cmath>
#include <vector>

#include "algorithms/dense/partition.h"
#include "algorithms/spardl/sparse_wire.h"

namespace tsr::sim {

using algorithms::BufferRef;
using algorithms::OpKind;
using algorithms::Plan;
using algorithms::PlanOp;
using algorithms::Slot;

Result<std::shared_ptr<Plan>> spardlPlan(const topology::Schedule& schedule, int rank, size_t count, double density) {
  const int nb = schedule.numBlocks;
  std::vector<size_t> elems(nb), k(nb);
  for (int b = 0; b < nb; ++b) {
    elems[b] = algorithms::balancedPart(count, nb, b).count;
    k[b] = std::min(elems[b], static_cast<size_t>(std::ceil(density * static_cast<double>(elems[b]))));
  }
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "spardl";
  plan->dtype = DataType::kF32;
  plan->count = count;
  const BufferRef work{Slot::kOutput, 0}, arrived{Slot::kScratch, 0}, input{Slot::kInput, 0};
  auto words = [&](const std::vector<int>& blocks) {
    size_t bytes = spardl::kWireHeaderBytes;
    for (int b : blocks) bytes += spardl::maxWireBytes(1, k[b]) - spardl::kWireHeaderBytes;  // full bags
    return bytes / sizeof(float);
  };
  // The gradient plus the residual into the work buffer; every block dirty.
  std::vector<uint32_t> after{plan->add({.kind = OpKind::kCopy, .dst = work, .src = input, .count = count})};
  std::vector<bool> dirty(nb, true);
  const auto& steps = schedule.steps.at(rank);
  for (size_t st = 0; st < steps.size(); ++st) {
    std::vector<uint32_t> done;
    for (const auto& t : steps[st].sends) {
      std::vector<int> blocks = topology::expandBlocks(t.blocks, nb);
      size_t select = 0;
      for (int b : blocks)
        if (dirty[b]) select += elems[b], dirty[b] = false;
      std::vector<uint32_t> deps = after;
      if (select)
        deps = {plan->add({.kind = OpKind::kReduce, .dst = work, .src = work, .count = select, .deps = after})};
      done.push_back(plan->add({.kind = OpKind::kSend,
                                .peer = t.peer,
                                .msgId = static_cast<uint32_t>(st),
                                .src = work,
                                .count = words(blocks),
                                .deps = deps}));
    }
    for (const auto& t : steps[st].recvs) {
      std::vector<int> blocks = topology::expandBlocks(t.blocks, nb);
      uint32_t recv = plan->add({.kind = OpKind::kRecv,
                                 .peer = t.peer,
                                 .msgId = static_cast<uint32_t>(st),
                                 .dst = arrived,
                                 .count = words(blocks),
                                 .deps = after});
      size_t entries = 0;
      for (int b : blocks) entries += k[b], dirty[b] = t.combine == topology::Combine::kReduce;
      const OpKind combine = t.combine == topology::Combine::kReduce ? OpKind::kReduce : OpKind::kCopy;
      done.push_back(plan->add({.kind = combine, .dst = work, .src = arrived, .count = entries, .deps = {recv}}));
    }
    if (!done.empty()) after = done;
  }
  // The blocks this rank still holds unselected are selected once more; the result written out.
  size_t select = 0;
  for (int b = 0; b < nb; ++b)
    if (dirty[b]) select += elems[b];
  if (select) after = {plan->add({.kind = OpKind::kReduce, .dst = work, .src = work, .count = select, .deps = after})};
  plan->add({.kind = OpKind::kCopy, .dst = input, .src = work, .count = count, .deps = after});
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace tsr::sim
