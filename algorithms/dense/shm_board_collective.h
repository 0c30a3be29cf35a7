// ShmBoardCollective: a small collective, or a barrier (no data), among the ranks of one
// machine through the shared-memory board (shm_board.h) instead of messages: each rank copies
// what it contributes into its slot, then, once the peers' slots hold the same collective,
// reads what it needs from them. One write and at most N-1 reads per rank, no transport
// request, no tag matching. What a rank posts (payloadBytes, at most kShmPayloadBytes):
//   allreduce       its input; sums every slot in rank order (0, 1, ..., N-1), so every rank
//                   gets the same bits.
//   reduce_scatter  its whole input (N blocks); reduces block `rank` of every slot.
//   allgather       its input; copies slot r into block r.
//   broadcast       the root its input, the others only the header; the others wait only
//                   for the root's slot, the root checks every peer's header.
//
// The board's index k (this communicator's count of board collectives so far) picks the slot
// (k % 2); the communicator's sequence number identifies the content, so a stale or foreign
// slot is never taken. A peer whose slot shows other arguments, or whose announcement shows
// it ran this sequence number another way, is named (TSR_ERR_MISMATCH) with both calls.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/dense/shm_board.h"
#include "algorithms/plan/plan.h"
#include "algorithms/plan/task.h"
#include "base/dtype.h"

namespace tsr::algorithms {

// A collective through the segment: on the board when its payload fits a slot, else in the
// stages (shm_staged_collective.h).
struct ShmCollectiveArgs {
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;  // reduce_scatter: output elements; allgather: input elements
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  bool barrier = false;  // a barrier: count 0, no data
  CollectiveKind collective = CollectiveKind::kAllreduce;
  int root = -1;  // broadcast
};

class ShmBoardCollective final : public Task {
 public:
  // index: k above; id.seq: this collective's sequence number.
  ShmBoardCollective(ShmBoard board, RunIdentity id, uint64_t index, ShmCollectiveArgs args);

  Status start() override { return progress(); }
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override { return true; }  // nothing in a transport
  int waitingOn() const override;
  std::string describe() const override;

  static ShmCall callOf(const ShmCollectiveArgs& args);
  // Bytes `rank` copies into its slot for this call (size: the communicator's).
  static size_t payloadBytes(const ShmCollectiveArgs& args, int size, int rank);
  // Whether the board carries this call: every rank's payload fits a slot.
  static bool fits(const ShmCollectiveArgs& args, int size);

 private:
  bool slotFree() const;
  void post();
  // Ok when `peer`'s slot holds this collective (seen), InProgress while it does not yet.
  Status look(int peer);
  bool needs(int peer) const;  // whether this rank waits for `peer`'s slot
  Status mismatch(int peer, const ShmCall& theirs, const char* how) const;
  void deliver();  // reads the slots into the output
  void finish();

  ShmBoard board_;
  RunIdentity id_;
  uint64_t index_;
  ShmCollectiveArgs args_;
  ShmCall call_;
  size_t bytes_;  // this rank's payload
  bool posted_ = false;
  int nextPeer_ = 0;  // peers below this one (in rank order) were seen
  Status status_{Code::kInProgress, ""};
};

}  // namespace tsr::algorithms
