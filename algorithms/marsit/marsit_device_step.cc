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
      return Status(made.status().code(), "marsit tensor " + s.name + ": device " + what + " (" + std::to_string(bytes) +
                                              " bytes) on " + kernels->describe() + ": " + made.status().message());
    into = DeviceBlock(kernels, made.value());
    return Status::ok();
  };
  TSR_RETURN_IF_ERROR(block(d->comp, s.comp.size() * sizeof(float), "compensation"));
  TSR_RETURN_IF_ERROR(block(d->work, s.count * sizeof(float), "work vector"));
  TSR_RETURN_IF_ERROR(block(d->bits, s.bits.size() * sizeof(uint64_t), "sign bits"));
  TSR_RETURN_IF_ERROR(block(d->bitScratch, s.bitPlan->scratchBytes, "bit plan scratch"));
  if (s.fullPlan) TSR_RETURN_IF_ERROR(block(d->fullScratch, s.fullPlan->scratchBytes, "full-precision scratch"));
  if (s.twoLevel) {
    TSR_RETURN_IF_ERROR(block(d->intra, s.intraBuffer.size() * sizeof(uint64_t), "intra-host vector"));
    TSR_RETURN_IF_ERROR(block(d->rowScratch, s.hier.rowReduceScatter->scratchBytes, "intra-host plan scratch"));
    TSR_RETURN_IF_ERROR(block(d->intraResidual, s.count * sizeof(float), "f16 cast residual"));
    TSR_RETURN_IF_ERROR(block(d->shard, s.hier.shardCount * sizeof(float), "row block"));
    TSR_RETURN_IF_ERROR(block(d->shardOut, s.hier.shardCount * sizeof(float), "row block estimate"));
  }
  return d;
}

MarsitDeviceStepTask::MarsitDeviceStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status MarsitDeviceStepTask::named(const Status& st) const {
  if (st.isOk()) return st;
  return Status(st.code(), "marsit tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", direct device path): " + st.message());
}

Status MarsitDeviceStepTask::start() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  // g' = g + c (and on a sign step its bits and sum |g'|), on the device.
  double sumAbs = 0;
  const kernels::RngStream coin{s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  auto bad = full_ ? k.addScan(s.g, d.comp.as<float>(), s.count, d.work.as<float>())
                   : k.signPrepare(s.g, d.comp.as<float>(), s.count, d.work.as<float>(), d.bits.as<uint64_t>(), coin,
                                   &sumAbs);
  if (!bad.isOk()) return fail(named(bad.status()));
  s.badIndex = bad.value();
  const bool mine = s.badIndex < s.count;
  s.scalarIn[0] = mine || s.count == 0 ? 0.0 : sumAbs / s.count;
  s.scalarIn[1] = mine ? 1.0 : 0.0;
  s.times.prepare = nowUs() - startUs_;

  algorithms::RunBuffers b;
  if (full_) {
    b = {d.work.as<float>(), d.work.as<float>(), d.fullScratch.as<void>()};
  } else {
    b = {d.bits.as<uint64_t>(), d.bits.as<uint64_t>(), d.bitScratch.as<void>()};
    b.rngSeed = s.params.seed;
    b.rngStep = static_cast<uint32_t>(s.step);
    b.mergeNanos = &s.mergeNanos;
    // A pack=chunked plan's kLocal ops pack a chunk: done already, whole, above.
    b.local = [](const algorithms::PlanOp&) { return Status::ok(); };
  }
  b.memory = transport::MemoryType::kCuda;
  b.kernels = d.kernels.get();
  algorithms::RunIdentity id = ctx_.id;
  id.seq = ctx_.id.seq + 1;
  bits_ = std::make_unique<algorithms::PlanExecutor>(full_ ? s.fullPlan : s.bitPlan, b, id, ctx_.transport);
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn, s.scalarOut, s.scalarScratch.data()}, ctx_.id, ctx_.transport);
  scalarStatus_ = scalar_->start();
  bitsStartUs_ = nowUs();
  bitsStatus_ = bits_->start();
  if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  return drive();
}

Status MarsitDeviceStepTask::progress() {
  if (!running(status_)) return status_;
  if (running(bitsStatus_)) {
    bitsStatus_ = bits_->progress();
    if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  }
  if (running(scalarStatus_)) scalarStatus_ = scalar_->progress();
  return drive();
}

Status MarsitDeviceStepTask::drive() {
  if (!running(scalarStatus_) && !scalarStatus_.isOk()) return fail(scalarStatus_);
  if (!running(bitsStatus_) && !bitsStatus_.isOk()) return fail(bitsStatus_);
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status MarsitDeviceStepTask::finish() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  s.times.merge = s.mergeNanos / 1000.0;
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - s.times.merge);
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    float value = 0.0f;
    if (mine) k.readToHost(&value, d.work.as<float>() + s.badIndex, sizeof value).ignore();  // for the message only
    return fail(numericError(s, mine ? s.badIndex : SIZE_MAX, value));
  }
  double t = nowUs();
  Status st;
  if (full_) {
    st = k.copy(s.g, d.work.as<float>(), s.count * sizeof(float));
    if (st.isOk()) st = k.zero(d.comp.as<float>(), s.count * sizeof(float));
  } else {
    float eta = static_cast<float>(s.scalarOut[0] / s.size);
    st = k.signFinish(d.work.as<float>(), d.bits.as<uint64_t>(), s.count, eta, s.g, d.comp.as<float>());
  }
  if (!st.isOk()) return fail(named(st));
  s.times.decompress = nowUs() - t;
  ++s.step;
  s.times.total = nowUs() - startUs_;
  status_ = Status::ok();
  return status_;
}

Status MarsitDeviceStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (scalar_ && running(scalarStatus_)) scalar_->abort(status_);
  if (bits_ && running(bitsStatus_)) bits_->abort(status_);
  return status_;
}

void MarsitDeviceStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool MarsitDeviceStepTask::quiescent() const {
  return (!scalar_ || scalar_->quiescent()) && (!bits_ || bits_->quiescent());
}

int MarsitDeviceStepTask::waitingOn() const {
  if (scalar_ && running(scalarStatus_) && scalar_->waitingOn() >= 0) return scalar_->waitingOn();
  if (bits_ && running(bitsStatus_)) return bits_->waitingOn();
  return -1;
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
