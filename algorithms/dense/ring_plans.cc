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
#include "transport/tag.h"

namespace tsr::algorithms {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

struct RingView {
  int size;
  int pos;
  int left;
  int right;
  std::vector<int> order;
  int blockOwner(int q) const { return order[((q % size) + size) % size]; }
};

Result<RingView> makeRing(int rank, int size, const std::vector<int>& order) {
  RingView v{size, 0, 0, 0, order};
  if (v.order.empty())
    for (int i = 0; i < size; ++i) v.order.push_back(i);
  if (static_cast<int>(v.order.size()) != size)
    return Status(Code::kInvalidArgument, "ring order has " + std::to_string(v.order.size()) +
                                              " entries for " + std::to_string(size) + " ranks");
  auto it = std::find(v.order.begin(), v.order.end(), rank);
  if (it == v.order.end())
    return Status(Code::kInvalidArgument, "rank " + std::to_string(rank) + " is not in the ring order");
  v.pos = static_cast<int>(it - v.order.begin());
  v.left = v.order[(v.pos + size - 1) % size];
  v.right = v.order[(v.pos + 1) % size];
  return v;
}

// Chunks per block: the same C for every block, sized so message ids fit the tag. Chunks are
// at most chunkBytes, and a block gets at least kMinChunks of them while they stay above
// kMinChunkBytes: a ring pipelines only once several chunks are in flight (4 MiB over 4 ranks
// on 1 Gbit/s: 2 chunks of 512 KiB per block ran at 1.14x the floor, 8 of 128 KiB at 1.06x).
constexpr size_t kMinChunks = 8;
constexpr size_t kMinChunkBytes = 64 * 1024;

size_t chunksPerBlock(size_t maxBlock, size_t elemSize, size_t chunkBytes, int size) {
  size_t chunkElems = std::max<size_t>(1, chunkBytes / elemSize);
  size_t c = std::max<size_t>(1, ceilDiv(maxBlock, chunkElems));
  size_t byBytes = maxBlock * elemSize / kMinChunkBytes;
  c = std::max(c, std::min(kMinChunks, byBytes));
  size_t limit = transport::kMaxMessageId / (2 * static_cast<size_t>(size));
  return std::min(c, std::max<size_t>(1, limit));
}

struct Layout {
  size_t count;        // elements in the whole (work) buffer
  size_t esize;
  size_t chunks;
  Range chunk(const RingView& ring, int q, size_t c) const {
    Range block = balancedPart(count, ring.size, ring.blockOwner(q));
    Range part = balancedPart(block.count, chunks, c);
    return {block.offset + part.offset, part.count};
  }
};

// Adds the reduce-scatter phase over `work` (Slot + byte base). Returns, per chunk, the op
// that completes this rank's own block chunk (kNone when nothing had to be done).
std::vector<uint32_t> addReduceScatter(Plan& plan, const RingView& ring, const Layout& L,
                                       Slot work, uint32_t startDep, size_t stagingBase,
                                       int window, size_t stagingElems) {
  std::vector<uint32_t> lastRecv(L.chunks, kNone);
  std::vector<uint32_t> stagingUser(window, kNone);
  size_t slotTurn = 0;
  for (int k = 0; k + 1 < ring.size; ++k) {
    for (size_t c = 0; c < L.chunks; ++c) {
      Range out = L.chunk(ring, ring.pos - 1 - k, c);
      Range in = L.chunk(ring, ring.pos - 2 - k, c);
      uint32_t id = static_cast<uint32_t>(k * L.chunks + c);
      if (out.count) {
        PlanOp send{.kind = OpKind::kSend, .peer = ring.right, .msgId = id,
                    .src = {work, out.offset * L.esize}, .count = out.count};
        uint32_t dep = k == 0 ? startDep : lastRecv[c];
        if (dep != kNone) send.deps.push_back(dep);
        plan.add(send);
      }
      if (in.count) {
        size_t slot = slotTurn++ % window;
        PlanOp recv{.kind = OpKind::kRecvReduce, .peer = ring.left, .msgId = id,
                    .dst = {work, in.offset * L.esize},
                    .staging = {Slot::kScratch, stagingBase + slot * stagingElems * L.esize},
                    .count = in.count};
        if (startDep != kNone) recv.deps.push_back(startDep);
        if (stagingUser[slot] != kNone) recv.deps.push_back(stagingUser[slot]);
        stagingUser[slot] = lastRecv[c] = plan.add(recv);
      }
    }
  }
  return lastRecv;
}

size_t maxChunkElems(const Layout& L, int size) {
  size_t maxBlock = balancedPart(L.count, size, 0).count;
  return ceilDiv(maxBlock, L.chunks);
}

uint32_t addCopy(Plan& plan, Slot dst, size_t dstOff, Slot src, size_t srcOff, size_t count) {
  return plan.add({.kind = OpKind::kCopy, .dst = {dst, dstOff}, .src = {src, srcOff}, .count = count});
}

}  // namespace

Result<std::shared_ptr<Plan>> ringAllreducePlan(int rank, int size, size_t count, DataType dtype,
                                                ReduceOp op, const DenseOptions& options) {
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
    Layout L{count, esize, 0};
    L.chunks = chunksPerBlock(balancedPart(count, size, 0).count, esize, options.chunkBytes, size);
    size_t stagingElems = maxChunkElems(L, size);
    int window = std::max(1, options.window);
    plan->scratchBytes = window * stagingElems * esize;
    auto own = addReduceScatter(*plan, ring, L, Slot::kOutput, copy, 0, window, stagingElems);
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
        PlanOp div{.kind = OpKind::kDivide, .dst = {Slot::kOutput, mine.offset * esize},
                   .count = mine.count, .divisor = static_cast<uint64_t>(size)};
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
          PlanOp send{.kind = OpKind::kSend, .peer = ring.right, .msgId = id,
                      .src = {Slot::kOutput, out.offset * esize}, .count = out.count};
          if (prev[c] != kNone) send.deps.push_back(prev[c]);
          plan->add(send);
        }
        if (in.count) {
          PlanOp recv{.kind = OpKind::kRecv, .peer = ring.left, .msgId = id,
                      .dst = {Slot::kOutput, in.offset * esize}, .count = in.count};
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

Result<std::shared_ptr<Plan>> ringReduceScatterPlan(int rank, int size, size_t count,
                                                    DataType dtype, ReduceOp op,
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
  Layout L{total, esize, chunksPerBlock(count, esize, options.chunkBytes, size)};
  size_t stagingElems = size > 1 ? maxChunkElems(L, size) : 0;
  int window = std::max(1, options.window);
  size_t workBytes = total * esize;
  plan->scratchBytes = workBytes + window * stagingElems * esize;
  uint32_t copy = addCopy(*plan, Slot::kScratch, 0, Slot::kInput, 0, total);
  auto own = addReduceScatter(*plan, ring, L, Slot::kScratch, copy, workBytes, window, stagingElems);
  std::vector<uint32_t> deps;
  for (uint32_t d : own)
    if (d != kNone) deps.push_back(d);
  deps.push_back(copy);
  PlanOp out{.kind = OpKind::kCopy, .dst = {Slot::kOutput, 0},
             .src = {Slot::kScratch, static_cast<size_t>(rank) * count * esize}, .count = count,
             .deps = deps};
  uint32_t last = plan->add(out);
  if (op == ReduceOp::kAvg && size > 1 && count)
    plan->add({.kind = OpKind::kDivide, .dst = {Slot::kOutput, 0}, .count = count,
               .divisor = static_cast<uint64_t>(size), .deps = {last}});
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
  Layout L{count * size, esize, chunksPerBlock(count, esize, options.chunkBytes, size)};
  uint32_t copy = addCopy(*plan, Slot::kOutput, static_cast<size_t>(rank) * count * esize,
                          Slot::kInput, 0, count);
  std::vector<uint32_t> prev(L.chunks, copy);
  for (int k = 0; k + 1 < size && count; ++k) {
    for (size_t c = 0; c < L.chunks; ++c) {
      Range out = L.chunk(ring, ring.pos - k, c);
      Range in = L.chunk(ring, ring.pos - 1 - k, c);
      uint32_t id = static_cast<uint32_t>(k * L.chunks + c);
      if (out.count) {
        PlanOp send{.kind = OpKind::kSend, .peer = ring.right, .msgId = id,
                    .src = {Slot::kOutput, out.offset * esize}, .count = out.count};
        if (prev[c] != kNone) send.deps.push_back(prev[c]);
        plan->add(send);
      }
      prev[c] = kNone;
      if (in.count)
        prev[c] = plan->add({.kind = OpKind::kRecv, .peer = ring.left, .msgId = id,
                             .dst = {Slot::kOutput, in.offset * esize}, .count = in.count});
    }
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace tsr::algorithms
