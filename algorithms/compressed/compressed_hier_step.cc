#include "algorithms/compressed/compressed_hier_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/sign.h"

namespace tsr::compressed {

CompressedHierStepTask::CompressedHierStepTask(std::shared_ptr<CompressedState> state,
                                               const algorithms::TaskContext& ctx)
    : TwoLevelStepSequence(std::move(state), ctx) {}

algorithms::RunBuffers CompressedHierStepTask::stageBuffers(Stage stage) {
  CompressedState& s = *state_;
  switch (stage) {
    case kIntra: {
      algorithms::RunBuffers b{h_.intraBuffer.data(), h_.intraBuffer.data(), h_.rowScratch.data()};
      if (h_.intraType == DataType::kF16) b.droppedRounding = h_.dropped.data();
      return b;
    }
    case kColumn:
      return {s.mine.data(), s.all.data(), h_.columnScratch.data()};
    default:
      return {h_.block.data(), h_.result.data(), h_.rowGatherScratch.data()};
  }
}

// Stage 1: x = g + q, cast to the intra type (q' = what the cast drops), then the host average.
Status CompressedHierStepTask::prepareIntra() {
  CompressedState& s = *state_;
  const size_t n = s.count;
  for (size_t j = 0; j < n; ++j) h_.work[j] = s.g[j] + h_.intraResidual[j];
  h_.badIndex = kernels::firstNonFinite(h_.work.data(), n);
  h_.overflow = false;
  if (h_.intraType == DataType::kF16) {
    auto* half = reinterpret_cast<uint16_t*>(h_.intraBuffer.data());
    kernels::castF32ToF16(h_.work.data(), n, half);
    std::fill(half + n, half + h_.padded, uint16_t{0});  // the last ring left partial sums there
    std::fill(h_.dropped.begin(), h_.dropped.end(), 0.0f);
    kernels::castF16ToF32(half, n, h_.nextResidual.data());
    for (size_t j = 0; j < n; ++j) h_.nextResidual[j] = h_.work[j] - h_.nextResidual[j];
    if (h_.badIndex == n) {
      // A finite x whose f16 is infinite: the cast cannot keep it.
      h_.badIndex = kernels::firstNonFinite(h_.nextResidual.data(), n);
      h_.overflow = h_.badIndex < n;
    }
  } else {
    auto* full = reinterpret_cast<float*>(h_.intraBuffer.data());
    if (n) std::memcpy(full, h_.work.data(), n * sizeof(float));
    std::fill(full + n, full + h_.padded, 0.0f);
  }
  return Status::ok();
}

// Stage 2: this rank's shard of the host average.
Result<size_t> CompressedHierStepTask::takeShard() {
  const size_t off = h_.shardOffset, real = h_.shardReal;
  if (h_.intraType == DataType::kF16)
    kernels::castF16ToF32(reinterpret_cast<const uint16_t*>(h_.intraBuffer.data()) + off, real, h_.shard.data());
  else if (real)
    std::memcpy(h_.shard.data(), reinterpret_cast<const float*>(h_.intraBuffer.data()) + off, real * sizeof(float));
  return kernels::firstNonFinite(h_.shard.data(), real);
}

float CompressedHierStepTask::workValue(size_t index) { return h_.work[index]; }

// Stage 3: compress the shard.
Status CompressedHierStepTask::fillSlot() {
  CompressedState& s = *state_;
  s.mine[0] = 0;
  if (!s.compressor) return Status::ok();
  s.compressor->setStep(static_cast<uint32_t>(s.step));  // randomk: equal steps, equal indices
  auto* payload = reinterpret_cast<std::byte*>(s.mine.data() + 1);
  auto written = s.compressor->compress(h_.shard, {payload, (s.slotWords - 1) * 8});
  if (!written.isOk()) return written.status();
  s.mine[0] = written.value();
  return Status::ok();
}

// Stage 4: the column's average of the decoded payloads (row order: the same on every rank of
// the column).
Status CompressedHierStepTask::averageColumn() {
  CompressedState& s = *state_;
  const size_t real = h_.shardReal;
  std::fill(s.sum.begin(), s.sum.end(), 0.0f);
  for (int r = 0; r < h_.place.y && s.compressor; ++r) {
    const uint64_t* slot = s.all.data() + static_cast<size_t>(r) * s.slotWords;
    const int from = h_.place.columnRanks[r];
    if (slot[0] > (s.slotWords - 1) * 8) return oversizedPayload(s, from, slot[0]);
    Status st = s.compressor->decompress({reinterpret_cast<const std::byte*>(slot + 1), slot[0]}, s.decoded);
    if (!st.isOk()) return undecodablePayload(s, from, st);
    for (size_t j = 0; j < real; ++j) s.sum[j] += s.decoded[j];
  }
  const float inv = 1.0f / static_cast<float>(h_.place.y);
  for (size_t j = 0; j < real; ++j) h_.block[j] = s.sum[j] * inv;
  return Status::ok();
}

Status CompressedHierStepTask::writeResult() {
  CompressedState& s = *state_;
  if (s.count) std::memcpy(s.g, h_.result.data(), s.count * sizeof(float));
  if (h_.intraType == DataType::kF16) {
    // q' = what this rank's cast dropped plus what its f16 sums and division in the host ring
    // dropped (those elements' sums are short by it; units of the sum, as q).
    for (size_t j = 0; j < s.count; ++j) h_.nextResidual[j] += h_.dropped[j];
    std::swap(h_.intraResidual, h_.nextResidual);
  } else if (h_.intraResidualOnce) {
    std::fill(h_.intraResidual.begin(), h_.intraResidual.end(), 0.0f);
  }
  h_.intraResidualOnce = false;
  return Status::ok();
}

}  // namespace tsr::compressed
