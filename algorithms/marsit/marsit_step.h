// One flat Marsit step, a schedule (algorithms/plan/schedule_task.h) of:
//   prepare: g' = g + c (c + mu M with momentum), its signs, NaN/Inf scan and sum |g'| per
//            scale block. With pack=chunked (host memory) the bit plan's kLocal ops do it chunk
//            by chunk (piecewise_prepare.h) in the order the ring sends them, so the first
//            chunk goes out while the rest is packed; otherwise the whole vector first.
//   seq+1:   the Marsit bit plan (every K steps, the dense full-precision plan on g' instead);
//   seq:     beside it, once every element is packed, a small allreduce of [mean |g'| of each
//            scale block..., ranks with NaN/Inf];
//   end:     every rank knows eta and whether anyone had a bad value, so all take the same
//            decision: fail naming the tensor (nothing changed), or write G = eta (2 bit - 1)
//            into g and c = g' - G (then the momentum hand-off, marsit.h).
// One task for both places the data can live: host memory and the direct device path
// (marsit_device.h: RunBuffers::memory = kCuda, the payloads go to the transport as device
// buffers). Every vector step runs through the StepKernels seam (algorithms/plan/
// step_kernels.h), the CPU kernels on the host, so both give the same bits.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/marsit/hier_plan.h"
#include "algorithms/marsit/marsit.h"
#include "algorithms/marsit/piecewise_prepare.h"
#include "algorithms/plan/schedule_task.h"
#include "algorithms/plan/step_kernels.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/first_step_agreement.h"
#include "algorithms/team/result_scale.h"

namespace tsr::marsit {

struct MarsitDeviceArrays;  // marsit_device.h

// A tensor's state, shared by the handle and its running step (which may outlive the handle).
struct MarsitState {
  std::string name;
  size_t count = 0;
  Params params;
  int rank = 0, size = 1;
  std::string algorithm;
  std::vector<float> comp, work;
  // momentum > 0 (flat): M, the last step's estimate, and c + mu M, what the next step adds
  // to g (so the packing passes take one vector, as with c alone).
  std::vector<float> prev, shift;
  // Scale blocks (flat): [b * scaleSpan, min(count, (b + 1) * scaleSpan)), scaleBlocks of them
  // (1 with scale_block=0, or a tensor no longer than one block).
  size_t scaleSpan = 0, scaleBlocks = 1;
  std::vector<double> blockSums;  // this rank's sum |g'| per scale block, this step
  std::vector<uint64_t> bits;
  std::shared_ptr<const algorithms::Plan> bitPlan, scalarPlan, fullPlan;  // fullPlan: K > 0
  std::vector<uint64_t> bitScratch, scalarScratch, fullScratch;
  uint64_t step = 0;
  StepTimes times;
  algorithms::RequestPtr pending;                                        // the running step, if any
  std::shared_ptr<algorithms::SettingsAgreement> agreement;              // checked before the first step (null: not)
  algorithms::ResultScale resultScale = algorithms::ResultScale::kNone;  // op= (algorithms/team/result_scale.h)
  std::shared_ptr<algorithms::DeviceStaging> staging;                    // device tensors only (memory=cuda)
  // The direct device path instead (memory=cuda, the transport moves CUDA memory): comp, work,
  // bits and scratch live there, and the host vectors above are unused.
  std::shared_ptr<MarsitDeviceArrays> device;
  // The running step's arguments and scalars.
  float* g = nullptr;
  // Flat: [mean |g'| of each scale block..., ranks with NaN/Inf]; two-level: [sum |s'|, flag].
  std::vector<double> scalarIn = {0, 0}, scalarOut = {0, 0};
  size_t badIndex = 0;
  uint64_t mergeNanos = 0;
  PiecewisePrepare prep;  // chunked packing's running sum and first bad index

  // Two-level (intra=none|fp16; marsit_hier_step.h): comp is then this rank's row block's
  // compensation (shardCount floats), intraResidual what the f16 cast, sums and division
  // dropped (count floats); dropped (padded, intra=fp16) what this rank's sums and division
  // in the host ring rounded away, added to intraResidual once the host average is done.
  bool twoLevel = false;
  DataType intraType = DataType::kF32;
  int ranksPerRow = 1;
  HierPlans hier;
  std::vector<uint64_t> intraBuffer, rowScratch;  // padded elements of intraType
  std::vector<float> intraResidual, shard, shardOut, dropped;
  // intra=none keeps no cast residual: one that setResidual put there goes in once, then
  // the step that added it clears it.
  bool intraResidualOnce = false;

  bool fullPrecisionStep() const {
    return params.fullPrecisionEvery > 0 && (step + 1) % params.fullPrecisionEvery == 0;
  }
  size_t scaleBegin(size_t b) const { return b * scaleSpan; }
  size_t scaleLength(size_t b) const { return std::min(count, (b + 1) * scaleSpan) - std::min(count, b * scaleSpan); }
  // What the packing adds to g: c, or c + mu M with momentum.
  const std::vector<float>& carried() const { return params.momentum > 0 ? shift : comp; }
  // eta of scale block b, once the scalar allreduce is done.
  float eta(size_t b) const { return static_cast<float>(scalarOut[b] / size); }
};

double nowUs();
inline bool running(const Status& s) { return s.code() == Code::kInProgress; }
Status numericError(const MarsitState& s, size_t badIndex, float badValue);
// The bit plan's buffers on a sign step (bits in place, its coin stream, the merge clock),
// host or device: the caller sets where they live and what a kLocal op does.
algorithms::RunBuffers signBitBuffers(MarsitState& s, void* bits, void* scratch);
// Flat: sizes the scale blocks, the scalars and (momentum > 0) M and c + mu M for s.count.
void sizeFlatState(MarsitState& s);
// The state of tensor `name` on `rank` of `size`, with parameters already parsed (parseParams),
// over the job's host grid (empty: none, torusWhyNot says why) and dense options, as the
// communicator gives them. Errors name the tensor.
Result<std::shared_ptr<MarsitState>> makeState(std::string name, size_t count, const Params& params, int rank, int size,
                                               const std::vector<std::vector<int>>& grid,
                                               const std::string& torusWhyNot, const algorithms::DenseOptions& options);

// Where a step's vectors live and which kernels reach them: the state's host vectors and
// `host`, or (s.device) the direct path's device arrays and their kernels.
struct MarsitPlace {
  algorithms::StepKernels* kernels;
  float *comp, *work, *prev, *shift;
  uint64_t* bits;
  void *bitScratch, *fullScratch;
  // Two-level: the intra-host vector and its plan's scratch, the cast residual, the f16
  // rounding of the host ring, the row block s' and its estimate G.
  void *intra, *rowScratch;
  float *intraResidual, *dropped, *shard, *shardOut;
};
MarsitPlace placeOf(MarsitState& s, algorithms::HostStepKernels& host);

// What the flat and two-level steps share: the state and where its vectors live, the
// per-step reset, the scalar allreduce beside the bit plan (held until every element is packed)
// and the finish after both, and errors named on the direct device path.
class MarsitStepBase : public algorithms::ScheduleTask {
 public:
  std::string describe() const override;

 protected:
  // `what`: "marsit" or "two-level marsit", for describe() and named().
  MarsitStepBase(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx, std::string what);
  // Resets the step's times and flags; full_ says whether this step is a full-precision one.
  void beginStep();
  // After `packStage`: the scalar allreduce on sequence `scalarSeq` (once packed_), the bit plan
  // (`bitPlan`, or the full-precision plan) on `bitSeq`, then finish() after both.
  void addWireStages(StageId packStage, uint64_t scalarSeq, uint64_t bitSeq,
                     std::shared_ptr<const algorithms::Plan> bitPlan);
  virtual algorithms::RunBuffers bitBuffers() = 0;
  virtual Status finish() = 0;
  // Errors of the kernels, prefixed with the tensor, rank and path (device only).
  Status named(const Status& st) const;

  std::shared_ptr<MarsitState> state_;
  algorithms::HostStepKernels hostKernels_;
  MarsitPlace at_;
  kernels::RngStream coin_{};
  bool full_ = false;
  bool chunked_ = false;  // packing inside the bit plan: the scalars wait for the last chunk
  bool packed_ = false;   // every element packed, the scalars set
  double startUs_ = 0;
  StageId bits_ = 0;

 private:
  std::string what_;
};

class MarsitStepTask final : public MarsitStepBase {
 public:
  MarsitStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);

 private:
  Status addStages() override;
  Status prepare();
  Status prepareWhole();
  Status packChunk(const algorithms::PlanOp& op);  // a kLocal op of the bit plan (host memory)
  // The scan's first bad index and blockSums (sum |g'| per scale block) into the scalars.
  void scalarsReady(size_t badIndex);
  algorithms::RunBuffers bitBuffers() override;
  Status finish() override;
  Status writeResult();
};

}  // namespace tsr::marsit
