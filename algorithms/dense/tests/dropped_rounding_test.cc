// RunBuffers::droppedRounding: an f16 row average (host_grid_plans.h, the two-level intra-host
// step) keeps, per rank, what each of its f16 sums and its division rounded away, so that
// X x (the owner's average) + (every rank's dropped) is the exact sum of the inputs. Over real
// UCX (plan_world.h), N = 2..5, several chunks per block (small chunkBytes).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "algorithms/dense/host_grid_plans.h"
#include "algorithms/dense/tests/plan_world.h"
#include "base/half.h"

namespace tsr::algorithms {
namespace {

using namespace tsr::algorithms::testing;

TEST(DroppedRounding, F16RowAverageKeepsWhatItRoundsAway) {
  for (int n : {2, 3, 4, 5}) {
    World& world = worldOf(n);
    GridPlace place;
    place.row = 0, place.x = n, place.y = 1;
    place.rowRanks.resize(n);
    std::iota(place.rowRanks.begin(), place.rowRanks.end(), 0);
    DenseOptions options;
    options.chunkBytes = 256;  // 128 halves: several chunks per block
    const size_t block = 1000, padded = block * n;
    std::mt19937 gen(static_cast<unsigned>(n));
    std::normal_distribution<float> dist(0.0f, 4.0f);
    std::vector<std::vector<uint16_t>> in(n, std::vector<uint16_t>(padded)), out = in;
    std::vector<std::vector<float>> dropped(n, std::vector<float>(padded, 0.0f));
    std::vector<std::shared_ptr<Plan>> plans;
    std::vector<RunBuffers> buffers;
    for (int r = 0; r < n; ++r) {
      place.col = r;
      for (uint16_t& h : in[r]) h = floatToF16(dist(gen));
      auto plan = rowAverageScatterPlan(r, n, place, padded, DataType::kF16, options, "row-average");
      ASSERT_TRUE(plan.isOk()) << plan.status().toString();
      plans.push_back(plan.take());
      RunBuffers b{in[r].data(), out[r].data()};
      b.droppedRounding = dropped[r].data();
      buffers.push_back(b);
    }
    for (const Status& s : runAll(world, plans, buffers)) ASSERT_TRUE(s.isOk()) << "n=" << n << ": " << s.toString();
    size_t rounded = 0;
    for (int owner = 0; owner < n; ++owner)
      for (size_t k = 0; k < block; ++k) {
        const size_t j = owner * block + k;
        double sum = 0, kept = 0;
        for (int r = 0; r < n; ++r) sum += f16ToFloat(in[r][j]), kept += dropped[r][j];
        double used = static_cast<double>(n) * f16ToFloat(out[owner][j]);
        ASSERT_NEAR(used + kept, sum, 1e-5 * (1.0 + std::fabs(sum))) << "n=" << n << " element " << j;
        rounded += kept != 0.0;
      }
    EXPECT_GT(rounded, padded / 4) << "n=" << n << ": almost nothing rounded, the test proves little";
  }
}

// A plan that reduces on arrival cannot keep its rounding: the run is refused, not silently
// inexact.
TEST(DroppedRounding, RefusedForAPlanThatReducesOnArrival) {
  World& world = worldOf(2);
  DenseOptions options;
  options.reduceOnArrival = true;
  auto plan = ringAllreducePlan(0, 2, 64, DataType::kF16, ReduceOp::kSum, options);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_TRUE(plan.value()->reducesOnArrival);
  std::vector<uint16_t> data(64);
  std::vector<float> dropped(64);
  RunBuffers b{data.data(), data.data()};
  b.droppedRounding = dropped.data();
  PlanExecutor ex(plan.take(), b, RunIdentity{0, 0, nextSeq()}, *world.transports[0]);
  Status st = ex.start();
  EXPECT_EQ(st.code(), Code::kInternal) << st.toString();
  EXPECT_NE(st.message().find("droppedRounding"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tsr::algorithms
