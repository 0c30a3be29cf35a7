// Ring reduce-scatter / all-gather / allreduce plans (Thakur et al. 2005; Gloo's ring()).
//
// Words: N ranks stand on a ring by position p (order[p] is the rank); the buffer is cut into N
// blocks and block q belongs to the rank at position q. Each block is cut into C chunks, the
// pipelining unit: chunk c of step k leaves as soon as chunk c of step k-1 has arrived, so
// several chunks are in flight at once.
//
// Reduce-scatter, step k = 0..N-2: send block p-1-k, receive block p-2-k from the left and
// reduce it into the local copy. After N-1 steps position p holds block p summed over all.
// All-gather, step k = 0..N-2: send block p-k, receive block p-1-k from the left into place.
// Receive-and-reduce lands in one of `window` staging chunks; a staging chunk is reused only
// after the reduction that read it, which is also the flow control.
#include <algorithm>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/partition.h"
#include "algorithms/dense/ring_phases.h"
#include "transport/tag.h"

namespace tsr::algorithms {

using namespace ring_detail;

Result<std::shared_ptr<Plan>> ringAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                const DenseOptions& options) {
  TSR_ASSIGN_OR_RETURN(RingView ring, makeRing(rank, size, options.order));
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "ring";
  plan->collective = CollectiveKind::kAllreduce;
  plan->dtype = dtype;
  plan->op = op;
  plan->count = count;
  size_t esize = dataTypeSize(dtype);
  uint32_t copy = addCopy(*plan, Slot::kOutput, 0, Slot::kInput, 0, count);
  if (size > 1 && count > 0) {
    Layout L{0, count, esize, 0};
    L.chunks = chunksPerBlock(balancedPart(count, size, 0).count, esize, options.chunkBytes, size);
    size_t stagingElems = maxChunkElems(L, size);
    // On arrival: no staging (the window only keeps receives from waiting on each other).
    bool arrival = options.reduceOnArrival;
    int window = arrival ? stagingSlots(L, size) : std::max(1, options.window);
    plan->scratchBytes = arrival ? 0 : window * stagingElems * esize;
    uint32_t rsFirst = static_cast<uint32_t>(plan->ops.size());
    auto own = addReduceScatter(*plan, ring, L, Slot::kOutput, copy, 0, window, stagingElems);
    if (arrival) markReduceOnArrival(*plan, rsFirst, static_cast<uint32_t>(plan->ops.size()));
    std::vector<uint32_t> prev(L.chunks, kNone);
    // RS send of (k, c) reads the block that AG step k overwrites: find them to order them.
    std::vector<std::vector<uint32_t>> sendAt(size, std::vector<uint32_t>(L.chunks, kNone));
    for (uint32_t i = 0; i < plan->ops.size(); ++i) {
      const PlanOp& o = plan->ops[i];
      if (o.kind == OpKind::kSend) sendAt[o.msgId / L.chunks][o.msgId % L.chunks] = i;
    }
    for (size_t c = 0; c < L.chunks; ++c) {
      Range mine = L.chunk(ring, ring.pos, c);
      prev[c] = own[c];
      if (op == ReduceOp::kAvg && mine.count) {
        PlanOp div{.kind = OpKind::kDivide,
                   .dst = {Slot::kOutput, mine.offset * esize},
                   .count = mine.count,
                   .divisor = static_cast<uint64_t>(size)};
        if (own[c] != kNone) div.deps.push_back(own[c]);
        prev[c] = plan->add(div);
      }
    }
    uint32_t base = static_cast<uint32_t>((size - 1) * L.chunks);
    for (int k = 0; k + 1 < size; ++k) {
      for (size_t c = 0; c < L.chunks; ++c) {
        Range out = L.chunk(ring, ring.pos - k, c);
        Range in = L.chunk(ring, ring.pos - 1 - k, c);
        uint32_t id = base + static_cast<uint32_t>(k * L.chunks + c);
        if (out.count) {
          PlanOp send{.kind = OpKind::kSend,
                      .peer = ring.right,
                      .msgId = id,
                      .src = {Slot::kOutput, out.offset * esize},
                      .count = out.count};
          if (prev[c] != kNone) send.deps.push_back(prev[c]);
          plan->add(send);
        }
        if (in.count) {
          PlanOp recv{.kind = OpKind::kRecv,
                      .peer = ring.left,
                      .msgId = id,
                      .dst = {Slot::kOutput, in.offset * esize},
                      .count = in.count};
          if (sendAt[k][c] != kNone) recv.deps.push_back(sendAt[k][c]);
          prev[c] = plan->add(recv);
        } else {
          prev[c] = kNone;
        }
      }
    }
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

Result<std::shared_ptr<Plan>> ringReduceScatterPlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                    const DenseOptions& options) {
  TSR_ASSIGN_OR_RETURN(RingView ring, makeRing(rank, size, options.order));
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "ring";
  plan->collective = CollectiveKind::kReduceScatter;
  plan->dtype = dtype;
  plan->op = op;
  plan->count = count;
  size_t esize = dataTypeSize(dtype);
  size_t total = count * size;
  // The blocks are equal (count each), so the work area is a scratch copy of the input.
  Layout L{0, total, esize, chunksPerBlock(count, esize, options.chunkBytes, size)};
  size_t stagingElems = size > 1 ? maxChunkElems(L, size) : 0;
  bool arrival = options.reduceOnArrival;  // as in ringAllreducePlan
  int window = arrival ? stagingSlots(L, size) : std::max(1, options.window);
  size_t workBytes = total * esize;
  plan->scratchBytes = workBytes + (arrival ? 0 : window * stagingElems * esize);
  uint32_t copy = addCopy(*plan, Slot::kScratch, 0, Slot::kInput, 0, total);
  uint32_t rsFirst = static_cast<uint32_t>(plan->ops.size());
  auto own = addReduceScatter(*plan, ring, L, Slot::kScratch, copy, workBytes, window, stagingElems);
  if (arrival) markReduceOnArrival(*plan, rsFirst, static_cast<uint32_t>(plan->ops.size()));
  std::vector<uint32_t> deps;
  for (uint32_t d : own)
    if (d != kNone) deps.push_back(d);
  deps.push_back(copy);
  PlanOp out{.kind = OpKind::kCopy,
             .dst = {Slot::kOutput, 0},
             .src = {Slot::kScratch, static_cast<size_t>(rank) * count * esize},
             .count = count,
             .deps = deps};
  uint32_t last = plan->add(out);
  if (op == ReduceOp::kAvg && size > 1 && count)
    plan->add({.kind = OpKind::kDivide,
               .dst = {Slot::kOutput, 0},
               .count = count,
               .divisor = static_cast<uint64_t>(size),
               .deps = {last}});
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

Result<std::shared_ptr<Plan>> ringAllgatherPlan(int rank, int size, size_t count, DataType dtype,
                                                const DenseOptions& options) {
  TSR_ASSIGN_OR_RETURN(RingView ring, makeRing(rank, size, options.order));
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "ring";
  plan->collective = CollectiveKind::kAllgather;
  plan->dtype = dtype;
  plan->count = count;
  size_t esize = dataTypeSize(dtype);
  Layout L{0, count * size, esize, chunksPerBlock(count, esize, options.chunkBytes, size)};
  uint32_t copy = addCopy(*plan, Slot::kOutput, static_cast<size_t>(rank) * count * esize, Slot::kInput, 0, count);
  std::vector<uint32_t> prev(L.chunks, copy);
  for (int k = 0; k + 1 < size && count; ++k) {
    for (size_t c = 0; c < L.chunks; ++c) {
      Range out = L.chunk(ring, ring.pos - k, c);
      Range in = L.chunk(ring, ring.pos - 1 - k, c);
      uint32_t id = static_cast<uint32_t>(k * L.chunks + c);
      if (out.count) {
        PlanOp send{.kind = OpKind::kSend,
                    .peer = ring.right,
                    .msgId = id,
                    .src = {Slot::kOutput, out.offset * esize},
                    .count = out.count};
        if (prev[c] != kNone) send.deps.push_back(prev[c]);
        plan->add(send);
      }
      prev[c] = kNone;
      if (in.count)
        prev[c] = plan->add({.kind = OpKind::kRecv,
                             .peer = ring.left,
                             .msgId = id,
                             .dst = {Slot::kOutput, in.offset * esize},
                             .count = in.count});
    }
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace tsr::algorithms
