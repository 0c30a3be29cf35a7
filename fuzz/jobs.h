// The jobs the task fuzz targets run, built from the input's first bytes the same way for the
// fuzz targets (one rank, its peers played by the input) and for make_seeds (every rank, in
// one process, to record well-formed messages as seeds).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/marsit/marsit_step.h"
#include "algorithms/plan/executor.h"
#include "algorithms/spardl/spardl_step.h"
#include "fuzz/fuzz_transport.h"

namespace tsr::fuzz {

// One rank's part of a job: what its task needs to live, and the task itself.
struct Job {
  int size = 1;
  int rank = 0;
  uint32_t seqSpan = 1;
  std::vector<float> g;
  std::vector<uint64_t> input, output;
  std::shared_ptr<void> state;
  std::function<std::unique_ptr<algorithms::Task>(const algorithms::TaskContext&)> task;
};

// SparDL: ranks 2..8, a team count that divides them, SAG, rank, tensor size, density.
inline constexpr size_t kSparDLHead = 7;
inline std::unique_ptr<Job> spardlJob(const uint8_t* h, int rank = -1) {
  auto job = std::make_unique<Job>();
  const int n = 2 + h[0] % 7;
  std::vector<int> divisors;
  for (int t = 1; t <= n; ++t)
    if (n % t == 0) divisors.push_back(t);
  static const char* sags[] = {"auto", "r", "b"};
  static const char* densities[] = {"0.01", "0.1", "0.3", "0.5", "1"};
  std::map<std::string, std::string> kv{{"teams", std::to_string(divisors[h[1] % divisors.size()])},
                                        {"sag", sags[h[2] % 3]},
                                        {"density", densities[h[6] % 5]}};
  auto params = spardl::parseParams(kv, n);
  if (!params.isOk()) return nullptr;  // sag=r with a team count that is not a power of two
  job->size = n;
  job->rank = rank >= 0 ? rank : h[3] % n;
  const size_t count = (size_t{h[4]} << 8 | h[5]) % 1025;
  std::vector<int> ring(n);
  for (int r = 0; r < n; ++r) ring[r] = r;
  auto state = spardl::makeState("fuzz", count, params.value(), job->rank, ring);
  if (!state.isOk()) __builtin_trap();  // valid parameters always make a state
  job->g.resize(count);
  for (size_t i = 0; i < count; ++i) job->g[i] = std::sin(static_cast<float>(i + job->rank)) * 4.0f;
  state.value()->g = job->g.data();
  auto s = state.value();
  job->state = s;
  job->task = [s](const algorithms::TaskContext& ctx) {
    return std::unique_ptr<algorithms::Task>(new spardl::SparDLStepTask(s, ctx));
  };
  return job;
}

// A dense collective through the plan executor: which, ranks 2..6, rank, count around the
// 256-byte inline limit, dtype, op (and root).
inline constexpr size_t kPlanHead = 7;
inline std::unique_ptr<Job> planJob(const uint8_t* h, int rank = -1) {
  auto job = std::make_unique<Job>();
  const int n = 2 + h[1] % 5;
  job->size = n;
  job->rank = rank >= 0 ? rank : h[2] % n;
  const size_t count = (size_t{h[3]} << 8 | h[4]) % 600;
  const auto dtype = static_cast<DataType>(h[5] % kNumDataTypes);
  const auto op = static_cast<ReduceOp>(h[6] % kNumReduceOps);
  algorithms::DenseOptions options;
  options.chunkBytes = 1024;  // several messages per peer even for small tensors
  options.window = 2;
  Result<std::shared_ptr<algorithms::Plan>> plan = Status(Code::kInternal, "");
  switch (h[0] % 5) {
    case 0:
      plan = algorithms::ringAllreducePlan(job->rank, n, count, dtype, op, options);
      break;
    case 1:
      plan = algorithms::ringAllgatherPlan(job->rank, n, count, dtype, options);
      break;
    case 2:
      plan = algorithms::ringReduceScatterPlan(job->rank, n, count, dtype, op, options);
      break;
    case 3:
      plan = algorithms::binomialBroadcastPlan(job->rank, n, h[6] % n, count, dtype, options);
      break;
    default:
      plan = algorithms::disseminationBarrierPlan(job->rank, n);
      break;
  }
  if (!plan.isOk()) return nullptr;
  // Room for the largest of the collectives' buffers (all-gather: n * count elements).
  job->input.assign(count * n + 1, 0x3f8000003f800000ull);  // 1.0f pairs
  job->output.assign(count * n + 1, 0);
  auto p = plan.value();
  Job* j = job.get();
  job->task = [p, j](const algorithms::TaskContext& ctx) {
    algorithms::RunBuffers buffers{j->input.data(), j->output.data(), nullptr};
    return std::unique_ptr<algorithms::Task>(new algorithms::PlanExecutor(p, buffers, ctx.id, ctx.transport));
  };
  return job;
}

// Marsit, flat ring: ranks 2..6, rank, tensor size (up to three scale blocks), parameters.
inline constexpr size_t kMarsitHead = 5;
inline std::unique_ptr<Job> marsitJob(const uint8_t* h, int rank = -1) {
  auto job = std::make_unique<Job>();
  const int n = 2 + h[0] % 5;
  job->size = n;
  job->rank = rank >= 0 ? rank : h[1] % n;
  job->seqSpan = 2;  // the scalar allreduce and the bit plan
  const size_t count = (size_t{h[2]} << 8 | h[3]) % 3000;
  const uint8_t knobs = h[4];
  std::map<std::string, std::string> kv{{"pack", knobs & 1 ? "chunked" : "whole"},
                                        {"scale_block", knobs & 2 ? "1024" : "0"},
                                        {"momentum", knobs & 4 ? "0.9" : "0"},
                                        {"full_precision_every", knobs & 8 ? "1" : "0"},
                                        {"seed", std::to_string(knobs >> 4)}};
  auto params = marsit::parseParams(kv);
  if (!params.isOk()) __builtin_trap();  // the knobs only make valid parameter sets
  algorithms::DenseOptions options;
  options.chunkBytes = 256;  // several chunks per segment even for small tensors
  options.window = 2;
  auto state = marsit::makeState("fuzz", count, params.value(), job->rank, n, {}, "no host grid here", options);
  if (!state.isOk()) __builtin_trap();
  job->g.resize(count);
  for (size_t i = 0; i < count; ++i) job->g[i] = std::cos(static_cast<float>(i + job->rank)) * 2.0f;
  state.value()->g = job->g.data();
  auto s = state.value();
  job->state = s;
  job->task = [s](const algorithms::TaskContext& ctx) {
    return std::unique_ptr<algorithms::Task>(new marsit::MarsitStepTask(s, ctx));
  };
  return job;
}

// Runs one rank's task with its peers played by `messages` (fuzz_transport.h) to the end.
inline void runAgainstInput(Job& job, const uint8_t* messages, size_t bytes) {
  FuzzTransport transport(job.rank, job.size, messages, bytes);
  algorithms::TaskContext ctx{transport, {job.rank, 1, 1}, job.seqSpan, job.size};
  std::unique_ptr<algorithms::Task> task = job.task(ctx);
  Status st = task->start();
  // A task still running with no receive left to complete waits on nothing: a hang.
  for (int rounds = 0, idle = 0; st.code() == Code::kInProgress; ++rounds) {
    idle = transport.progress() ? 0 : idle + 1;
    if (idle > 3 || rounds > 100000) __builtin_trap();
    st = task->progress();
  }
  if (!task->quiescent()) __builtin_trap();
}

}  // namespace tsr::fuzz
