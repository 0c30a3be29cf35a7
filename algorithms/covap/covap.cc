#include "algorithms/covap/covap.h"

#include <algorithm>
#include <cstring>

#include "base/logging.h"

namespace tsr::covap {

Result<std::unique_ptr<Covap>> Covap::create(algorithms::Team& comm, const std::map<std::string, std::string>& params,
                                             std::vector<size_t> bucketCounts) {
  TSR_ASSIGN_OR_RETURN(Params p, parseParams(params));
  if (bucketCounts.empty()) return Status(Code::kInvalidArgument, "covap: the model has no buckets");
  return std::unique_ptr<Covap>(new Covap(comm, p, std::move(bucketCounts)));
}

Covap::Covap(algorithms::Team& comm, Params p, std::vector<size_t> counts)
    : comm_(comm), params_(p), counts_(std::move(counts)) {
  for (size_t c : counts_) residual_.emplace_back(c, 0.0f);
  interval_ = params_.interval > 0 ? params_.interval : 1;  // auto: profile with I = 1 first
  shards_ = shardBuckets(counts_, interval_);
  stepStart_ = lastReady_ = Clock::now();
}

void Covap::beginStep() { stepStart_ = lastReady_ = Clock::now(); }

Status Covap::bucketReady(size_t bucket, float* grad) {
  if (bucket >= counts_.size())
    return Status(Code::kInvalidArgument,
                  "covap: bucket " + std::to_string(bucket) + " of " + std::to_string(counts_.size()));
  if (!grad && counts_[bucket])
    return Status(Code::kInvalidArgument, "covap: bucket " + std::to_string(bucket) + " is NULL");
  lastReady_ = Clock::now();
  double coef = efCoefficient(step_, params_);
  std::vector<float>& res = residual_[bucket];
  for (size_t t = 0; t < shards_.size(); ++t) {
    const Shard& s = shards_[t];
    if (s.bucket != bucket || s.count == 0) continue;
    float* g = grad + s.offset;
    float* r = res.data() + s.offset;
    if (selected(t, step_, interval_)) {
      // Error feedback: what earlier steps skipped comes back, scaled by the schedule; the
      // part the coefficient holds back stays in the residual (nothing is dropped).
      for (size_t j = 0; j < s.count; ++j) {
        float back = static_cast<float>(coef) * r[j];
        g[j] += back;
        r[j] -= back;
      }
      auto req = comm_.allreduce(g, g, s.count, DataType::kF32, ReduceOp::kAvg);
      if (!req.isOk()) return req.status();
      posted_.push_back({req.take(), Clock::now()});
      bytesPosted_ += s.count * sizeof(float);
    } else {
      for (size_t j = 0; j < s.count; ++j) {
        r[j] += g[j];
        g[j] = 0;
      }
    }
  }
  return Status::ok();
}

Status Covap::finishStep() {
  Status first;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans;
  for (const Posted& p : posted_) {
    Status st = p.request->wait();
    if (first.isOk() && !st.isOk()) first = st;
    spans.emplace_back(p.start, p.request->completedAt());
  }
  posted_.clear();
  TSR_RETURN_IF_ERROR(first);
  if (params_.interval == 0 && static_cast<int>(step_) < params_.profileSteps) {
    // Align the ranks' timelines at the end of each op (as the COVAP paper does): an op ends at about the
    // same moment everywhere, and the rank that posted it last waited for nobody, so the op's
    // communication time is the shortest post-to-end span over ranks; a rank that posted
    // early does not count its wait for that straggler. (Every rank posted the same ops.)
    std::vector<double> mine, shortest(spans.size());
    for (auto [start, end] : spans) mine.push_back(std::chrono::duration<double>(end - start).count());
    if (!mine.empty()) {
      auto req = comm_.allreduce(mine.data(), shortest.data(), mine.size(), DataType::kF64, ReduceOp::kMin);
      TSR_RETURN_IF_ERROR(req.isOk() ? req.value()->wait() : req.status());
    }
    for (size_t i = 0; i < spans.size(); ++i)
      spans[i].first =
          spans[i].second - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(shortest[i]));
    std::sort(spans.begin(), spans.end());
    double comm = 0;
    Clock::time_point busyUntil{};
    for (auto [start, end] : spans) {
      auto from = std::max(start, busyUntil);
      if (end > from) comm += std::chrono::duration<double>(end - from).count();
      busyUntil = std::max(busyUntil, end);
    }
    profileComm_ += comm;
    profileComp_ += std::chrono::duration<double>(lastReady_ - stepStart_).count();
    if (static_cast<int>(step_) + 1 == params_.profileSteps) TSR_RETURN_IF_ERROR(endProfile());
  }
  ++step_;
  stepStart_ = lastReady_ = Clock::now();
  return Status::ok();
}

Status Covap::endProfile() {
  double mine = profileComp_ > 0 ? profileComm_ / profileComp_ : 1e6, most = 0;
  auto req = comm_.allreduce(&mine, &most, 1, DataType::kF64, ReduceOp::kMax);
  TSR_RETURN_IF_ERROR(req.isOk() ? req.value()->wait() : req.status());
  ccr_ = most;
  interval_ = intervalFromCcr(most, params_.maxInterval);
  shards_ = shardBuckets(counts_, interval_);
  log::get("covap")->info(
      "rank {}: profile over {} steps: computation {:.3f} ms, communication {:.3f} ms, CCR {:.3f} "
      "on this rank, {:.3f} the largest over ranks; interval I = {} ({} shards)",
      comm_.rank(), params_.profileSteps, profileComp_ * 1e3, profileComm_ * 1e3, mine, most, interval_,
      shards_.size());
  return Status::ok();
}

}  // namespace tsr::covap
