// tsr-soak's plan: the communicators it runs on (a forced TSR_ALGO and a host layout each),
// which of them serves which collective, and the seeded sequence of operations that every rank
// draws alike. Pure: no I/O, no communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tsr::tools::soak {

enum class Collective { kAllreduce, kAllgather, kReduceScatter, kBroadcast, kBarrier };
inline constexpr Collective kAllCollectives[] = {Collective::kAllreduce, Collective::kAllgather,
                                                 Collective::kReduceScatter, Collective::kBroadcast,
                                                 Collective::kBarrier};
const char* collectiveName(Collective c);  // "allreduce", "allgather", "reduce_scatter", ...

// One communicator of the soak. `algo` is its TSR_ALGO; ranksPerHost > 0 makes each group of
// that many consecutive ranks act as its own host (TSR_TEST_HOST_ID), 0 keeps every rank on
// this host. `serves` lists the collectives drawn on it: those `algo` forces, so every
// operation runs the algorithm it was drawn with.
struct Setup {
  std::string name;
  std::string algo;
  int ranksPerHost = 0;
  std::vector<Collective> serves;
  bool servesCollective(Collective c) const;
  std::string describe(int size) const;  // "torus: TSR_ALGO=torus, 2 hosts of 2 ranks"
};

// Every setup that fits N ranks: shm (the one-host segment), ring, rabenseifner, doubling and
// bruck on one host; torus and hier on equal fake hosts of 2 or more ranks (when N has such a
// split); ring-hosts: the ring with every rank its own host (reducing on arrival).
std::vector<Setup> defaultSetups(int size);
// "all", or a comma-separated list of names from defaultSetups(size); errors name the unknown
// name and list the known ones.
Result<std::vector<Setup>> selectSetups(int size, const std::string& names);

// One operation of the sequence. count: elements of the buffer (allreduce, broadcast) or of
// each rank's block (allgather, reduce_scatter); 0 for the barrier.
struct Op {
  uint64_t index = 0;
  Collective collective = Collective::kBarrier;
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;  // allreduce, reduce_scatter
  size_t count = 0;
  int root = 0;          // broadcast
  bool inPlace = false;  // allreduce, broadcast: output == input
  int setup = 0;         // index into the setups
  uint32_t salt = 0;     // keys the operation's input values
};

// Elements of a rank's input and output buffers.
size_t inputCount(const Op& op, int size);
size_t outputCount(const Op& op, int size);
// Bytes of the larger of the two buffers (what --max-bytes bounds).
size_t largestBufferBytes(const Op& op, int size);
// "allreduce f16 sum count 1234 root - in-place" style, for reports.
std::string describeOp(const Op& op);

// The seeded sequence, in bursts of 1..maxInFlight operations (posted together, then waited
// in order). Integer arithmetic only (SplitMix64), so ranks on different machines draw alike.
// Collectives: allreduce 35%, allgather 20%, reduce_scatter 20%, broadcast 15%, barrier 10%
// (among those some setup serves); dtype and op uniform; the setup uniform among those that
// serve the collective; sizes: 1 in 32 empty, else a bit length uniform up to the largest count
// that fits maxBytes, then uniform within it (log-uniform: most small, some up to maxBytes).
class OpGenerator {
 public:
  OpGenerator(uint64_t seed, int size, size_t maxBytes, int maxInFlight, std::vector<Setup> setups);
  // The next burst, at most `limit` operations long (the tail of a run).
  std::vector<Op> nextBurst(uint64_t limit);
  Op next();
  uint64_t drawn() const { return index_; }

 private:
  uint64_t random();
  uint64_t below(uint64_t n);  // uniform in [0, n)
  size_t drawCount(size_t maxCount);

  uint64_t state_;
  int size_;
  size_t maxBytes_;
  int maxInFlight_;
  std::vector<Setup> setups_;
  uint64_t index_ = 0;
};

}  // namespace tsr::tools::soak
