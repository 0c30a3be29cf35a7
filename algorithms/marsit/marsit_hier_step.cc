#include "algorithms/marsit/marsit_hier_step.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/marsit/marsit_device.h"

namespace tsr::marsit {

MarsitHierStepTask::MarsitHierStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : MarsitStepBase(std::move(state), ctx, "two-level marsit") {}

Status MarsitHierStepTask::addStages() {
  beginStep();
  packedElems_ = 0;
  localUs_ = 0;
  StageId intra = addStage({}, [this] { return beginIntra(); });
  StageId packed = addStage({intra}, [this] {
    packed_ = full_;
    return localOnly(full_ ? Status::ok() : packBlock());
  });
  addWireStages(packed, 1, 2, state_->hier.bits);
  return Status::ok();
}

algorithms::RunBuffers MarsitHierStepTask::onPlace(void* data, void* scratch) const {
  algorithms::RunBuffers b{data, data, scratch};
  if (state_->device) {
    b.memory = transport::MemoryType::kCuda;
    b.kernels = at_.kernels;
  }
  return b;
}

// Stage 1: the intra-host vector and the row reduce-scatter; a full-precision step skips the
// reduce-scatter (y goes to the dense plan whole).
Result<std::unique_ptr<algorithms::Task>> MarsitHierStepTask::beginIntra() {
  MarsitState& s = *state_;
  TSR_RETURN_IF_ERROR(prepareIntra());
  s.times.prepare = nowUs() - startUs_;
  if (!full_) {
    algorithms::RunBuffers b = onPlace(at_.intra, at_.rowScratch);
    if (s.intraType == DataType::kF16) b.droppedRounding = at_.dropped;
    return runPlan(0, s.hier.rowReduceScatter, b);
  }
  s.scalarIn[0] = 0;
  s.scalarIn[1] = s.badIndex < s.count ? 1.0 : 0.0;
  return localOnly(Status::ok());
}

Status MarsitHierStepTask::prepareIntra() {
  MarsitState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  auto sum = k.addScan(s.g, at_.intraResidual, s.count, at_.work);  // x = g + r
  if (!sum.isOk()) return named(sum.status());
  if (full_) {
    // Everything kept back goes in: the host-average compensation counts X times.
    const size_t off = s.hier.shardOffset;
    const size_t real = s.count > off ? std::min(s.hier.shardCount, s.count - off) : 0;
    Status st = k.scale(at_.comp, real, static_cast<float>(s.ranksPerRow), at_.shardOut);
    if (st.isOk() && real) st = k.reduce(at_.work + off, at_.shardOut, real, DataType::kF32, ReduceOp::kSum);
    auto bad = st.isOk() ? k.scanNonFinite(at_.work, s.count) : Result<size_t>(st);
    if (!bad.isOk()) return named(bad.status());
    s.badIndex = bad.value();
    return Status::ok();
  }
  // The cast to the intra-host type, keeping what it drops (an element that overflows f16 has
  // no finite residual: the shard check reports it), before the host average.
  if (s.intraType == DataType::kF16) {
    auto* h = static_cast<uint16_t*>(at_.intra);
    TSR_RETURN_IF_ERROR(named(k.castTo(DataType::kF16, at_.work, s.count, h)));
    TSR_RETURN_IF_ERROR(named(k.castResidual(DataType::kF16, at_.work, h, s.count, at_.intraResidual)));
    return named(k.zero(at_.dropped, s.hier.padded * sizeof(float)));
  }
  return named(k.copy(at_.intra, at_.work, s.count * sizeof(float)));
}

// Stage 2: this rank's row block plus its compensation, whole or chunk by chunk.
Status MarsitHierStepTask::packBlock() {
  MarsitState& s = *state_;
  // What this rank's f16 sums and division in the host ring dropped (units of the sum, as the
  // cast residual): the next step sends it again.
  if (s.intraType == DataType::kF16)
    TSR_RETURN_IF_ERROR(
        named(at_.kernels->reduce(at_.intraResidual, at_.dropped, s.count, DataType::kF32, ReduceOp::kSum)));
  // Chunk by chunk only where the CPU packs: device steps pack the whole block (the same bits).
  chunked_ = s.params.chunkedPack && !s.device;
  coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  if (!chunked_) return named(packWhole());
  s.prep.reset(s.count > off ? std::min(n, s.count - off) : 0);  // the rest is padding
  if (n == 0) scalarsReady(0, 0.0);                              // nothing to pack
  return Status::ok();
}

// s' = s + c on the row block, its scan, sum and sign words (at the block's place), in one go.
Status MarsitHierStepTask::packWhole() {
  MarsitState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  double t = nowUs();
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;  // the rest is padding
  float* shard = at_.shard;
  TSR_RETURN_IF_ERROR(s.intraType == DataType::kF16
                          ? k.castFrom(DataType::kF16, static_cast<const uint16_t*>(at_.intra) + off, n, shard)
                          : k.copy(shard, static_cast<const float*>(at_.intra) + off, n * sizeof(float)));
  TSR_RETURN_IF_ERROR(k.reduce(shard, at_.comp, n, DataType::kF32, ReduceOp::kSum));
  TSR_ASSIGN_OR_RETURN(size_t bad, k.scanNonFinite(shard, real));
  double sumAbs = 0;
  if (bad == real) TSR_RETURN_IF_ERROR(k.sumAbs(shard, real, &sumAbs));
  double t2 = nowUs();
  s.times.prepare += t2 - t;
  TSR_RETURN_IF_ERROR(k.signPack(shard, n, at_.bits + off / 64, coin_, off / 64).status());
  s.times.pack = nowUs() - t2;
  scalarsReady(bad, sumAbs);
  return Status::ok();
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

algorithms::RunBuffers MarsitHierStepTask::bitBuffers() {
  MarsitState& s = *state_;
  if (full_) return onPlace(at_.work, at_.fullScratch);
  algorithms::RunBuffers b = signBitBuffers(s, at_.bits, at_.bitScratch);
  // A pack=chunked plan's kLocal ops pack a chunk, unless the whole block is packed already.
  if (chunked_)
    b.local = [this](const algorithms::PlanOp& op) { return packChunk(op); };
  else
    b.local = [](const algorithms::PlanOp&) { return Status::ok(); };
  if (s.device) {
    b.memory = transport::MemoryType::kCuda;
    b.kernels = at_.kernels;
  }
  return b;
}

Status MarsitHierStepTask::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  s.times.wire = std::max(0.0, childEndUs(bits_) - childStartUs(bits_) - s.times.merge - localUs_);
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    float value = 0.0f;  // y[index] (full) or s'[index - shardOffset], for the message only
    if (mine)
      at_.kernels
          ->readToHost(&value, full_ ? at_.work + s.badIndex : at_.shard + (s.badIndex - s.hier.shardOffset),
                       sizeof value)
          .ignore();
    return numericError(s, mine ? s.badIndex : SIZE_MAX, value);
  }
  TSR_RETURN_IF_ERROR(writeResult());
  ++s.step;
  s.times.total = nowUs() - startUs_;
  return Status::ok();
}

Status MarsitHierStepTask::writeResult() {
  MarsitState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  double t = nowUs();
  if (full_) {
    TSR_RETURN_IF_ERROR(named(k.copy(s.g, at_.work, s.count * sizeof(float))));
    TSR_RETURN_IF_ERROR(named(k.zero(at_.comp, n * sizeof(float))));
    TSR_RETURN_IF_ERROR(named(k.zero(at_.intraResidual, s.count * sizeof(float))));
    s.intraResidualOnce = false;
    s.times.decompress = nowUs() - t;
    return Status::ok();
  }
  // Every host holds every element once: divide by hosts x elements.
  const double hosts = static_cast<double>(s.size / s.ranksPerRow);
  float eta = s.count ? static_cast<float>(s.scalarOut[0] / (hosts * s.count)) : 0.0f;
  TSR_RETURN_IF_ERROR(named(k.signDecompress(at_.bits, s.count, eta, s.g)));
  double t2 = nowUs();
  s.times.decompress = t2 - t;
  // c = s' - G on the block (G into shardOut, unused); padding keeps nothing.
  TSR_RETURN_IF_ERROR(named(k.signFinish(at_.shard, at_.bits + off / 64, n, eta, at_.shardOut, at_.comp)));
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;
  if (real < n) TSR_RETURN_IF_ERROR(named(k.zero(at_.comp + real, (n - real) * sizeof(float))));
  if (s.intraResidualOnce) TSR_RETURN_IF_ERROR(named(k.zero(at_.intraResidual, s.count * sizeof(float))));
  s.intraResidualOnce = false;
  s.times.compensate = nowUs() - t2;
  return Status::ok();
}

}  // namespace tsr::marsit
