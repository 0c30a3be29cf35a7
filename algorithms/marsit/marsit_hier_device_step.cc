#include "algorithms/marsit/marsit_hier_device_step.h"

#include <algorithm>
#include <cstdint>

namespace tsr::marsit {

MarsitHierDeviceStepTask::MarsitHierDeviceStepTask(std::shared_ptr<MarsitState> state,
                                                   const algorithms::TaskContext& ctx)
    : TwoLevelMarsitSequence(std::move(state), ctx) {}

Status MarsitHierDeviceStepTask::named(const Status& st) const {
  if (st.isOk()) return st;
  return Status(st.code(), "two-level marsit tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", direct device path): " + st.message());
}

algorithms::RunBuffers MarsitHierDeviceStepTask::deviceBuffers(void* data, void* scratch) const {
  algorithms::RunBuffers b{data, data, scratch};
  b.memory = transport::MemoryType::kCuda;
  b.kernels = state_->device->kernels.get();
  return b;
}

Status MarsitHierDeviceStepTask::prepareIntra() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  float* work = d.work.as<float>();
  auto sum = k.addScan(s.g, d.intraResidual.as<float>(), s.count, work);  // x = g + r
  if (!sum.isOk()) return named(sum.status());
  if (full_) {
    // Everything kept back goes in: the host-average compensation counts X times.
    const size_t off = s.hier.shardOffset;
    const size_t real = s.count > off ? std::min(s.hier.shardCount, s.count - off) : 0;
    Status st = k.scale(d.comp.as<float>(), real, static_cast<float>(s.ranksPerRow), d.shardOut.as<float>());
    if (st.isOk() && real) st = k.reduce(work + off, d.shardOut.as<float>(), real, DataType::kF32, ReduceOp::kSum);
    auto bad = st.isOk() ? k.scanNonFinite(work, s.count) : Result<size_t>(st);
    if (!bad.isOk()) return named(bad.status());
    s.badIndex = bad.value();
    return Status::ok();
  }
  // Stage 1: the cast to the intra-host type (keeping what it drops), before the host average.
  Status st;
  if (s.intraType == DataType::kF16) {
    auto* h = d.intra.as<uint16_t>();
    st = k.castTo(DataType::kF16, work, s.count, h);
    if (st.isOk()) st = k.castResidual(DataType::kF16, work, h, s.count, d.intraResidual.as<float>());
    if (st.isOk()) st = k.zero(d.dropped.as<void>(), s.hier.padded * sizeof(float));
  } else {
    st = k.copy(d.intra.as<void>(), work, s.count * sizeof(float));
  }
  return named(st);
}

algorithms::RunBuffers MarsitHierDeviceStepTask::intraBuffers() {
  MarsitDeviceArrays& d = *state_->device;
  algorithms::RunBuffers b = deviceBuffers(d.intra.as<void>(), d.rowScratch.as<void>());
  if (state_->intraType == DataType::kF16) b.droppedRounding = d.dropped.as<float>();
  return b;
}

Status MarsitHierDeviceStepTask::packBlock() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  if (s.intraType == DataType::kF16) {  // the host ring's f16 rounding (marsit_hier_step.cc)
    Status st =
        d.kernels->reduce(d.intraResidual.as<float>(), d.dropped.as<float>(), s.count, DataType::kF32, ReduceOp::kSum);
    if (!st.isOk()) return named(st);
  }
  return named(packWhole());
}

// s' = s + c on the row block, its scan, sum and sign words (at the block's place).
Status MarsitHierDeviceStepTask::packWhole() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  double t = nowUs();
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;  // the rest is padding
  float* shard = d.shard.as<float>();
  Status st = s.intraType == DataType::kF16 ? k.castFrom(DataType::kF16, d.intra.as<uint16_t>() + off, n, shard)
                                            : k.copy(shard, d.intra.as<float>() + off, n * sizeof(float));
  if (st.isOk()) st = k.reduce(shard, d.comp.as<float>(), n, DataType::kF32, ReduceOp::kSum);
  TSR_RETURN_IF_ERROR(st);
  TSR_ASSIGN_OR_RETURN(size_t bad, k.scanNonFinite(shard, real));
  double sumAbs = 0;
  if (bad == real) TSR_RETURN_IF_ERROR(k.sumAbs(shard, real, &sumAbs));
  double t2 = nowUs();
  s.times.prepare += t2 - t;
  const kernels::RngStream coin{s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  TSR_RETURN_IF_ERROR(k.signPack(shard, n, d.bits.as<uint64_t>() + off / 64, coin, off / 64).status());
  s.times.pack = nowUs() - t2;
  scalarsReady(bad, sumAbs);
  return Status::ok();
}

algorithms::RunBuffers MarsitHierDeviceStepTask::bitBuffers() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  if (full_) return deviceBuffers(d.work.as<void>(), d.fullScratch.as<void>());
  algorithms::RunBuffers b = signBitBuffers(s, d.bits.as<void>(), d.bitScratch.as<void>());
  b.memory = transport::MemoryType::kCuda;
  b.kernels = d.kernels.get();
  // A pack=chunked plan's kLocal ops pack a chunk: done already, whole, in packBlock().
  b.local = [](const algorithms::PlanOp&) { return Status::ok(); };
  return b;
}

float MarsitHierDeviceStepTask::workValue(size_t index) {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  float value = 0.0f;
  d.kernels
      ->readToHost(&value, full_ ? d.work.as<float>() + index : d.shard.as<float>() + (index - s.hier.shardOffset),
                   sizeof value)
      .ignore();  // for the message only
  return value;
}

Status MarsitHierDeviceStepTask::writeResult() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  double t = nowUs();
  Status st;
  if (full_) {
    st = k.copy(s.g, d.work.as<float>(), s.count * sizeof(float));
    if (st.isOk()) st = k.zero(d.comp.as<void>(), n * sizeof(float));
    if (st.isOk()) st = k.zero(d.intraResidual.as<void>(), s.count * sizeof(float));
    if (!st.isOk()) return named(st);
    s.times.decompress = nowUs() - t;
    return Status::ok();
  }
  // Every host holds every element once: divide by hosts x elements.
  const double hosts = static_cast<double>(s.size / s.ranksPerRow);
  float eta = s.count ? static_cast<float>(s.scalarOut[0] / (hosts * s.count)) : 0.0f;
  st = k.signDecompress(d.bits.as<uint64_t>(), s.count, eta, s.g);
  double t2 = nowUs();
  s.times.decompress = t2 - t;
  // c = s' - G on the block (G into shardOut, unused); padding keeps nothing.
  if (st.isOk())
    st = k.signFinish(d.shard.as<float>(), d.bits.as<uint64_t>() + off / 64, n, eta, d.shardOut.as<float>(),
                      d.comp.as<float>());
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;
  if (st.isOk() && real < n) st = k.zero(d.comp.as<float>() + real, (n - real) * sizeof(float));
  if (!st.isOk()) return named(st);
  s.times.compensate = nowUs() - t2;
  return Status::ok();
}

}  // namespace tsr::marsit
