#include "algorithms/dense/shm_board.h"

#include <new>

#include "algorithms/plan/plan.h"

namespace tsr::algorithms {

const char* shmRouteDescription(ShmRoute route) {
  switch (route) {
    case ShmRoute::kBoard:
      return "ran it through the shared-memory board";
    case ShmRoute::kPlan:
      return "ran it as messages";
    case ShmRoute::kStaged:
      return "ran it through the shared-memory stages";
    case ShmRoute::kTask:
      return "ran a custom collective";
    case ShmRoute::kNone:
      break;
  }
  return "ran something else";
}

std::string describeShmCall(const ShmCall& c) {
  return describeCall(c.collective, c.count, static_cast<DataType>(c.dtype), static_cast<ReduceOp>(c.op), c.root);
}

const char* firstShmDifference(const ShmCall& a, const ShmCall& b) {
  if (a.collective != b.collective) return "collective";
  if (a.count != b.count) return "count";
  if (a.dtype != b.dtype) return "dtype";
  if (a.op != b.op) return "op";
  if (a.root != b.root) return "root";
  return nullptr;
}

Status shmMismatch(int rank, int peer, uint32_t seq, const ShmCall& mine, const ShmCall& theirs, const char* how) {
  std::string where = " (collective #" + std::to_string(seq) + ")";
  if (const char* field = firstShmDifference(mine, theirs))
    return Status(Code::kMismatch, std::string(field) + " differs: rank " + std::to_string(rank) + " called " +
                                       describeShmCall(mine) + " but rank " + std::to_string(peer) + " called " +
                                       describeShmCall(theirs) + where);
  return Status(Code::kMismatch, "rank " + std::to_string(rank) + " ran " + describeShmCall(mine) +
                                     " through shared memory but rank " + std::to_string(peer) + " " + how + where +
                                     " (is TSR_ALGO set differently?)");
}

void ShmBoard::format(void* memory, int size) {
  auto* areas = static_cast<ShmRankArea*>(memory);
  for (int r = 0; r < size; ++r) new (&areas[r]) ShmRankArea();
}

void ShmBoard::announce(int rank, uint64_t seq, ShmRoute route, const ShmCall& call) const {
  ShmAnnounce& a = areas_[rank].ring[seq % kShmAnnounceRing];
  // Readers check seq before and after reading the fields (announced()), so mark the entry
  // as being rewritten first.
  a.seq.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  a.route = route;
  a.call = call;
  a.seq.store(seq + 1, std::memory_order_release);
}

bool ShmBoard::announced(int rank, uint64_t seq, ShmRoute* route, ShmCall* call) const {
  const ShmAnnounce& a = areas_[rank].ring[seq % kShmAnnounceRing];
  if (a.seq.load(std::memory_order_acquire) != seq + 1) return false;
  *route = a.route;
  *call = a.call;
  std::atomic_thread_fence(std::memory_order_acquire);
  return a.seq.load(std::memory_order_relaxed) == seq + 1;
}

}  // namespace tsr::algorithms
