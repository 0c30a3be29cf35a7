#include "algorithms/plan/caller_gate.h"

#include <utility>

namespace tsr::algorithms {
namespace {

class CallerGateTask final : public Task {
 public:
  CallerGateTask(TaskFactory inner, CallerEventPoll reached, CallerEvent event, std::string what,
                 const TaskContext& ctx)
      : make_(std::move(inner)),
        reached_(std::move(reached)),
        event_(std::move(event)),
        what_(std::move(what)),
        ctx_(ctx) {}

  Status start() override { return progress(); }

  Status progress() override {
    if (inner_) return inner_->progress();
    auto reached = reached_(event_);
    if (!reached.isOk()) return Status(reached.status().code(), what_ + ": " + reached.status().message());
    if (!reached.value()) return Status(Code::kInProgress, "");
    event_.reset();  // the event is released once reached
    TSR_ASSIGN_OR_RETURN(inner_, make_(ctx_));
    return inner_->start();
  }

  void abort(const Status& reason) override {
    if (inner_) inner_->abort(reason);
  }
  // Nothing is in flight before the step has started.
  bool quiescent() const override { return !inner_ || inner_->quiescent(); }
  int waitingOn() const override { return inner_ ? inner_->waitingOn() : -1; }
  std::string describe() const override {
    if (inner_) return inner_->describe();
    return what_ + " (not started: waiting for the work queued on the caller's CUDA stream before the call)";
  }

 private:
  TaskFactory make_;
  CallerEventPoll reached_;
  CallerEvent event_;
  std::string what_;
  TaskContext ctx_;
  std::unique_ptr<Task> inner_;
};

}  // namespace

TaskFactory afterCallerEvent(TaskFactory inner, CallerEventPoll reached, CallerEvent event, std::string what) {
  return [inner = std::move(inner), reached = std::move(reached), event = std::move(event),
          what = std::move(what)](const TaskContext& ctx) -> Result<std::unique_ptr<Task>> {
    return std::unique_ptr<Task>(new CallerGateTask(inner, reached, event, what, ctx));
  };
}

}  // namespace tsr::algorithms
