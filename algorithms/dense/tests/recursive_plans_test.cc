// Rabenseifner allreduce, Bruck all-gather and the two-level "hier" allreduce, each run by
// every rank over real UCX (plan_world.h) for N = 1..8, 11, 16 and awkward counts, checked
// against exact integer sums (and a float64 reference for f32 avg).
#include <gtest/gtest.h>

#include <cstring>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/tests/plan_world.h"

namespace tsr::algorithms {
namespace recursive_plans_test {  // named, not anonymous: the test binary is a unity build

using namespace tsr::algorithms::testing;

std::vector<size_t> countsFor(int n) {
  return {0, 1, static_cast<size_t>(std::max(1, n - 1)), static_cast<size_t>(n + 1), 1000, 70001};
}

int64_t input(int r, size_t j) { return static_cast<int64_t>(j * 31 + r * 1000003); }
int64_t sumOf(int n, size_t j) { return static_cast<int64_t>(n * j * 31 + 1000003LL * n * (n - 1) / 2); }

using Builder = std::function<Result<std::shared_ptr<Plan>>(int rank, size_t count, ReduceOp op)>;

// Runs builder's plans on every rank (separate input and output) and checks exact sums / avgs.
void expectExactAllreduce(int n, const Builder& build, const std::string& algorithm) {
  World& world = worldOf(n);
  for (size_t count : countsFor(n))
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count)), out = in;
      std::vector<std::shared_ptr<Plan>> plans;
      std::vector<RunBuffers> bufs;
      for (int r = 0; r < n; ++r) {
        for (size_t j = 0; j < count; ++j) in[r][j] = input(r, j);
        auto p = build(r, count, op);
        ASSERT_TRUE(p.isOk()) << p.status().toString();
        EXPECT_EQ(p.value()->algorithm, algorithm);
        plans.push_back(p.take());
        bufs.push_back({in[r].data(), out[r].data(), nullptr});
      }
      for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
      for (int r = 0; r < n; ++r)
        for (size_t j = 0; j < count; ++j) {
          int64_t want = op == ReduceOp::kSum ? sumOf(n, j) : op == ReduceOp::kAvg ? sumOf(n, j) / n : input(n - 1, j);
          ASSERT_EQ(out[r][j], want) << algorithm << " N=" << n << " rank " << r << " element " << j << " count "
                                     << count << " op " << int(op);
        }
      for (int r = 0; r < n; ++r)  // the input is left alone
        for (size_t j = 0; j < count; ++j) ASSERT_EQ(in[r][j], input(r, j));
    }
}

class RecursivePlans : public ::testing::TestWithParam<int> {};

TEST_P(RecursivePlans, RabenseifnerSumsAveragesAndMaxesExactly) {
  int n = GetParam();
  DenseOptions opts;
  opts.chunkBytes = 2048;  // several chunks per block: the per-chunk ordering is exercised
  opts.window = 2;
  expectExactAllreduce(
      n,
      [&](int r, size_t count, ReduceOp op) {
        return rabenseifnerAllreducePlan(r, n, count, DataType::kI64, op, opts);
      },
      "rabenseifner");
}

TEST_P(RecursivePlans, DoublingSumsAveragesAndMaxesExactly) {
  int n = GetParam();
  DenseOptions opts;
  opts.chunkBytes = 2048;
  expectExactAllreduce(
      n, [&](int r, size_t count, ReduceOp op) { return doublingAllreducePlan(r, n, count, DataType::kI64, op, opts); },
      "doubling");
}

// Default chunking: small blocks travel as one message of several chunks, each message ordered
// against every chunk it covers.
TEST_P(RecursivePlans, GroupedSmallBlocksSumExactly) {
  int n = GetParam();
  DenseOptions opts;
  opts.window = 2;
  expectExactAllreduce(
      n,
      [&](int r, size_t count, ReduceOp op) {
        return rabenseifnerAllreducePlan(r, n, count, DataType::kI64, op, opts);
      },
      "rabenseifner");
  expectExactAllreduce(
      n, [&](int r, size_t count, ReduceOp op) { return doublingAllreducePlan(r, n, count, DataType::kI64, op, opts); },
      "doubling");
}

TEST_P(RecursivePlans, RabenseifnerLargeF32AvgInPlaceMatchesFloat64) {
  int n = GetParam();
  World& world = worldOf(n);
  size_t count = (size_t{1} << 20) + 3;
  std::vector<std::vector<float>> buf(n, std::vector<float>(count));
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) buf[r][j] = static_cast<float>((r + 1) * (j % 13)) * 0.25f;
    plans.push_back(rabenseifnerAllreducePlan(r, n, count, DataType::kF32, ReduceOp::kAvg, {}).take());
    bufs.push_back({buf[r].data(), buf[r].data(), nullptr});
  }
  for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < count; j += 991) {
      double want = (n + 1) / 2.0 * (j % 13) * 0.25;
      ASSERT_NEAR(buf[r][j], want, 1e-5 * (1 + want)) << "rank " << r << " element " << j;
    }
  // Summation order is fixed by the schedule, so the ranks agree bit for bit.
  for (int r = 1; r < n; ++r) ASSERT_EQ(std::memcmp(buf[r].data(), buf[0].data(), count * 4), 0);
}

TEST_P(RecursivePlans, BruckAllgatherPlacesEveryPiece) {
  int n = GetParam();
  World& world = worldOf(n);
  DenseOptions opts;
  opts.chunkBytes = 1024;
  for (size_t count : countsFor(n)) {
    std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(count + 1)),
        out(n, std::vector<int32_t>(count * n + 1, -1));
    std::vector<std::shared_ptr<Plan>> plans;
    std::vector<RunBuffers> bufs;
    for (int r = 0; r < n; ++r) {
      for (size_t j = 0; j < count; ++j) in[r][j] = static_cast<int32_t>(r * 7919 + j);
      auto p = bruckAllgatherPlan(r, n, count, DataType::kI32, opts);
      ASSERT_TRUE(p.isOk()) << p.status().toString();
      EXPECT_EQ(p.value()->algorithm, "bruck");
      plans.push_back(p.take());
      bufs.push_back({in[r].data(), out[r].data(), nullptr});
    }
    for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << s.toString();
    for (int r = 0; r < n; ++r) {
      for (int b = 0; b < n; ++b)
        for (size_t j = 0; j < count; ++j)
          ASSERT_EQ(out[r][b * count + j], static_cast<int32_t>(b * 7919 + j))
              << "N=" << n << " rank " << r << " piece " << b << " count " << count;
      ASSERT_EQ(out[r][count * n], -1) << "wrote past the end on rank " << r;
    }
  }
}

// 16 ranks, 128 KiB: a halving step's blocks are 8 KiB each; sent as messages of at least
// 64 KiB, the plan has a few sends where a message per block needs many, with the same bytes.
TEST(RecursivePlanMessages, SmallBlocksTravelTogether) {
  const int n = 16;
  const size_t count = 16 * 1024;
  auto sends = [&](const DenseOptions& o) {
    std::pair<size_t, size_t> messagesAndBytes{0, 0};
    for (int r = 0; r < n; ++r) {
      auto plan = rabenseifnerAllreducePlan(r, n, count, DataType::kI64, ReduceOp::kSum, o);
      EXPECT_TRUE(plan.isOk()) << plan.status().toString();
      for (const PlanOp& op : plan.value()->ops)
        if (op.kind == OpKind::kSend) {
          ++messagesAndBytes.first;
          messagesAndBytes.second += op.count;
        }
    }
    return messagesAndBytes;
  };
  DenseOptions grouped, perBlock;
  perBlock.minMessageBytes = 1;
  auto [groupedMessages, groupedElems] = sends(grouped);
  auto [blockMessages, blockElems] = sends(perBlock);
  EXPECT_EQ(groupedElems, blockElems);
  EXPECT_EQ(blockMessages, size_t{n} * 2 * (n - 1));  // 2 x (8 + 4 + 2 + 1) blocks per rank
  EXPECT_EQ(groupedMessages, size_t{n} * 2 * 4);      // one message per step
}

// The edges (1, 2, non-powers of two with the smallest and the largest remainder, the largest)
// here, the rest in the full tier (tsr_add_gtest).
INSTANTIATE_TEST_SUITE_P(Ranks, RecursivePlans, ::testing::Values(1, 2, 3, 7, 16),
                         [](const auto& info) { return "N" + std::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(FullRanks, RecursivePlans, ::testing::Values(4, 5, 6, 8, 11),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

// Two-level: X ranks per host (columns), Y hosts (rows), including one host and one rank per
// host; rows permuted so a row need not be consecutive ranks.
class HierPlans : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(HierPlans, AllreduceSumsAveragesAndMaxesExactly) {
  auto [x, y] = GetParam();
  int n = x * y;
  std::vector<std::vector<int>> grid(y, std::vector<int>(x));
  for (int r = 0; r < y; ++r)
    for (int c = 0; c < x; ++c) grid[r][c] = r * x + c;
  std::reverse(grid.begin(), grid.end());
  for (auto& row : grid) std::rotate(row.begin(), row.begin() + 1, row.end());
  DenseOptions opts;
  opts.chunkBytes = 2048;
  expectExactAllreduce(
      n,
      [&](int r, size_t count, ReduceOp op) { return hierAllreducePlan(r, n, count, DataType::kI64, op, grid, opts); },
      "hier");
}

INSTANTIATE_TEST_SUITE_P(Grids, HierPlans,
                         ::testing::Values(std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}, std::pair{2, 4},
                                           std::pair{4, 2}, std::pair{2, 5}, std::pair{1, 5}, std::pair{4, 1},
                                           std::pair{3, 3}),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

}  // namespace recursive_plans_test
}  // namespace tsr::algorithms
