// Building blocks of ring plans, shared by the ring and torus builders (see ring_phases.h).
#include "algorithms/dense/ring_phases.h"

#include <algorithm>
#include <cstdint>

#include "transport/tag.h"

namespace tsr::algorithms::ring_detail {

Result<RingView> makeRing(int rank, int size, const std::vector<int>& order) {
  RingView v{size, 0, 0, 0, order, {}};
  if (v.order.empty())
    for (int i = 0; i < size; ++i) v.order.push_back(i);
  v.blockIds = v.order;  // the whole job: position p owns block order[p], so rank r owns block r
  if (static_cast<int>(v.order.size()) != size)
    return Status(Code::kInvalidArgument, "ring order has " + std::to_string(v.order.size()) + " entries for " +
                                              std::to_string(size) + " ranks");
  auto it = std::find(v.order.begin(), v.order.end(), rank);
  if (it == v.order.end())
    return Status(Code::kInvalidArgument, "rank " + std::to_string(rank) + " is not in the ring order");
  v.pos = static_cast<int>(it - v.order.begin());
  v.left = v.order[(v.pos + size - 1) % size];
  v.right = v.order[(v.pos + 1) % size];
  return v;
}

Result<RingView> makeGroupRing(int rank, const std::vector<int>& members) {
  TSR_ASSIGN_OR_RETURN(RingView v, makeRing(rank, static_cast<int>(members.size()), members));
  for (size_t p = 0; p < members.size(); ++p) v.blockIds[p] = static_cast<int>(p);
  return v;
}

// Chunks per block: the same C for every block, sized so message ids fit the tag. Chunks are
// at most chunkBytes, and a block gets at least kMinChunks of them while they stay above
// kMinChunkBytes: a ring pipelines only once several chunks are in flight (4 MiB over 4 ranks
// on 1 Gbit/s: 2 chunks of 512 KiB per block ran at 1.14x the floor, 8 of 128 KiB at 1.06x).
namespace {
constexpr size_t kMinChunks = 8;
constexpr size_t kMinChunkBytes = 64 * 1024;
}  // namespace

size_t chunksPerBlock(size_t maxBlock, size_t elemSize, size_t chunkBytes, int size, int phases) {
  size_t chunkElems = std::max<size_t>(1, chunkBytes / elemSize);
  size_t c = std::max<size_t>(1, ceilDiv(maxBlock, chunkElems));
  size_t byBytes = maxBlock * elemSize / kMinChunkBytes;
  c = std::max(c, std::min(kMinChunks, byBytes));
  size_t limit = transport::kMaxMessageId / (static_cast<size_t>(phases) * static_cast<size_t>(size));
  return std::min(c, std::max<size_t>(1, limit));
}

// Adds the reduce-scatter phase over `work` (Slot + byte base). Returns, per chunk, the op
// that completes this rank's own block chunk (kNone when nothing had to be done).
std::vector<uint32_t> addReduceScatter(Plan& plan, const RingView& ring, const Layout& L, Slot work, uint32_t startDep,
                                       size_t stagingBase, int window, size_t stagingElems, uint32_t idBase,
                                       bool signMerge, uint32_t mergeRound, const std::vector<uint32_t>& localReady) {
  // What this rank's own data of chunk c of position q's block waits for.
  auto ready = [&](int q, size_t c) {
    return localReady.empty() ? startDep : localReady[ring.blockOwner(q) * L.chunks + c];
  };
  std::vector<uint32_t> lastRecv(L.chunks, kNone);
  std::vector<uint32_t> stagingUser(window, kNone);
  size_t slotTurn = 0;
  for (int k = 0; k + 1 < ring.size; ++k) {
    for (size_t c = 0; c < L.chunks; ++c) {
      Range out = L.chunk(ring, ring.pos - 1 - k, c);
      Range in = L.chunk(ring, ring.pos - 2 - k, c);
      uint32_t id = idBase + static_cast<uint32_t>(k * L.chunks + c);
      if (out.count) {
        PlanOp send{.kind = OpKind::kSend,
                    .peer = ring.right,
                    .msgId = id,
                    .src = {work, out.offset * L.esize},
                    .count = out.count};
        uint32_t dep = k == 0 ? ready(ring.pos - 1, c) : lastRecv[c];
        if (dep != kNone) send.deps.push_back(dep);
        plan.add(send);
      }
      if (in.count) {
        size_t slot = slotTurn++ % window;
        PlanOp recv{.kind = signMerge ? OpKind::kRecvMerge : OpKind::kRecvReduce,
                    .peer = ring.left,
                    .msgId = id,
                    .dst = {work, in.offset * L.esize},
                    .staging = {Slot::kScratch, stagingBase + slot * stagingElems * L.esize},
                    .count = in.count,
                    .mergeA = static_cast<uint32_t>(k + 1),
                    .mergeB = 1,
                    .mergeRound = mergeRound};
        if (uint32_t own = ready(ring.pos - 2 - k, c); own != kNone) recv.deps.push_back(own);
        if (stagingUser[slot] != kNone) recv.deps.push_back(stagingUser[slot]);
        stagingUser[slot] = lastRecv[c] = plan.add(recv);
      }
    }
  }
  return lastRecv;
}

void markReduceOnArrival(Plan& plan, uint32_t from, uint32_t to) {
  for (uint32_t i = from; i < to; ++i) {
    PlanOp& op = plan.ops[i];
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecvReduce) op.onArrival = true;
  }
}

int stagingSlots(const Layout& L, int size) {
  size_t receives = static_cast<size_t>(std::max(1, size - 1)) * L.chunks;
  return static_cast<int>(std::min<size_t>(receives, INT32_MAX));
}

std::vector<uint32_t> addLocalPrep(Plan& plan, const RingView& ring, const Layout& L, Slot work) {
  std::vector<uint32_t> ops(static_cast<size_t>(ring.size) * L.chunks, kNone);
  for (int k = 0; k < ring.size; ++k) {  // step k sends block pos-1-k, merged at step k-1
    int q = ring.pos - 1 - k;
    for (size_t c = 0; c < L.chunks; ++c) {
      Range part = L.chunk(ring, q, c);
      if (part.count)
        ops[ring.blockOwner(q) * L.chunks + c] =
            plan.add({.kind = OpKind::kLocal, .dst = {work, part.offset * L.esize}, .count = part.count});
    }
  }
  return ops;
}

size_t maxChunkElems(const Layout& L, int size) {
  size_t maxBlock = balancedPart(L.count, size, 0).count;
  return ceilDiv(maxBlock, L.chunks);
}

std::vector<uint32_t> addAllgather(Plan& plan, const RingView& ring, const Layout& L, Slot work,
                                   std::vector<uint32_t> prev, uint32_t idBase) {
  for (int k = 0; k + 1 < ring.size; ++k) {
    for (size_t c = 0; c < L.chunks; ++c) {
      Range out = L.chunk(ring, ring.pos - k, c);
      Range in = L.chunk(ring, ring.pos - 1 - k, c);
      uint32_t id = idBase + static_cast<uint32_t>(k * L.chunks + c);
      if (out.count) {
        PlanOp send{.kind = OpKind::kSend,
                    .peer = ring.right,
                    .msgId = id,
                    .src = {work, out.offset * L.esize},
                    .count = out.count};
        if (prev[c] != kNone) send.deps.push_back(prev[c]);
        plan.add(send);
      }
      prev[c] = kNone;
      if (in.count)
        prev[c] = plan.add({.kind = OpKind::kRecv,
                            .peer = ring.left,
                            .msgId = id,
                            .dst = {work, in.offset * L.esize},
                            .count = in.count});
    }
  }
  return prev;
}

uint32_t addPhaseEnd(Plan& plan, uint32_t first, uint32_t after) {
  std::vector<uint32_t> deps{after};
  for (uint32_t i = first; i < plan.ops.size(); ++i) deps.push_back(i);
  return addJoin(plan, deps);
}

uint32_t addJoin(Plan& plan, const std::vector<uint32_t>& deps) {
  PlanOp join{.kind = OpKind::kCopy, .count = 0};
  for (uint32_t d : deps)
    if (d != kNone) join.deps.push_back(d);
  return plan.add(join);
}

uint32_t addCopy(Plan& plan, Slot dst, size_t dstOff, Slot src, size_t srcOff, size_t count) {
  return plan.add({.kind = OpKind::kCopy, .dst = {dst, dstOff}, .src = {src, srcOff}, .count = count});
}

}  // namespace tsr::algorithms::ring_detail
