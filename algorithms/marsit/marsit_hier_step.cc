#include "algorithms/marsit/marsit_hier_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/sign.h"

namespace tsr::marsit {

MarsitHierStepTask::MarsitHierStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : TwoLevelMarsitSequence(std::move(state), ctx) {}

Status MarsitHierStepTask::prepareIntra() {
  MarsitState& s = *state_;
  for (size_t j = 0; j < s.count; ++j) s.work[j] = s.g[j] + s.intraResidual[j];
  if (full_) {
    // Everything kept back goes in: the host-average compensation counts X times.
    const float x = static_cast<float>(s.ranksPerRow);
    size_t end = std::min(s.count, s.hier.shardOffset + s.hier.shardCount);
    for (size_t j = s.hier.shardOffset; j < end; ++j) s.work[j] += x * s.comp[j - s.hier.shardOffset];
    s.badIndex = kernels::firstNonFinite(s.work.data(), s.count);
    return Status::ok();
  }
  // Stage 1: cast to the intra-host type (keeping what the cast drops) and average in the host.
  if (s.intraType == DataType::kF16) {
    auto* h = reinterpret_cast<uint16_t*>(s.intraBuffer.data());
    std::fill(s.dropped.begin(), s.dropped.end(), 0.0f);
    kernels::castF32ToF16(s.work.data(), s.count, h);
    kernels::castF16ToF32(h, s.count, s.intraResidual.data());
    for (size_t j = 0; j < s.count; ++j) s.intraResidual[j] = s.work[j] - s.intraResidual[j];
    // An element that overflows f16 has no finite residual: the shard check reports it.
    for (size_t j = 0; j < s.count; ++j)
      if (!std::isfinite(s.intraResidual[j])) s.intraResidual[j] = 0.0f;
  } else {
    std::copy_n(s.work.data(), s.count, reinterpret_cast<float*>(s.intraBuffer.data()));
  }
  return Status::ok();
}

algorithms::RunBuffers MarsitHierStepTask::intraBuffers() {
  MarsitState& s = *state_;
  algorithms::RunBuffers b{s.intraBuffer.data(), s.intraBuffer.data(), s.rowScratch.data()};
  if (s.intraType == DataType::kF16) b.droppedRounding = s.dropped.data();
  return b;
}

// Stage 2: this rank's row block plus its compensation, whole or chunk by chunk.
Status MarsitHierStepTask::packBlock() {
  MarsitState& s = *state_;
  // What this rank's f16 sums and division in the host ring dropped (units of the sum, as the
  // cast residual): the next step sends it again.
  if (s.intraType == DataType::kF16)
    for (size_t j = 0; j < s.count; ++j) s.intraResidual[j] += s.dropped[j];
  chunked_ = s.params.chunkedPack;
  coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  if (chunked_) {
    s.prep.reset(s.count > off ? std::min(n, s.count - off) : 0);  // the rest is padding
    packedElems_ = 0;
    if (n == 0) scalarsReady(0, 0.0);  // nothing to pack
  } else {
    packWhole();
  }
  return Status::ok();
}

algorithms::RunBuffers MarsitHierStepTask::bitBuffers() {
  MarsitState& s = *state_;
  if (full_) return {s.work.data(), s.work.data(), s.fullScratch.data()};
  algorithms::RunBuffers b = signBitBuffers(s, s.bits.data(), s.bitScratch.data());
  if (chunked_) b.local = [this](const algorithms::PlanOp& op) { return packChunk(op); };
  return b;
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

float MarsitHierStepTask::workValue(size_t index) {
  MarsitState& s = *state_;
  return full_ ? s.work[index] : s.shard[index - s.hier.shardOffset];
}

Status MarsitHierStepTask::writeResult() {
  MarsitState& s = *state_;
  double t = nowUs();
  if (full_) {
    std::copy_n(s.work.data(), s.count, s.g);
    std::fill(s.comp.begin(), s.comp.end(), 0.0f);
    std::fill(s.intraResidual.begin(), s.intraResidual.end(), 0.0f);
    s.intraResidualOnce = false;
    s.times.decompress = nowUs() - t;
    return Status::ok();
  }
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
  if (s.intraResidualOnce) std::fill(s.intraResidual.begin(), s.intraResidual.end(), 0.0f);
  s.intraResidualOnce = false;
  s.times.compensate = nowUs() - t2;
  return Status::ok();
}

}  // namespace tsr::marsit
