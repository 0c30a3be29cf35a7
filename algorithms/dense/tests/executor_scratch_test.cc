// A run given no scratch (RunBuffers::scratch null) gets it with the executor's own state:
// the communicator leaves small runs' scratch to the executor (no pool bookkeeping per call).
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/tests/plan_world.h"

namespace tsr::algorithms {
namespace {

using namespace tsr::algorithms::testing;
using PlanMaker = std::function<Result<std::shared_ptr<Plan>>(int rank, int size, size_t count)>;

void expectSumsWithExecutorScratch(const char* name, const PlanMaker& make) {
  for (int n : {2, 3, 4, 5}) {
    World& world = worldOf(n);
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
      std::vector<std::vector<float>> in(n, std::vector<float>(count)), out = in;
      std::vector<std::shared_ptr<Plan>> plans;
      std::vector<RunBuffers> bufs;
      for (int r = 0; r < n; ++r) {
        for (size_t j = 0; j < count; ++j) in[r][j] = static_cast<float>(r + 1 + j % 5);
        auto p = make(r, n, count);
        ASSERT_TRUE(p.isOk()) << name << ": " << p.status().toString();
        plans.push_back(p.take());
        bufs.push_back({in[r].data(), out[r].data(), nullptr});
      }
      ASSERT_GT(plans[0]->scratchBytes, 0u) << name << " needs no scratch: the test would prove nothing";
      for (const Status& s : runAll(world, plans, bufs, ScratchFrom::kExecutor))
        ASSERT_TRUE(s.isOk()) << name << " n=" << n << " count=" << count << ": " << s.toString();
      for (int r = 0; r < n; ++r)
        for (size_t j = 0; j < count; ++j)
          ASSERT_EQ(out[r][j], static_cast<float>(n * (n + 1) / 2 + n * (j % 5)))
              << name << " n=" << n << " count=" << count << " rank " << r << " element " << j;
    }
  }
}

TEST(ExecutorScratch, RingRunsOnItsOwnScratch) {
  expectSumsWithExecutorScratch(
      "ring", [](int r, int n, size_t c) { return ringAllreducePlan(r, n, c, DataType::kF32, ReduceOp::kSum, {}); });
}

TEST(ExecutorScratch, DoublingRunsOnItsOwnScratch) {
  expectSumsWithExecutorScratch("doubling", [](int r, int n, size_t c) {
    return doublingAllreducePlan(r, n, c, DataType::kF32, ReduceOp::kSum, {});
  });
}

TEST(ExecutorScratch, RabenseifnerRunsOnItsOwnScratch) {
  expectSumsWithExecutorScratch("rabenseifner", [](int r, int n, size_t c) {
    return rabenseifnerAllreducePlan(r, n, c, DataType::kF32, ReduceOp::kSum, {});
  });
}

}  // namespace
}  // namespace tsr::algorithms
