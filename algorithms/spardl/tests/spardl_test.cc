// SparDL over real UCX (ranks as threads): a hand-worked N=2 case; for N = 1..9 and teams
// T = 1, 2, 4 the results are bit-identical on every rank, every block keeps at most k_b
// entries, and sum(new residuals) + result = sum(gradients + old residuals) at every step;
// density 1 is the dense sum; wire bytes stay within SRS + Bruck's bound; NaN, mismatched
// densities and bad parameters are named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/dense/partition.h"
#include "algorithms/spardl/spardl.h"
#include "tests/support/thread_world.h"

namespace tsr::spardl {
namespace {

float gradient(int rank, size_t j, int step) {
  // Heavy-tailed magnitudes so top-k has real choices; a few exact zeros and ties.
  float x = std::sin(0.61f * static_cast<float>(j + 1) * static_cast<float>(rank + 1) + 1.3f * step);
  if (j % 17 == 0) return 0.0f;
  if (j % 23 == 0) return 0.5f;
  return x * x * x * (1.0f + rank);
}

TEST(SparDL, HandWorkedTwoRanks) {
  std::vector<std::vector<float>> out(2), res(2);
  testing::runRanks(2, [&](runtime::Communicator& comm) {
    auto t = SparDLTensor::create(comm, "hand", 4, {{"density", "0.5"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g = comm.rank() == 0 ? std::vector<float>{1, 2, 3, 4} : std::vector<float>{4, -1, 0, 0.5f};
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    out[comm.rank()] = g;
    res[comm.rank()] = t.value()->residual();
  });
  // SRS: rank 0 keeps 4 of block 1 (drops 3), rank 1 keeps 4 of block 0 (drops -1); then
  // block 0 = [5, 2] keeps 5 (drops 2 on rank 0), block 1 = [0, 4.5] keeps 4.5.
  EXPECT_EQ(out[0], (std::vector<float>{5, 0, 0, 4.5f}));
  EXPECT_EQ(out[1], out[0]);
  EXPECT_EQ(res[0], (std::vector<float>{0, 2, 3, 0}));
  EXPECT_EQ(res[1], (std::vector<float>{0, -1, 0, 0}));
}

struct Shape {
  int n, teams;
  std::string name() const { return "N" + std::to_string(n) + "T" + std::to_string(teams); }
};

class SparDLRanks : public ::testing::TestWithParam<Shape> {};

TEST_P(SparDLRanks, IdenticalSparseAndConserving) {
  const int n = GetParam().n, teams = GetParam().teams, steps = 50;
  const size_t d = 1537;
  const double density = 0.05;
  // [step][rank]
  std::vector<std::vector<std::vector<float>>> in(steps, std::vector<std::vector<float>>(n)), out = in, resBefore = in,
                                                                                              resAfter = in;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t =
        SparDLTensor::create(comm, "w", d, {{"density", std::to_string(density)}, {"teams", std::to_string(teams)}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g(d);
    for (int step = 0; step < steps; ++step) {
      for (size_t j = 0; j < d; ++j) g[j] = gradient(me, j, step);
      in[step][me] = g;
      resBefore[step][me] = t.value()->residual();
      Status st = t.value()->allreduce(g.data());
      ASSERT_TRUE(st.isOk()) << st.toString();
      out[step][me] = g;
      resAfter[step][me] = t.value()->residual();
    }
  });
  const int blocks = n / teams;
  for (int step = 0; step < steps; ++step) {
    for (int r = 1; r < n; ++r)
      ASSERT_EQ(std::memcmp(out[step][r].data(), out[step][0].data(), d * sizeof(float)), 0) << "rank " << r;
    for (int b = 0; b < blocks; ++b) {
      algorithms::Range range = algorithms::balancedPart(d, blocks, b);
      size_t nnz = 0;
      for (size_t j = range.offset; j < range.offset + range.count; ++j) nnz += out[step][0][j] != 0.0f;
      ASSERT_LE(nnz, static_cast<size_t>(std::ceil(density * range.count))) << "block " << b;
    }
    for (size_t j = 0; j < d; ++j) {
      double lhs = out[step][0][j], rhs = 0, scale = 1;
      for (int r = 0; r < n; ++r) {
        lhs += resAfter[step][r][j];
        rhs += static_cast<double>(in[step][r][j]) + resBefore[step][r][j];
        scale += std::fabs(in[step][r][j]) + std::fabs(resBefore[step][r][j]);
      }
      ASSERT_NEAR(lhs, rhs, 2e-6 * scale) << "step " << step << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, SparDLRanks,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 1}, Shape{4, 1}, Shape{5, 1}, Shape{6, 1},
                                           Shape{7, 1}, Shape{8, 1}, Shape{9, 1}, Shape{4, 2}, Shape{6, 2}, Shape{8, 2},
                                           Shape{8, 4}, Shape{6, 3}, Shape{9, 3}, Shape{3, 3}, Shape{5, 5}),
                         [](const auto& info) { return info.param.name(); });

// Density 1 keeps everything: the dense sum (float64 reference), no residual.
TEST(SparDL, DensityOneIsTheDenseSum) {
  const int n = 5;
  const size_t d = 999;
  std::vector<std::vector<float>> out(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    auto t = SparDLTensor::create(comm, "dense", d, {{"density", "1"}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = gradient(comm.rank(), j, 0);
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    out[comm.rank()] = g;
    for (float r : t.value()->residual()) ASSERT_EQ(r, 0.0f);
  });
  for (size_t j = 0; j < d; ++j) {
    double sum = 0, scale = 1;
    for (int r = 0; r < n; ++r) sum += gradient(r, j, 0), scale += std::fabs(gradient(r, j, 0));
    ASSERT_NEAR(out[0][j], sum, 1e-6 * scale) << j;
  }
}

// SRS then Bruck, one message per step each: a rank sends N-1 blocks in each phase, each at
// most 12 + 8 k_b bytes, plus a 24-byte header per message (2 ceil(log2 N) messages).
TEST(SparDL, WireBytesWithinTheSrsBruckBound) {
  const int n = 6;
  const size_t d = 60000;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    auto t = SparDLTensor::create(comm, "wire", d, {{"density", "0.01"}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = gradient(comm.rank(), j, 2);
    uint64_t before = comm.bytesSent();
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    uint64_t sent = comm.bytesSent() - before;
    const double kb = std::ceil(0.01 * d / n), messages = 2 * 3;
    double bound = messages * 24 + 2.0 * (n - 1) * (12 + 8 * kb);
    EXPECT_LE(sent, bound);
    EXPECT_GE(sent, 0.5 * bound) << "the blocks were expected nearly full";
    EXPECT_GT(t.value()->lastStats().resultNonZeros, 0u);
  });
}

TEST(SparDL, SmallEmptyAndNonFinite) {
  testing::runRanks(5, [](runtime::Communicator& comm) {
    auto empty = SparDLTensor::create(comm, "empty", 0, {});
    ASSERT_TRUE(empty.isOk());
    ASSERT_TRUE(empty.value()->allreduce(nullptr).isOk());
    auto small = SparDLTensor::create(comm, "small", 3, {{"density", "1"}});  // fewer elements than blocks
    ASSERT_TRUE(small.isOk());
    std::vector<float> g{1, 2, 3};
    ASSERT_TRUE(small.value()->allreduce(g.data()).isOk());
    EXPECT_EQ(g, (std::vector<float>{5, 10, 15}));
    auto t = SparDLTensor::create(comm, "nan", 100, {{"density", "0.1"}});
    std::vector<float> h(100, 1.0f);
    if (comm.rank() == 3) h[10] = std::nanf("");
    Status st = t.value()->allreduce(h.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("nan"), std::string::npos);
    // The flag is one bit: rank 3 names itself, the others say it was not them.
    const std::string who = comm.rank() == 3 ? "rank 3 (this rank) had NaN or Inf"
                                             : "another rank than this one (rank " + std::to_string(comm.rank()) + ")";
    EXPECT_NE(st.message().find(who), std::string::npos) << st.message();
    EXPECT_EQ(h[0], 1.0f);
    for (float r : t.value()->residual()) ASSERT_EQ(r, 0.0f);
    EXPECT_EQ(t.value()->step(), 0u);
  });
}

// Every rank fails; the rank that sees the oversized message names the likely cause (the
// others may report their own broken send first, or the abort notice).
TEST(SparDL, MismatchedDensityFailsEveryRank) {
  std::vector<std::string> messages(3);
  testing::runRanks(3,
                    [&](runtime::Communicator& comm) {
                      auto t = SparDLTensor::create(comm, "m", 300, {{"density", comm.rank() == 2 ? "0.2" : "0.1"}});
                      ASSERT_TRUE(t.isOk());
                      std::vector<float> g(300, 1.0f);
                      Status st = t.value()->allreduce(g.data());
                      EXPECT_FALSE(st.isOk());
                      messages[comm.rank()] = st.message();
                    },
                    {{"TSR_TIMEOUT_MS", "5000"}});
  bool named = false;
  for (const auto& m : messages) named |= m.find("density") != std::string::npos;
  EXPECT_TRUE(named) << messages[0] << " | " << messages[1] << " | " << messages[2];
}

// B-SAG's window rule: with the same gradient everywhere the teams' pre-selections overlap
// completely, so k' grows to k_b; with disjoint supports T k' distinct entries arrive, so k'
// stays near its lower bound ceil(k_b / T).
TEST(SparDL, BsagPreselectionFollowsOverlap) {
  const size_t d = 300;  // N = T = 3: one block per team, k_b = 30, lower bound 10
  for (bool overlap : {true, false}) {
    testing::runRanks(3, [&](runtime::Communicator& comm) {
      auto t = SparDLTensor::create(comm, "b", d, {{"density", "0.1"}, {"teams", "3"}});
      ASSERT_TRUE(t.isOk()) << t.status().toString();
      EXPECT_EQ(t.value()->algorithm(), "spardl-bsag T=3");
      EXPECT_EQ(t.value()->preselection(), 10u);
      std::vector<float> g(d);
      for (int step = 0; step < 8; ++step) {
        for (size_t j = 0; j < d; ++j)
          g[j] = overlap ? static_cast<float>(j + 1) : (static_cast<int>(j % 3) == comm.rank() ? j + 1.0f : 0.0f);
        ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
      }
      if (overlap) {
        EXPECT_EQ(t.value()->preselection(), 30u);
      } else {
        EXPECT_LE(t.value()->preselection(), 14u);
        EXPECT_GE(t.value()->lastCrossCount(), 30u);
      }
    });
  }
}

TEST(SparDL, BadParametersAreNamed) {
  testing::runRanks(6, [](runtime::Communicator& comm) {
    auto expectNamed = [](const std::map<std::string, std::string>& p, const std::string& what, Code code) {
      auto r = parseParams(p, 6);
      EXPECT_EQ(r.status().code(), code) << what;
      EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
    };
    expectNamed({{"density", "0"}}, "density=0", Code::kInvalidArgument);
    expectNamed({{"density", "1.5"}}, "density=1.5", Code::kInvalidArgument);
    expectNamed({{"teams", "4"}}, "teams=4", Code::kInvalidArgument);
    expectNamed({{"teams", "3"}, {"sag", "r"}}, "teams=3", Code::kInvalidArgument);
    expectNamed({{"sag", "x"}}, "sag=x", Code::kInvalidArgument);
    expectNamed({{"densty", "0.1"}}, "densty=0.1", Code::kInvalidArgument);
    auto t = SparDLTensor::create(comm, "layer", 10, {{"density", "2"}});
    EXPECT_NE(t.status().message().find("spardl tensor layer"), std::string::npos);
  });
}

}  // namespace
}  // namespace tsr::spardl
