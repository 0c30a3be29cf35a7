#include "algorithms/plan/schedule_task.h"

#include <chrono>
#include <string>

namespace tsr::algorithms {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
double nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ScheduleTask::StageId ScheduleTask::addStage(std::vector<StageId> after, Begin begin, Gate gate) {
  Stage stage;
  stage.after = std::move(after);
  stage.begin = std::move(begin);
  stage.gate = std::move(gate);
  stages_.push_back(std::move(stage));
  return stages_.size() - 1;
}

Result<std::unique_ptr<Task>> ScheduleTask::runPlan(uint32_t seqOffset, std::shared_ptr<const Plan> plan,
                                                    const RunBuffers& buffers) const {
  RunIdentity id = ctx_.id;
  id.seq += seqOffset;
  return std::unique_ptr<Task>(std::make_unique<PlanExecutor>(std::move(plan), buffers, id, ctx_.transport));
}

Status ScheduleTask::start() {
  stages_.clear();
  status_ = Status(Code::kInProgress, "");
  Status st = addStages();
  if (!st.isOk()) return fail(st);
  for (StageId i = 0; i < stages_.size(); ++i)
    for (StageId before : stages_[i].after)
      if (before >= i)
        return fail(Status(Code::kInternal, describe() + ": stage " + std::to_string(i) + " runs after stage " +
                                                std::to_string(before) + ", which is not added before it"));
  return advance();
}

bool ScheduleTask::ready(const Stage& stage) const {
  for (StageId before : stage.after)
    if (stages_[before].state != State::kDone) return false;
  return !stage.gate || stage.gate();
}

Status ScheduleTask::begin(Stage& stage) {
  auto child = stage.begin();
  if (!child.isOk()) return child.status();
  stage.child = child.take();
  stage.startUs = nowUs();
  if (!stage.child) {
    stage.endUs = stage.startUs;
    stage.state = State::kDone;
    return Status::ok();
  }
  stage.state = State::kRunning;
  stage.childStatus = stage.child->start();
  if (running(stage.childStatus)) return Status::ok();
  stage.endUs = nowUs();
  if (stage.childStatus.isOk()) stage.state = State::kDone;
  return stage.childStatus;
}

// Settles finished children and begins what that unblocks, until nothing changes.
Status ScheduleTask::advance() {
  for (bool moved = true; moved && running(status_);) {
    moved = false;
    for (Stage& stage : stages_) {
      if (stage.state == State::kRunning && !running(stage.childStatus)) {
        if (!stage.childStatus.isOk()) return fail(stage.childStatus);
        stage.state = State::kDone;
        moved = true;
      }
      if (stage.state == State::kWaiting && ready(stage)) {
        Status st = begin(stage);
        if (!st.isOk()) return fail(st);
        moved = true;
      }
    }
  }
  if (!running(status_)) return status_;
  for (const Stage& stage : stages_)
    if (stage.state != State::kDone) return status_;
  status_ = Status::ok();
  return status_;
}

Status ScheduleTask::progress() {
  if (!running(status_)) return status_;
  for (Stage& stage : stages_) {
    if (stage.state != State::kRunning || !running(stage.childStatus)) continue;
    stage.childStatus = stage.child->progress();
    if (!running(stage.childStatus)) stage.endUs = nowUs();
  }
  return advance();
}

Status ScheduleTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  for (Stage& stage : stages_)
    if (stage.state == State::kRunning && running(stage.childStatus)) stage.child->abort(status_);
  return status_;
}

void ScheduleTask::abort(const Status& reason) { fail(reason).ignore(); }

bool ScheduleTask::quiescent() const {
  for (const Stage& stage : stages_)
    if (stage.child && !stage.child->quiescent()) return false;
  return true;
}

int ScheduleTask::waitingOn() const {
  for (const Stage& stage : stages_) {
    if (stage.state != State::kRunning || !running(stage.childStatus)) continue;
    int peer = stage.child->waitingOn();
    if (peer >= 0) return peer;
  }
  return -1;
}

}  // namespace tsr::algorithms
