// Executing a topology::Schedule inside a Plan (see schedule_phase.h for the rules).
#include "algorithms/dense/schedule_phase.h"

#include <algorithm>

#include "algorithms/dense/partition.h"
#include "algorithms/dense/ring_phases.h"
#include "transport/tag.h"

namespace tsr::algorithms {

using ring_detail::kNone;

namespace {

// A block gets at least this many chunks while they stay above kMinChunkBytes, so a big
// transfer's reduction overlaps its arrival (the ring's rule, ring_phases.cc).
constexpr size_t kMinChunks = 4;
constexpr size_t kMinChunkBytes = 64 * 1024;

size_t largestTransferBlocks(const topology::Schedule& s) {
  if (s.largestTransferBlocks > 0) return static_cast<size_t>(s.largestTransferBlocks);
  size_t most = 0;
  for (const auto& steps : s.steps)
    for (const auto& step : steps)
      for (const auto& t : step.sends) most = std::max<size_t>(most, t.numBlocks());
  return most;
}

size_t messageFloorBytes(const DenseOptions& options) { return std::min(options.chunkBytes, options.minMessageBytes); }

// One message of a transfer: a contiguous range of the work buffer and the block chunks
// (keys) it covers.
struct Message {
  Range range;
  std::vector<size_t> keys;
};

// A message covering several chunks meets the same writer or reader once per chunk.
void dedupe(std::vector<uint32_t>& deps) {
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
}

int positionOf(const SchedulePhase& phase, int rank) {
  if (phase.group.empty()) return rank < phase.schedule->numRanks ? rank : -1;
  auto it = std::find(phase.group.begin(), phase.group.end(), rank);
  return it == phase.group.end() ? -1 : static_cast<int>(it - phase.group.begin());
}

}  // namespace

Result<PhaseExtent> schedulePhaseExtent(const SchedulePhase& phase, size_t elemSize, const DenseOptions& options) {
  const topology::Schedule* s = phase.schedule;
  if (!s || s->numBlocks < 1) return Status(Code::kInternal, "schedule phase without a schedule or blocks");
  if (!phase.group.empty() && static_cast<int>(phase.group.size()) != s->numRanks)
    return Status(Code::kInternal, "schedule " + s->name + " has " + std::to_string(s->numRanks) +
                                       " ranks but its group " + std::to_string(phase.group.size()));
  PhaseExtent e;
  size_t blockElems = balancedPart(phase.count, s->numBlocks, 0).count;
  size_t chunkElems = std::max<size_t>(1, options.chunkBytes / elemSize);
  e.chunksPerBlock = std::max<size_t>(1, ceilDiv(blockElems, chunkElems));
  e.chunksPerBlock = std::max(e.chunksPerBlock, std::min(kMinChunks, blockElems * elemSize / kMinChunkBytes));
  size_t perTransfer = std::max<size_t>(1, largestTransferBlocks(*s));
  size_t steps = std::max(1, s->numSteps());
  size_t room = transport::kMaxMessageId - std::min<size_t>(phase.idBase, transport::kMaxMessageId);
  size_t fit = room / (steps * perTransfer);
  if (fit == 0)
    return Status(Code::kNotSupported,
                  "schedule " + s->name + ": " + std::to_string(steps) + " steps do not fit the message-id space");
  e.chunksPerBlock = std::min(e.chunksPerBlock, fit);
  e.messageIds = static_cast<uint32_t>(steps * perTransfer * e.chunksPerBlock);
  // A slot holds one message: a chunk, or chunks grouped while below the message floor (then
  // less than the floor plus one chunk, and no more than the largest transfer). Chunks differ
  // by one element, blocks too. Small collectives keep small slots (and the executor's scratch).
  size_t stagingElems = ceilDiv(blockElems, e.chunksPerBlock);
  const size_t smallestChunk = balancedPart(phase.count, s->numBlocks, s->numBlocks - 1).count / e.chunksPerBlock;
  if (smallestChunk * elemSize < messageFloorBytes(options))
    stagingElems = std::max(
        stagingElems, std::min(stagingElems + ceilDiv(messageFloorBytes(options), elemSize), perTransfer * blockElems));
  e.stagingBytes = static_cast<size_t>(std::max(1, options.window)) * stagingElems * elemSize;
  return e;
}

Result<uint32_t> addSchedulePhase(Plan& plan, int rank, const SchedulePhase& phase, uint32_t startDep,
                                  const DenseOptions& options) {
  const size_t esize = dataTypeSize(plan.dtype);
  TSR_ASSIGN_OR_RETURN(PhaseExtent extent, schedulePhaseExtent(phase, esize, options));
  const topology::Schedule& s = *phase.schedule;
  const int me = positionOf(phase, rank);
  if (me < 0) return Status(Code::kInternal, "rank " + std::to_string(rank) + " is not in schedule " + s.name);
  const uint32_t first = static_cast<uint32_t>(plan.ops.size());
  const int numBlocks = s.numBlocks;
  const size_t chunks = extent.chunksPerBlock;
  const size_t perTransfer = std::max<size_t>(1, largestTransferBlocks(s)) * chunks;
  const int window = std::max(1, options.window);
  const size_t slotBytes = extent.stagingBytes / window;
  auto peerRank = [&](int p) { return phase.group.empty() ? p : phase.group[p]; };
  auto chunkRange = [&](int b, size_t c) {
    Range block = balancedPart(phase.count, numBlocks, b);
    Range part = balancedPart(block.count, chunks, c);
    return Range{phase.base + block.offset + part.offset, part.count};
  };

  // A transfer's chunks in order, consecutive ones grouped while the message is below the floor
  // (the sender and the receiver see the same blocks, so they group alike).
  const size_t floorBytes = messageFloorBytes(options);
  auto messagesOf = [&](const topology::Transfer& t) {
    std::vector<Message> out;
    for (int b : topology::expandBlocks(t.blocks, numBlocks))
      for (size_t c = 0; c < chunks; ++c) {
        Range r = chunkRange(b, c);
        if (!r.count) continue;
        const size_t key = b * chunks + c;
        if (!out.empty()) {
          Range& last = out.back().range;
          if (last.count * esize < floorBytes && last.offset + last.count == r.offset) {
            last.count += r.count;
            out.back().keys.push_back(key);
            continue;
          }
        }
        out.push_back({r, {key}});
      }
    return out;
  };

  // Per block chunk: the op that last wrote it, and the sends reading it since.
  std::vector<uint32_t> lastWrite(numBlocks * chunks, startDep);
  std::vector<std::vector<uint32_t>> readers(numBlocks * chunks);
  std::vector<uint32_t> slotUser(window, kNone);
  size_t slotTurn = 0;
  auto writeDeps = [&](size_t key, std::vector<uint32_t>& deps) {
    if (lastWrite[key] != kNone) deps.push_back(lastWrite[key]);
    deps.insert(deps.end(), readers[key].begin(), readers[key].end());
    readers[key].clear();
  };

  for (int step = 0; step < s.numSteps(); ++step) {
    const topology::Step& st = s.steps[me][step];
    const uint32_t stepBase = phase.idBase + static_cast<uint32_t>(step * perTransfer);
    for (const topology::Transfer& t : st.sends) {
      uint32_t k = 0;
      for (const Message& m : messagesOf(t)) {
        PlanOp send{.kind = OpKind::kSend,
                    .peer = peerRank(t.peer),
                    .msgId = stepBase + k++,
                    .src = {phase.work, m.range.offset * esize},
                    .count = m.range.count};
        for (size_t key : m.keys)
          if (lastWrite[key] != kNone) send.deps.push_back(lastWrite[key]);
        dedupe(send.deps);
        const uint32_t op = plan.add(send);
        for (size_t key : m.keys) readers[key].push_back(op);
      }
    }
    for (const topology::Transfer& t : st.recvs) {
      uint32_t k = 0;
      for (const Message& m : messagesOf(t)) {
        BufferRef dst{phase.work, m.range.offset * esize};
        PlanOp recv{.kind = OpKind::kRecv, .peer = peerRank(t.peer), .msgId = stepBase + k++, .count = m.range.count};
        if (t.combine == topology::Combine::kCopy) {
          recv.dst = dst;
          for (size_t key : m.keys) writeDeps(key, recv.deps);
          dedupe(recv.deps);
          const uint32_t op = plan.add(recv);
          for (size_t key : m.keys) lastWrite[key] = op;
          continue;
        }
        // Reduce: land in a staging slot (free once the reduce that last read it is done),
        // then add into the chunks once their earlier writers and readers are done.
        size_t slot = slotTurn++ % window;
        BufferRef staging{Slot::kScratch, phase.stagingBase + slot * slotBytes};
        recv.dst = staging;
        if (slotUser[slot] != kNone) recv.deps.push_back(slotUser[slot]);
        if (startDep != kNone) recv.deps.push_back(startDep);
        uint32_t got = plan.add(recv);
        PlanOp reduce{.kind = OpKind::kReduce, .dst = dst, .src = staging, .count = m.range.count, .deps = {got}};
        for (size_t key : m.keys) writeDeps(key, reduce.deps);
        dedupe(reduce.deps);
        const uint32_t op = plan.add(reduce);
        for (size_t key : m.keys) lastWrite[key] = op;
        slotUser[slot] = op;
      }
    }
  }
  return ring_detail::addPhaseEnd(plan, first, startDep);
}

}  // namespace tsr::algorithms
