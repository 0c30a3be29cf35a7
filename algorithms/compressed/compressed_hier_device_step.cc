#include "algorithms/compressed/compressed_hier_device_step.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tsr::compressed {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
}  // namespace

Status CompressedHierDevice::create(const std::shared_ptr<algorithms::StepKernels>& kernels, const CompressedState& s,
                                    const std::string& who, CompressedHierDevice& d) {
  const CompressedHier& h = *s.hier;
  using algorithms::DeviceBlock;
  const size_t vec = s.count * sizeof(float);
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.work, vec, who, "g + q"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.intraResidual, vec, who, "f16 cast residual"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.nextResidual, vec, who, "next f16 cast residual"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.intra, h.intraBuffer.size() * 8, who, "intra-host vector"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.rowScratch, h.rowPlan->scratchBytes, who, "row plan scratch"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.shard, h.shardReal * sizeof(float), who, "shard"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.columnScratch, h.columnPlan->scratchBytes, who, "column scratch"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.block, h.shardCount * sizeof(float), who, "block"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.result, h.padded * sizeof(float), who, "result"));
  return DeviceBlock::make(kernels, d.rowGatherScratch, h.rowGatherPlan->scratchBytes, who, "row gather scratch");
}

void twoLevelDeviceResidual(const CompressedState& s, float* out) {
  const CompressedHier& h = *s.hier;
  const CompressedDevice& dev = *s.device;
  dev.kernels->readToHost(out, dev.hier->intraResidual.as<float>(), s.count * sizeof(float)).ignore();
  if (!s.compressor || s.compressor->feedbackError().empty() || !dev.codec) return;  // no EF: nothing kept there
  std::vector<float> e(h.shardReal);
  dev.codec->readError(e.data()).ignore();
  const float x = static_cast<float>(h.place.x);
  for (size_t k = 0; k < e.size(); ++k) out[h.shardOffset + k] += x * e[k];
}

CompressedHierDeviceStepTask::CompressedHierDeviceStepTask(std::shared_ptr<CompressedState> state,
                                                           const algorithms::TaskContext& ctx)
    : state_(std::move(state)), h_(*state_->hier), ctx_(ctx) {}

Status CompressedHierDeviceStepTask::named(const Status& st) const {
  if (st.isOk() || st.message().rfind("compressed tensor ", 0) == 0) return st;
  return Status(st.code(), "compressed tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", two-level, direct device path): " + st.message());
}

Status CompressedHierDeviceStepTask::run(Stage stage, std::shared_ptr<const algorithms::Plan> plan, const void* in,
                                         void* out, void* scratch, bool device) {
  algorithms::RunIdentity id = ctx_.id;
  id.seq += static_cast<uint32_t>(stage);
  stage_ = stage;
  algorithms::RunBuffers b{in, out, scratch};
  if (device) {
    b.memory = transport::MemoryType::kCuda;
    b.kernels = state_->device->kernels.get();
  }
  exec_[stage] = std::make_unique<algorithms::PlanExecutor>(std::move(plan), b, id, ctx_.transport);
  stageStatus_ = exec_[stage]->start();
  return drive();
}

// Stage 1: x = g + q, cast to the intra type (q' = what the cast drops), host average.
Status CompressedHierDeviceStepTask::start() {
  CompressedState& s = *state_;
  CompressedHierDevice& d = *s.device->hier;
  algorithms::StepKernels& k = *s.device->kernels;
  const size_t n = s.count, pad = h_.padded - n;
  float* work = d.work.as<float>();
  auto bad = k.addScan(s.g, d.intraResidual.as<float>(), n, work);
  if (!bad.isOk()) return fail(named(bad.status()));
  h_.badIndex = bad.value();
  h_.overflow = false;
  Status st;
  if (h_.intraType == DataType::kF16) {
    auto* half = d.intra.as<uint16_t>();
    st = k.castTo(DataType::kF16, work, n, half);
    if (st.isOk() && pad) st = k.zero(half + n, pad * sizeof(uint16_t));  // the last ring left partial sums there
    float* next = d.nextResidual.as<float>();
    if (st.isOk()) st = k.castFrom(DataType::kF16, half, n, next);
    if (st.isOk()) st = k.efKeep(work, n, next);  // q' = x - f16(x) (feedback_ops.h's c - decoded)
    if (st.isOk() && h_.badIndex == n) {
      // A finite x whose f16 is infinite: the cast cannot keep it.
      auto overflow = k.scanNonFinite(next, n);
      if (!overflow.isOk()) return fail(named(overflow.status()));
      h_.badIndex = overflow.value();
      h_.overflow = h_.badIndex < n;
    }
  } else {
    st = k.copy(d.intra.as<float>(), work, n * sizeof(float));
    if (st.isOk() && pad) st = k.zero(d.intra.as<float>() + n, pad * sizeof(float));
  }
  if (!st.isOk()) return fail(named(st));
  return run(kIntra, h_.rowPlan, d.intra.as<void>(), d.intra.as<void>(), d.rowScratch.as<void>(), true);
}

// Stage 2: this rank's shard of the host average, checked with everyone's inputs.
Status CompressedHierDeviceStepTask::afterIntra() {
  CompressedState& s = *state_;
  CompressedHierDevice& d = *s.device->hier;
  algorithms::StepKernels& k = *s.device->kernels;
  const size_t off = h_.shardOffset, real = h_.shardReal;
  Status st = h_.intraType == DataType::kF16
                  ? k.castFrom(DataType::kF16, d.intra.as<uint16_t>() + off, real, d.shard.as<float>())
                  : k.copy(d.shard.as<float>(), d.intra.as<float>() + off, real * sizeof(float));
  auto bad = st.isOk() ? k.scanNonFinite(d.shard.as<float>(), real) : Result<size_t>(st);
  if (!bad.isOk()) return fail(named(bad.status()));
  s.badIndex = bad.value();  // within the shard
  s.flagIn[0] = h_.badIndex < s.count ? 1.0 : 0.0;
  s.flagIn[1] = s.badIndex < real ? 1.0 : 0.0;
  return run(kFlag, s.flagPlan, s.flagIn, s.flagOut, s.flagScratch.data(), false);
}

// Stage 3: compress the shard on the device (EF changes only now), column gather.
Status CompressedHierDeviceStepTask::afterFlag() {
  CompressedState& s = *state_;
  CompressedDevice& dev = *s.device;
  CompressedHierDevice& d = *dev.hier;
  if (s.flagOut[0] > 0 || s.flagOut[1] > 0) {
    std::string what = "compressed tensor " + s.name + ": ";
    if (s.flagOut[0] > 0) {
      what += std::to_string(static_cast<int>(s.flagOut[0])) + " rank(s) had NaN or Inf in gradient + residual";
      if (h_.badIndex < s.count) {
        float value = 0.0f;  // for the message only
        dev.kernels->readToHost(&value, d.work.as<float>() + h_.badIndex, sizeof value).ignore();
        what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.badIndex) + " is " +
                std::to_string(value) + (h_.overflow ? ", beyond f16 (intra=fp16)" : "") + ")";
      }
    } else {
      what += std::to_string(static_cast<int>(s.flagOut[1])) + " host average block(s) overflowed f16 (intra=fp16)";
      if (s.badIndex < h_.shardReal)
        what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.shardOffset + s.badIndex) + ")";
    }
    return fail(Status(Code::kNumericError, what + "; the tensor and its residual are unchanged"));
  }
  uint64_t length = 0;
  if (dev.codec) {
    auto* payload = reinterpret_cast<std::byte*>(dev.mine.as<uint64_t>() + 1);
    auto written = dev.codec->compress(d.shard.as<float>(), payload, static_cast<uint32_t>(s.step));
    if (!written.isOk()) return fail(named(written.status()));
    length = written.value();
  }
  Status st = dev.kernels->writeFromHost(dev.mine.as<uint64_t>(), &length, sizeof length);
  if (!st.isOk()) return fail(named(st));
  return run(kColumn, h_.columnPlan, dev.mine.as<void>(), dev.all.as<void>(), d.columnScratch.as<void>(), true);
}

// Stage 4: the column's average of the decoded payloads in row order, then the row gather.
Status CompressedHierDeviceStepTask::afterColumn() {
  CompressedState& s = *state_;
  CompressedDevice& dev = *s.device;
  CompressedHierDevice& d = *dev.hier;
  algorithms::StepKernels& k = *dev.kernels;
  const size_t real = h_.shardReal, room = (s.slotWords - 1) * 8;
  Status st = k.zero(dev.sum.as<float>(), real * sizeof(float));
  for (int r = 0; st.isOk() && r < h_.place.y && dev.codec; ++r) {
    const uint64_t* slot = dev.all.as<uint64_t>() + static_cast<size_t>(r) * s.slotWords;
    const int from = h_.place.columnRanks[r];
    uint64_t length = 0;
    st = k.readToHost(&length, slot, sizeof length);
    if (!st.isOk()) break;
    if (length > room)
      return fail(Status(Code::kInvalidArgument, "compressed tensor " + s.name + ": rank " + std::to_string(from) +
                                                     " sent a payload of " + std::to_string(length) +
                                                     " bytes, more than its slot holds"));
    st = dev.codec->decompress(reinterpret_cast<const std::byte*>(slot + 1), length, dev.decoded.as<float>());
    if (!st.isOk())
      return fail(Status(st.code(), "compressed tensor " + s.name + ": payload of rank " + std::to_string(from) +
                                        ": " + st.message()));
    st = k.reduce(dev.sum.as<float>(), dev.decoded.as<float>(), real, DataType::kF32, ReduceOp::kSum);
  }
  if (st.isOk()) st = k.scale(dev.sum.as<float>(), real, 1.0f / static_cast<float>(h_.place.y), d.block.as<float>());
  if (!st.isOk()) return fail(named(st));
  return run(kRow, h_.rowGatherPlan, d.block.as<void>(), d.result.as<void>(), d.rowGatherScratch.as<void>(), true);
}

Status CompressedHierDeviceStepTask::finish() {
  CompressedState& s = *state_;
  CompressedHierDevice& d = *s.device->hier;
  Status st = s.device->kernels->copy(s.g, d.result.as<float>(), s.count * sizeof(float));
  if (!st.isOk()) return fail(named(st));
  if (h_.intraType == DataType::kF16) std::swap(d.intraResidual, d.nextResidual);
  ++s.step;
  result_ = Status::ok();
  return result_;
}

Status CompressedHierDeviceStepTask::progress() {
  if (!running(result_)) return result_;
  if (exec_[stage_] && running(stageStatus_)) stageStatus_ = exec_[stage_]->progress();
  return drive();
}

Status CompressedHierDeviceStepTask::drive() {
  if (!running(result_) || running(stageStatus_)) return result_;
  if (!stageStatus_.isOk()) return fail(stageStatus_);
  switch (stage_) {
    case kIntra: return afterIntra();
    case kFlag: return afterFlag();
    case kColumn: return afterColumn();
    default: return finish();
  }
}

Status CompressedHierDeviceStepTask::fail(Status status) {
  if (running(result_)) result_ = std::move(status);
  if (exec_[stage_] && running(stageStatus_)) exec_[stage_]->abort(result_);
  return result_;
}

void CompressedHierDeviceStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool CompressedHierDeviceStepTask::quiescent() const {
  return std::all_of(std::begin(exec_), std::end(exec_), [](const auto& e) { return !e || e->quiescent(); });
}

int CompressedHierDeviceStepTask::waitingOn() const {
  return exec_[stage_] && running(stageStatus_) ? exec_[stage_]->waitingOn() : -1;
}

}  // namespace tsr::compressed
