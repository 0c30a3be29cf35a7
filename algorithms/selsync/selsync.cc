#include "algorithms/selsync/selsync.h"

#include <cstring>

namespace tsr::selsync {

Result<std::unique_ptr<SelSync>> SelSync::create(algorithms::Team& comm,
                                                 const std::map<std::string, std::string>& params,
                                                 std::vector<size_t> bucketCounts) {
  TSR_ASSIGN_OR_RETURN(Params p, parseParams(params, comm.size()));
  if (bucketCounts.empty()) return Status(Code::kInvalidArgument, "selsync: the model has no buckets");
  return std::unique_ptr<SelSync>(new SelSync(comm, p, std::move(bucketCounts), !params.count("ewma_alpha")));
}

SelSync::SelSync(algorithms::Team& comm, Params params, std::vector<size_t> counts, bool alphaFromSize)
    : comm_(&comm), params_(params), alphaFromSize_(alphaFromSize), counts_(std::move(counts)), change_(params_) {
  for (size_t c : counts_) total_ += c;
  fused_.resize(total_);
}

void SelSync::moveTo(algorithms::Team& next) {
  comm_ = &next;
  if (alphaFromSize_) {
    params_.ewmaAlpha = defaultAlpha(next.size());
    change_.setAlpha(params_.ewmaAlpha);
  }
}

Result<StepResult> SelSync::step(double gradNormSquared, const std::vector<float*>& buckets) {
  if (buckets.size() != counts_.size())
    return Status(Code::kInvalidArgument, "selsync: step got " + std::to_string(buckets.size()) +
                                              " buckets, the handle has " + std::to_string(counts_.size()));
  for (size_t i = 0; i < buckets.size(); ++i)
    if (!buckets[i] && counts_[i])
      return Status(Code::kInvalidArgument, "selsync: bucket " + std::to_string(i) + " is NULL");
  StepResult r;
  // A step that fails leaves the handle as before it (the buckets too: they are written only
  // once the average arrived), so the trainer can redo it, on the survivors' team after a shrink.
  const GradientChange before = change_;
  auto failed = [&](Status st) {
    change_ = before;
    return st;
  };
  TSR_ASSIGN_OR_RETURN(r.change, change_.add(gradNormSquared));
  r.flagged = params_.delta == 0 || r.change >= params_.delta;
  std::vector<uint64_t> mine = flagWords(comm_->size(), comm_->rank(), r.flagged), all(mine.size());
  auto req = comm_->allreduce(mine.data(), all.data(), mine.size(), DataType::kI64, ReduceOp::kSum);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return failed(st);
  for (uint64_t w : all) r.flaggedRanks += __builtin_popcountll(w);
  r.synchronized = anyFlag(all);
  if (r.synchronized) {
    st = averageBuckets(buckets);
    if (!st.isOk()) return failed(st);
    ++stats_.syncSteps;
  } else {
    ++stats_.localSteps;
    stats_.bytesSaved += savedBytesPerLocalStep(comm_->size(), total_);
  }
  return r;
}

Status SelSync::averageBuckets(const std::vector<float*>& buckets) {
  // One fused allreduce over every bucket: one message train instead of one per bucket.
  size_t at = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (counts_[i]) std::memcpy(fused_.data() + at, buckets[i], counts_[i] * sizeof(float));
    at += counts_[i];
  }
  auto req = comm_->allreduce(fused_.data(), fused_.data(), total_, DataType::kF32, ReduceOp::kAvg);
  TSR_RETURN_IF_ERROR(req.isOk() ? req.value()->wait() : req.status());
  at = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (counts_[i]) std::memcpy(buckets[i], fused_.data() + at, counts_[i] * sizeof(float));
    at += counts_[i];
  }
  return Status::ok();
}

}  // namespace tsr::selsync
