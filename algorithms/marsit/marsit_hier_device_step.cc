#include "algorithms/marsit/marsit_hier_device_step.h"

#include <algorithm>
#include <cstdint>

namespace tsr::marsit {

MarsitHierDeviceStepTask::MarsitHierDeviceStepTask(std::shared_ptr<MarsitState> state,
                                                   const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

algorithms::RunIdentity MarsitHierDeviceStepTask::seq(uint32_t offset) const {
  algorithms::RunIdentity id = ctx_.id;
  id.seq += offset;
  return id;
}

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

Status MarsitHierDeviceStepTask::start() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  float* work = d.work.as<float>();
  auto sum = k.addScan(s.g, d.intraResidual.as<float>(), s.count, work);  // x = g + r
  if (!sum.isOk()) return fail(named(sum.status()));
  if (full_) {
    // Everything kept back goes in: the host-average compensation counts X times.
    const size_t off = s.hier.shardOffset;
    const size_t real = s.count > off ? std::min(s.hier.shardCount, s.count - off) : 0;
    Status st = k.scale(d.comp.as<float>(), real, static_cast<float>(s.ranksPerRow), d.shardOut.as<float>());
    if (st.isOk() && real) st = k.reduce(work + off, d.shardOut.as<float>(), real, DataType::kF32, ReduceOp::kSum);
    auto bad = st.isOk() ? k.scanNonFinite(work, s.count) : Result<size_t>(st);
    if (!bad.isOk()) return fail(named(bad.status()));
    s.badIndex = bad.value();
    s.scalarIn[0] = 0;
    s.scalarIn[1] = s.badIndex < s.count ? 1.0 : 0.0;
    s.times.prepare = nowUs() - startUs_;
    intraStatus_ = Status::ok();
    return startExchange();
  }
  // Stage 1: the cast to the intra-host type (keeping what it drops) and the host average.
  Status st;
  if (s.intraType == DataType::kF16) {
    auto* h = d.intra.as<uint16_t>();
    st = k.castTo(DataType::kF16, work, s.count, h);
    if (st.isOk()) st = k.castResidual(DataType::kF16, work, h, s.count, d.intraResidual.as<float>());
  } else {
    st = k.copy(d.intra.as<void>(), work, s.count * sizeof(float));
  }
  if (!st.isOk()) return fail(named(st));
  s.times.prepare = nowUs() - startUs_;
  intra_ = std::make_unique<algorithms::PlanExecutor>(
      s.hier.rowReduceScatter, deviceBuffers(d.intra.as<void>(), d.rowScratch.as<void>()), seq(0), ctx_.transport);
  intraStatus_ = intra_->start();
  return drive();
}

// s' = s + c on the row block, its scan, sum and sign words (at the block's place).
Status MarsitHierDeviceStepTask::packBlock() {
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
  const bool mine = bad < real;
  s.badIndex = mine ? off + bad : s.count;
  s.scalarIn[0] = mine ? 0.0 : sumAbs;
  s.scalarIn[1] = mine ? 1.0 : 0.0;
  return Status::ok();
}

// Stage 2: the scalars and the bits (or the full-precision average) side by side.
Status MarsitHierDeviceStepTask::startExchange() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::RunBuffers b;
  if (full_) {
    b = deviceBuffers(d.work.as<void>(), d.fullScratch.as<void>());
  } else {
    if (Status st = packBlock(); !st.isOk()) return fail(named(st));
    b = deviceBuffers(d.bits.as<void>(), d.bitScratch.as<void>());
    b.rngSeed = s.params.seed;
    b.rngStep = static_cast<uint32_t>(s.step);
    b.mergeNanos = &s.mergeNanos;
    // A pack=chunked plan's kLocal ops pack a chunk: done already, whole, above.
    b.local = [](const algorithms::PlanOp&) { return Status::ok(); };
  }
  bits_ = std::make_unique<algorithms::PlanExecutor>(full_ ? s.fullPlan : s.hier.bits, b, seq(2), ctx_.transport);
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn, s.scalarOut, s.scalarScratch.data()}, seq(1),
      ctx_.transport);
  scalarStatus_ = scalar_->start();
  bitsStartUs_ = nowUs();
  bitsStatus_ = bits_->start();
  if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  return drive();
}

Status MarsitHierDeviceStepTask::progress() {
  if (!running(status_)) return status_;
  if (intra_ && running(intraStatus_)) intraStatus_ = intra_->progress();
  if (scalar_ && running(scalarStatus_)) scalarStatus_ = scalar_->progress();
  if (bits_ && running(bitsStatus_)) {
    bitsStatus_ = bits_->progress();
    if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  }
  return drive();
}

Status MarsitHierDeviceStepTask::drive() {
  if (!running(status_)) return status_;
  for (const Status* st : {&intraStatus_, &scalarStatus_, &bitsStatus_})
    if (!running(*st) && !st->isOk()) return fail(*st);
  if (running(intraStatus_)) return status_;
  if (!bits_) return startExchange();
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status MarsitHierDeviceStepTask::finish() {
  MarsitState& s = *state_;
  MarsitDeviceArrays& d = *s.device;
  algorithms::StepKernels& k = *d.kernels;
  s.times.merge = s.mergeNanos / 1000.0;
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - s.times.merge);
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    float value = 0.0f;
    if (mine)  // for the message only
      k.readToHost(&value, full_ ? d.work.as<float>() + s.badIndex : d.shard.as<float>() + (s.badIndex - off),
                   sizeof value)
          .ignore();
    return fail(numericError(s, mine ? s.badIndex : SIZE_MAX, value));
  }
  double t = nowUs();
  Status st;
  if (full_) {
    st = k.copy(s.g, d.work.as<float>(), s.count * sizeof(float));
    if (st.isOk()) st = k.zero(d.comp.as<void>(), n * sizeof(float));
    if (st.isOk()) st = k.zero(d.intraResidual.as<void>(), s.count * sizeof(float));
    if (!st.isOk()) return fail(named(st));
    s.times.decompress = nowUs() - t;
  } else {
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
    if (!st.isOk()) return fail(named(st));
    s.times.compensate = nowUs() - t2;
  }
  ++s.step;
  s.times.total = nowUs() - startUs_;
  status_ = Status::ok();
  return status_;
}

Status MarsitHierDeviceStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (intra_ && running(intraStatus_)) intra_->abort(status_);
  if (scalar_ && running(scalarStatus_)) scalar_->abort(status_);
  if (bits_ && running(bitsStatus_)) bits_->abort(status_);
  return status_;
}

void MarsitHierDeviceStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool MarsitHierDeviceStepTask::quiescent() const {
  return (!intra_ || intra_->quiescent()) && (!scalar_ || scalar_->quiescent()) && (!bits_ || bits_->quiescent());
}

int MarsitHierDeviceStepTask::waitingOn() const {
  if (intra_ && running(intraStatus_)) return intra_->waitingOn();
  if (scalar_ && running(scalarStatus_) && scalar_->waitingOn() >= 0) return scalar_->waitingOn();
  if (bits_ && running(bitsStatus_)) return bits_->waitingOn();
  return -1;
}

}  // namespace tsr::marsit
