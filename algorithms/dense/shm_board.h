// ShmBoard: the layout of a one-machine communicator's shared-memory segment, where small
// collectives meet without messages (shm_board_collective.h), as Open MPI's coll/sm and UCC's tl/shm
// do. The segment itself (POSIX shm) is runtime/shm_segment.h; this is only its layout, so
// tests can lay it over plain memory.
//
// Per rank, 64-byte aligned so ranks never share a cache line:
//  * done: how many board collectives this rank has finished;
//  * two payload slots, used alternately: a rank posts board collective k into slot k % 2 once every
//    peer has finished k - 2 (done >= k - 1), so it can post the next while slow peers still
//    read the last;
//  * a ring of announcements: which collective each sequence number is and by which route
//    (written when the rank submits it), so a rank waiting on a peer that called something
//    else (another count that took a UCX plan, another collective) names it rather than waits.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <string>

#include "base/dtype.h"
#include "base/status.h"

namespace tsr::algorithms {

// The most a rank posts on the board: up to here one write and N-1 reads beat messages
// (docs/performance.md, "One host: small-message latency").
constexpr size_t kShmPayloadBytes = 4096;
constexpr size_t kShmAnnounceRing = 64;

// How a rank runs a sequence number (ShmAnnounce::route).
enum class ShmRoute : uint8_t { kNone = 0, kBoard = 1, kPlan = 2, kTask = 3, kStaged = 4 };

// How a peer ran a collective, for mismatch messages: "ran it as messages", ...
const char* shmRouteDescription(ShmRoute route);

struct ShmCall {           // what a rank called: a collective's arguments
  uint8_t collective = 0;  // CollectiveKind
  uint8_t dtype = 0;
  uint8_t op = 0;
  uint64_t count = 0;
  int32_t root = -1;  // broadcast's root, else -1
};

struct alignas(64) ShmSlot {
  std::atomic<uint64_t> seq{0};  // the content's sequence number + 1 (0: never written)
  ShmCall call;
  alignas(64) unsigned char payload[kShmPayloadBytes];
};

struct ShmAnnounce {
  std::atomic<uint64_t> seq{0};  // sequence number + 1; written last
  ShmRoute route = ShmRoute::kNone;
  ShmCall call;
};

struct alignas(64) ShmRankArea {
  std::atomic<uint64_t> done{0};
  ShmSlot slots[2];
  alignas(64) ShmAnnounce ring[kShmAnnounceRing];
};

// "allreduce(count=8, dtype=f32, op=sum)"
std::string describeShmCall(const ShmCall& call);
// The first field in which two calls differ ("count", ...), or nullptr when they agree.
const char* firstShmDifference(const ShmCall& a, const ShmCall& b);
// TSR_ERR_MISMATCH naming both ranks' calls of collective #seq: the field that differs, or
// (same arguments) how the peer ran it (shmRouteDescription).
Status shmMismatch(int rank, int peer, uint32_t seq, const ShmCall& mine, const ShmCall& theirs, const char* how);

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the board's counters live in shared memory");

class ShmBoard {
 public:
  static size_t bytesFor(int size) { return sizeof(ShmRankArea) * static_cast<size_t>(size); }
  // Constructs the layout in fresh memory of bytesFor(size) bytes (by the segment's creator).
  static void format(void* memory, int size);

  ShmBoard() = default;
  ShmBoard(void* memory, int size) : areas_(static_cast<ShmRankArea*>(memory)), size_(size) {}
  int size() const { return size_; }
  ShmRankArea& area(int rank) const { return areas_[rank]; }

  // Records that `rank` runs sequence number `seq` as `call` by `route`.
  void announce(int rank, uint64_t seq, ShmRoute route, const ShmCall& call) const;
  // What `rank` announced for `seq`, if it has (false: not yet, as far as the ring tells).
  bool announced(int rank, uint64_t seq, ShmRoute* route, ShmCall* call) const;

 private:
  ShmRankArea* areas_ = nullptr;
  int size_ = 0;
};

}  // namespace tsr::algorithms
