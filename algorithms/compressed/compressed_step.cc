#include "algorithms/compressed/compressed_step.h"

#include "algorithms/compressed/compressed_device.h"
#include "base/summed_count.h"

namespace tsr::compressed {

CompressedStepTask::CompressedStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : ScheduleTask(ctx), state_(std::move(state)) {
  CompressedState& s = *state_;
  if (CompressedDevice* d = s.device.get())
    at_ = {d->kernels.get(),       d->mine.as<uint64_t>(), d->all.as<uint64_t>(),  d->gatherScratch.as<void>(),
           d->decoded.as<float>(), d->sum.as<float>(),     d->estimate.as<float>()};
  else
    at_ = {&hostKernels_,    s.mine.data(), s.all.data(),     s.gatherScratch.data(),
           s.decoded.data(), s.sum.data(),  s.estimate.data()};
}

std::string CompressedStepTask::describe() const {
  if (state_->device)
    return "compressed allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  return "compressed allreduce of tensor " + state_->name;
}

Status CompressedStepTask::named(const Status& st) const {
  if (!state_->device || st.isOk() || st.message().rfind("compressed tensor ", 0) == 0) return st;
  return Status(st.code(), whoOf(*state_) + ": " + st.message());
}

Status CompressedStepTask::addStages() {
  StageId flag = addStage({}, [this] { return beginFlag(); });
  StageId gather = addStage({flag}, [this] { return beginGather(); });
  addStage({gather}, [this]() -> Result<std::unique_ptr<algorithms::Task>> {
    TSR_RETURN_IF_ERROR(averageSlots());
    TSR_RETURN_IF_ERROR(commit());  // the residual and momentum move on only with a step that ended
    ++state_->step;
    return localOnly(Status::ok());
  });
  return Status::ok();
}

Result<std::unique_ptr<algorithms::Task>> CompressedStepTask::beginFlag() {
  CompressedState& s = *state_;
  auto bad = at_.kernels->scanNonFinite(s.g, s.count);
  if (!bad.isOk()) return named(bad.status());
  s.badIndex = bad.value();
  s.unencodable = false;
  input_ = s.g;
  if (s.badIndex == s.count && s.handoff > 0) {  // g + mu M, in sum (free until the average)
    algorithms::StepKernels& k = *at_.kernels;
    TSR_RETURN_IF_ERROR(named(k.scale(at_.estimate, s.count, s.handoff, at_.sum)));
    TSR_RETURN_IF_ERROR(named(k.reduce(at_.sum, s.g, s.count, DataType::kF32, ReduceOp::kSum)));
    input_ = at_.sum;
  }
  // What the compressor would refuse of a finite g (g + e overflowing, a value past f16): in
  // the flag, so every rank fails the step, not this one alone while the others wait for it.
  if (s.badIndex == s.count) {
    if (s.device) {
      // g was scanned above; g + mu M was not (the host compressor scans its input itself).
      auto refused =
          s.device->codec->firstUnencodable(input_, reinterpret_cast<std::byte*>(at_.mine + 1), input_ == s.g);
      if (!refused.isOk()) return named(refused.status());
      s.badIndex = refused.value();
    } else {
      s.badIndex = s.compressor->firstUnencodable({input_, s.count});
    }
    s.unencodable = s.badIndex < s.count;
  }
  s.flagIn[0] = s.badIndex < s.count ? 1.0 : 0.0;
  return runPlan(0, s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()});
}

Result<size_t> CompressedStepTask::compress(const float* input, std::byte* payload) {
  CompressedState& s = *state_;
  if (s.device) return s.device->codec->encode(input, payload, static_cast<uint32_t>(s.step));
  s.compressor->setStep(static_cast<uint32_t>(s.step));  // randomk: equal steps, equal indices
  return s.compressor->encode({input, s.count}, {payload, (s.slotWords - 1) * 8});
}

Status CompressedStepTask::commit() {
  CompressedState& s = *state_;
  return named(s.device ? s.device->codec->commit() : s.compressor->commit());
}

Status CompressedStepTask::decompress(const std::byte* payload, uint64_t bytes, float* out) {
  CompressedState& s = *state_;
  if (s.device) return s.device->codec->decompress(payload, bytes, out);
  return s.compressor->decompress({payload, bytes}, {out, s.count});
}

Result<std::unique_ptr<algorithms::Task>> CompressedStepTask::beginGather() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0) {
    bool mine = s.badIndex < s.count;
    float value = 0.0f;
    if (mine) at_.kernels->readToHost(&value, s.g + s.badIndex, sizeof value).ignore();  // for the message only
    const std::string where =
        !mine ? std::string()
              : " (rank " + std::to_string(s.rank) + ": element " + std::to_string(s.badIndex) + " is " +
                    std::to_string(value) +
                    (s.unencodable ? ", which " + s.compressor->name() +
                                         " cannot take once its error feedback or momentum is added (Inf, or "
                                         "beyond its format)"
                                   : std::string()) +
                    ")";
    return Status(Code::kNumericError, "compressed tensor " + s.name + ": " +
                                           summedCount(s.flagOut[0], s.size, "rank(s)") +
                                           " had NaN or Inf or a value the compressor cannot take" + where +
                                           "; the tensor and its residual are unchanged");
  }
  auto written = compress(input_, reinterpret_cast<std::byte*>(at_.mine + 1));
  if (!written.isOk()) return named(written.status());
  const uint64_t length = written.value();
  TSR_RETURN_IF_ERROR(named(at_.kernels->writeFromHost(at_.mine, &length, sizeof length)));
  algorithms::RunBuffers b{at_.mine, at_.all, at_.gatherScratch};
  if (s.device) {
    b.memory = transport::MemoryType::kCuda;
    b.kernels = at_.kernels;
  }
  return runPlan(1, s.gatherPlan, b);
}

Status CompressedStepTask::averageSlots() {
  CompressedState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  const size_t room = (s.slotWords - 1) * 8;
  Status st = k.zero(at_.sum, s.count * sizeof(float));
  // Rank order on every path: the float sums round the same.
  for (int r = 0; st.isOk() && r < s.size; ++r) {
    const uint64_t* slot = at_.all + static_cast<size_t>(r) * s.slotWords;
    uint64_t length = 0;
    st = k.readToHost(&length, slot, sizeof length);
    if (!st.isOk()) break;
    if (length > room) return oversizedPayload(s, r, length);
    st = decompress(reinterpret_cast<const std::byte*>(slot + 1), length, at_.decoded);
    if (!st.isOk()) return undecodablePayload(s, r, st);
    st = k.reduce(at_.sum, at_.decoded, s.count, DataType::kF32, ReduceOp::kSum);
  }
  if (st.isOk()) st = k.scale(at_.sum, s.count, 1.0f / static_cast<float>(s.size), s.g);
  if (st.isOk() && s.handoff > 0) return handOff();
  return named(st);
}

// g holds the average M'; leaves g = M' - mu M and M = M' (decoded is free now).
Status CompressedStepTask::handOff() {
  CompressedState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  TSR_RETURN_IF_ERROR(named(k.scale(at_.estimate, s.count, -s.handoff, at_.decoded)));
  TSR_RETURN_IF_ERROR(named(k.copy(at_.estimate, s.g, s.count * sizeof(float))));
  return named(k.reduce(s.g, at_.decoded, s.count, DataType::kF32, ReduceOp::kSum));
}

Status oversizedPayload(const CompressedState& s, int from, uint64_t length) {
  return Status(Code::kInvalidArgument, "compressed tensor " + s.name + ": rank " + std::to_string(from) +
                                            " sent a payload of " + std::to_string(length) +
                                            " bytes, more than its slot holds");
}

Status undecodablePayload(const CompressedState& s, int from, const Status& why) {
  return Status(why.code(),
                "compressed tensor " + s.name + ": payload of rank " + std::to_string(from) + ": " + why.message());
}

}  // namespace tsr::compressed
