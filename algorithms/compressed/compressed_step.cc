#include "algorithms/compressed/compressed_step.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/sign.h"

namespace tsr::compressed {

CompressedStepTask::CompressedStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : FlatStepSequence(std::move(state), ctx) {}

Result<size_t> CompressedStepTask::findNonFinite() { return kernels::firstNonFinite(state_->g, state_->count); }

float CompressedStepTask::valueOfG(size_t index) { return state_->g[index]; }

Result<algorithms::RunBuffers> CompressedStepTask::fillSlot() {
  CompressedState& s = *state_;
  s.compressor->setStep(static_cast<uint32_t>(s.step));  // randomk: equal steps, equal indices
  auto* payload = reinterpret_cast<std::byte*>(s.mine.data() + 1);
  auto written = s.compressor->compress({s.g, s.count}, {payload, (s.slotWords - 1) * 8});
  if (!written.isOk()) return written.status();
  s.mine[0] = written.value();
  return algorithms::RunBuffers{s.mine.data(), s.all.data(), s.gatherScratch.data()};
}

Status CompressedStepTask::averageSlots() {
  CompressedState& s = *state_;
  std::fill(s.sum.begin(), s.sum.end(), 0.0f);
  for (int r = 0; r < s.size; ++r) {
    const uint64_t* slot = s.all.data() + static_cast<size_t>(r) * s.slotWords;
    if (slot[0] > (s.slotWords - 1) * 8) return oversizedPayload(s, r, slot[0]);
    Status st = s.compressor->decompress({reinterpret_cast<const std::byte*>(slot + 1), slot[0]}, s.decoded);
    if (!st.isOk()) return undecodablePayload(s, r, st);
    for (size_t j = 0; j < s.count; ++j) s.sum[j] += s.decoded[j];
  }
  const float inv = 1.0f / static_cast<float>(s.size);
  for (size_t j = 0; j < s.count; ++j) s.g[j] = s.sum[j] * inv;
  return Status::ok();
}

}  // namespace tsr::compressed
