// ShmAllreduce: a small allreduce (1 B..kShmPayloadBytes), or a barrier (no data), among the
// ranks of one machine through the shared-memory board (shm_board.h) instead of messages:
// each rank copies its input into its slot, then, once every peer's slot holds the same
// collective, sums the slots in rank order (0, 1, ..., N-1) into its output. One write and
// N-1 reads per rank, no transport request, no tag matching, and every rank gets the same bits.
//
// The board's index k (this communicator's count of such allreduces so far) picks the slot
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

// A collective through the segment: the board carries allreduces and barriers, the stages
// (shm_staged_collective.h) also reduce_scatter, allgather and broadcast.
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

class ShmAllreduce final : public Task {
 public:
  // index: k above; id.seq: this collective's sequence number.
  ShmAllreduce(ShmBoard board, RunIdentity id, uint64_t index, ShmCollectiveArgs args);

  Status start() override { return progress(); }
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override { return true; }  // nothing in a transport
  int waitingOn() const override;
  std::string describe() const override { return args_.barrier ? "barrier" : "allreduce"; }

  static ShmCall callOf(const ShmCollectiveArgs& args);

 private:
  bool slotFree() const;
  void post();
  // Ok when `peer`'s slot holds this collective (seen), InProgress while it does not yet.
  Status look(int peer);
  Status mismatch(int peer, const ShmCall& theirs, const char* how) const;
  void finish();

  ShmBoard board_;
  RunIdentity id_;
  uint64_t index_;
  ShmCollectiveArgs args_;
  ShmCall call_;
  size_t bytes_;
  bool posted_ = false;
  int nextPeer_ = 0;  // peers below this one (in rank order) were seen
  Status status_{Code::kInProgress, ""};
};

}  // namespace tsr::algorithms
