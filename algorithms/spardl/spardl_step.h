// One SparDL step as a progress-thread task that interprets a sparse schedule
// (topology/spardl_schedule.h: Spar-Reduce-Scatter in the teams, recursive doubling across
// teams for R-SAG, Bruck all-gather in the teams), one message per transfer (sparse_wire.h).
//
// Blocks live densely in `work` (the tensor's layout); a block is "dirty" when it holds more
// than its last selection (this rank's whole contribution at the start, or a merge since).
// Before a dirty block is sent it is re-selected to its k_b largest magnitudes, and what the
// selection drops goes to this rank's residual, divided by the number of ranks holding the
// very same sum (after a recursive-doubling exchange both partners drop the same entries, so
// each keeps half). A block sent for reduction and not received back leaves this rank.
// Receives merge (add) or copy. At the end every held block is selected once more, so all
// ranks hold the same sparse result. NaN/Inf anywhere travels as a header flag and fails the
// step on every rank with nothing changed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/plan/task.h"
#include "algorithms/spardl/spardl.h"
#include "algorithms/spardl/sparse_wire.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/first_step_agreement.h"
#include "algorithms/team/result_scale.h"
#include "topology/schedule.h"

namespace tsr::spardl {

struct BlockState {
  size_t offset = 0, count = 0;  // elements of the tensor
  size_t k = 0;                  // k_b
  bool dirty = true;
  uint32_t copies = 1;
  std::vector<uint32_t> selected;  // valid while clean: the non-zeros, increasing
};

// One step of this rank's run: a schedule step over tensor blocks, or (B-SAG's cross phase)
// over slots, slot t holding team t's copy of this rank's block.
struct RunStep {
  const topology::Step* step = nullptr;
  bool slots = false;
};

struct SparDLState {
  std::string name;
  size_t count = 0;
  int rank = 0, size = 1;
  Params params;
  std::string algorithm;
  std::vector<topology::Schedule> schedules;  // the phases (R-SAG: one; B-SAG: three)
  std::vector<RunStep> run;                   // this rank's steps through them, in order
  int numBlocks = 1;                          // per team
  std::vector<BlockState> blocks;
  // B-SAG: this rank's team and block, the adaptive pre-selection size k' (window rule) and
  // the slots of the cross phase.
  int teams = 1, myTeam = 0, myBlock = 0;
  size_t kPrime = 0, kStep = 1;
  int kDirection = 1;
  uint64_t lastCrossCount = 0;
  std::vector<std::vector<uint32_t>> slotIndices;
  std::vector<std::vector<float>> slotValues;
  std::vector<uint8_t> seen;
  std::vector<float> work, residual, residualNext;
  std::vector<uint32_t> topkScratch, topkOut;
  uint64_t step = 0;
  StepStats stats;
  algorithms::RequestPtr pending;
  std::shared_ptr<algorithms::SettingsAgreement> agreement;              // checked before the first step (null: not)
  algorithms::ResultScale resultScale = algorithms::ResultScale::kNone;  // op= (algorithms/team/result_scale.h)
  std::shared_ptr<algorithms::DeviceStaging> staging;                    // device tensors only (memory=cuda)
  float* g = nullptr;
};

// The state of tensor `name` on `rank` of the ranks in `ringOrder` (the communicator's ring),
// with parameters already parsed (parseParams). Errors name the tensor.
Result<std::shared_ptr<SparDLState>> makeState(std::string name, size_t count, const Params& params, int rank,
                                               const std::vector<int>& ringOrder);

class SparDLStepTask final : public algorithms::Task {
 public:
  SparDLStepTask(std::shared_ptr<SparDLState> state, const algorithms::TaskContext& ctx);
  Status start() override;
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override;
  int waitingOn() const override;
  std::string describe() const override { return "spardl allreduce of tensor " + state_->name; }

 private:
  struct Message {
    int peer = -1;
    topology::Combine combine = topology::Combine::kCopy;
    std::vector<int> blocks;
    std::vector<std::byte> bytes;  // sends
    std::vector<uint64_t> buffer;  // receives (8-byte aligned)
    transport::Completion done;
  };
  Status beginStep();
  Status finishStep();
  Status finish();
  Status fail(Status status);
  Status checkCompletions(std::vector<Message>& messages, const char* what, bool* allDone);
  void select(int block, size_t k);
  void enterCross();
  void leaveCross();
  void clearBlock(int block);
  Status merge(Message& m);
  template <typename From>
  Status checkCopies(const Message& m, const WireBlock& in, const BlockState& blk, const From& from) const;

  std::shared_ptr<SparDLState> state_;
  algorithms::TaskContext ctx_;
  std::vector<std::vector<Message>> sends_, recvs_;  // per step
  size_t current_ = 0;
  uint32_t badFlag_ = 0;
  bool ownBad_ = false;  // the NaN or Inf was in this rank's gradient + residual
  Status status_{Code::kInProgress, ""};
  double startUs_ = 0;
};

}  // namespace tsr::spardl
