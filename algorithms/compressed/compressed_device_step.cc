#include "algorithms/compressed/compressed_device_step.h"

#include "algorithms/compressed/compressed_hier_device_step.h"

#include <cmath>

namespace tsr::compressed {

namespace {
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
  TSR_RETURN_IF_ERROR(
      DeviceBlock::make(kernels, d->gatherScratch, s.gatherPlan->scratchBytes, who, "all-gather scratch"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->decoded, s.count * sizeof(float), who, "decoded payload"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->sum, s.count * sizeof(float), who, "sum"));
  return d;
}

CompressedDeviceStepTask::CompressedDeviceStepTask(std::shared_ptr<CompressedState> state,
                                                   const algorithms::TaskContext& ctx)
    : FlatStepSequence(std::move(state), ctx) {}

Status CompressedDeviceStepTask::named(const Status& st) const {
  if (st.isOk() || st.message().rfind("compressed tensor ", 0) == 0) return st;
  return Status(st.code(), whoOf(*state_) + ": " + st.message());
}

Result<size_t> CompressedDeviceStepTask::findNonFinite() {
  auto bad = state_->device->kernels->scanNonFinite(state_->g, state_->count);
  if (!bad.isOk()) return named(bad.status());
  return bad;
}

float CompressedDeviceStepTask::valueOfG(size_t index) {
  float value = 0.0f;
  state_->device->kernels->readToHost(&value, state_->g + index, sizeof value).ignore();  // for the message only
  return value;
}

Result<algorithms::RunBuffers> CompressedDeviceStepTask::fillSlot() {
  CompressedState& s = *state_;
  CompressedDevice& d = *s.device;
  auto* payload = reinterpret_cast<std::byte*>(d.mine.as<uint64_t>() + 1);
  auto written = d.codec->compress(s.g, payload, static_cast<uint32_t>(s.step));
  if (!written.isOk()) return named(written.status());
  const uint64_t length = written.value();
  Status st = d.kernels->writeFromHost(d.mine.as<uint64_t>(), &length, sizeof length);
  if (!st.isOk()) return named(st);
  algorithms::RunBuffers b{d.mine.as<uint64_t>(), d.all.as<uint64_t>(), d.gatherScratch.as<void>()};
  b.memory = transport::MemoryType::kCuda;
  b.kernels = d.kernels.get();
  return b;
}

Status CompressedDeviceStepTask::averageSlots() {
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
    if (length > room) return oversizedPayload(s, r, length);
    st = d.codec->decompress(reinterpret_cast<const std::byte*>(slot + 1), length, d.decoded.as<float>());
    if (!st.isOk()) return undecodablePayload(s, r, st);
    st = k.reduce(d.sum.as<float>(), d.decoded.as<float>(), s.count, DataType::kF32, ReduceOp::kSum);
  }
  if (st.isOk()) st = k.scale(d.sum.as<float>(), s.count, 1.0f / static_cast<float>(s.size), s.g);
  return named(st);
}

Status checkDirect(const CompressedState& s, const float* g) {
  if (s.count == 0) return Status::ok();
  Status st = s.device->kernels->checkMemory(g, s.count * sizeof(float));
  if (st.isOk()) return st;
  return Status(st.code(), "device tensor " + s.name + " (memory=cuda, rank " + std::to_string(s.rank) +
                               ", direct path on " + s.device->kernels->describe() + "): " + st.message());
}

}  // namespace tsr::compressed
