// One two-level compressed step (compressed_hier.h) as a progress-thread task:
//   seq:   the host's ranks average g + q (f32 or f16) over the row ring;
//   seq+1: the flag allreduce [ranks with NaN/Inf (or f16 overflow) in g + q, shards whose
//          host average is not finite]: any > 0 fails the step on every rank, nothing changed;
//   seq+2: compress the shard into this rank's slot, all-gather the slots over the column;
//   seq+3: decode and average them into the block, all-gather the blocks over the row;
//   end:   g = the gathered result, q = q'.
#pragma once

#include <memory>

#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_step.h"

namespace tsr::compressed {

class CompressedHierStepTask final : public algorithms::Task {
 public:
  CompressedHierStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  Status start() override;
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override;
  int waitingOn() const override;
  std::string describe() const override { return "two-level compressed allreduce of tensor " + state_->name; }

 private:
  enum Stage { kIntra, kFlag, kColumn, kRow, kStages };
  Status run(Stage stage, std::shared_ptr<const algorithms::Plan> plan, const void* in, void* out, void* scratch);
  Status drive();
  Status afterIntra();
  Status afterFlag();
  Status afterColumn();
  Status finish();
  Status fail(Status status);

  std::shared_ptr<CompressedState> state_;
  CompressedHier& h_;
  algorithms::TaskContext ctx_;
  // Stages run one after the other; finished executors are kept until the task ends.
  std::unique_ptr<algorithms::PlanExecutor> exec_[kStages];
  Stage stage_ = kIntra;
  Status stageStatus_{Code::kInProgress, ""};  // of exec_[stage_]
  Status result_{Code::kInProgress, ""};
};

}  // namespace tsr::compressed
