// Plans interpreted from topology's schedules (schedule_phase.h): Rabenseifner allreduce and
// Bruck all-gather. The schedules carry the index math (and topology's simulator proves them);
// these builders only place them on the caller's buffers.
#include <deque>
#include <mutex>
#include <tuple>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/ring_phases.h"
#include "algorithms/dense/schedule_phase.h"
#include "topology/bruck_schedule.h"
#include "topology/recursive_schedule.h"

namespace tsr::algorithms {

using namespace ring_detail;

namespace {

std::shared_ptr<Plan> newPlan(const char* algorithm, CollectiveKind kind, DataType dtype, ReduceOp op, size_t count) {
  auto plan = std::make_shared<Plan>();
  plan->algorithm = algorithm;
  plan->collective = kind;
  plan->dtype = dtype;
  plan->op = op;
  plan->count = count;
  return plan;
}

// A job's schedule is the same on every rank: a process that builds many ranks' plans (ranks
// as threads, tsr-sim's thousands) builds it once. The last few are kept.
std::shared_ptr<const topology::Schedule> sharedSchedule(topology::Schedule (*build)(int), int size) {
  using Entry = std::tuple<topology::Schedule (*)(int), int, std::shared_ptr<const topology::Schedule>>;
  static std::mutex mu;
  static std::deque<Entry> recent;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [b, n, schedule] : recent)
    if (b == build && n == size) return schedule;
  auto schedule = std::make_shared<const topology::Schedule>(build(size));
  recent.emplace_back(build, size, schedule);
  if (recent.size() > 4) recent.pop_front();
  return schedule;
}

// Both recursive allreduces: the schedule does the work in place on the output; avg divides
// the whole sum at the end (every rank ends with all of it).
Result<std::shared_ptr<Plan>> recursiveAllreduce(const char* name, topology::Schedule (*build)(int), int rank, int size,
                                                 size_t count, DataType dtype, ReduceOp op,
                                                 const DenseOptions& options) {
  if (rank < 0 || rank >= size)
    return Status(Code::kInvalidArgument, std::string(name) + ": rank " + std::to_string(rank) + " outside a " +
                                              std::to_string(size) + "-rank job");
  auto plan = newPlan(name, CollectiveKind::kAllreduce, dtype, op, count);
  uint32_t start = addCopy(*plan, Slot::kOutput, 0, Slot::kInput, 0, count);
  if (size > 1 && count > 0) {
    auto schedule = sharedSchedule(build, size);
    SchedulePhase phase{schedule.get(), {}, Slot::kOutput, 0, count, 0, 0};
    TSR_ASSIGN_OR_RETURN(PhaseExtent extent, schedulePhaseExtent(phase, dataTypeSize(dtype), options));
    plan->scratchBytes = extent.stagingBytes;
    TSR_ASSIGN_OR_RETURN(uint32_t end, addSchedulePhase(*plan, rank, phase, start, options));
    if (op == ReduceOp::kAvg)
      plan->add({.kind = OpKind::kDivide,
                 .dst = {Slot::kOutput, 0},
                 .count = count,
                 .divisor = static_cast<uint64_t>(size),
                 .deps = {end}});
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace

Result<std::shared_ptr<Plan>> rabenseifnerAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                        const DenseOptions& options) {
  return recursiveAllreduce("rabenseifner", topology::rabenseifnerAllreduce, rank, size, count, dtype, op, options);
}

Result<std::shared_ptr<Plan>> doublingAllreducePlan(int rank, int size, size_t count, DataType dtype, ReduceOp op,
                                                    const DenseOptions& options) {
  return recursiveAllreduce("doubling", topology::recursiveDoublingAllreduce, rank, size, count, dtype, op, options);
}

Result<std::shared_ptr<Plan>> bruckAllgatherPlan(int rank, int size, size_t count, DataType dtype,
                                                 const DenseOptions& options) {
  if (rank < 0 || rank >= size)
    return Status(Code::kInvalidArgument,
                  "bruck: rank " + std::to_string(rank) + " outside a " + std::to_string(size) + "-rank job");
  auto plan = newPlan("bruck", CollectiveKind::kAllgather, dtype, ReduceOp::kSum, count);
  size_t esize = dataTypeSize(dtype);
  uint32_t start = addCopy(*plan, Slot::kOutput, static_cast<size_t>(rank) * count * esize, Slot::kInput, 0, count);
  if (size > 1 && count > 0) {
    // N blocks of exactly `count` elements: block r is rank r's piece, at r * count.
    auto schedule = sharedSchedule(topology::bruckAllGather, size);
    SchedulePhase phase{schedule.get(), {}, Slot::kOutput, 0, count * size, 0, 0};
    TSR_RETURN_IF_ERROR(addSchedulePhase(*plan, rank, phase, start, options).status());
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return plan;
}

}  // namespace tsr::algorithms
