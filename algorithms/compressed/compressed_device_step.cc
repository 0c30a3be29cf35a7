#include "algorithms/compressed/compressed_device_step.h"

#include "algorithms/compressed/compressed_hier_device_step.h"

#include <cmath>

namespace tsr::compressed {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
std::string whoOf(const CompressedState& s) {
  return "compressed tensor " + s.name + " (rank " + std::to_string(s.rank) + ", direct device path)";
}
}  // namespace

Result<std::shared_ptr<CompressedDevice>> CompressedDevice::create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                                   const CompressedState& s) {
  auto d = std::make_shared<CompressedDevice>();
  d->kernels = kernels;
  const std::string who = whoOf(s);
  using algorithms::DeviceBlock;
  if (s.hier) {
    if (s.compressor) {
      TSR_ASSIGN_OR_RETURN(d->codec, DeviceCodec::create(kernels, *s.compressor, who));
    }
    const size_t slot = s.slotWords * 8, real = s.hier->shardReal * sizeof(float);
    TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->mine, slot, who, "payload slot"));
    TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->all, slot * s.hier->place.y, who, "column's slots"));
    TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->decoded, real, who, "decoded payload"));
    TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->sum, real, who, "sum"));
    d->hier = std::make_shared<CompressedHierDevice>();
    TSR_RETURN_IF_ERROR(CompressedHierDevice::create(kernels, s, who, *d->hier));
    return d;
  }
  TSR_ASSIGN_OR_RETURN(d->codec, DeviceCodec::create(kernels, *s.compressor, who));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->mine, s.slotWords * 8, who, "payload slot"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->all, s.slotWords * 8 * s.size, who, "gathered slots"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->gatherScratch, s.gatherPlan->scratchBytes, who, "all-gather scratch"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->decoded, s.count * sizeof(float), who, "decoded payload"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->sum, s.count * sizeof(float), who, "sum"));
  return d;
}

CompressedDeviceStepTask::CompressedDeviceStepTask(std::shared_ptr<CompressedState> state,
                                                   const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status CompressedDeviceStepTask::named(const Status& st) const {
  if (st.isOk() || st.message().rfind("compressed tensor ", 0) == 0) return st;
  return Status(st.code(), whoOf(*state_) + ": " + st.message());
}

Status CompressedDeviceStepTask::start() {
  CompressedState& s = *state_;
  auto bad = s.device->kernels->scanNonFinite(s.g, s.count);
  if (!bad.isOk()) return fail(named(bad.status()));
  s.badIndex = bad.value();
  s.flagIn[0] = s.badIndex < s.count ? 1.0 : 0.0;
  flag_ = std::make_unique<algorithms::PlanExecutor>(
      s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()}, ctx_.id, ctx_.transport);
  flagStatus_ = flag_->start();
  return drive();
}

Status CompressedDeviceStepTask::progress() {
  if (!running(status_)) return status_;
  if (flag_ && running(flagStatus_)) flagStatus_ = flag_->progress();
  if (gather_ && running(gatherStatus_)) gatherStatus_ = gather_->progress();
  return drive();
}

Status CompressedDeviceStepTask::drive() {
  for (const Status* st : {&flagStatus_, &gatherStatus_})
    if (!running(*st) && !st->isOk()) return fail(*st);
  if (running(flagStatus_)) return status_;
  if (!gather_) return startGather();
  if (running(gatherStatus_)) return status_;
  return finish();
}

Status CompressedDeviceStepTask::startGather() {
  CompressedState& s = *state_;
  CompressedDevice& d = *s.device;
  if (s.flagOut[0] > 0) {
    bool mine = s.badIndex < s.count;
    float value = 0.0f;
    if (mine) d.kernels->readToHost(&value, s.g + s.badIndex, sizeof value).ignore();  // for the message only
    return fail(Status(Code::kNumericError,
                       "compressed tensor " + s.name + ": " + std::to_string(static_cast<int>(s.flagOut[0])) +
                           " rank(s) had NaN or Inf" +
                           (mine ? " (rank " + std::to_string(s.rank) + ": element " + std::to_string(s.badIndex) +
                                       " is " + std::to_string(value) + ")"
                                 : std::string()) +
                           "; the tensor and its residual are unchanged"));
  }
  auto* payload = reinterpret_cast<std::byte*>(d.mine.as<uint64_t>() + 1);
  auto written = d.codec->compress(s.g, payload, static_cast<uint32_t>(s.step));
  if (!written.isOk()) return fail(named(written.status()));
  const uint64_t length = written.value();
  Status st = d.kernels->writeFromHost(d.mine.as<uint64_t>(), &length, sizeof length);
  if (!st.isOk()) return fail(named(st));
  algorithms::RunIdentity id = ctx_.id;
  id.seq += 1;
  algorithms::RunBuffers b{d.mine.as<uint64_t>(), d.all.as<uint64_t>(), d.gatherScratch.as<void>()};
  b.memory = transport::MemoryType::kCuda;
  b.kernels = d.kernels.get();
  gather_ = std::make_unique<algorithms::PlanExecutor>(s.gatherPlan, b, id, ctx_.transport);
  gatherStatus_ = gather_->start();
  return drive();
}

Status CompressedDeviceStepTask::finish() {
  CompressedState& s = *state_;
  CompressedDevice& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  const size_t room = (s.slotWords - 1) * 8;
  Status st = k.zero(d.sum.as<float>(), s.count * sizeof(float));
  // Rank order, as on the host: the float sums round the same.
  for (int r = 0; st.isOk() && r < s.size; ++r) {
    const uint64_t* slot = d.all.as<uint64_t>() + static_cast<size_t>(r) * s.slotWords;
    uint64_t length = 0;
    st = k.readToHost(&length, slot, sizeof length);
    if (!st.isOk()) break;
    if (length > room)
      return fail(Status(Code::kInvalidArgument, "compressed tensor " + s.name + ": rank " + std::to_string(r) +
                                                     " sent a payload of " + std::to_string(length) +
                                                     " bytes, more than its slot holds"));
    st = d.codec->decompress(reinterpret_cast<const std::byte*>(slot + 1), length, d.decoded.as<float>());
    if (!st.isOk())
      return fail(Status(st.code(), "compressed tensor " + s.name + ": payload of rank " + std::to_string(r) + ": " +
                                        st.message()));
    st = k.reduce(d.sum.as<float>(), d.decoded.as<float>(), s.count, DataType::kF32, ReduceOp::kSum);
  }
  if (st.isOk()) st = k.scale(d.sum.as<float>(), s.count, 1.0f / static_cast<float>(s.size), s.g);
  if (!st.isOk()) return fail(named(st));
  ++s.step;
  status_ = Status::ok();
  return status_;
}

Status CompressedDeviceStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (flag_ && running(flagStatus_)) flag_->abort(status_);
  if (gather_ && running(gatherStatus_)) gather_->abort(status_);
  return status_;
}

void CompressedDeviceStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool CompressedDeviceStepTask::quiescent() const {
  return (!flag_ || flag_->quiescent()) && (!gather_ || gather_->quiescent());
}

int CompressedDeviceStepTask::waitingOn() const {
  if (flag_ && running(flagStatus_)) return flag_->waitingOn();
  if (gather_ && running(gatherStatus_)) return gather_->waitingOn();
  return -1;
}

Status checkDirect(const CompressedState& s, const float* g) {
  if (s.count == 0) return Status::ok();
  Status st = s.device->kernels->checkMemory(g, s.count * sizeof(float));
  if (st.isOk()) return st;
  return Status(st.code(), "device tensor " + s.name + " (memory=cuda, rank " + std::to_string(s.rank) +
                               ", direct path on " + s.device->kernels->describe() + "): " + st.message());
}

}  // namespace tsr::compressed
