#include "algorithms/marsit/marsit_hier_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/sign.h"

namespace tsr::marsit {

MarsitHierStepTask::MarsitHierStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

algorithms::RunIdentity MarsitHierStepTask::seq(uint32_t offset) const {
  algorithms::RunIdentity id = ctx_.id;
  id.seq += offset;
  return id;
}

Status MarsitHierStepTask::start() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  for (size_t j = 0; j < s.count; ++j) s.work[j] = s.g[j] + s.intraResidual[j];
  if (full_) {
    // Everything kept back goes in: the host-average compensation counts X times.
    const float x = static_cast<float>(s.ranksPerRow);
    size_t end = std::min(s.count, s.hier.shardOffset + s.hier.shardCount);
    for (size_t j = s.hier.shardOffset; j < end; ++j) s.work[j] += x * s.comp[j - s.hier.shardOffset];
    s.badIndex = kernels::firstNonFinite(s.work.data(), s.count);
    s.scalarIn[0] = 0;
    s.scalarIn[1] = s.badIndex < s.count ? 1.0 : 0.0;
    s.times.prepare = nowUs() - startUs_;
    intraStatus_ = Status::ok();
    return startExchange();
  }
  // Stage 1: cast to the intra-host type (keeping what the cast drops) and average in the host.
  if (s.intraType == DataType::kF16) {
    auto* h = reinterpret_cast<uint16_t*>(s.intraBuffer.data());
    kernels::castF32ToF16(s.work.data(), s.count, h);
    kernels::castF16ToF32(h, s.count, s.intraResidual.data());
    for (size_t j = 0; j < s.count; ++j) s.intraResidual[j] = s.work[j] - s.intraResidual[j];
    // An element that overflows f16 has no finite residual: the shard check reports it.
    for (size_t j = 0; j < s.count; ++j)
      if (!std::isfinite(s.intraResidual[j])) s.intraResidual[j] = 0.0f;
  } else {
    std::copy_n(s.work.data(), s.count, reinterpret_cast<float*>(s.intraBuffer.data()));
  }
  s.times.prepare = nowUs() - startUs_;
  intra_ = std::make_unique<algorithms::PlanExecutor>(
      s.hier.rowReduceScatter,
      algorithms::RunBuffers{s.intraBuffer.data(), s.intraBuffer.data(), s.rowScratch.data()}, seq(0),
      ctx_.transport);
  intraStatus_ = intra_->start();
  return drive();
}

// Stage 2: this rank's row block plus its compensation, packed; scalar and bits side by side.
Status MarsitHierStepTask::startExchange() {
  MarsitState& s = *state_;
  algorithms::RunBuffers bitBuffers;
  chunked_ = !full_ && s.params.chunkedPack;
  packed_ = full_;
  localUs_ = 0;
  if (!full_) {
    coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
    const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
    if (chunked_) {
      s.prep.reset(s.count > off ? std::min(n, s.count - off) : 0);  // the rest is padding
      packedElems_ = 0;
      if (n == 0) scalarsReady(0, 0.0);  // nothing to pack
    } else {
      packWhole();
    }
    bitBuffers = {s.bits.data(), s.bits.data(), s.bitScratch.data()};
    bitBuffers.rngSeed = s.params.seed;
    bitBuffers.rngStep = static_cast<uint32_t>(s.step);
    bitBuffers.mergeNanos = &s.mergeNanos;
    if (chunked_) bitBuffers.local = [this](const algorithms::PlanOp& op) { return packChunk(op); };
  } else {
    bitBuffers = {s.work.data(), s.work.data(), s.fullScratch.data()};
  }
  bits_ = std::make_unique<algorithms::PlanExecutor>(full_ ? s.fullPlan : s.hier.bits, bitBuffers, seq(2),
                                                     ctx_.transport);
  bitsStartUs_ = nowUs();
  // Chunked, the first chunk is packed and sent inside start(); the scalar allreduce waits
  // for the last chunk (its sum and NaN/Inf scan).
  if (packed_) startScalar();
  bitsStatus_ = bits_->start();
  if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  if (packed_ && !scalar_) startScalar();
  return drive();
}

void MarsitHierStepTask::shardSum(size_t begin, size_t end) {
  MarsitState& s = *state_;
  const size_t off = s.hier.shardOffset;
  if (s.intraType == DataType::kF16)
    kernels::castF16ToF32(reinterpret_cast<const uint16_t*>(s.intraBuffer.data()) + off + begin, end - begin,
                          s.shard.data() + begin);
  else
    std::copy_n(reinterpret_cast<const float*>(s.intraBuffer.data()) + off + begin, end - begin,
                s.shard.data() + begin);
  for (size_t j = begin; j < end; ++j) s.shard[j] += s.comp[j];
}

// The earlier schedule (pack=whole): the block in one go, before the bit plan starts.
void MarsitHierStepTask::packWhole() {
  MarsitState& s = *state_;
  double t = nowUs();
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  shardSum(0, n);
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;  // the rest is padding
  size_t bad = kernels::firstNonFinite(s.shard.data(), real);
  scalarsReady(bad, bad < real ? 0.0 : kernels::sumAbs(s.shard.data(), real));
  double t2 = nowUs();
  s.times.prepare += t2 - t;
  kernels::signPack(s.shard.data(), n, s.bits.data() + off / 64, coin_, off / 64);
  s.times.pack = nowUs() - t2;
}

// One column ring chunk of the block (op.dst: its words in the whole bit vector).
Status MarsitHierStepTask::packChunk(const algorithms::PlanOp& op) {
  MarsitState& s = *state_;
  double t = nowUs();
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  const size_t firstWord = op.dst.offset / sizeof(uint64_t);
  const size_t begin = firstWord * 64 - off, end = begin + op.count * 64;
  if (firstWord * 64 < off || end > n)
    return Status(Code::kInternal, "two-level marsit tensor " + s.name + ": pack op for words " +
                                       std::to_string(firstWord) + "+" + std::to_string(op.count) +
                                       " is outside rank " + std::to_string(s.rank) + "'s row block");
  shardSum(begin, end);
  s.prep.account(s.shard.data(), begin, end);
  double t2 = nowUs();
  s.times.prepare += t2 - t;
  kernels::signPack(s.shard.data() + begin, end - begin, s.bits.data() + firstWord, coin_, firstWord);
  double t3 = nowUs();
  s.times.pack += t3 - t2;
  localUs_ += t3 - t;
  packedElems_ += end - begin;
  if (packedElems_ == n) {
    size_t bad = s.prep.firstBad();
    scalarsReady(bad, bad < s.prep.prepared() ? 0.0 : s.prep.sumAbs(s.shard.data()));
  }
  return Status::ok();
}

// One small allreduce carries the block's |s'| sum and whether this rank saw a NaN or Inf.
void MarsitHierStepTask::scalarsReady(size_t badInBlock, double sumAbs) {
  MarsitState& s = *state_;
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;
  const bool bad = badInBlock < real;
  s.badIndex = bad ? off + badInBlock : s.count;
  s.scalarIn[0] = bad ? 0.0 : sumAbs;
  s.scalarIn[1] = bad ? 1.0 : 0.0;
  packed_ = true;
}

void MarsitHierStepTask::startScalar() {
  MarsitState& s = *state_;
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn, s.scalarOut, s.scalarScratch.data()}, seq(1),
      ctx_.transport);
  scalarStatus_ = scalar_->start();
}

Status MarsitHierStepTask::progress() {
  if (!running(status_)) return status_;
  if (intra_ && running(intraStatus_)) intraStatus_ = intra_->progress();
  if (scalar_ && running(scalarStatus_)) scalarStatus_ = scalar_->progress();
  if (bits_ && running(bitsStatus_)) {
    bitsStatus_ = bits_->progress();
    if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  }
  if (bits_ && !scalar_ && packed_) startScalar();
  return drive();
}

Status MarsitHierStepTask::drive() {
  for (const Status* st : {&intraStatus_, &scalarStatus_, &bitsStatus_})
    if (!running(*st) && !st->isOk()) return fail(*st);
  if (running(intraStatus_)) return status_;
  if (!bits_) return startExchange();
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status MarsitHierStepTask::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - s.times.merge - localUs_);
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    float value = !mine ? 0.0f : full_ ? s.work[s.badIndex] : s.shard[s.badIndex - s.hier.shardOffset];
    return fail(numericError(s, mine ? s.badIndex : SIZE_MAX, value));
  }
  double t = nowUs();
  if (full_) {
    std::copy_n(s.work.data(), s.count, s.g);
    std::fill(s.comp.begin(), s.comp.end(), 0.0f);
    std::fill(s.intraResidual.begin(), s.intraResidual.end(), 0.0f);
    s.times.decompress = nowUs() - t;
  } else {
    // Every host holds every element once: divide by hosts x elements.
    const double hosts = static_cast<double>(s.size / s.ranksPerRow);
    float eta = s.count ? static_cast<float>(s.scalarOut[0] / (hosts * s.count)) : 0.0f;
    kernels::signDecompress(s.bits.data(), s.count, eta, s.g);
    double t2 = nowUs();
    s.times.decompress = t2 - t;
    const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
    kernels::signCompensate(s.shard.data(), s.bits.data() + off / 64, n, eta, s.comp.data());
    const size_t real = s.count > off ? std::min(n, s.count - off) : 0;
    std::fill(s.comp.begin() + real, s.comp.end(), 0.0f);  // padding keeps nothing
    s.times.compensate = nowUs() - t2;
  }
  ++s.step;
  s.times.total = nowUs() - startUs_;
  status_ = Status::ok();
  return status_;
}

Status MarsitHierStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (intra_ && running(intraStatus_)) intra_->abort(status_);
  if (scalar_ && running(scalarStatus_)) scalar_->abort(status_);
  if (bits_ && running(bitsStatus_)) bits_->abort(status_);
  return status_;
}

void MarsitHierStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool MarsitHierStepTask::quiescent() const {
  return (!intra_ || intra_->quiescent()) && (!scalar_ || scalar_->quiescent()) &&
         (!bits_ || bits_->quiescent());
}

int MarsitHierStepTask::waitingOn() const {
  if (intra_ && running(intraStatus_)) return intra_->waitingOn();
  if (scalar_ && running(scalarStatus_) && scalar_->waitingOn() >= 0) return scalar_->waitingOn();
  if (bits_ && running(bitsStatus_)) return bits_->waitingOn();
  return -1;
}

}  // namespace tsr::marsit
