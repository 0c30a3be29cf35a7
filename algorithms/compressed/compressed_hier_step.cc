#include "algorithms/compressed/compressed_hier_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/sign.h"

namespace tsr::compressed {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
}  // namespace

CompressedHierStepTask::CompressedHierStepTask(std::shared_ptr<CompressedState> state,
                                               const algorithms::TaskContext& ctx)
    : state_(std::move(state)), h_(*state_->hier), ctx_(ctx) {}

Status CompressedHierStepTask::run(Stage stage, std::shared_ptr<const algorithms::Plan> plan, const void* in,
                                   void* out, void* scratch) {
  algorithms::RunIdentity id = ctx_.id;
  id.seq += static_cast<uint32_t>(stage);
  stage_ = stage;
  exec_[stage] = std::make_unique<algorithms::PlanExecutor>(std::move(plan), algorithms::RunBuffers{in, out, scratch},
                                                            id, ctx_.transport);
  stageStatus_ = exec_[stage]->start();
  return drive();
}

// Stage 1: x = g + q, cast to the intra type (q' = what the cast drops), host average.
Status CompressedHierStepTask::start() {
  CompressedState& s = *state_;
  const size_t n = s.count;
  for (size_t j = 0; j < n; ++j) h_.work[j] = s.g[j] + h_.intraResidual[j];
  h_.badIndex = kernels::firstNonFinite(h_.work.data(), n);
  h_.overflow = false;
  if (h_.intraType == DataType::kF16) {
    auto* half = reinterpret_cast<uint16_t*>(h_.intraBuffer.data());
    kernels::castF32ToF16(h_.work.data(), n, half);
    std::fill(half + n, half + h_.padded, uint16_t{0});  // the last ring left partial sums there
    kernels::castF16ToF32(half, n, h_.nextResidual.data());
    for (size_t j = 0; j < n; ++j) h_.nextResidual[j] = h_.work[j] - h_.nextResidual[j];
    if (h_.badIndex == n) {
      // A finite x whose f16 is infinite: the cast cannot keep it.
      h_.badIndex = kernels::firstNonFinite(h_.nextResidual.data(), n);
      h_.overflow = h_.badIndex < n;
    }
  } else {
    auto* full = reinterpret_cast<float*>(h_.intraBuffer.data());
    if (n) std::memcpy(full, h_.work.data(), n * sizeof(float));
    std::fill(full + n, full + h_.padded, 0.0f);
  }
  return run(kIntra, h_.rowPlan, h_.intraBuffer.data(), h_.intraBuffer.data(), h_.rowScratch.data());
}

// Stage 2: this rank's shard of the host average, checked with everyone's inputs.
Status CompressedHierStepTask::afterIntra() {
  CompressedState& s = *state_;
  const size_t off = h_.shardOffset, real = h_.shardReal;
  if (h_.intraType == DataType::kF16)
    kernels::castF16ToF32(reinterpret_cast<const uint16_t*>(h_.intraBuffer.data()) + off, real, h_.shard.data());
  else if (real)
    std::memcpy(h_.shard.data(), reinterpret_cast<const float*>(h_.intraBuffer.data()) + off, real * sizeof(float));
  s.badIndex = kernels::firstNonFinite(h_.shard.data(), real);  // within the shard
  s.flagIn[0] = h_.badIndex < s.count ? 1.0 : 0.0;
  s.flagIn[1] = s.badIndex < real ? 1.0 : 0.0;
  return run(kFlag, s.flagPlan, s.flagIn, s.flagOut, s.flagScratch.data());
}

// Stage 3: compress the shard (EF and the compressor's step change only now), column gather.
Status CompressedHierStepTask::afterFlag() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0 || s.flagOut[1] > 0) {
    std::string what = "compressed tensor " + s.name + ": ";
    if (s.flagOut[0] > 0) {
      what += std::to_string(static_cast<int>(s.flagOut[0])) + " rank(s) had NaN or Inf in gradient + residual";
      if (h_.badIndex < s.count)
        what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.badIndex) + " is " +
                std::to_string(h_.work[h_.badIndex]) + (h_.overflow ? ", beyond f16 (intra=fp16)" : "") + ")";
    } else {
      what += std::to_string(static_cast<int>(s.flagOut[1])) +
              " host average block(s) overflowed f16 (intra=fp16)";
      if (s.badIndex < h_.shardReal)
        what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.shardOffset + s.badIndex) + ")";
    }
    return fail(Status(Code::kNumericError, what + "; the tensor and its residual are unchanged"));
  }
  s.mine[0] = 0;
  if (s.compressor) {
    s.compressor->setStep(static_cast<uint32_t>(s.step));  // randomk: equal steps, equal indices
    auto* payload = reinterpret_cast<std::byte*>(s.mine.data() + 1);
    auto written = s.compressor->compress(h_.shard, {payload, (s.slotWords - 1) * 8});
    if (!written.isOk()) return fail(written.status());
    s.mine[0] = written.value();
  }
  return run(kColumn, h_.columnPlan, s.mine.data(), s.all.data(), h_.columnScratch.data());
}

// Stage 4: the column's average of the decoded payloads (row order: the same on every rank of
// the column), then the row gathers the blocks.
Status CompressedHierStepTask::afterColumn() {
  CompressedState& s = *state_;
  const size_t real = h_.shardReal;
  std::fill(s.sum.begin(), s.sum.end(), 0.0f);
  for (int r = 0; r < h_.place.y && s.compressor; ++r) {
    const uint64_t* slot = s.all.data() + static_cast<size_t>(r) * s.slotWords;
    const int from = h_.place.columnRanks[r];
    if (slot[0] > (s.slotWords - 1) * 8)
      return fail(Status(Code::kInvalidArgument, "compressed tensor " + s.name + ": rank " + std::to_string(from) +
                                                     " sent a payload of " + std::to_string(slot[0]) +
                                                     " bytes, more than its slot holds"));
    Status st = s.compressor->decompress({reinterpret_cast<const std::byte*>(slot + 1), slot[0]}, s.decoded);
    if (!st.isOk())
      return fail(Status(st.code(), "compressed tensor " + s.name + ": payload of rank " + std::to_string(from) +
                                        ": " + st.message()));
    for (size_t j = 0; j < real; ++j) s.sum[j] += s.decoded[j];
  }
  const float inv = 1.0f / static_cast<float>(h_.place.y);
  for (size_t j = 0; j < real; ++j) h_.block[j] = s.sum[j] * inv;
  return run(kRow, h_.rowGatherPlan, h_.block.data(), h_.result.data(), h_.rowGatherScratch.data());
}

Status CompressedHierStepTask::finish() {
  CompressedState& s = *state_;
  if (s.count) std::memcpy(s.g, h_.result.data(), s.count * sizeof(float));
  if (h_.intraType == DataType::kF16) std::swap(h_.intraResidual, h_.nextResidual);
  ++s.step;
  result_ = Status::ok();
  return result_;
}

Status CompressedHierStepTask::progress() {
  if (!running(result_)) return result_;
  if (exec_[stage_] && running(stageStatus_)) stageStatus_ = exec_[stage_]->progress();
  return drive();
}

Status CompressedHierStepTask::drive() {
  if (!running(result_) || running(stageStatus_)) return result_;
  if (!stageStatus_.isOk()) return fail(stageStatus_);
  switch (stage_) {
    case kIntra: return afterIntra();
    case kFlag: return afterFlag();
    case kColumn: return afterColumn();
    default: return finish();
  }
}

Status CompressedHierStepTask::fail(Status status) {
  if (running(result_)) result_ = std::move(status);
  if (exec_[stage_] && running(stageStatus_)) exec_[stage_]->abort(result_);
  return result_;
}

void CompressedHierStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool CompressedHierStepTask::quiescent() const {
  return std::all_of(std::begin(exec_), std::end(exec_), [](const auto& e) { return !e || e->quiescent(); });
}

int CompressedHierStepTask::waitingOn() const {
  return exec_[stage_] && running(stageStatus_) ? exec_[stage_]->waitingOn() : -1;
}

}  // namespace tsr::compressed
