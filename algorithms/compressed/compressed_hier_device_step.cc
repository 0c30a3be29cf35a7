#include "algorithms/compressed/compressed_hier_device_step.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tsr::compressed {

Status CompressedHierDevice::create(const std::shared_ptr<algorithms::StepKernels>& kernels, const CompressedState& s,
                                    const std::string& who, CompressedHierDevice& d) {
  const CompressedHier& h = *s.hier;
  using algorithms::DeviceBlock;
  const size_t vec = s.count * sizeof(float);
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.work, vec, who, "g + q"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.intraResidual, vec, who, "f16 cast residual"));
  TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.nextResidual, vec, who, "next f16 cast residual"));
  if (h.intraType == DataType::kF16)
    TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d.dropped, h.padded * sizeof(float), who, "f16 sum rounding"));
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
    : TwoLevelStepSequence(std::move(state), ctx) {}

Status CompressedHierDeviceStepTask::named(const Status& st) const {
  if (st.isOk() || st.message().rfind("compressed tensor ", 0) == 0) return st;
  return Status(st.code(), "compressed tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", two-level, direct device path): " + st.message());
}

// Every plan but the flags' runs on device buffers, its local math through the kernels.
algorithms::RunBuffers CompressedHierDeviceStepTask::stageBuffers(Stage stage) {
  CompressedDevice& dev = *state_->device;
  CompressedHierDevice& d = *dev.hier;
  algorithms::RunBuffers b;
  switch (stage) {
    case kIntra:
      b = {d.intra.as<void>(), d.intra.as<void>(), d.rowScratch.as<void>()};
      if (h_.intraType == DataType::kF16) b.droppedRounding = d.dropped.as<float>();
      break;
    case kColumn:
      b = {dev.mine.as<void>(), dev.all.as<void>(), d.columnScratch.as<void>()};
      break;
    default:
      b = {d.block.as<void>(), d.result.as<void>(), d.rowGatherScratch.as<void>()};
      break;
  }
  b.memory = transport::MemoryType::kCuda;
  b.kernels = dev.kernels.get();
  return b;
}

// Stage 1: x = g + q, cast to the intra type (q' = what the cast drops), then the host average.
Status CompressedHierDeviceStepTask::prepareIntra() {
  CompressedState& s = *state_;
  CompressedHierDevice& d = *s.device->hier;
  algorithms::StepKernels& k = *s.device->kernels;
  const size_t n = s.count, pad = h_.padded - n;
  float* work = d.work.as<float>();
  auto bad = k.addScan(s.g, d.intraResidual.as<float>(), n, work);
  if (!bad.isOk()) return named(bad.status());
  h_.badIndex = bad.value();
  h_.overflow = false;
  Status st;
  if (h_.intraType == DataType::kF16) {
    auto* half = d.intra.as<uint16_t>();
    st = k.castTo(DataType::kF16, work, n, half);
    if (st.isOk() && pad) st = k.zero(half + n, pad * sizeof(uint16_t));  // the last ring left partial sums there
    if (st.isOk()) st = k.zero(d.dropped.as<void>(), h_.padded * sizeof(float));
    float* next = d.nextResidual.as<float>();
    if (st.isOk()) st = k.castFrom(DataType::kF16, half, n, next);
    if (st.isOk()) st = k.efKeep(work, n, next);  // q' = x - f16(x) (feedback_ops.h's c - decoded)
    if (st.isOk() && h_.badIndex == n) {
      // A finite x whose f16 is infinite: the cast cannot keep it.
      auto overflow = k.scanNonFinite(next, n);
      if (!overflow.isOk()) return named(overflow.status());
      h_.badIndex = overflow.value();
      h_.overflow = h_.badIndex < n;
    }
  } else {
    st = k.copy(d.intra.as<float>(), work, n * sizeof(float));
    if (st.isOk() && pad) st = k.zero(d.intra.as<float>() + n, pad * sizeof(float));
  }
  return named(st);
}

// Stage 2: this rank's shard of the host average.
Result<size_t> CompressedHierDeviceStepTask::takeShard() {
  CompressedHierDevice& d = *state_->device->hier;
  algorithms::StepKernels& k = *state_->device->kernels;
  const size_t off = h_.shardOffset, real = h_.shardReal;
  Status st = h_.intraType == DataType::kF16
                  ? k.castFrom(DataType::kF16, d.intra.as<uint16_t>() + off, real, d.shard.as<float>())
                  : k.copy(d.shard.as<float>(), d.intra.as<float>() + off, real * sizeof(float));
  auto bad = st.isOk() ? k.scanNonFinite(d.shard.as<float>(), real) : Result<size_t>(st);
  if (!bad.isOk()) return named(bad.status());
  return bad;
}

float CompressedHierDeviceStepTask::workValue(size_t index) {
  float value = 0.0f;
  state_->device->kernels->readToHost(&value, state_->device->hier->work.as<float>() + index, sizeof value).ignore();
  return value;
}

// Stage 3: compress the shard on the device (EF state on the device).
Status CompressedHierDeviceStepTask::fillSlot() {
  CompressedState& s = *state_;
  CompressedDevice& dev = *s.device;
  CompressedHierDevice& d = *dev.hier;
  uint64_t length = 0;
  if (dev.codec) {
    auto* payload = reinterpret_cast<std::byte*>(dev.mine.as<uint64_t>() + 1);
    auto written = dev.codec->compress(d.shard.as<float>(), payload, static_cast<uint32_t>(s.step));
    if (!written.isOk()) return named(written.status());
    length = written.value();
  }
  return named(dev.kernels->writeFromHost(dev.mine.as<uint64_t>(), &length, sizeof length));
}

// Stage 4: the column's average of the decoded payloads in row order.
Status CompressedHierDeviceStepTask::averageColumn() {
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
    if (length > room) return oversizedPayload(s, from, length);
    st = dev.codec->decompress(reinterpret_cast<const std::byte*>(slot + 1), length, dev.decoded.as<float>());
    if (!st.isOk()) return undecodablePayload(s, from, st);
    st = k.reduce(dev.sum.as<float>(), dev.decoded.as<float>(), real, DataType::kF32, ReduceOp::kSum);
  }
  if (st.isOk()) st = k.scale(dev.sum.as<float>(), real, 1.0f / static_cast<float>(h_.place.y), d.block.as<float>());
  return named(st);
}

Status CompressedHierDeviceStepTask::writeResult() {
  CompressedState& s = *state_;
  CompressedHierDevice& d = *s.device->hier;
  Status st = s.device->kernels->copy(s.g, d.result.as<float>(), s.count * sizeof(float));
  if (!st.isOk()) return named(st);
  if (h_.intraType == DataType::kF16) {
    // q' += what the host ring's f16 sums and division dropped (compressed_hier_step.cc).
    st = s.device->kernels->reduce(d.nextResidual.as<float>(), d.dropped.as<float>(), s.count, DataType::kF32,
                                   ReduceOp::kSum);
    if (!st.isOk()) return named(st);
    std::swap(d.intraResidual, d.nextResidual);
  }
  return Status::ok();
}

}  // namespace tsr::compressed
