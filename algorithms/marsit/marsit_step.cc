#include "algorithms/marsit/marsit_step.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "algorithms/kernels/sign.h"
#include "algorithms/marsit/marsit_device.h"
#include "base/summed_count.h"

namespace tsr::marsit {

double nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status numericError(const MarsitState& s, size_t badIndex, float badValue) {
  bool mine = badIndex != SIZE_MAX;
  return Status(Code::kNumericError, "marsit tensor " + s.name + ": " +
                                         summedCount(s.scalarOut.back(), s.size, "rank(s)") +
                                         " had NaN or Inf in gradient + compensation" +
                                         (mine ? " (rank " + std::to_string(s.rank) + ": element " +
                                                     std::to_string(badIndex) + " is " + std::to_string(badValue) + ")"
                                               : std::string()) +
                                         "; the tensor and its compensation are unchanged");
}

algorithms::RunBuffers signBitBuffers(MarsitState& s, void* bits, void* scratch) {
  algorithms::RunBuffers b{bits, bits, scratch};
  b.rngSeed = s.params.seed;
  b.rngStep = static_cast<uint32_t>(s.step);
  b.mergeNanos = &s.mergeNanos;
  return b;
}

namespace {
size_t scaleSpan(size_t count, size_t scaleBlock) {
  return scaleBlock && count > scaleBlock ? scaleBlock : std::max<size_t>(count, 1);
}
}  // namespace

size_t flatScalarCount(size_t count, size_t scaleBlock) {
  const size_t span = scaleSpan(count, scaleBlock);
  return (count ? (count + span - 1) / span : 1) + 1;
}

void sizeFlatState(MarsitState& s) {
  s.scaleSpan = scaleSpan(s.count, s.params.scaleBlock);
  s.scaleBlocks = flatScalarCount(s.count, s.params.scaleBlock) - 1;
  s.scalarIn.assign(s.scaleBlocks + 1, 0.0);
  s.scalarOut.assign(s.scaleBlocks + 1, 0.0);
  s.blockSums.assign(s.scaleBlocks, 0.0);
  if (s.params.momentum > 0) {
    s.prev.assign(s.count, 0.0f);
    s.shift.assign(s.count, 0.0f);
  }
}

MarsitPlace placeOf(MarsitState& s, algorithms::HostStepKernels& host) {
  if (MarsitDeviceArrays* d = s.device.get())
    return {d->kernels.get(),     d->comp.as<float>(),      d->work.as<float>(),          d->prev.as<float>(),
            d->shift.as<float>(), d->bits.as<uint64_t>(),   d->bitScratch.as<void>(),     d->fullScratch.as<void>(),
            d->intra.as<void>(),  d->rowScratch.as<void>(), d->intraResidual.as<float>(), d->dropped.as<float>(),
            d->shard.as<float>(), d->shardOut.as<float>()};
  return {&host,
          s.comp.data(),
          s.work.data(),
          s.prev.data(),
          s.shift.data(),
          s.bits.data(),
          s.bitScratch.data(),
          s.fullScratch.data(),
          s.intraBuffer.data(),
          s.rowScratch.data(),
          s.intraResidual.data(),
          s.dropped.data(),
          s.shard.data(),
          s.shardOut.data()};
}

MarsitStepBase::MarsitStepBase(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx, std::string what)
    : ScheduleTask(ctx), state_(std::move(state)), at_(placeOf(*state_, hostKernels_)), what_(std::move(what)) {}

std::string MarsitStepBase::describe() const {
  if (state_->device)
    return what_ + " allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  return what_ + " allreduce of tensor " + state_->name;
}

Status MarsitStepBase::named(const Status& st) const {
  if (st.isOk() || !state_->device) return st;
  return Status(st.code(), what_ + " tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", direct device path): " + st.message());
}

void MarsitStepBase::beginStep() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  packed_ = false;
  chunked_ = false;
}

void MarsitStepBase::addWireStages(StageId packStage, uint64_t scalarSeq, uint64_t bitSeq,
                                   std::shared_ptr<const algorithms::Plan> bitPlan) {
  MarsitState& s = *state_;
  // Chunked, the first chunk is packed and sent as the bit plan starts; the scalar allreduce
  // waits for the last chunk (its sum and NaN/Inf scan).
  StageId scalars = addStage(
      {packStage},
      [this, &s, scalarSeq] {
        return runPlan(scalarSeq, s.scalarPlan,
                       algorithms::RunBuffers{s.scalarIn.data(), s.scalarOut.data(), s.scalarScratch.data()});
      },
      [this] { return packed_; });
  bits_ = addStage({packStage}, [this, &s, bitSeq, bitPlan = std::move(bitPlan)] {
    return runPlan(bitSeq, full_ ? s.fullPlan : bitPlan, bitBuffers());
  });
  addStage({scalars, bits_}, [this] { return localOnly(finish()); });
}

MarsitStepTask::MarsitStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : MarsitStepBase(std::move(state), ctx, "marsit") {}

Status MarsitStepTask::addStages() {
  beginStep();
  StageId prepared = addStage({}, [this] { return localOnly(prepare()); });
  addWireStages(prepared, 0, 1, state_->bitPlan);
  return Status::ok();
}

// One small allreduce carries both the shared magnitudes and whether any rank saw a NaN or
// Inf, so a bad value fails the step on every rank instead of leaving peers waiting.
void MarsitStepTask::scalarsReady(size_t badIndex) {
  MarsitState& s = *state_;
  s.badIndex = badIndex;
  bool bad = badIndex < s.count;
  for (size_t b = 0; b < s.scaleBlocks; ++b) {
    size_t len = s.scaleLength(b);
    s.scalarIn[b] = bad || len == 0 ? 0.0 : s.blockSums[b] / len;
  }
  s.scalarIn.back() = bad ? 1.0 : 0.0;
  packed_ = true;
}

Status MarsitStepTask::prepare() {
  MarsitState& s = *state_;
  // Chunk by chunk only where the CPU packs: device steps prepare the whole vector (the same bits).
  chunked_ = !full_ && s.params.chunkedPack && !s.device;
  coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  if (!chunked_) return prepareWhole();
  s.prep.reset(s.count);
  if (s.count == 0) scalarsReady(0);  // nothing to pack
  return Status::ok();
}

// g' = g + c (and on a sign step its bits and sum |g'|) in one pass over g and c, whole.
Status MarsitStepTask::prepareWhole() {
  MarsitState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  double sumAbs = 0;
  const float* c = s.params.momentum > 0 ? at_.shift : at_.comp;
  auto bad =
      full_ ? k.addScan(s.g, c, s.count, at_.work) : k.signPrepare(s.g, c, s.count, at_.work, at_.bits, coin_, &sumAbs);
  if (!bad.isOk()) return named(bad.status());
  if (s.scaleBlocks == 1) {
    s.blockSums[0] = sumAbs;
  } else {
    std::fill(s.blockSums.begin(), s.blockSums.end(), 0.0);
    if (!full_ && bad.value() == s.count)  // else not read
      TSR_RETURN_IF_ERROR(named(k.sumAbsPerSpan(at_.work, s.count, s.scaleSpan, s.blockSums.data())));
  }
  scalarsReady(bad.value());
  s.times.prepare = nowUs() - startUs_;
  return Status::ok();
}

Status MarsitStepTask::packChunk(const algorithms::PlanOp& op) {
  MarsitState& s = *state_;
  double t = nowUs();
  size_t firstWord = op.dst.offset / sizeof(uint64_t);
  size_t begin = firstWord * 64, end = std::min(s.count, (firstWord + op.count) * 64);
  s.prep.prepare(s.g, s.carried().data(), begin, end, s.work.data(), s.bits.data(), coin_);
  if (s.prep.prepared() == s.count) {
    size_t bad = s.prep.firstBad();
    if (bad >= s.count) s.prep.scaleSums(s.work.data(), s.scaleSpan, s.blockSums.data());
    scalarsReady(bad);
  }
  s.times.prepare += nowUs() - t;
  return Status::ok();
}

algorithms::RunBuffers MarsitStepTask::bitBuffers() {
  MarsitState& s = *state_;
  algorithms::RunBuffers b;
  if (full_) {
    b = {at_.work, at_.work, at_.fullScratch};
  } else {
    b = signBitBuffers(s, at_.bits, at_.bitScratch);
    // A pack=chunked plan's kLocal ops pack a chunk, unless the whole vector is packed already.
    if (chunked_)
      b.local = [this](const algorithms::PlanOp& op) { return packChunk(op); };
    else
      b.local = [](const algorithms::PlanOp&) { return Status::ok(); };
  }
  if (s.device) {
    b.memory = transport::MemoryType::kCuda;
    b.kernels = at_.kernels;
  }
  return b;
}

Status MarsitStepTask::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  // Chunked, the packing ran inside the bit plan: it is prepare's, not the wire's.
  s.times.wire =
      std::max(0.0, childEndUs(bits_) - childStartUs(bits_) - s.times.merge - (chunked_ ? s.times.prepare : 0.0));
  if (s.scalarOut.back() > 0) {
    bool mine = s.badIndex < s.count;
    float value = 0.0f;
    if (mine) at_.kernels->readToHost(&value, at_.work + s.badIndex, sizeof value).ignore();  // for the message only
    return numericError(s, mine ? s.badIndex : SIZE_MAX, value);
  }
  double t = nowUs();
  TSR_RETURN_IF_ERROR(writeResult());
  s.times.decompress = nowUs() - t;
  ++s.step;
  s.times.total = nowUs() - startUs_;
  return Status::ok();
}

Status MarsitStepTask::writeResult() {
  MarsitState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  if (full_) {
    TSR_RETURN_IF_ERROR(named(k.copy(s.g, at_.work, s.count * sizeof(float))));
    TSR_RETURN_IF_ERROR(named(k.zero(at_.comp, s.count * sizeof(float))));
  } else {
    for (size_t b = 0; b < s.scaleBlocks; ++b) {  // M' and c, block by block (64-aligned)
      size_t at = s.scaleBegin(b);
      TSR_RETURN_IF_ERROR(
          named(k.signFinish(at_.work + at, at_.bits + at / 64, s.scaleLength(b), s.eta(b), s.g + at, at_.comp + at)));
    }
  }
  // g = M' - mu M, M = M', next carry c + mu M' (work is free now: the hand-off's scratch).
  if (s.params.momentum > 0)
    TSR_RETURN_IF_ERROR(
        named(k.momentumHandOff(s.g, at_.prev, at_.comp, at_.shift, s.count, s.params.momentum, at_.work)));
  return Status::ok();
}

}  // namespace tsr::marsit
