// ShmStagedCollective: a large allreduce, reduce_scatter, allgather or broadcast among the
// ranks of one machine through the shared-memory stages (shm_staging.h) instead of messages.
// The data goes in chunks of up to one stage (kShmStageBytes per rank; where each element
// goes is ShmStagedLayout's business); for each chunk every rank
//   1. copies its pieces of the input into its stage (posted),
//   2. once every rank has posted, reduces its slice from all N stages in rank order
//      (0, 1, ..., N-1) into its output (allreduce: also back into its own stage, for the
//      peers; allgather and broadcast reduce nothing) (reduced),
//   3. copies the peers' pieces out of their stages into its output (gathered).
// Per byte that is one copy in, one read for the reduction and one copy out, with only
// counters to wait on: no transport request, no tag matching, no per-step hand-off. The next
// chunk is posted while peers still reduce this one (two stages), and every rank gets the
// same bits. Host memory only; the output may alias the input (reduce_scatter: the input's
// block of this rank; allgather: the output's).
//
// A peer whose chunk header shows another collective, or whose announcement shows it ran
// this sequence number another way, is named (TSR_ERR_MISMATCH) with both calls.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/dense/shm_board_collective.h"
#include "algorithms/dense/shm_staged_layout.h"
#include "algorithms/dense/shm_staging.h"

namespace tsr::algorithms {

class ShmStagedCollective final : public Task {
 public:
  static ShmStagedLayout layoutOf(const ShmCollectiveArgs& args, int size) {
    return ShmStagedLayout(args.collective, args.count, args.dtype, size, args.root);
  }

  // firstTicket: the first of this collective's layoutOf().chunks() tickets (the communicator
  // gives each staged collective the next range, in its order of submission); id.seq: its
  // sequence number.
  ShmStagedCollective(ShmStaging staging, ShmBoard board, RunIdentity id, uint64_t firstTicket, ShmCollectiveArgs args);

  Status start() override { return progress(); }
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override { return true; }  // nothing in a transport
  int waitingOn() const override;
  std::string describe() const override { return collectiveName(args_.collective); }

 private:
  // The first peer whose `counter` is below `need`, or -1 when none is.
  int firstPeerBelow(ShmCounter ShmStagingArea::*counter, uint64_t need) const;
  bool stageFree(uint64_t ticket) const;
  void post(uint64_t chunk);
  Status checkPeersPosted(uint64_t chunk);  // Ok: all posted this chunk; InProgress: not yet
  void reduce(uint64_t chunk);
  bool gather(uint64_t chunk);  // true once every peer's piece is copied out
  // Whether copying this rank's own stage piece `p` out would only write bytes back where they
  // were posted from (a root broadcasting in place, an all-gather in place).
  bool backInPlace(uint64_t chunk, const ShmPiece& p) const;
  Status notPosted(int peer) const;

  ShmStaging staging_;
  ShmBoard board_;  // for the peers' announcements
  RunIdentity id_;
  uint64_t first_;
  ShmCollectiveArgs args_;
  ShmStagedLayout layout_;
  ShmCall call_;
  size_t esize_;
  uint64_t chunks_;
  uint64_t posted_ = 0, reduced_ = 0, gathered_ = 0;  // this rank's chunks through each phase
  int nextGatherPeer_ = 0;                            // of the chunk being gathered: peers below were copied out
  Status status_{Code::kInProgress, ""};
};

}  // namespace tsr::algorithms
