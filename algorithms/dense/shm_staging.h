// ShmStaging: the part of a one-machine communicator's shared-memory segment where large
// allreduces, and reduce-scatters, all-gathers and broadcasts, meet (shm_staged_collective.h), as Open MPI's coll/sm
// and UCC's tl/shm do. Like ShmBoard it is only a layout over memory, so tests can lay it over plain memory.
//
// Every rank has two stage buffers of kShmStageBytes, used alternately by consecutive chunks
// (a chunk's "ticket" counts the communicator's staged chunks so far; ticket t uses stage
// t % 2), a header per stage naming what the chunk belongs to, and three counters, each the
// number of tickets this rank has taken through a phase:
//  * posted:   its pieces of the chunk's input are in its stage;
//  * reduced:  its slice of the chunk is reduced (an allreduce's also back into its stage);
//  * gathered: it has copied out what it needs from every stage, so its peers' stages of
//              that ticket are free for ticket + 2.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "algorithms/dense/shm_board.h"

namespace tsr::algorithms {

// 256 KiB: two stages of every rank stay in the last-level cache (docs/performance.md, "One
// host: allreduce", says why).
constexpr size_t kShmStageBytes = 256 * 1024;

struct alignas(64) ShmCounter {
  std::atomic<uint64_t> value{0};
};

struct alignas(64) ShmStageHeader {
  uint64_t ticket = 0;
  uint32_t seq = 0;  // the collective's sequence number
  ShmCall call;
};

struct alignas(64) ShmStagingArea {
  ShmCounter posted, reduced, gathered;
  ShmStageHeader headers[2];  // written before `posted` is raised
};

class ShmStaging {
 public:
  static size_t bytesFor(int size);
  // Constructs the layout in fresh memory of bytesFor(size) bytes, 64-byte aligned.
  static void format(void* memory, int size);

  ShmStaging() = default;
  ShmStaging(void* memory, int size) : base_(static_cast<unsigned char*>(memory)), size_(size) {}
  int size() const { return size_; }
  ShmStagingArea& area(int rank) const { return reinterpret_cast<ShmStagingArea*>(base_)[rank]; }
  unsigned char* stage(int rank, uint64_t ticket) const;

 private:
  static size_t areasBytes(int size);
  unsigned char* base_ = nullptr;
  int size_ = 0;
};

}  // namespace tsr::algorithms
