// COVAP over a communicator: buckets are handed over as backprop produces them; the selected
// shards are averaged by non-blocking allreduces that overlap the rest of the backward pass;
// skipped shards go to the error-feedback residual; when a shard is next sent, the schedule's
// coefficient decides how much of its residual goes along (the rest stays for later). finishStep waits and the trainer
// applies the (averaged or zeroed) gradients.
//
// Interval: given (interval=I), or measured over the first profile_steps steps, which
// communicate everything: computation time = step start to the last bucket handed over;
// communication time = the union of the ops' busy intervals, with the ranks' timelines
// aligned at the end of each op: an op counts from (its end - the shortest post-to-end span
// over ranks), so a rank that posted early does not count waiting for the last one (one small
// allreduce per profiled step), and overlapping ops are not counted twice. CCR = communication / computation, the
// largest over the ranks (one tiny allreduce, so all ranks agree), and I = ceil(CCR). The profile's times, the CCR and
// I are logged at info level (logger "covap", TSR_LOG_LEVEL=info) when profiling ends.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "algorithms/covap/covap_logic.h"
#include "algorithms/team/team.h"

namespace tsr::covap {

class Covap {
 public:
  static Result<std::unique_ptr<Covap>> create(algorithms::Team& comm, const std::map<std::string, std::string>& params,
                                               std::vector<size_t> bucketCounts);
  // Starts a step's clock (call before the backward pass).
  void beginStep();
  // Bucket `bucket`'s f32 gradient is ready: its selected shards start communicating now.
  // The buffer must stay valid until finishStep. Buckets may come in any order, once a step.
  Status bucketReady(size_t bucket, float* grad);
  // Waits for the step's communication. Selected shards then hold the average over ranks,
  // skipped ones zero (their gradient waits in the residual).
  Status finishStep();

  int interval() const { return interval_; }   // 1 while profiling
  double measuredCcr() const { return ccr_; }  // 0 until measured
  // This rank's profile, seconds summed over the profile steps (0 with a given interval).
  double profiledComputation() const { return profileComp_; }
  double profiledCommunication() const { return profileComm_; }
  uint64_t step() const { return step_; }
  const std::vector<Shard>& shards() const { return shards_; }
  uint64_t bytesPosted() const { return bytesPosted_; }
  const std::vector<float>& residual(size_t bucket) const { return residual_.at(bucket); }
  size_t bucketCount() const { return counts_.size(); }

 private:
  Covap(algorithms::Team& comm, Params p, std::vector<size_t> counts);
  Status endProfile();

  using Clock = std::chrono::steady_clock;
  algorithms::Team& comm_;
  Params params_;
  std::vector<size_t> counts_;
  std::vector<Shard> shards_;                 // for the current interval
  std::vector<std::vector<float>> residual_;  // per bucket
  int interval_ = 1;
  double ccr_ = 0;
  uint64_t step_ = 0;
  uint64_t bytesPosted_ = 0;
  struct Posted {
    algorithms::RequestPtr request;
    Clock::time_point start;
  };
  std::vector<Posted> posted_;
  Clock::time_point stepStart_, lastReady_;
  double profileComm_ = 0, profileComp_ = 0;
};

}  // namespace tsr::covap
