#include "algorithms/compressed/compressed_device.h"

#include "algorithms/compressed/compressed_hier_device.h"

namespace tsr::compressed {

std::string whoOf(const CompressedState& s) {
  return "compressed tensor " + s.name + " (rank " + std::to_string(s.rank) + ", direct device path)";
}

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
  if (s.handoff > 0) {
    TSR_RETURN_IF_ERROR(DeviceBlock::make(kernels, d->estimate, s.count * sizeof(float), who, "momentum estimate"));
    TSR_RETURN_IF_ERROR(kernels->zero(d->estimate.as<void>(), s.count * sizeof(float)));  // before any step
  }
  return d;
}

Status checkDirect(const CompressedState& s, const float* g) {
  if (s.count == 0) return Status::ok();
  Status st = s.device->kernels->checkMemory(g, s.count * sizeof(float));
  if (st.isOk()) return st;
  return Status(st.code(), "device tensor " + s.name + " (memory=cuda, rank " + std::to_string(s.rank) +
                               ", direct path on " + s.device->kernels->describe() + "): " + st.message());
}

}  // namespace tsr::compressed
