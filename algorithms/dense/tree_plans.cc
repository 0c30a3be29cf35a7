// Binomial-tree broadcast and dissemination barrier.
//
// Broadcast: ranks are renumbered relative to the root (v = rank - root mod N). The parent of
// v is v with its lowest set bit cleared; its children are v + 2^j for every 2^j below that
// bit. The buffer moves in chunks, and a chunk is forwarded to the children as soon as it has
// arrived, so a large broadcast pipelines down the tree (ceil(log2 N) levels).
// Agreement: a rank's data comes from the root alone, so argument headers checked along the
// tree miss a rank that named another root (its tree is another tree) or that no tree edge
// reaches. Beside the tree, every rank therefore runs the barrier's dissemination rounds below
// with empty messages: each round's message is the first from that peer, so it waits for the
// peer's header, and a round is sent only after the round before was heard. A rank finishes
// only once every rank's arguments agree, transitively, with its own; otherwise the rank that
// saw the difference reports it and every other one is still waiting when its notice comes.
// Barrier (Hensgen et al.): in round k every rank signals rank + 2^k and waits for rank - 2^k;
// after ceil(log2 N) rounds each rank has heard, transitively, from all others.
#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/partition.h"
#include "transport/tag.h"

namespace tsr::algorithms {

Result<std::shared_ptr<Plan>> binomialBroadcastPlan(int rank, int size, int root, size_t count, DataType dtype,
                                                    const DenseOptions& options) {
  if (root < 0 || root >= size)
    return Status(Code::kInvalidArgument, "broadcast root " + std::to_string(root) + " is not a rank of a " +
                                              std::to_string(size) + "-rank communicator");
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "binomial";
  plan->collective = CollectiveKind::kBroadcast;
  plan->dtype = dtype;
  plan->count = count;
  plan->root = root;
  size_t esize = dataTypeSize(dtype);
  size_t chunkElems = std::max<size_t>(1, options.chunkBytes / esize);
  const uint32_t rounds = disseminationRounds(size);
  size_t chunks = std::min<size_t>(ceilDiv(count, chunkElems), transport::kMaxMessageId - rounds);
  addDisseminationRounds(*plan, rank, size);
  int v = (rank - root + size) % size;
  int lowbit = 1;
  while (lowbit < size && !(v & lowbit)) lowbit <<= 1;  // for the root: first power >= size
  std::vector<uint32_t> have(chunks, UINT32_MAX);
  if (v == 0) {
    uint32_t copy =
        plan->add({.kind = OpKind::kCopy, .dst = {Slot::kOutput, 0}, .src = {Slot::kInput, 0}, .count = count});
    have.assign(chunks, copy);
  } else {
    int parent = ((v & ~lowbit) + root) % size;
    for (size_t c = 0; c < chunks; ++c) {
      Range part = balancedPart(count, chunks, c);
      have[c] = plan->add({.kind = OpKind::kRecv,
                           .peer = parent,
                           .msgId = rounds + static_cast<uint32_t>(c),
                           .dst = {Slot::kOutput, part.offset * esize},
                           .count = part.count});
    }
  }
  // Children, biggest subtree first.
  for (size_t c = 0; c < chunks; ++c) {
    Range part = balancedPart(count, chunks, c);
    for (int bit = lowbit >> 1; bit >= 1; bit >>= 1) {
      if (v + bit >= size) continue;
      int child = (v + bit + root) % size;
      plan->add({.kind = OpKind::kSend,
                 .peer = child,
                 .msgId = rounds + static_cast<uint32_t>(c),
                 .src = {Slot::kOutput, part.offset * esize},
                 .count = part.count,
                 .deps = {have[c]}});
    }
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

uint32_t disseminationRounds(int size) {
  uint32_t rounds = 0;
  for (int dist = 1; dist < size; dist <<= 1) ++rounds;
  return rounds;
}

void addDisseminationRounds(Plan& plan, int rank, int size) {
  uint32_t prev = UINT32_MAX;
  uint32_t round = 0;
  for (int dist = 1; dist < size; dist <<= 1, ++round) {
    PlanOp send{.kind = OpKind::kSend, .peer = (rank + dist) % size, .msgId = round, .count = 0};
    if (prev != UINT32_MAX) send.deps.push_back(prev);
    plan.add(send);
    PlanOp recv{.kind = OpKind::kRecv,
                .peer = (rank - dist + size) % size,
                .msgId = round,
                .dst = {Slot::kOutput, 0},
                .count = 0};
    if (prev != UINT32_MAX) recv.deps.push_back(prev);
    prev = plan.add(recv);
  }
}

Result<std::shared_ptr<Plan>> disseminationBarrierPlan(int rank, int size) {
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "dissemination";
  plan->collective = CollectiveKind::kBarrier;
  plan->dtype = DataType::kI32;
  addDisseminationRounds(*plan, rank, size);
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace tsr::algorithms
