// ScheduleTask: begin order along the edges and gates, the first error ending the run and
// aborting what runs, quiescence and the peer waited on, with scripted children; then two
// plans in a row on their own sequence numbers over real UCX.
#include "algorithms/plan/schedule_task.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "transport/tests/ucx_world.h"

namespace tsr::algorithms {
namespace {

// A child that finishes (with `outcome`) after `steps` progress calls; logs what happens to it.
struct Script {
  std::string name;
  int steps = 1;
  Status outcome = Status::ok();
  int peer = -1;
  Status startOutcome{Code::kInProgress, ""};
};

class ScriptedChild final : public Task {
 public:
  ScriptedChild(Script script, std::vector<std::string>& log, bool& quiet)
      : script_(std::move(script)), log_(log), quiet_(quiet) {}
  Status start() override {
    log_.push_back("start " + script_.name);
    return script_.startOutcome;
  }
  Status progress() override {
    if (--script_.steps > 0) return Status(Code::kInProgress, "");
    log_.push_back("end " + script_.name);
    return script_.outcome;
  }
  void abort(const Status& reason) override { log_.push_back("abort " + script_.name + ": " + reason.message()); }
  bool quiescent() const override { return quiet_; }
  int waitingOn() const override { return script_.peer; }
  std::string describe() const override { return script_.name; }

 private:
  Script script_;
  std::vector<std::string>& log_;
  bool& quiet_;
};

// The test's transport is never used by scripted children; the UCX world gives a real one.
transport::Transport& anyTransport() {
  static auto world = transport::testing::makeWorld(1);
  return *world[0];
}

class Scripted final : public ScheduleTask {
 public:
  using Build = std::function<Status(Scripted&)>;
  explicit Scripted(Build build) : ScheduleTask(TaskContext{anyTransport(), {}, 1, 1}), build_(std::move(build)) {}
  std::string describe() const override { return "scripted schedule"; }

  // A stage that logs its begin and runs `script` (no child when script.name is empty).
  StageId stage(std::vector<StageId> after, Script script, Gate gate = {}) {
    return addStage(
        std::move(after),
        [this, script]() -> Result<std::unique_ptr<Task>> {
          log.push_back("begin " + script.name);
          if (script.name.empty()) return std::unique_ptr<Task>();
          return std::unique_ptr<Task>(std::make_unique<ScriptedChild>(script, log, quiet));
        },
        std::move(gate));
  }
  using ScheduleTask::addStage;
  using ScheduleTask::childEndUs;
  using ScheduleTask::childStartUs;

  std::vector<std::string> log;
  bool quiet = false;

 private:
  Status addStages() override { return build_(*this); }
  Build build_;
};

bool running(const Status& s) { return s.code() == Code::kInProgress; }

Status runToEnd(Scripted& task) {
  Status st = task.start();
  for (int i = 0; i < 100 && running(st); ++i) st = task.progress();
  return st;
}

TEST(ScheduleTask, StagesBeginWhenEveryStageTheyRunAfterHasFinished) {
  Scripted task([](Scripted& t) {
    auto a = t.stage({}, {"a", 2});
    auto b = t.stage({a}, {"b", 1});
    auto c = t.stage({a}, {"c", 3});
    t.stage({b, c}, {"d", 1});
    return Status::ok();
  });
  ASSERT_TRUE(runToEnd(task).isOk());
  std::vector<std::string> want = {"begin a", "start a", "end a", "begin b", "start b", "begin c",
                                   "start c", "end b",   "end c", "begin d", "start d", "end d"};
  EXPECT_EQ(task.log, want);
}

TEST(ScheduleTask, StagesWithoutAChildFinishAtOnce) {
  Scripted task([](Scripted& t) {
    auto a = t.stage({}, {""});
    t.stage({a}, {""});
    return Status::ok();
  });
  EXPECT_TRUE(task.start().isOk());
  EXPECT_EQ(task.log, (std::vector<std::string>{"begin ", "begin "}));
  EXPECT_TRUE(task.quiescent());
}

TEST(ScheduleTask, AGateHoldsAStageUntilItOpens) {
  bool open = false;
  int progressCalls = 0;
  Scripted task([&](Scripted& t) {
    auto a = t.stage({}, {"a", 4});
    t.stage({}, {"gated", 1}, [&] { return open; });
    t.addStage({a}, [&]() -> Result<std::unique_ptr<Task>> {
      open = true;  // opened by another stage's work, as Marsit's last packed chunk does
      return std::unique_ptr<Task>();
    });
    return Status::ok();
  });
  Status st = task.start();
  EXPECT_EQ(task.log, (std::vector<std::string>{"begin a", "start a"}));
  for (; running(st) && progressCalls < 10; ++progressCalls) st = task.progress();
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(task.log,
            (std::vector<std::string>{"begin a", "start a", "end a", "begin gated", "start gated", "end gated"}));
  EXPECT_EQ(progressCalls, 5);  // a ends on the 4th, gated on the 5th
}

TEST(ScheduleTask, TheFirstErrorEndsTheRunAbortsWhatRunsAndBeginsNothingMore) {
  Scripted task([](Scripted& t) {
    auto a = t.stage({}, {"a", 5});
    auto b = t.stage({}, {"b", 2, Status(Code::kPeerFailed, "rank 3 died")});
    t.stage({a, b}, {"c", 1});
    return Status::ok();
  });
  Status st = runToEnd(task);
  EXPECT_EQ(st.code(), Code::kPeerFailed);
  EXPECT_EQ(st.message(), "rank 3 died");
  EXPECT_EQ(task.log,
            (std::vector<std::string>{"begin a", "start a", "begin b", "start b", "end b", "abort a: rank 3 died"}));
  EXPECT_EQ(task.progress().message(), "rank 3 died");  // stays ended
}

TEST(ScheduleTask, AFailedBeginOrChildStartEndsTheRunBeforeLaterStagesBegin) {
  Scripted failedBegin([](Scripted& t) {
    auto a = t.stage({}, {"a", 3});
    t.addStage({}, []() -> Result<std::unique_ptr<Task>> { return Status(Code::kNumericError, "NaN at 7"); });
    t.stage({}, {"late", 1});
    (void)a;
    return Status::ok();
  });
  EXPECT_EQ(failedBegin.start().message(), "NaN at 7");
  EXPECT_EQ(failedBegin.log, (std::vector<std::string>{"begin a", "start a", "abort a: NaN at 7"}));

  Script refused{"b", 1};
  refused.startOutcome = Status(Code::kInvalidArgument, "plan refused");
  Scripted failedStart([&](Scripted& t) {
    t.stage({}, refused);
    t.stage({}, {"late", 1});
    return Status::ok();
  });
  EXPECT_EQ(failedStart.start().message(), "plan refused");
  EXPECT_EQ(failedStart.log, (std::vector<std::string>{"begin b", "start b"}));
}

TEST(ScheduleTask, AbortReachesEveryRunningChildAndQuiescenceWaitsForAll) {
  Scripted task([](Scripted& t) {
    t.stage({}, {"a", 5});
    t.stage({}, {"b", 5});
    return Status::ok();
  });
  ASSERT_TRUE(running(task.start()));
  EXPECT_FALSE(task.quiescent());
  task.abort(Status(Code::kTimeout, "no progress for 30 s"));
  EXPECT_EQ(task.log, (std::vector<std::string>{"begin a", "start a", "begin b", "start b",
                                                "abort a: no progress for 30 s", "abort b: no progress for 30 s"}));
  EXPECT_EQ(task.progress().code(), Code::kTimeout);
  EXPECT_FALSE(task.quiescent());
  task.quiet = true;
  EXPECT_TRUE(task.quiescent());
}

TEST(ScheduleTask, WaitingOnIsTheFirstRunningChildThatNamesAPeer) {
  Scripted task([](Scripted& t) {
    auto a = t.stage({}, {"a", 1, Status::ok(), 4});
    t.stage({}, {"b", 9, Status::ok(), -1});
    t.stage({}, {"c", 9, Status::ok(), 2});
    t.stage({a}, {"d", 9, Status::ok(), 6});
    return Status::ok();
  });
  ASSERT_TRUE(running(task.start()));
  EXPECT_EQ(task.waitingOn(), 4);  // a, before b (none) and c
  ASSERT_TRUE(running(task.progress()));
  EXPECT_EQ(task.waitingOn(), 2);  // a is done: c comes before d
}

TEST(ScheduleTask, AnEdgeToAStageNotAddedBeforeIsAnInternalError) {
  Scripted task([](Scripted& t) {
    t.stage({1}, {"a", 1});
    t.stage({}, {"b", 1});
    return Status::ok();
  });
  Status st = task.start();
  EXPECT_EQ(st.code(), Code::kInternal);
  EXPECT_NE(st.message().find("stage 0 runs after stage 1"), std::string::npos) << st.message();
  EXPECT_TRUE(task.log.empty());
}

TEST(ScheduleTask, ChildTimesSpanTheChildsRun) {
  Scripted task([](Scripted& t) {
    auto a = t.stage({}, {""});
    t.stage({a}, {"b", 3});
    return Status::ok();
  });
  ASSERT_TRUE(runToEnd(task).isOk());
  EXPECT_GT(task.childStartUs(0), 0);
  EXPECT_EQ(task.childStartUs(0), task.childEndUs(0));
  EXPECT_LE(task.childStartUs(0), task.childStartUs(1));
  EXPECT_LT(task.childStartUs(1), task.childEndUs(1));
}

// Two allreduces in a row (the second on seq + 1 adds the first's result) on two ranks.
class TwoAllreduces final : public ScheduleTask {
 public:
  TwoAllreduces(const TaskContext& ctx, std::vector<float>& data) : ScheduleTask(ctx), data_(data) {}
  std::string describe() const override { return "two allreduces"; }

 private:
  Status addStages() override {
    const TaskContext& ctx = context();
    auto plan = ringAllreducePlan(ctx.id.rank, ctx.size, data_.size(), DataType::kF32, ReduceOp::kSum, {});
    if (!plan.isOk()) return plan.status();
    auto first = addStage({}, [this, p = plan.value()] { return runPlan(0, p, {data_.data(), data_.data()}); });
    addStage({first}, [this, p = plan.value()] { return runPlan(1, p, {data_.data(), data_.data()}); });
    return Status::ok();
  }
  std::vector<float>& data_;
};

TEST(ScheduleTask, PlansInARowRunOnTheirOwnSequenceNumbersOverUcx) {
  auto world = transport::testing::makeWorld(2);
  std::vector<std::vector<float>> data = {std::vector<float>(1000, 1.0f), std::vector<float>(1000, 2.0f)};
  std::vector<std::unique_ptr<TwoAllreduces>> tasks;
  std::vector<Status> st;
  for (int r = 0; r < 2; ++r) {
    tasks.push_back(std::make_unique<TwoAllreduces>(TaskContext{*world[r], {r, 7, 40}, 2, 2}, data[r]));
    st.push_back(tasks[r]->start());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((running(st[0]) || running(st[1])) && std::chrono::steady_clock::now() < deadline)
    for (int r = 0; r < 2; ++r) {
      world[r]->progress();
      if (running(st[r])) st[r] = tasks[r]->progress();
    }
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(st[r].isOk()) << st[r].toString();
    EXPECT_EQ(data[r].front(), 6.0f);  // (1 + 2) then (3 + 3)
    EXPECT_EQ(data[r].back(), 6.0f);
    EXPECT_TRUE(tasks[r]->quiescent());
  }
}

}  // namespace
}  // namespace tsr::algorithms
