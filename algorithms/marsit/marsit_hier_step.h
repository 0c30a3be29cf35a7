// One two-level Marsit step (hier_plan.h) as a progress-thread task, in two stages:
//   stage 1 (seq):     x = g + r (r: what the last f16 cast dropped), cast to the intra type
//                      (r = x - f16(x)), average over the host's ranks: this rank gets its
//                      row block s.
//   stage 2 (seq+1,2): s' = s + c, sign packing of the block; the eta/NaN scalar allreduce
//                      beside the bit plan (Marsit across hosts, then the row all-gather).
//   end:               G = eta * (2 bit - 1) into g, c = s' - G on the block.
// eta is the mean over hosts of mean |s'|: each host's ranks together hold every element once.
// A full-precision step (every K) averages y = x + X c (c placed at the block, X = ranks per
// host: c is in units of a host average) with the dense plan, which accounts for everything
// that was kept back, and resets c and r.
#pragma once

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

class MarsitHierStepTask final : public algorithms::Task {
 public:
  MarsitHierStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);
  Status start() override;
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override;
  int waitingOn() const override;
  std::string describe() const override { return "two-level marsit allreduce of tensor " + state_->name; }

 private:
  Status startExchange();
  Status drive();
  Status finish();
  Status fail(Status status);
  algorithms::RunIdentity seq(uint32_t offset) const;

  std::shared_ptr<MarsitState> state_;
  algorithms::TaskContext ctx_;
  std::unique_ptr<algorithms::PlanExecutor> intra_, scalar_, bits_;
  Status intraStatus_{Code::kInProgress, ""}, scalarStatus_{Code::kInProgress, ""},
      bitsStatus_{Code::kInProgress, ""};
  Status status_{Code::kInProgress, ""};
  bool full_ = false;
  double startUs_ = 0, bitsStartUs_ = 0, bitsEndUs_ = 0;
};

}  // namespace tsr::marsit
