// SelSync over a communicator: per step, decide together whether to synchronize, and if so
// average the model's buckets in one fused allreduce (the SelSync paper; docs/compressed.md).
//
// Each rank passes its squared gradient norm; the decision is an allreduce of ceil(N/64)
// words in which rank r sets only bit r (so the sum is the bitwise OR: N bits on the wire, no
// rank decides for the others), then every rank sees the same bits and takes the same
// decision. The same allreduce carries as many words of ranks that could not take part (bad
// buckets, a norm that is not a finite non-negative number) and a count per status code
// (selsync_logic.h exchangeWords), so such a step fails on every rank at once. Synchronizing averages every bucket
// (parameters or gradients, as the trainer chose) in one allreduce over a fused copy of the buckets.
//
// memory=cuda: the buckets are CUDA device memory. A local step touches them not at all; a
// synchronized one copies them into one pinned host buffer (after the work queued on the
// communicator's caller stream, tsr_comm_set_stream, else on the default stream), averages it
// there with the same allreduce and copies the average back (algorithms/team/device_copier.h;
// there is no GPU reduction for dense data). Only synchronized steps cross PCIe.
//
// The first step has no previous norm, so no change can be measured: its flag is false and,
// unless delta = 0 (synchronize every step), it is local. A delta above every observed change
// therefore never synchronizes; each step then costs exactly one flag exchange. Trainers start
// every rank from the same parameters.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "algorithms/selsync/selsync_logic.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/team.h"

namespace tsr::selsync {

struct StepResult {
  bool synchronized = false;
  bool flagged = false;  // this rank's own flag
  double change = 0;     // this rank's relative gradient change
  int flaggedRanks = 0;  // how many ranks asked to synchronize
};

struct Stats {
  uint64_t syncSteps = 0;
  uint64_t localSteps = 0;
  // Payload bytes this rank did not send on local steps: an estimate, the ring allreduce's
  // payload for the fused model, savedBytesPerLocalStep() per local step (headers, and the
  // algorithm the cost model would have chosen, are not accounted for).
  uint64_t bytesSaved = 0;
  double lssr() const {  // the seed's local-step-to-step ratio
    uint64_t all = syncSteps + localSteps;
    return all ? static_cast<double>(localSteps) / all : 0.0;
  }
};

// The ring allreduce's payload per rank for `floats` f32 elements on N ranks:
// 2 (N-1) / N x 4 x floats bytes, rounded down (integer arithmetic, so it is exact); 0 for N = 1.
inline uint64_t savedBytesPerLocalStep(int worldSize, size_t floats) {
  if (worldSize <= 1) return 0;
  return 2ull * (worldSize - 1) * floats * sizeof(float) / worldSize;
}

// Opens the pinned host buffer and copier for memory=cuda buckets (tensor name, floats):
// algorithms::openDeviceStaging, or a fake copier's in tests.
using StagingOpener = std::function<Result<std::shared_ptr<algorithms::DeviceStaging>>(const std::string&, size_t)>;

class SelSync {
 public:
  // bucketCounts: f32 elements of each bucket of the model, fixed for the handle's life.
  static Result<std::unique_ptr<SelSync>> create(algorithms::Team& comm,
                                                 const std::map<std::string, std::string>& params,
                                                 std::vector<size_t> bucketCounts,
                                                 const StagingOpener& openStaging = algorithms::openDeviceStaging);
  // Collective: every rank calls it once per step with its buckets (same counts, in order).
  Result<StepResult> step(double gradNormSquared, const std::vector<float*>& buckets);
  // Carries on over `next` (a shrunk or grown team, or any other), keeping its smoothed
  // gradient norms and counts; ewma_alpha, when left to its default (N/100), follows the new
  // size. Local: a replacement makes its handle anew on `next` (no history: its first step
  // there is local for it, and the others' flags decide). Not collective.
  void moveTo(algorithms::Team& next);
  const Stats& stats() const { return stats_; }
  const Params& params() const { return params_; }
  size_t bucketCount() const { return counts_.size(); }

 private:
  SelSync(algorithms::Team& comm, Params params, std::vector<size_t> counts, bool alphaFromSize,
          std::shared_ptr<algorithms::DeviceStaging> staging);
  Status checkBuckets(const std::vector<float*>& buckets) const;
  Status averageBuckets(const std::vector<float*>& buckets);
  Status averageDeviceBuckets(const std::vector<float*>& buckets);

  algorithms::Team* comm_;  // a pointer: moveTo rebinds it
  Params params_;
  bool alphaFromSize_;  // ewma_alpha not given: N/100 of the team's size
  std::vector<size_t> counts_;
  size_t total_ = 0;
  GradientChange change_;
  std::vector<float> fused_;                            // host buckets: their fused copy
  std::shared_ptr<algorithms::DeviceStaging> staging_;  // memory=cuda: pinned fused copy, copier
  Stats stats_;
};

}  // namespace tsr::selsync
