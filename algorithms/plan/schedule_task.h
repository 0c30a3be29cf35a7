// ScheduleTask: a task made of stages with start-after edges, the way UCC's ucc_schedule_t
// builds a collective from child tasks. An algorithm whose step is several plans in a row or
// side by side (Marsit: the bit plan beside a scalar allreduce; the two-level forms: an
// intra-host plan, then the exchange) says only what each stage does; running them, failing,
// aborting, knowing when nothing is in flight and naming the peer waited on are written here
// once.
//
// A stage begins once every stage it runs after has finished and its gate (if any) is open:
// its begin() does the stage's local work and returns the child task to run (usually a plan
// executor, made with runPlan), or null when the local work was all. The stage finishes when
// its child does. Gates are for readiness that is not a stage's end: Marsit's scalar allreduce
// waits until the last chunk is packed, which happens inside the bit plan's local ops.
//
// The first error (a begin(), a child's start() or progress()) ends the schedule with that
// error and aborts every running child; stages not yet begun never begin. Stages begin in the
// order they were added when several become ready together; children are driven in that
// order too, and the peer waited on is the first running child's that names one.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "algorithms/plan/executor.h"

namespace tsr::algorithms {

class ScheduleTask : public Task {
 public:
  Status start() final;
  Status progress() final;
  void abort(const Status& reason) final;
  bool quiescent() const final;
  int waitingOn() const final;

 protected:
  // The local work of a stage, then its child (null: the stage is done).
  using Begin = std::function<Result<std::unique_ptr<Task>>()>;
  using Gate = std::function<bool()>;
  using StageId = size_t;

  explicit ScheduleTask(const TaskContext& ctx) : ctx_(ctx) {}

  // Called by start() on a fresh schedule: adds this run's stages (addStage) and resets the
  // subclass's per-run state. An error ends the run before anything begins.
  virtual Status addStages() = 0;
  // `after` must name stages added before this one (edges run forward, so there is no cycle).
  StageId addStage(std::vector<StageId> after, Begin begin, Gate gate = {});
  // A plan executor on sequence number ctx.id.seq + seqOffset (the task owns seq .. seq+span-1).
  Result<std::unique_ptr<Task>> runPlan(uint32_t seqOffset, std::shared_ptr<const Plan> plan,
                                        const RunBuffers& buffers) const;
  // When the stage's child was started and when it was seen finished (microseconds of a steady
  // clock; both 0 before it ran, equal for a stage without a child).
  double childStartUs(StageId stage) const { return stages_[stage].startUs; }
  double childEndUs(StageId stage) const { return stages_[stage].endUs; }

  const TaskContext& context() const { return ctx_; }

  // The begin() result of a stage whose local work is all it does: its error, or no child.
  static Result<std::unique_ptr<Task>> localOnly(const Status& done) {
    if (!done.isOk()) return done;
    return std::unique_ptr<Task>();
  }

 private:
  enum class State { kWaiting, kRunning, kDone };
  struct Stage {
    std::vector<StageId> after;
    Begin begin;
    Gate gate;
    State state = State::kWaiting;
    std::unique_ptr<Task> child;
    Status childStatus{Code::kInProgress, ""};
    double startUs = 0, endUs = 0;
  };

  bool ready(const Stage& stage) const;
  Status begin(Stage& stage);
  Status advance();
  Status fail(Status status);

  TaskContext ctx_;
  std::vector<Stage> stages_;
  Status status_{Code::kInProgress, ""};
};

}  // namespace tsr::algorithms
