#include "algorithms/marsit/marsit_device_step.h"

#include <algorithm>
#include <cstdint>

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

MarsitDeviceStepTask::MarsitDeviceStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : FlatMarsitSequence(std::move(state), ctx) {}

Status MarsitDeviceStepTask::named(const Status& st) const {
  if (st.isOk()) return st;
  return Status(st.code(), "marsit tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", direct device path): " + st.message());
}

// g' = g + c (and on a sign step its bits and sum |g'|), on the device, whole.
Status MarsitDeviceStepTask::prepare() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  double sumAbs = 0;
  const kernels::RngStream coin{s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  const float* c = s.params.momentum > 0 ? d.shift.as<float>() : d.comp.as<float>();
  auto bad = full_ ? k.addScan(s.g, c, s.count, d.work.as<float>())
                   : k.signPrepare(s.g, c, s.count, d.work.as<float>(), d.bits.as<uint64_t>(), coin, &sumAbs);
  if (!bad.isOk()) return named(bad.status());
  if (s.scaleBlocks == 1) {
    s.blockSums[0] = sumAbs;
  } else {
    for (size_t b = 0; b < s.scaleBlocks; ++b) {
      s.blockSums[b] = 0;
      if (full_ || bad.value() < s.count) continue;
      Status st = k.sumAbs(d.work.as<float>() + s.scaleBegin(b), s.scaleLength(b), &s.blockSums[b]);
      if (!st.isOk()) return named(st);
    }
  }
  scalarsReady(bad.value());
  s.times.prepare = nowUs() - startUs_;
  return Status::ok();
}

algorithms::RunBuffers MarsitDeviceStepTask::bitBuffers() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::RunBuffers b;
  if (full_) {
    b = {d.work.as<float>(), d.work.as<float>(), d.fullScratch.as<void>()};
  } else {
    b = signBitBuffers(s, d.bits.as<uint64_t>(), d.bitScratch.as<void>());
    // A pack=chunked plan's kLocal ops pack a chunk: done already, whole, in prepare().
    b.local = [](const algorithms::PlanOp&) { return Status::ok(); };
  }
  b.memory = transport::MemoryType::kCuda;
  b.kernels = d.kernels.get();
  return b;
}

float MarsitDeviceStepTask::workValue(size_t index) {
  MarsitDeviceArrays& d = *state_->device;
  float value = 0.0f;
  d.kernels->readToHost(&value, d.work.as<float>() + index, sizeof value).ignore();  // for the message only
  return value;
}

Status MarsitDeviceStepTask::writeResult() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  Status st;
  if (full_) {
    st = k.copy(s.g, d.work.as<float>(), s.count * sizeof(float));
    if (st.isOk()) st = k.zero(d.comp.as<float>(), s.count * sizeof(float));
  } else {
    for (size_t b = 0; b < s.scaleBlocks && st.isOk(); ++b) {
      size_t at = s.scaleBegin(b);
      st = k.signFinish(d.work.as<float>() + at, d.bits.as<uint64_t>() + at / 64, s.scaleLength(b), s.eta(b), s.g + at,
                        d.comp.as<float>() + at);
    }
  }
  if (st.isOk() && s.params.momentum > 0) {
    // kernels::momentumHandOff's float operations, one pass each (work is free now):
    // tmp = (-mu) M, M = g, carry = mu g + c, g = g + tmp.
    float* tmp = d.work.as<float>();
    const float mu = s.params.momentum;
    st = k.scale(d.prev.as<float>(), s.count, -mu, tmp);
    if (st.isOk()) st = k.copy(d.prev.as<float>(), s.g, s.count * sizeof(float));
    if (st.isOk()) st = k.scale(s.g, s.count, mu, d.shift.as<float>());
    if (st.isOk()) st = k.reduce(d.shift.as<float>(), d.comp.as<float>(), s.count, DataType::kF32, ReduceOp::kSum);
    if (st.isOk()) st = k.reduce(s.g, tmp, s.count, DataType::kF32, ReduceOp::kSum);
  }
  return named(st);
}

}  // namespace tsr::marsit

namespace tsr::marsit {

Status checkDirect(const MarsitState& s, const float* g) {
  if (s.count == 0) return Status::ok();
  Status st = s.device->kernels->checkMemory(g, s.count * sizeof(float));
  if (st.isOk()) return st;
  return Status(st.code(), "device tensor " + s.name + " (memory=cuda, rank " + std::to_string(s.rank) +
                               ", direct path on " + s.device->kernels->describe() + "): " + st.message());
}

}  // namespace tsr::marsit
