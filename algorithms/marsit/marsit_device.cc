#include "algorithms/marsit/marsit_device.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tsr::marsit {

Result<std::shared_ptr<MarsitDeviceArrays>> MarsitDeviceArrays::create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                                       const MarsitState& s) {
  auto d = std::make_shared<MarsitDeviceArrays>();
  d->kernels = kernels;
  auto block = [&](DeviceBlock& into, size_t bytes, const char* what) -> Status {
    auto made = kernels->allocate(bytes);
    if (!made.isOk())
      return Status(made.status().code(), "marsit tensor " + s.name + ": device " + what + " (" +
                                              std::to_string(bytes) + " bytes) on " + kernels->describe() + ": " +
                                              made.status().message());
    into = DeviceBlock(kernels, made.value());
    return Status::ok();
  };
  TSR_RETURN_IF_ERROR(block(d->comp, s.comp.size() * sizeof(float), "compensation"));
  TSR_RETURN_IF_ERROR(block(d->work, s.count * sizeof(float), "work vector"));
  TSR_RETURN_IF_ERROR(block(d->bits, s.bits.size() * sizeof(uint64_t), "sign bits"));
  TSR_RETURN_IF_ERROR(block(d->bitScratch, s.bitPlan->scratchBytes, "bit plan scratch"));
  if (s.fullPlan) TSR_RETURN_IF_ERROR(block(d->fullScratch, s.fullPlan->scratchBytes, "full-precision scratch"));
  if (!s.prev.empty()) {
    TSR_RETURN_IF_ERROR(block(d->prev, s.count * sizeof(float), "last estimate"));
    TSR_RETURN_IF_ERROR(block(d->shift, s.count * sizeof(float), "compensation plus momentum"));
  }
  if (s.twoLevel) {
    TSR_RETURN_IF_ERROR(block(d->intra, s.intraBuffer.size() * sizeof(uint64_t), "intra-host vector"));
    TSR_RETURN_IF_ERROR(block(d->rowScratch, s.hier.rowReduceScatter->scratchBytes, "intra-host plan scratch"));
    TSR_RETURN_IF_ERROR(block(d->intraResidual, s.count * sizeof(float), "f16 cast residual"));
    TSR_RETURN_IF_ERROR(block(d->shard, s.hier.shardCount * sizeof(float), "row block"));
    TSR_RETURN_IF_ERROR(block(d->shardOut, s.hier.shardCount * sizeof(float), "row block estimate"));
    if (s.intraType == DataType::kF16)
      TSR_RETURN_IF_ERROR(block(d->dropped, s.hier.padded * sizeof(float), "f16 sum rounding"));
  }
  return d;
}

Status checkDirect(const MarsitState& s, const float* g) {
  if (s.count == 0) return Status::ok();
  Status st = s.device->kernels->checkMemory(g, s.count * sizeof(float));
  if (st.isOk()) return st;
  return Status(st.code(), "device tensor " + s.name + " (memory=cuda, rank " + std::to_string(s.rank) +
                               ", direct path on " + s.device->kernels->describe() + "): " + st.message());
}

Status writeDeviceResidual(MarsitState& s, const float* values) {
  algorithms::StepKernels& k = *s.device->kernels;
  auto named = [&](Status st) {
    return st.isOk() ? st
                     : Status(st.code(), "marsit tensor " + s.name + ": setting the device residual: " + st.message());
  };
  const size_t bytes = s.count * sizeof(float);
  if (!s.twoLevel) {
    TSR_RETURN_IF_ERROR(named(k.writeFromHost(s.device->comp.as<float>(), values, bytes)));
    if (s.params.momentum <= 0) return Status::ok();
    // The carry c + mu M the next step adds, made again from the new c (as on the host).
    std::vector<float> carry(s.count);
    TSR_RETURN_IF_ERROR(named(k.readToHost(carry.data(), s.device->prev.as<float>(), bytes)));
    for (size_t j = 0; j < s.count; ++j) carry[j] = values[j] + s.params.momentum * carry[j];
    return named(k.writeFromHost(s.device->shift.as<float>(), carry.data(), bytes));
  }
  // Two-level: all of it becomes the cast residual, the row block's compensation starts at 0.
  TSR_RETURN_IF_ERROR(named(k.writeFromHost(s.device->intraResidual.as<float>(), values, bytes)));
  TSR_RETURN_IF_ERROR(named(k.zero(s.device->comp.as<float>(), s.comp.size() * sizeof(float))));
  s.intraResidualOnce = s.intraType != DataType::kF16;
  return Status::ok();
}

}  // namespace tsr::marsit
