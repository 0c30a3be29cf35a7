// ShmStagedLayout: where each element of a staged collective goes, chunk by chunk (pure logic:
// no memory is touched). A chunk fills at most one stage (kShmStageBytes) of each rank and
// passes three phases (shm_staged_collective.h): each rank posts pieces of its input into its
// stage, reduces one slice from all N stages, then gathers pieces of the stages into its
// output. Offsets and counts are in elements.
//
//   allreduce       count elements. Chunk c is elements [cE, cE + n) (E: elements per stage);
//                   rank r reduces the r-th of N slices of it into its output and back into
//                   its stage, then gathers every peer's reduced slice.
//   reduce_scatter  count = elements per rank (output). Chunk c is elements [cK, cK + k) of
//                   every rank's block (K = E / N): rank r's stage holds block 0's piece, then
//                   block 1's, ...; rank r reduces block r's piece from all N stages. No gather.
//   allgather       count = elements per rank (input). Chunk c is elements [cE, cE + n) of
//                   each rank's input; everyone gathers every stage (its own too) into block r.
//   broadcast       count elements; only the root posts; everyone (the root too) gathers the
//                   root's stage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/plan/plan.h"
#include "base/dtype.h"

namespace tsr::algorithms {

struct ShmPiece {
  size_t stage = 0;   // offset in a stage
  size_t buffer = 0;  // offset in the input (post) or the output (reduce, gather)
  size_t count = 0;   // 0: nothing to copy
};

class ShmStagedLayout {
 public:
  // Whether the stages can carry this collective (reduce_scatter needs a piece of every
  // block in one stage: N <= elements per stage).
  static bool serves(CollectiveKind kind, DataType dtype, int size);

  ShmStagedLayout(CollectiveKind kind, size_t count, DataType dtype, int size, int root);

  CollectiveKind kind() const { return kind_; }
  uint64_t chunks() const { return chunks_; }
  // Input pieces `rank` copies into its stage for `chunk`: piece i < posts(rank) of them.
  int posts(int rank) const;
  ShmPiece post(uint64_t chunk, int rank, int i) const;
  // The slice `rank` reduces from every stage (count 0: none), and whether it is written back
  // into its own stage for the peers to gather.
  ShmPiece reduce(uint64_t chunk, int rank) const;
  bool writesBack() const { return kind_ == CollectiveKind::kAllreduce; }
  // What `rank` copies out of `peer`'s stage (peer may be `rank`) into its output.
  ShmPiece gather(uint64_t chunk, int rank, int peer) const;
  // Whether `rank` waits for `peer`'s post of a chunk before its reduction, and checks the
  // peer called the same: every peer, in a broadcast too (where the others read only the
  // root's stage), so a rank that named another root is named on every rank.
  bool waitsForPost(int rank, int peer) const { return rank != peer; }
  // Whether a gather waits for the peer's reduction (allreduce) or only for its post.
  bool gathersReduced() const { return kind_ == CollectiveKind::kAllreduce; }
  // Bytes `rank` writes into its stages for its peers to read.
  uint64_t bytesPublished(int rank) const;

 private:
  size_t chunkLength(uint64_t chunk) const;  // elements of one rank's piece in this chunk

  CollectiveKind kind_;
  size_t count_, esize_, perChunk_;  // perChunk_: E, or K for reduce_scatter
  int size_, root_;
  uint64_t chunks_;
};

}  // namespace tsr::algorithms
