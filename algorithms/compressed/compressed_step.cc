#include "algorithms/compressed/compressed_step.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/sign.h"

namespace tsr::compressed {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
}  // namespace

CompressedStepTask::CompressedStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status CompressedStepTask::start() {
  CompressedState& s = *state_;
  s.badIndex = kernels::firstNonFinite(s.g, s.count);
  s.flagIn[0] = s.badIndex < s.count ? 1.0 : 0.0;
  flag_ = std::make_unique<algorithms::PlanExecutor>(
      s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()}, ctx_.id, ctx_.transport);
  flagStatus_ = flag_->start();
  return drive();
}

Status CompressedStepTask::progress() {
  if (!running(status_)) return status_;
  if (flag_ && running(flagStatus_)) flagStatus_ = flag_->progress();
  if (gather_ && running(gatherStatus_)) gatherStatus_ = gather_->progress();
  return drive();
}

Status CompressedStepTask::drive() {
  for (const Status* st : {&flagStatus_, &gatherStatus_})
    if (!running(*st) && !st->isOk()) return fail(*st);
  if (running(flagStatus_)) return status_;
  if (!gather_) return startGather();
  if (running(gatherStatus_)) return status_;
  return finish();
}

Status CompressedStepTask::startGather() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0) {
    bool mine = s.badIndex < s.count;
    return fail(Status(Code::kNumericError,
                       "compressed tensor " + s.name + ": " + std::to_string(static_cast<int>(s.flagOut[0])) +
                           " rank(s) had NaN or Inf" +
                           (mine ? " (rank " + std::to_string(s.rank) + ": element " +
                                       std::to_string(s.badIndex) + " is " + std::to_string(s.g[s.badIndex]) + ")"
                                 : std::string()) +
                           "; the tensor and its residual are unchanged"));
  }
  s.compressor->setStep(static_cast<uint32_t>(s.step));  // randomk: equal steps, equal indices
  auto* payload = reinterpret_cast<std::byte*>(s.mine.data() + 1);
  auto written = s.compressor->compress({s.g, s.count}, {payload, (s.slotWords - 1) * 8});
  if (!written.isOk()) return fail(written.status());
  s.mine[0] = written.value();
  algorithms::RunIdentity id = ctx_.id;
  id.seq += 1;
  gather_ = std::make_unique<algorithms::PlanExecutor>(
      s.gatherPlan, algorithms::RunBuffers{s.mine.data(), s.all.data(), s.gatherScratch.data()}, id,
      ctx_.transport);
  gatherStatus_ = gather_->start();
  return drive();
}

Status CompressedStepTask::finish() {
  CompressedState& s = *state_;
  std::fill(s.sum.begin(), s.sum.end(), 0.0f);
  for (int r = 0; r < s.size; ++r) {
    const uint64_t* slot = s.all.data() + static_cast<size_t>(r) * s.slotWords;
    if (slot[0] > (s.slotWords - 1) * 8)
      return fail(Status(Code::kInvalidArgument, "compressed tensor " + s.name + ": rank " + std::to_string(r) +
                                                     " sent a payload of " + std::to_string(slot[0]) +
                                                     " bytes, more than its slot holds"));
    Status st = s.compressor->decompress({reinterpret_cast<const std::byte*>(slot + 1), slot[0]}, s.decoded);
    if (!st.isOk())
      return fail(Status(st.code(), "compressed tensor " + s.name + ": payload of rank " + std::to_string(r) +
                                        ": " + st.message()));
    for (size_t j = 0; j < s.count; ++j) s.sum[j] += s.decoded[j];
  }
  const float inv = 1.0f / static_cast<float>(s.size);
  for (size_t j = 0; j < s.count; ++j) s.g[j] = s.sum[j] * inv;
  ++s.step;
  status_ = Status::ok();
  return status_;
}

Status CompressedStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (flag_ && running(flagStatus_)) flag_->abort(status_);
  if (gather_ && running(gatherStatus_)) gather_->abort(status_);
  return status_;
}

void CompressedStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool CompressedStepTask::quiescent() const {
  return (!flag_ || flag_->quiescent()) && (!gather_ || gather_->quiescent());
}

int CompressedStepTask::waitingOn() const {
  if (flag_ && running(flagStatus_)) return flag_->waitingOn();
  if (gather_ && running(gatherStatus_)) return gather_->waitingOn();
  return -1;
}

}  // namespace tsr::compressed
