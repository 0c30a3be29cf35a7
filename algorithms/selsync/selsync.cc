#include "algorithms/selsync/selsync.h"

#include <chrono>
#include <cstring>
#include <thread>

namespace tsr::selsync {

Result<std::unique_ptr<SelSync>> SelSync::create(algorithms::Team& comm,
                                                 const std::map<std::string, std::string>& params,
                                                 std::vector<size_t> bucketCounts, const StagingOpener& openStaging) {
  TSR_ASSIGN_OR_RETURN(Params p, parseParams(params, comm.size()));
  if (bucketCounts.empty()) return Status(Code::kInvalidArgument, "selsync: the model has no buckets");
  std::shared_ptr<algorithms::DeviceStaging> staging;
  if (p.cudaBuckets) {
    size_t total = 0;
    for (size_t c : bucketCounts) total += c;
    auto opened = openStaging("selsync", total);
    if (!opened.isOk()) return Status(opened.status().code(), "selsync memory=cuda: " + opened.status().message());
    staging = opened.take();
  }
  return std::unique_ptr<SelSync>(
      new SelSync(comm, p, std::move(bucketCounts), !params.count("ewma_alpha"), std::move(staging)));
}

SelSync::SelSync(algorithms::Team& comm, Params params, std::vector<size_t> counts, bool alphaFromSize,
                 std::shared_ptr<algorithms::DeviceStaging> staging)
    : comm_(&comm),
      params_(params),
      alphaFromSize_(alphaFromSize),
      counts_(std::move(counts)),
      change_(params_),
      staging_(std::move(staging)) {
  for (size_t c : counts_) total_ += c;
  if (!staging_) fused_.resize(total_);
}

void SelSync::moveTo(algorithms::Team& next) {
  comm_ = &next;
  if (alphaFromSize_) {
    params_.ewmaAlpha = defaultAlpha(next.size());
    change_.setAlpha(params_.ewmaAlpha);
  }
}

Result<StepResult> SelSync::step(double gradNormSquared, const std::vector<float*>& buckets) {
  StepResult r;
  // A step that fails leaves the handle as before it (the buckets too: they are written only
  // once the average arrived), so the trainer can redo it, on the survivors' team after a shrink.
  const GradientChange before = change_;
  auto failed = [&](Status st) {
    change_ = before;
    return st;
  };
  // A rank that cannot take part (buckets that do not fit the handle, a norm that is not a
  // finite non-negative number) still joins the flag exchange, marked failed: every rank then
  // fails the step at once, instead of waiting out the timeout for it.
  Status local = buckets.size() != counts_.size()
                     ? Status(Code::kInvalidArgument, "selsync: step got " + std::to_string(buckets.size()) +
                                                          " buckets, the handle has " + std::to_string(counts_.size()))
                     : checkBuckets(buckets);
  if (local.isOk()) {
    auto change = change_.add(gradNormSquared);
    if (change.isOk())
      r.change = change.value();
    else
      local = change.status();
  }
  const int n = comm_->size();
  r.flagged = local.isOk() && (params_.delta == 0 || r.change >= params_.delta);
  std::vector<uint64_t> mine = exchangeWords(n, comm_->rank(), r.flagged, local.code()), all(mine.size());
  auto req = comm_->hostAllreduce(mine.data(), all.data(), mine.size(), DataType::kI64, ReduceOp::kSum);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!local.isOk()) return failed(local);
  if (!st.isOk()) return failed(st);
  const Exchange e = readExchange(n, all);
  if (e.failure != Code::kOk)
    return failed(Status(e.failure, "selsync: rank(s) " + flaggedRankList(e.failing) +
                                        " could not take part in this step (each names why); no rank took it"));
  for (uint64_t w : e.flags) r.flaggedRanks += __builtin_popcountll(w);
  r.synchronized = anyFlag(e.flags);
  if (r.synchronized) {
    st = staging_ ? averageDeviceBuckets(buckets) : averageBuckets(buckets);
    if (!st.isOk()) return failed(st);
    ++stats_.syncSteps;
  } else {
    ++stats_.localSteps;
    stats_.bytesSaved += savedBytesPerLocalStep(comm_->size(), total_);
  }
  return r;
}

Status SelSync::checkBuckets(const std::vector<float*>& buckets) const {
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!counts_[i]) continue;
    if (!buckets[i]) return Status(Code::kInvalidArgument, "selsync: bucket " + std::to_string(i) + " is NULL");
    if (!staging_) continue;
    Status st = staging_->copier().checkDevice(buckets[i], counts_[i] * sizeof(float));
    if (!st.isOk())
      return Status(st.code(), "selsync memory=cuda: bucket " + std::to_string(i) + " (" + std::to_string(counts_[i]) +
                                   " floats): " + st.message());
  }
  return Status::ok();
}

Status SelSync::averageBuckets(const std::vector<float*>& buckets) {
  // One fused allreduce over every bucket: one message train instead of one per bucket.
  size_t at = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (counts_[i]) std::memcpy(fused_.data() + at, buckets[i], counts_[i] * sizeof(float));
    at += counts_[i];
  }
  auto req = comm_->hostAllreduce(fused_.data(), fused_.data(), total_, DataType::kF32, ReduceOp::kAvg);
  TSR_RETURN_IF_ERROR(req.isOk() ? req.value()->wait() : req.status());
  at = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (counts_[i]) std::memcpy(buckets[i], fused_.data() + at, counts_[i] * sizeof(float));
    at += counts_[i];
  }
  return Status::ok();
}

namespace {

// Polls the copier until its posted copies have ended (they run on its own stream; a
// synchronized step needs them before it goes on). Drains them on an error too, so no copy
// still writes into the pinned buffer once the step has returned.
Status copiesDone(algorithms::DeviceCopier& copier, Status posting) {
  for (int polls = 0;; ++polls) {
    auto done = copier.finished();
    if (!done.isOk()) return posting.isOk() ? done.status() : posting;
    if (done.value()) return posting;
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    else
      std::this_thread::yield();
  }
}

}  // namespace

Status SelSync::averageDeviceBuckets(const std::vector<float*>& buckets) {
  algorithms::DeviceCopier& copier = staging_->copier();
  auto named = [&](Status st) { return st.isOk() ? st : Status(st.code(), "selsync memory=cuda: " + st.message()); };
  // The caller's stream (without one, the default stream) up to this call; this thread waits
  // for the copies, so they may wait for it on the device.
  auto after = copier.recordCallerEvent(comm_->callerStream());
  if (!after.isOk()) return named(after.status());
  float* fused = staging_->host();
  Status posting = Status::ok();
  size_t at = 0;
  for (size_t i = 0; i < buckets.size() && posting.isOk(); at += counts_[i], ++i)
    if (counts_[i]) posting = copier.postToHost(fused + at, buckets[i], counts_[i] * sizeof(float), after.value());
  TSR_RETURN_IF_ERROR(named(copiesDone(copier, posting)));
  auto req = comm_->hostAllreduce(fused, fused, total_, DataType::kF32, ReduceOp::kAvg);
  // A failed average copies nothing back: the buckets keep this rank's values.
  TSR_RETURN_IF_ERROR(req.isOk() ? req.value()->wait() : req.status());
  at = 0;
  for (size_t i = 0; i < buckets.size() && posting.isOk(); at += counts_[i], ++i)
    if (counts_[i]) posting = copier.postToDevice(buckets[i], fused + at, counts_[i] * sizeof(float));
  return named(copiesDone(copier, posting));
}

}  // namespace tsr::selsync
