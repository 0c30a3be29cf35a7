// Runs every rank's plan of a dense collective over real UCX transports driven from one
// thread (no bootstrap, no progress threads): fast enough for N = 1..8, 11 and 16 and the
// awkward counts 0, 1, N-1, N+1 and 2^20+3.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <utility>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/tests/plan_world.h"
#include "algorithms/plan/executor.h"
#include "base/half.h"
#include "transport/ucx_transport.h"

namespace tsr::algorithms {
namespace {

using namespace tsr::algorithms::testing;

std::vector<size_t> countsFor(int n) {
  return {0, 1, static_cast<size_t>(std::max(1, n - 1)), static_cast<size_t>(n + 1), 1000};
}

class DensePlans : public ::testing::TestWithParam<int> {};

TEST_P(DensePlans, RingAllreduceSumsExactly) {
  int n = GetParam();
  World& world = worldOf(n);
  DenseOptions opts;
  opts.chunkBytes = 4096;  // many chunks: exercises the pipeline and the staging window
  for (size_t count : countsFor(n)) {
    std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count)), out = in;
    std::vector<std::shared_ptr<Plan>> plans;
    std::vector<RunBuffers> bufs;
    for (int r = 0; r < n; ++r) {
      for (size_t j = 0; j < count; ++j) in[r][j] = static_cast<int64_t>(j * 31 + r * 1000003);
      auto p = ringAllreducePlan(r, n, count, DataType::kI64, ReduceOp::kSum, opts);
      ASSERT_TRUE(p.isOk()) << p.status().toString();
      plans.push_back(p.take());
      bufs.push_back({in[r].data(), out[r].data(), nullptr});
    }
    for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < count; ++j)
        ASSERT_EQ(out[r][j], static_cast<int64_t>(n * j * 31 + 1000003LL * n * (n - 1) / 2))
            << "rank " << r << " element " << j << " count " << count;
  }
}

TEST_P(DensePlans, RingAllreduceLargeF32AvgInPlaceWithCustomOrder) {
  int n = GetParam();
  World& world = worldOf(n);
  DenseOptions opts;
  // A non-identity ring: reversed, then rotated by one (every rank gets new neighbours).
  for (int i = 0; i < n; ++i) opts.order.push_back((2 * n - 1 - i) % n);
  size_t count = (size_t{1} << 20) + 3;
  std::vector<std::vector<float>> buf(n, std::vector<float>(count));
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) buf[r][j] = static_cast<float>((r + 1) * (j % 13));
    auto p = ringAllreducePlan(r, n, count, DataType::kF32, ReduceOp::kAvg, opts);
    ASSERT_TRUE(p.isOk());
    plans.push_back(p.take());
    bufs.push_back({buf[r].data(), buf[r].data(), nullptr});
  }
  for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < count; j += 997)
      ASSERT_FLOAT_EQ(buf[r][j], static_cast<float>((n + 1) / 2.0 * (j % 13))) << r << " " << j;
  for (int r = 1; r < n; ++r) ASSERT_EQ(std::memcmp(buf[r].data(), buf[0].data(), count * 4), 0);
}

TEST_P(DensePlans, AllgatherReduceScatterBroadcastBarrier) {
  int n = GetParam();
  World& world = worldOf(n);
  DenseOptions opts;
  opts.chunkBytes = 1024;
  for (size_t count : countsFor(n)) {
    std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(count * n + 1)), out = in;
    std::vector<std::shared_ptr<Plan>> ag, rs, bc;
    std::vector<RunBuffers> bufs;
    for (int r = 0; r < n; ++r) {
      for (size_t j = 0; j < count * n; ++j) in[r][j] = static_cast<int32_t>(r * 7 + j);
      ag.push_back(ringAllgatherPlan(r, n, count, DataType::kI32, opts).take());
      rs.push_back(ringReduceScatterPlan(r, n, count, DataType::kI32, ReduceOp::kMax, opts).take());
      bc.push_back(binomialBroadcastPlan(r, n, n / 2, count * n, DataType::kI32, opts).take());
      bufs.push_back({in[r].data(), out[r].data(), nullptr});
    }
    for (const Status& s : runAll(world, ag, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
    for (int r = 0; r < n; ++r)
      for (int b = 0; b < n; ++b)
        for (size_t j = 0; j < count; ++j) ASSERT_EQ(out[r][b * count + j], static_cast<int32_t>(b * 7 + j));
    for (const Status& s : runAll(world, rs, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < count; ++j)
        ASSERT_EQ(out[r][j], static_cast<int32_t>((n - 1) * 7 + r * count + j)) << "rank " << r;
    for (const Status& s : runAll(world, bc, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < count * n; ++j) ASSERT_EQ(out[r][j], static_cast<int32_t>((n / 2) * 7 + j));
  }
  std::vector<std::shared_ptr<Plan>> barrier;
  for (int r = 0; r < n; ++r) barrier.push_back(disseminationBarrierPlan(r, n).take());
  for (const Status& s : runAll(world, barrier, std::vector<RunBuffers>(n))) ASSERT_TRUE(s.isOk());
}

// Reducing on arrival: no staging scratch, and a transfer goes through the consumer path on
// both sides or on neither (else a message would wait for a receive that never matches it).
TEST_P(DensePlans, RingOnArrivalNeedsNoStagingAndBothSidesAgree) {
  int n = GetParam();
  DenseOptions opts;
  opts.chunkBytes = 1024;
  opts.reduceOnArrival = true;
  for (bool reduceScatter : {false, true}) {
    std::vector<std::shared_ptr<Plan>> plans;
    for (int r = 0; r < n; ++r) {
      auto p = reduceScatter ? ringReduceScatterPlan(r, n, 5000, DataType::kF32, ReduceOp::kSum, opts)
                             : ringAllreducePlan(r, n, 5000, DataType::kF32, ReduceOp::kSum, opts);
      ASSERT_TRUE(p.isOk()) << p.status().toString();
      plans.push_back(p.take());
      EXPECT_EQ(plans[r]->scratchBytes, reduceScatter ? 5000u * n * 4 : 0u) << "rank " << r;
      EXPECT_EQ(plans[r]->reducesOnArrival, n > 1) << "rank " << r;
    }
    size_t marked = 0;
    for (int r = 0; r < n; ++r)
      for (const PlanOp& op : plans[r]->ops) {
        if (op.kind == OpKind::kRecvReduce) {
          EXPECT_TRUE(op.onArrival) << "rank " << r << " msg " << op.msgId;
        }
        if (op.kind != OpKind::kSend) continue;
        const auto& theirs = plans[op.peer]->ops;
        auto match = std::find_if(theirs.begin(), theirs.end(), [&](const PlanOp& o) {
          return o.kind != OpKind::kSend && o.peer == r && o.msgId == op.msgId;
        });
        ASSERT_NE(match, theirs.end()) << "rank " << r << " msg " << op.msgId;
        EXPECT_EQ(match->onArrival, op.onArrival) << "rank " << r << " -> " << op.peer << " msg " << op.msgId;
        EXPECT_EQ(op.onArrival, match->kind == OpKind::kRecvReduce);
        marked += op.onArrival;
      }
    EXPECT_EQ(marked > 0, n > 1);
  }
}

TEST_P(DensePlans, MismatchedCountIsReportedOnBothSides) {
  int n = GetParam();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  World& world = worldOf(n);
  std::vector<std::vector<float>> in(n, std::vector<float>(200)), out = in;
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  for (int r = 0; r < n; ++r) {
    size_t count = r == 1 ? 150 : 100;
    plans.push_back(ringAllreducePlan(r, n, count, DataType::kF32, ReduceOp::kSum, {}).take());
    bufs.push_back({in[r].data(), out[r].data(), nullptr});
  }
  auto st = runAll(world, plans, bufs);
  // Rank 1 and its ring neighbours see the header that differs; the runtime spreads it to all.
  EXPECT_EQ(st[1].code(), Code::kMismatch) << st[1].toString();
  EXPECT_NE(st[1].message().find("count"), std::string::npos) << st[1].toString();
  EXPECT_EQ(st[2 % n].code(), Code::kMismatch) << st[2 % n].toString();
}

// 2D torus: every grid shape up to 4 x 4, rows permuted (a row need not be consecutive ranks).
class TorusPlans : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(TorusPlans, AllreduceSumsExactlyAndAveragesForEveryCount) {
  auto [x, y] = GetParam();
  int n = x * y;
  World& world = worldOf(n);
  std::vector<std::vector<int>> grid(y, std::vector<int>(x));
  for (int r = 0; r < y; ++r)
    for (int c = 0; c < x; ++c) grid[r][c] = r * x + c;
  std::reverse(grid.begin(), grid.end());  // row order differs from rank order
  for (auto& row : grid) std::rotate(row.begin(), row.begin() + 1, row.end());
  DenseOptions opts;
  opts.chunkBytes = 2048;
  for (size_t count :
       {size_t{0}, size_t{1}, static_cast<size_t>(n - 1), static_cast<size_t>(n + 1), size_t{1000}, size_t{70001}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
      std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count)), out = in;
      std::vector<std::shared_ptr<Plan>> plans;
      std::vector<RunBuffers> bufs;
      for (int r = 0; r < n; ++r) {
        for (size_t j = 0; j < count; ++j) in[r][j] = static_cast<int64_t>(j * 31 + r * 1000003);
        auto p = torusAllreducePlan(r, n, count, DataType::kI64, op, grid, opts);
        ASSERT_TRUE(p.isOk()) << p.status().toString();
        EXPECT_EQ(p.value()->algorithm, "torus");
        plans.push_back(p.take());
        bufs.push_back({in[r].data(), out[r].data(), nullptr});
      }
      for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
      for (int r = 0; r < n; ++r)
        for (size_t j = 0; j < count; ++j) {
          int64_t sum = static_cast<int64_t>(n * j * 31 + 1000003LL * n * (n - 1) / 2);
          ASSERT_EQ(out[r][j], op == ReduceOp::kSum ? sum : sum / n)
              << x << "x" << y << " rank " << r << " element " << j << " count " << count;
        }
    }
  }
}

TEST(TorusPlansShape, DegenerateAndBrokenGridsAreRefusedWithAReason) {
  DenseOptions opts;
  auto line = torusAllreducePlan(0, 3, 10, DataType::kF32, ReduceOp::kSum, {{0, 1, 2}}, opts);
  EXPECT_EQ(line.status().code(), Code::kNotSupported);
  auto holes = torusAllreducePlan(0, 4, 10, DataType::kF32, ReduceOp::kSum, {{0, 1}, {1, 3}}, opts);
  EXPECT_EQ(holes.status().code(), Code::kInvalidArgument);
  EXPECT_NE(holes.status().message().find("rank 1"), std::string::npos) << holes.status().message();
}

INSTANTIATE_TEST_SUITE_P(Grids, TorusPlans,
                         ::testing::Values(std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}, std::pair{4, 2},
                                           std::pair{2, 4}, std::pair{3, 3}, std::pair{4, 4}),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

// The edges (1, 2, non-powers of two with the smallest and the largest remainder, the largest)
// here, the rest in the full tier (tsr_add_gtest).
INSTANTIATE_TEST_SUITE_P(Ranks, DensePlans, ::testing::Values(1, 2, 3, 7, 16),
                         [](const auto& info) { return "N" + std::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(FullRanks, DensePlans, ::testing::Values(4, 5, 6, 8, 11),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

}  // namespace
}  // namespace tsr::algorithms
