#include "algorithms/dense/shm_board.h"

#include <new>

namespace tsr::algorithms {

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
