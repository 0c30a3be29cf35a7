// ShmStagedAllreduce: a large allreduce among the ranks of one machine through the
// shared-memory stages (shm_staging.h) instead of messages. The input goes in chunks of up to
// kShmStageBytes; for each chunk every rank
//   1. copies its chunk into its stage (posted),
//   2. once every rank has posted, reduces its 1/N slice of the chunk from all N stages in
//      rank order (0, 1, ..., N-1), writes it to its output and back into its own stage
//      (reduced; only this rank reads that slice of its stage),
//   3. copies every peer's reduced slice out of the peer's stage into its output (gathered).
// Per byte that is one copy in, one read for the reduction and one copy out, with only
// counters to wait on: no transport request, no tag matching, no per-step hand-off. The next
// chunk is posted while peers still reduce this one (two stages), and every rank gets the
// same bits. Host memory only; output may alias input.
//
// A peer whose chunk header shows another collective, or whose announcement shows it ran
// this sequence number another way, is named (TSR_ERR_MISMATCH) with both calls.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/dense/shm_allreduce.h"
#include "algorithms/dense/shm_staging.h"

namespace tsr::algorithms {

class ShmStagedAllreduce final : public Task {
 public:
  // How many tickets (chunks) an allreduce of these arguments takes: the communicator gives
  // each allreduce the next range, in its order of submission.
  static uint64_t chunksFor(size_t count, DataType dtype);
  // What `rank` writes into its stages for its peers: its input and its reduced slices (the
  // communicator counts it as sent, as the ring's messages are).
  static uint64_t bytesPublished(size_t count, DataType dtype, int rank, int size);

  // firstTicket: the first of this allreduce's chunksFor() tickets; id.seq: its sequence number.
  ShmStagedAllreduce(ShmStaging staging, ShmBoard board, RunIdentity id, uint64_t firstTicket,
                     ShmAllreduceArgs args);

  Status start() override { return progress(); }
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override { return true; }  // nothing in a transport
  int waitingOn() const override;
  std::string describe() const override { return "allreduce"; }

 private:
  struct Slice {
    size_t first, count;  // elements, from the start of the buffer
  };
  Slice chunkSlice(uint64_t chunk, int rank) const { return sliceOf(args_.count, chunkCount_, staging_.size(), chunk, rank); }
  static Slice sliceOf(size_t count, size_t chunkCount, int size, uint64_t chunk, int rank);
  // The first peer whose `counter` is below `need`, or -1 when none is.
  int firstPeerBelow(ShmCounter ShmStagingArea::*counter, uint64_t need) const;
  bool stageFree(uint64_t ticket) const;
  void post(uint64_t chunk);
  Status checkPeersPosted(uint64_t chunk);  // Ok: all posted this chunk; InProgress: not yet
  void reduce(uint64_t chunk);
  bool gather(uint64_t chunk);  // true once every peer's slice is copied out
  Status notPosted(int peer) const;

  ShmStaging staging_;
  ShmBoard board_;  // for the peers' announcements
  RunIdentity id_;
  uint64_t first_;
  ShmAllreduceArgs args_;
  ShmCall call_;
  size_t esize_, chunkCount_;  // element size; elements per chunk
  uint64_t chunks_;
  uint64_t posted_ = 0, reduced_ = 0, gathered_ = 0;  // this rank's chunks through each phase
  int nextGatherPeer_ = 0;  // of the chunk being gathered: peers below were copied out
  Status status_{Code::kInProgress, ""};
};

}  // namespace tsr::algorithms
