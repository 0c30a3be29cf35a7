// Two-level Marsit (intra=none|fp16) over real UCX, ranks as threads. One host has no real
// second level, so the communicator's grid (rows = groups of ranks, as hosts would be) stands
// in for the host layout; the 2-host x 2-rank case on emulated hosts runs in
// tools/bench/tests (cluster check). Checked against float64 references:
//  - every rank ends with the same +-eta, eta = mean over rows of mean |row average|;
//  - the compensation of each row block is row average - G, the f16 residual is g - f16(g)
//    plus what the rank's f16 sums in the host ring dropped: X x the row average is what the
//    row sent less what it kept;
//  - each bit is an unbiased vote of the rows' signs;
//  - the full-precision step averages g + f16 residual + X * compensation: nothing is lost.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/marsit/marsit.h"
#include "base/half.h"
#include "tests/support/thread_world.h"

namespace tsr::marsit {
namespace marsit_two_level_test {  // named, not anonymous: the test binary is a unity build

float inputOf(int rank, size_t j, int step) {
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + step) * (1.0f + 0.1f * rank);
}

float viaF16(float v) { return f16ToFloat(floatToF16(v)); }

struct Case {
  int n;
  const char* intra;
};
std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.intra) + std::to_string(info.param.n);
}

struct Grid {
  std::vector<std::vector<int>> rows;
  int rowOf(int rank) const {
    for (size_t r = 0; r < rows.size(); ++r)
      for (int q : rows[r])
        if (q == rank) return static_cast<int>(r);
    return -1;
  }
};

class TwoLevel : public ::testing::TestWithParam<Case> {};

// Two steps; the second is checked, so the compensation and residual of the first must have
// been added in.
TEST_P(TwoLevel, IdenticalEverywhereWithBlockCompensation) {
  const int n = GetParam().n;
  const std::string intra = GetParam().intra;
  const bool f16 = intra == "fp16";
  const size_t d = 1000;  // pads to a multiple of 64 X
  std::vector<std::vector<float>> in(n), out(n), comp(n), resid(n), comp0(n), resid0(n);
  std::vector<size_t> offset(n);
  Grid grid;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t = MarsitTensor::create(comm, "w", d, {{"intra", intra}, {"seed", "5"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    EXPECT_EQ(t.value()->algorithm(), "marsit-2level");
    if (me == 0) grid.rows = comm.torusGrid();
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, 0);
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    comp0[me] = t.value()->compensation();
    resid0[me] = t.value()->intraResidual();
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, 1);
    in[me] = g;
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    out[me] = g;
    comp[me] = t.value()->compensation();
    resid[me] = t.value()->intraResidual();
    offset[me] = t.value()->shardOffset();
  });
  ASSERT_GE(grid.rows.size(), 2u);
  const size_t x = grid.rows[0].size(), hosts = grid.rows.size();
  // Row averages in float64 of what each rank contributed (g + last residual, through f16
  // with intra=fp16), plus the block's last compensation.
  std::vector<std::vector<double>> rowAvg(hosts, std::vector<double>(d, 0));
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < d; ++j) {
      float sent = in[r][j] + resid0[r][j];
      double v = f16 ? viaF16(sent) : sent;
      rowAvg[grid.rowOf(r)][j] += v / x;
      // The cast's residual, plus with f16 what this rank's sums in the host ring dropped.
      ASSERT_NEAR(resid[r][j], f16 ? sent - viaF16(sent) : 0.0, f16 ? 4e-3 * x : 0.0) << r << " " << j;
    }
  // Nothing is lost in the host average: X x the row block's average as this step used it
  // (compensation + result - last compensation) is what the row sent minus what it kept.
  for (int r = 0; r < n; ++r)
    for (size_t k = 0; k < comp[r].size() && offset[r] + k < d; ++k) {
      const size_t j = offset[r] + k;
      double used = static_cast<double>(x) * (static_cast<double>(comp[r][k]) + out[r][j] - comp0[r][k]);
      double sentLessKept = 0;
      for (int q : grid.rows[grid.rowOf(r)]) sentLessKept += static_cast<double>(in[q][j] + resid0[q][j]) - resid[q][j];
      ASSERT_NEAR(used, sentLessKept, 2e-5 * x) << "host average of rank " << r << "'s block, element " << j;
    }
  for (int r = 0; r < n; ++r)
    for (size_t k = 0; k < comp0[r].size() && offset[r] + k < d; ++k)
      rowAvg[grid.rowOf(r)][offset[r] + k] += comp0[r][k];
  double eta = 0;
  for (size_t h = 0; h < hosts; ++h)
    for (size_t j = 0; j < d; ++j) eta += std::fabs(rowAvg[h][j]) / (hosts * d);
  // f16 sums round at each hop: a relative 2^-10 per hop at most.
  const double tol = f16 ? 4e-3 : 1e-5;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(std::memcmp(out[r].data(), out[0].data(), d * sizeof(float)), 0) << "rank " << r;
    for (size_t j = 0; j < d; ++j) ASSERT_NEAR(std::fabs(out[r][j]), eta, tol * eta) << j;
    for (size_t k = 0; k < comp[r].size(); ++k) {
      size_t j = offset[r] + k;
      double expected = j < d ? rowAvg[grid.rowOf(r)][j] - out[r][j] : 0.0;
      ASSERT_NEAR(comp[r][k], expected, f16 ? 4e-3 : 1e-5) << "rank " << r << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(N, TwoLevel,
                         ::testing::Values(Case{4, "none"}, Case{4, "fp16"}, Case{6, "none"}, Case{6, "fp16"},
                                           Case{8, "fp16"}, Case{9, "none"}),
                         caseName);

// Element j: rank i votes + when (i + j) % 3 != 0. A row's sign is that of its vote sum (a
// fair coin at 0); the output bit's mean over seeds is the mean of the rows' signs.
TEST(TwoLevelVotes, EachBitIsAnUnbiasedVoteOfTheRows) {
  const int n = 6, trials = 24;
  const size_t d = 64 * 96;
  std::vector<double> ones(d, 0);
  Grid grid;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    if (me == 0) grid.rows = comm.torusGrid();
    std::vector<float> g(d);
    for (int trial = 0; trial < trials; ++trial) {
      auto t = MarsitTensor::create(comm, "vote", d, {{"intra", "none"}, {"seed", std::to_string(trial)}});
      ASSERT_TRUE(t.isOk()) << t.status().toString();
      for (size_t j = 0; j < d; ++j) g[j] = (me + j) % 3 != 0 ? 1.0f : -1.0f;
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
      if (me == 0)
        for (size_t j = 0; j < d; ++j) ones[j] += g[j] > 0;
    }
  });
  // Pool elements with the same expected value (j % 3 decides every rank's vote).
  for (size_t cls = 0; cls < 3; ++cls) {
    double p = 0;
    for (const auto& row : grid.rows) {
      int sum = 0;
      for (int q : row) sum += (q + cls) % 3 != 0 ? 1 : -1;
      p += (sum > 0 ? 1.0 : sum == 0 ? 0.5 : 0.0) / grid.rows.size();
    }
    double hits = 0, count = 0;
    for (size_t j = cls; j < d; j += 3) hits += ones[j], count += trials;
    double tol = 5 * std::sqrt(p * (1 - p) / count) + 1e-12;
    EXPECT_NEAR(hits / count, p, tol) << "class " << cls;
  }
}

// Two sign steps, then the full-precision step: its result is the float64 average of
// g + f16 residual + X * block compensation over all ranks, and everything kept is reset.
TEST(TwoLevelFullPrecision, AccountsForEverythingKeptBack) {
  const int n = 4;
  const size_t d = 300;
  std::vector<std::vector<float>> in(n), resid(n), comp(n), out(n);
  std::vector<size_t> offset(n);
  size_t x = 0;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    if (me == 0) x = comm.torusGrid()[0].size();
    auto t = MarsitTensor::create(comm, "fp", d, {{"intra", "fp16"}, {"full_precision_every", "3"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g(d);
    for (int step = 0; step < 3; ++step) {
      for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, step);
      if (step == 2) {
        in[me] = g;
        resid[me] = t.value()->intraResidual();
        comp[me] = t.value()->compensation();
        offset[me] = t.value()->shardOffset();
      }
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    }
    EXPECT_TRUE(t.value()->lastTimes().fullPrecision);
    for (float c : t.value()->compensation()) ASSERT_EQ(c, 0.0f);
    for (float c : t.value()->intraResidual()) ASSERT_EQ(c, 0.0f);
    out[me] = g;
  });
  std::vector<double> avg(d, 0);
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < d; ++j) avg[j] += (static_cast<double>(in[r][j]) + resid[r][j]) / n;
    for (size_t k = 0; k < comp[r].size(); ++k)
      if (offset[r] + k < d) avg[offset[r] + k] += static_cast<double>(x) * comp[r][k] / n;
  }
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < d; ++j) ASSERT_NEAR(out[r][j], avg[j], 1e-5) << j;
}

TEST(TwoLevelErrors, NamedParametersAndMissingGrid) {
  testing::runRanks(3, [](runtime::Communicator& comm) {
    auto prime = MarsitTensor::create(comm, "x", 10, {{"intra", "fp16"}});
    EXPECT_EQ(prime.status().code(), Code::kNotSupported);
    EXPECT_NE(prime.status().message().find("two-level"), std::string::npos) << prime.status().message();
    auto both = MarsitTensor::create(comm, "x", 10, {{"intra", "fp16"}, {"topology", "torus"}});
    EXPECT_NE(both.status().message().find("topology=torus"), std::string::npos) << both.status().message();
    auto bad = MarsitTensor::create(comm, "x", 10, {{"intra", "bf8"}});
    EXPECT_NE(bad.status().message().find("intra=bf8"), std::string::npos) << bad.status().message();
  });
}

// A NaN on one rank reaches its row block's holder through the host average: every rank fails
// naming the tensor, and nothing changes.
TEST(TwoLevelErrors, NanFailsEveryRank) {
  testing::runRanks(4, [](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "layer7", 500, {{"intra", "fp16"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g(500, 0.5f);
    if (comm.rank() == 1) g[42] = std::nanf("");
    Status st = t.value()->allreduce(g.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("layer7"), std::string::npos) << st.message();
    EXPECT_EQ(t.value()->step(), 0u);
    for (float c : t.value()->compensation()) ASSERT_EQ(c, 0.0f);
    EXPECT_EQ(g[0], 0.5f);
  });
}

}  // namespace marsit_two_level_test
}  // namespace tsr::marsit
