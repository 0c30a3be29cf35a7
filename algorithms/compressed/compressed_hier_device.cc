#include "algorithms/compressed/compressed_hier_device.h"

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

Status writeTwoLevelDeviceResidual(CompressedState& s, const float* values) {
  CompressedHier& h = *s.hier;
  const CompressedDevice& dev = *s.device;
  Status st = dev.kernels->writeFromHost(dev.hier->intraResidual.as<float>(), values, s.count * sizeof(float));
  if (st.isOk() && dev.codec) {
    std::vector<float> zeros(h.shardReal, 0.0f);
    auto cleared = dev.codec->writeError(zeros.data());
    if (!cleared.isOk()) st = cleared.status();
  }
  if (!st.isOk()) return Status(st.code(), whoOf(s) + ": setting the device residual: " + st.message());
  h.intraResidualOnce = h.intraType != DataType::kF16;
  return Status::ok();
}

}  // namespace tsr::compressed
