#include "algorithms/covap/covap.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "base/logging.h"

namespace tsr::covap {

namespace {

constexpr const char* kAlike = "every rank must make its COVAP handle alike (parameters and bucket counts)";

// What the ranks' handles must share, "key=value; ..." (first_step_agreement.h); the buckets
// last, so that a long list cuts off only them.
std::string settingsText(const Params& p, const std::vector<size_t>& counts) {
  char ef[96];
  std::snprintf(ef, sizeof ef, "ef_init=%.15g; ef_ascend_steps=%d; ef_ascend_range=%.15g", p.efInit, p.efAscendSteps,
                p.efAscendRange);
  size_t total = 0;
  std::string list;
  for (size_t c : counts) total += c, list += (list.empty() ? "" : ",") + std::to_string(c);
  return "interval=" + (p.interval ? std::to_string(p.interval) : std::string("auto")) +
         "; max_interval=" + std::to_string(p.maxInterval) + "; profile_steps=" + std::to_string(p.profileSteps) +
         "; " + ef + "; buckets=" + std::to_string(counts.size()) + " of " + std::to_string(total) +
         " elements: " + list;
}

}  // namespace

Result<std::unique_ptr<Covap>> Covap::create(algorithms::Team& comm, const std::map<std::string, std::string>& params,
                                             std::vector<size_t> bucketCounts) {
  TSR_ASSIGN_OR_RETURN(Params p, parseParams(params));
  if (bucketCounts.empty()) return Status(Code::kInvalidArgument, "covap: the model has no buckets");
  TSR_ASSIGN_OR_RETURN(auto agreement, algorithms::makeSettingsAgreement(comm, settingsText(p, bucketCounts), kAlike));
  std::unique_ptr<Covap> made(new Covap(comm, p, std::move(bucketCounts)));
  made->agreement_ = std::move(agreement);
  return made;
}

Covap::Covap(algorithms::Team& comm, Params p, std::vector<size_t> counts)
    : comm_(&comm), params_(p), counts_(std::move(counts)) {
  for (size_t c : counts_) residual_.emplace_back(c, 0.0f);
  grads_.assign(counts_.size(), nullptr);
  interval_ = params_.interval > 0 ? params_.interval : 1;  // auto: profile with I = 1 first
  profileUntil_ = params_.interval > 0 ? 0 : static_cast<uint64_t>(params_.profileSteps);
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
  if (grads_[bucket])
    return Status(Code::kInvalidArgument, "covap: bucket " + std::to_string(bucket) + " handed over twice in step " +
                                              std::to_string(step_) + " (once a step; finish the step first)");
  // The first bucket of the handle's first step: the ranks' handles compared, before any shard
  // they may select differently is posted.
  if (agreement_ && !agreement_->agreed) {
    Status st = algorithms::agreeNow(*comm_, *agreement_, "covap");
    if (!st.isOk()) {
      if (stepError_.isOk()) stepError_ = st;
      return st;
    }
  }
  lastReady_ = Clock::now();
  static float emptyBucket;  // marks an empty bucket (no data) as handed over
  grads_[bucket] = grad ? grad : &emptyBucket;
  // Shards go out in the buckets' declared order, whatever order they came in: every rank then
  // posts the same allreduces in the same order (posted as they came, two ranks handing the
  // buckets over in different orders would average one's bucket 0 with the other's bucket 1,
  // silently). In the declared order, each goes out at once.
  if (bucket > nextToPost_ && !toldOfOrder_) {
    toldOfOrder_ = true;
    log::get("covap")->info(
        "rank {}: bucket {} came before bucket {}: shards go out in the declared order, so it waits "
        "(declare the buckets in the order backprop produces them, and each goes out at once)",
        comm_->rank(), bucket, nextToPost_);
  }
  while (nextToPost_ < counts_.size() && grads_[nextToPost_]) {
    Status st = postBucket(nextToPost_++);
    if (!st.isOk()) {
      if (stepError_.isOk()) stepError_ = st;
      return st;
    }
  }
  return Status::ok();
}

Status Covap::postBucket(size_t bucket) {
  float* grad = grads_[bucket];
  double coef = efCoefficient(step_, params_);
  const std::vector<float>& res = residual_[bucket];
  for (size_t t = 0; t < shards_.size(); ++t) {
    const Shard& s = shards_[t];
    if (s.bucket != bucket || s.count == 0 || !selected(t, step_, interval_)) continue;
    // Error feedback: what earlier steps skipped comes back, scaled by the schedule; the
    // residual gives it up in finishStep, once the step has succeeded (the part the
    // coefficient holds back stays: nothing is dropped).
    float* g = grad + s.offset;
    const float* r = res.data() + s.offset;
    for (size_t j = 0; j < s.count; ++j) g[j] += static_cast<float>(coef) * r[j];
    TSR_ASSIGN_OR_RETURN(auto req, comm_->hostAllreduce(g, g, s.count, DataType::kF32, ReduceOp::kAvg));
    posted_.push_back({std::move(req), Clock::now()});
    bytesPosted_ += s.count * sizeof(float);
  }
  return Status::ok();
}

Status Covap::finishStep() {
  Status first = std::exchange(stepError_, Status::ok());
  // A bucket not handed over: its shards (and those after it) were never posted here, while
  // the other ranks posted theirs; the step fails on this rank, and on theirs by the timeout.
  if (first.isOk() && nextToPost_ < counts_.size()) {
    std::string missing;
    for (size_t b = 0; b < counts_.size(); ++b)
      if (!grads_[b]) missing += (missing.empty() ? "" : ",") + std::to_string(b);
    first = Status(Code::kInvalidArgument, "covap: step " + std::to_string(step_) + " finished without bucket " +
                                               missing + " (each bucket is handed over once a step)");
  }
  nextToPost_ = 0;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans;
  for (const Posted& p : posted_) {
    Status st = p.request->wait();
    if (first.isOk() && !st.isOk()) first = st;
    spans.emplace_back(p.start, p.request->completedAt());
  }
  posted_.clear();
  if (first.isOk() && profiling()) first = addToProfile(std::move(spans));
  // The profile's last step: the ranks agree on the CCR before the step counts.
  const bool profileEnds = params_.interval == 0 && step_ + 1 == profileUntil_;
  double mine = profileComp_ > 0 ? profileComm_ / profileComp_ : 1e6, most = 0;
  if (first.isOk() && profileEnds) {
    auto req = comm_->hostAllreduce(&mine, &most, 1, DataType::kF64, ReduceOp::kMax);
    first = req.isOk() ? req.value()->wait() : req.status();
  }
  if (!first.isOk()) {
    grads_.assign(counts_.size(), nullptr);  // the residual stays as before the step
    return first;
  }
  keepSkipped();
  stepped_ = true;
  ++step_;
  if (profileEnds) endProfile(mine, most);
  stepStart_ = lastReady_ = Clock::now();
  return Status::ok();
}

void Covap::keepSkipped() {
  double coef = efCoefficient(step_, params_);
  for (size_t t = 0; t < shards_.size(); ++t) {
    const Shard& s = shards_[t];
    float* grad = grads_[s.bucket];
    if (!grad || s.count == 0) continue;
    float* g = grad + s.offset;
    float* r = residual_[s.bucket].data() + s.offset;
    if (selected(t, step_, interval_)) {
      for (size_t j = 0; j < s.count; ++j) r[j] -= static_cast<float>(coef) * r[j];  // went with the step
    } else {
      for (size_t j = 0; j < s.count; ++j) {
        r[j] += g[j];
        g[j] = 0;
      }
    }
  }
  grads_.assign(counts_.size(), nullptr);
}

Status Covap::addToProfile(std::vector<std::pair<Clock::time_point, Clock::time_point>> spans) {
  // Align the ranks' timelines at the end of each op (as the COVAP paper does): an op ends at about the
  // same moment everywhere, and the rank that posted it last waited for nobody, so the op's
  // communication time is the shortest post-to-end span over ranks; a rank that posted
  // early does not count its wait for that straggler. (Every rank posted the same ops.)
  std::vector<double> mine, shortest(spans.size());
  for (auto [start, end] : spans) mine.push_back(std::chrono::duration<double>(end - start).count());
  if (!mine.empty()) {
    auto req = comm_->hostAllreduce(mine.data(), shortest.data(), mine.size(), DataType::kF64, ReduceOp::kMin);
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
  return Status::ok();
}

namespace {

// One number for what a handle was made with (parameters and bucket counts), positive: the
// ranks compare it when a handle moves.
int64_t shapeKey(const Params& p, const std::vector<size_t>& counts) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  };
  mix(counts.size());
  for (size_t c : counts) mix(c);
  double efInit = p.efInit, efRange = p.efAscendRange;
  uint64_t bits[2];
  std::memcpy(&bits[0], &efInit, 8);
  std::memcpy(&bits[1], &efRange, 8);
  for (uint64_t v : {uint64_t(p.interval), uint64_t(p.maxInterval), uint64_t(p.profileSteps), uint64_t(p.efAscendSteps),
                     bits[0], bits[1]})
    mix(v);
  return static_cast<int64_t>(h >> 1);
}

}  // namespace

Status Covap::moveTo(algorithms::Team& next) {
  bool open = !posted_.empty();
  for (float* g : grads_) open = open || g;
  if (open)
    return Status(Code::kInvalidArgument, "covap: moving with step " + std::to_string(step_) +
                                              " open (buckets handed over); finish the step first");
  // One all-reduce (max) over the new team: the stepped ranks' step (and its negation, for the
  // smallest), interval, CCR (a non-negative double's bits order as it does), profile end,
  // and the handles' shape key (and its negation). A handle that never stepped sends the
  // identity of max so that it takes the others' values.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  int64_t ccrBits = 0;
  std::memcpy(&ccrBits, &ccr_, sizeof ccrBits);
  const int64_t key = shapeKey(params_, counts_);
  const int64_t step = static_cast<int64_t>(step_);
  std::vector<int64_t> mine =
      stepped_ ? std::vector<int64_t>{step, -step, interval_, ccrBits, static_cast<int64_t>(profileUntil_), key, -key}
               : std::vector<int64_t>{kNone, kNone, kNone, kNone, kNone, key, -key};
  std::vector<int64_t> all(mine.size());
  auto req = next.hostAllreduce(mine.data(), all.data(), mine.size(), DataType::kI64, ReduceOp::kMax);
  TSR_RETURN_IF_ERROR(req.isOk() ? req.value()->wait() : req.status());
  if (all[5] != -all[6])
    return Status(Code::kInvalidArgument,
                  "covap: the ranks' handles differ in their parameters or bucket counts (rank " +
                      std::to_string(next.rank()) + " has " + std::to_string(counts_.size()) +
                      " buckets); a replacement makes its handle as the others were made");
  if (all[0] != kNone && all[0] != -all[1])
    return Status(Code::kInvalidArgument, "covap: the ranks that stepped are at steps " + std::to_string(-all[1]) +
                                              " to " + std::to_string(all[0]) +
                                              "; move at the same step on every rank");
  comm_ = &next;
  // The shape keys agreed: so do the handles' settings on `next`.
  TSR_ASSIGN_OR_RETURN(agreement_, algorithms::makeSettingsAgreement(next, settingsText(params_, counts_), kAlike));
  if (agreement_) agreement_->agreed = true;
  if (all[0] == kNone) return Status::ok();  // nobody stepped: all start afresh alike
  step_ = static_cast<uint64_t>(all[0]);
  interval_ = static_cast<int>(all[2]);
  std::memcpy(&ccr_, &all[3], sizeof ccr_);
  profileUntil_ = static_cast<uint64_t>(all[4]);
  stepped_ = true;
  if (profiling()) {  // a profile of the old team says nothing of the new one: it starts again
    profileUntil_ = step_ + params_.profileSteps;
    profileComm_ = profileComp_ = 0;
    interval_ = 1;
  }
  shards_ = shardBuckets(counts_, interval_);
  return Status::ok();
}

void Covap::endProfile(double mine, double most) {
  ccr_ = most;
  interval_ = intervalFromCcr(most, params_.maxInterval);
  shards_ = shardBuckets(counts_, interval_);
  log::get("covap")->info(
      "rank {}: profile over {} steps: computation {:.3f} ms, communication {:.3f} ms, CCR {:.3f} "
      "on this rank, {:.3f} the largest over ranks; interval I = {} ({} shards)",
      comm_->rank(), params_.profileSteps, profileComp_ * 1e3, profileComm_ * 1e3, mine, most, interval_,
      shards_.size());
}

}  // namespace tsr::covap
