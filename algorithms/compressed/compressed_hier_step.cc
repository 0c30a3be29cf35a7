#include "algorithms/compressed/compressed_hier_step.h"

#include <utility>

#include "algorithms/compressed/compressed_hier_device.h"
#include "base/summed_count.h"

namespace tsr::compressed {

CompressedHierStepTask::CompressedHierStepTask(std::shared_ptr<CompressedState> state,
                                               const algorithms::TaskContext& ctx)
    : ScheduleTask(ctx), state_(std::move(state)), h_(*state_->hier) {
  CompressedState& s = *state_;
  if (CompressedDevice* dev = s.device.get()) {
    CompressedHierDevice& d = *dev->hier;
    at_ = {dev->kernels.get(),          d.work.as<float>(),
           d.intraResidual.as<float>(), d.nextResidual.as<float>(),
           d.dropped.as<float>(),       d.shard.as<float>(),
           d.block.as<float>(),         d.result.as<float>(),
           dev->decoded.as<float>(),    dev->sum.as<float>(),
           d.intra.as<void>(),          d.rowScratch.as<void>(),
           d.columnScratch.as<void>(),  d.rowGatherScratch.as<void>(),
           dev->mine.as<uint64_t>(),    dev->all.as<uint64_t>()};
  } else {
    at_ = {&hostKernels_,           h_.work.data(),
           h_.intraResidual.data(), h_.nextResidual.data(),
           h_.dropped.data(),       h_.shard.data(),
           h_.block.data(),         h_.result.data(),
           s.decoded.data(),        s.sum.data(),
           h_.intraBuffer.data(),   h_.rowScratch.data(),
           h_.columnScratch.data(), h_.rowGatherScratch.data(),
           s.mine.data(),           s.all.data()};
  }
}

std::string CompressedHierStepTask::describe() const {
  if (state_->device)
    return "two-level compressed allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  return "two-level compressed allreduce of tensor " + state_->name;
}

Status CompressedHierStepTask::named(const Status& st) const {
  if (!state_->device || st.isOk() || st.message().rfind("compressed tensor ", 0) == 0) return st;
  return Status(st.code(), "compressed tensor " + state_->name + " (rank " + std::to_string(state_->rank) +
                               ", two-level, direct device path): " + st.message());
}

Status CompressedHierStepTask::addStages() {
  StageId intra = addStage({}, [this]() -> Result<std::unique_ptr<algorithms::Task>> {
    TSR_RETURN_IF_ERROR(prepareIntra());
    return runPlan(kIntra, h_.rowPlan, stageBuffers(kIntra));
  });
  StageId flag = addStage({intra}, [this] { return beginFlag(); });
  StageId column = addStage({flag}, [this] { return beginColumn(); });
  StageId row = addStage({column}, [this] { return beginRow(); });
  addStage({row}, [this]() -> Result<std::unique_ptr<algorithms::Task>> {
    TSR_RETURN_IF_ERROR(writeResult());
    ++state_->step;
    return localOnly(Status::ok());
  });
  return Status::ok();
}

// Every plan but the flags' runs where the data lives; on the device its local math runs
// through the kernels.
algorithms::RunBuffers CompressedHierStepTask::stageBuffers(Stage stage) const {
  algorithms::RunBuffers b;
  switch (stage) {
    case kIntra:
      b = {at_.intra, at_.intra, at_.rowScratch};
      if (h_.intraType == DataType::kF16) b.droppedRounding = at_.dropped;
      break;
    case kColumn:
      b = {at_.mine, at_.all, at_.columnScratch};
      break;
    default:
      b = {at_.block, at_.result, at_.rowGatherScratch};
      break;
  }
  if (state_->device) {
    b.memory = transport::MemoryType::kCuda;
    b.kernels = at_.kernels;
  }
  return b;
}

// Stage 1: x = g + q, cast to the intra type (q' = what the cast drops), before the host average.
Status CompressedHierStepTask::prepareIntra() {
  CompressedState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  const size_t n = s.count, pad = h_.padded - n;
  auto bad = k.addScan(s.g, at_.intraResidual, n, at_.work);
  if (!bad.isOk()) return named(bad.status());
  h_.badIndex = bad.value();
  h_.overflow = false;
  if (h_.intraType == DataType::kF16) {
    auto* half = static_cast<uint16_t*>(at_.intra);
    TSR_RETURN_IF_ERROR(named(k.castTo(DataType::kF16, at_.work, n, half)));
    if (pad) TSR_RETURN_IF_ERROR(named(k.zero(half + n, pad * sizeof(uint16_t))));  // the last ring's partial sums
    TSR_RETURN_IF_ERROR(named(k.zero(at_.dropped, h_.padded * sizeof(float))));
    TSR_RETURN_IF_ERROR(named(k.castFrom(DataType::kF16, half, n, at_.nextResidual)));
    TSR_RETURN_IF_ERROR(named(k.efKeep(at_.work, n, at_.nextResidual)));  // q' = x - f16(x)
    if (h_.badIndex == n) {
      // A finite x whose f16 is infinite: the cast cannot keep it.
      auto overflow = k.scanNonFinite(at_.nextResidual, n);
      if (!overflow.isOk()) return named(overflow.status());
      h_.badIndex = overflow.value();
      h_.overflow = h_.badIndex < n;
    }
    return Status::ok();
  }
  auto* full = static_cast<float*>(at_.intra);
  TSR_RETURN_IF_ERROR(named(k.copy(full, at_.work, n * sizeof(float))));
  if (pad) TSR_RETURN_IF_ERROR(named(k.zero(full + n, pad * sizeof(float))));
  return Status::ok();
}

// Stage 2: this rank's shard of the host average, checked with everyone's inputs before
// anything changes state.
Result<std::unique_ptr<algorithms::Task>> CompressedHierStepTask::beginFlag() {
  CompressedState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  const size_t off = h_.shardOffset, real = h_.shardReal;
  Status st = h_.intraType == DataType::kF16
                  ? k.castFrom(DataType::kF16, static_cast<const uint16_t*>(at_.intra) + off, real, at_.shard)
                  : k.copy(at_.shard, static_cast<const float*>(at_.intra) + off, real * sizeof(float));
  auto bad = st.isOk() ? k.scanNonFinite(at_.shard, real) : Result<size_t>(st);
  if (!bad.isOk()) return named(bad.status());
  s.badIndex = bad.value();  // within the shard
  // What the column's compressor would refuse of a finite average (past f16, the average + e
  // overflowing): in the flag too, so every rank fails the step, not the shard's owner alone.
  h_.shardRefused = false;
  if (s.badIndex == real && real > 0) {
    if (s.device && s.device->codec) {
      auto refused = s.device->codec->firstUnencodable(at_.shard, reinterpret_cast<std::byte*>(at_.mine + 1),
                                                       /*gScanned=*/true);
      if (!refused.isOk()) return refused.status();
      s.badIndex = refused.value();
    } else if (!s.device && s.compressor) {
      s.badIndex = s.compressor->firstUnencodable({at_.shard, real});
    }
    h_.shardRefused = s.badIndex < real;
  }
  s.flagIn[0] = h_.badIndex < s.count ? 1.0 : 0.0;
  s.flagIn[1] = s.badIndex < h_.shardReal ? 1.0 : 0.0;
  return runPlan(kFlag, s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()});
}

// Stage 3: the shard compressed into this rank's slot (length 0 when the shard is empty).
Result<std::unique_ptr<algorithms::Task>> CompressedHierStepTask::beginColumn() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0 || s.flagOut[1] > 0) return nonFiniteFailure();
  uint64_t length = 0;
  auto* payload = reinterpret_cast<std::byte*>(at_.mine + 1);
  if (s.device && s.device->codec) {
    auto written = s.device->codec->encode(at_.shard, payload, static_cast<uint32_t>(s.step));
    if (!written.isOk()) return named(written.status());
    length = written.value();
  } else if (!s.device && s.compressor) {
    s.compressor->setStep(static_cast<uint32_t>(s.step));  // randomk: equal steps, equal indices
    auto written = s.compressor->encode({at_.shard, h_.shardReal}, {payload, (s.slotWords - 1) * 8});
    if (!written.isOk()) return written.status();
    length = written.value();
  }
  TSR_RETURN_IF_ERROR(named(at_.kernels->writeFromHost(at_.mine, &length, sizeof length)));
  return runPlan(kColumn, h_.columnPlan, stageBuffers(kColumn));
}

Result<std::unique_ptr<algorithms::Task>> CompressedHierStepTask::beginRow() {
  TSR_RETURN_IF_ERROR(averageColumn());
  return runPlan(kRow, h_.rowGatherPlan, stageBuffers(kRow));
}

// Stage 4: the column's average of the decoded payloads, in row order (the same on every rank
// of the column).
Status CompressedHierStepTask::averageColumn() {
  CompressedState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  const size_t real = h_.shardReal, room = (s.slotWords - 1) * 8;
  const bool coded = s.device ? s.device->codec != nullptr : s.compressor != nullptr;
  Status st = k.zero(at_.sum, real * sizeof(float));
  for (int r = 0; st.isOk() && coded && r < h_.place.y; ++r) {
    const uint64_t* slot = at_.all + static_cast<size_t>(r) * s.slotWords;
    const int from = h_.place.columnRanks[r];
    uint64_t length = 0;
    st = k.readToHost(&length, slot, sizeof length);
    if (!st.isOk()) break;
    if (length > room) return oversizedPayload(s, from, length);
    const auto* payload = reinterpret_cast<const std::byte*>(slot + 1);
    st = s.device ? s.device->codec->decompress(payload, length, at_.decoded)
                  : s.compressor->decompress({payload, length}, {at_.decoded, real});
    if (!st.isOk()) return undecodablePayload(s, from, st);
    st = k.reduce(at_.sum, at_.decoded, real, DataType::kF32, ReduceOp::kSum);
  }
  if (st.isOk()) st = k.scale(at_.sum, real, 1.0f / static_cast<float>(h_.place.y), at_.block);
  return named(st);
}

Status CompressedHierStepTask::writeResult() {
  CompressedState& s = *state_;
  algorithms::StepKernels& k = *at_.kernels;
  // The column compressor's residual and momentum move on only now that the step has ended.
  if (s.device && s.device->codec)
    TSR_RETURN_IF_ERROR(named(s.device->codec->commit()));
  else if (!s.device && s.compressor)
    TSR_RETURN_IF_ERROR(named(s.compressor->commit()));
  TSR_RETURN_IF_ERROR(named(k.copy(s.g, at_.result, s.count * sizeof(float))));
  if (h_.intraType == DataType::kF16) {
    // q' = what this rank's cast dropped plus what its f16 sums and division in the host ring
    // dropped (those elements' sums are short by it; units of the sum, as q).
    TSR_RETURN_IF_ERROR(named(k.reduce(at_.nextResidual, at_.dropped, s.count, DataType::kF32, ReduceOp::kSum)));
    if (s.device)
      std::swap(s.device->hier->intraResidual, s.device->hier->nextResidual);
    else
      std::swap(h_.intraResidual, h_.nextResidual);
  } else if (h_.intraResidualOnce) {
    TSR_RETURN_IF_ERROR(named(k.zero(at_.intraResidual, s.count * sizeof(float))));
  }
  h_.intraResidualOnce = false;
  return Status::ok();
}

Status CompressedHierStepTask::nonFiniteFailure() {
  CompressedState& s = *state_;
  std::string what = "compressed tensor " + s.name + ": ";
  if (s.flagOut[0] > 0) {
    what += summedCount(s.flagOut[0], s.size, "rank(s)") + " had NaN or Inf in gradient + residual";
    if (h_.badIndex < s.count) {
      float value = 0.0f;  // for the message only
      at_.kernels->readToHost(&value, at_.work + h_.badIndex, sizeof value).ignore();
      what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.badIndex) + " is " +
              std::to_string(value) + (h_.overflow ? ", beyond f16 (intra=fp16)" : "") + ")";
    }
  } else {
    what += summedCount(s.flagOut[1], s.size, "host average block(s)") +
            " overflowed f16 (intra=fp16) or held a value the compressor cannot take";
    if (s.badIndex < h_.shardReal) {
      float value = 0.0f;  // for the message only
      at_.kernels->readToHost(&value, at_.shard + s.badIndex, sizeof value).ignore();
      what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.shardOffset + s.badIndex) +
              " of the host average is " + std::to_string(value) +
              (h_.shardRefused ? ", which " + s.compressor->name() +
                                     " cannot take once its error feedback or momentum is added (Inf, or beyond "
                                     "its format)"
                               : std::string()) +
              ")";
    }
  }
  return Status(Code::kNumericError, what + "; the tensor and its residual are unchanged");
}

}  // namespace tsr::compressed
