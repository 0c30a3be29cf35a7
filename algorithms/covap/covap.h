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
#include "algorithms/team/first_step_agreement.h"
#include "algorithms/team/team.h"

namespace tsr::covap {

class Covap {
 public:
  static Result<std::unique_ptr<Covap>> create(algorithms::Team& comm, const std::map<std::string, std::string>& params,
                                               std::vector<size_t> bucketCounts);
  // Starts a step's clock (call before the backward pass).
  void beginStep();
  // Bucket `bucket`'s f32 gradient is ready: its selected shards start communicating now, or,
  // when an earlier bucket (in the declared order) is still missing, once it has come: the
  // ranks post in the same order whatever order they hand the buckets over in. The buffer
  // must stay valid until finishStep. Every bucket once a step (finishStep fails naming one
  // that was not). After an error here, finishStep still closes the step (and reports it).
  Status bucketReady(size_t bucket, float* grad);
  // Waits for the step's communication. Selected shards then hold the average over ranks,
  // skipped ones zero (their gradient waits in the residual). The residual changes only here,
  // once every op of the step succeeded: a failed step leaves it as it was before the step
  // (the gradients' buffers then hold nothing to use), and the step is not counted, so the
  // trainer can redo it, on the survivors' team after a shrink.
  Status finishStep();
  // Collective over `next` (a shrunk or grown team, or any other): carries on there with its
  // residuals, step and interval. Every rank of `next` calls it; a handle that never finished
  // a step (a replacement's, made on `next` with the same parameters and buckets) takes the
  // step, interval and CCR of the ranks that did, which must agree. A profile still running
  // starts again on `next`. Not while a step is open (between bucketReady and finishStep).
  Status moveTo(algorithms::Team& next);

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
  using Clock = std::chrono::steady_clock;
  Covap(algorithms::Team& comm, Params p, std::vector<size_t> counts);
  // This rank's CCR and the largest over the ranks: the interval from here on.
  void endProfile(double mine, double most);
  // A finished step's residual updates: selected shards give up what went along, skipped
  // shards take the gradient (zeroed in the buffer).
  void keepSkipped();
  // Posts the selected shards of a handed-over bucket (residual added).
  Status postBucket(size_t bucket);
  Status addToProfile(std::vector<std::pair<Clock::time_point, Clock::time_point>> spans);
  bool profiling() const { return params_.interval == 0 && step_ < profileUntil_; }

  algorithms::Team* comm_;  // a pointer: moveTo rebinds it
  // The ranks' parameters and bucket counts, compared at the first bucketReady (a different
  // interval would select different shards: results wrong, silently); null on one rank.
  std::shared_ptr<algorithms::SettingsAgreement> agreement_;
  Params params_;
  std::vector<size_t> counts_;
  std::vector<Shard> shards_;                 // for the current interval
  std::vector<std::vector<float>> residual_;  // per bucket
  int interval_ = 1;
  double ccr_ = 0;
  uint64_t step_ = 0;
  uint64_t profileUntil_ = 0;  // the step at which the profile ends (auto interval)
  bool stepped_ = false;       // a step finished on this handle (else moveTo adopts the others')
  uint64_t bytesPosted_ = 0;
  std::vector<float*> grads_;  // this step's gradient of each bucket (nullptr: not handed over)
  size_t nextToPost_ = 0;      // buckets before it (declared order) are posted this step
  bool toldOfOrder_ = false;   // logged once that a bucket came out of the declared order
  Status stepError_;           // a post of this step that failed: finishStep reports it
  struct Posted {
    algorithms::RequestPtr request;
    Clock::time_point start;
  };
  std::vector<Posted> posted_;
  Clock::time_point stepStart_, lastReady_;
  double profileComm_ = 0, profileComp_ = 0;
};

}  // namespace tsr::covap
