// Marsit over real UCX (ranks as threads), ring and torus: every rank ends with the same bits;
// the output is eta*(+-1) with eta the mean |g + c| over ranks (float64 reference) and the
// compensation is what the sign discarded; each output bit is an unbiased vote (mean over
// seeds = fraction of ranks with that sign, per part of the vector so a misweighted hop cannot
// average out); the ring sends 2(N-1)/N * ceil(D/64) * 8 bytes (+ headers); every K steps a
// full-precision average resets the compensation; NaN fails every rank; a stalled rank makes
// the others fail within the timeout, naming it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "algorithms/marsit/marsit.h"
#include "tests/support/thread_world.h"

namespace tsr::marsit {
namespace {

float inputOf(int rank, size_t j, int step) {
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + step) * (1.0f + 0.1f * rank);
}

struct Shape {
  int n;
  const char* topology;
};
std::string shapeName(const ::testing::TestParamInfo<Shape>& info) {
  return std::string(info.param.topology) + std::to_string(info.param.n);
}

class MarsitRanks : public ::testing::TestWithParam<Shape> {};

TEST_P(MarsitRanks, IdenticalEverywhereScaledByEtaAndCompensated) {
  const int n = GetParam().n;
  const std::string topology = GetParam().topology;
  const size_t d = 1000;  // not a multiple of 64
  std::vector<std::vector<float>> out(n), comp(n), in(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t = MarsitTensor::create(comm, "w1", d, {{"seed", "7"}, {"topology", topology}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, 0);
    in[me] = g;
    EXPECT_EQ(t.value()->algorithm(), "marsit-" + topology);
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    out[me] = g;
    comp[me] = t.value()->compensation();
  });
  double eta = 0;
  for (int r = 0; r < n; ++r) {
    double s = 0;
    for (float v : in[r]) s += std::fabs(v);
    eta += s / d / n;
  }
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(std::memcmp(out[r].data(), out[0].data(), d * sizeof(float)), 0) << "rank " << r;
    for (size_t j = 0; j < d; ++j) {
      ASSERT_NEAR(std::fabs(out[r][j]), eta, 1e-5 * eta) << j;
      ASSERT_NEAR(comp[r][j], in[r][j] - out[r][j], 1e-5) << "rank " << r << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(N, MarsitRanks,
                         ::testing::Values(Shape{1, "ring"}, Shape{2, "ring"}, Shape{3, "ring"}, Shape{5, "ring"},
                                           Shape{6, "ring"}, Shape{7, "ring"}, Shape{8, "ring"}, Shape{4, "torus"},
                                           Shape{6, "torus"}, Shape{8, "torus"}, Shape{9, "torus"}),
                         shapeName);

// Element j votes + on the first (j % (n+1)) ranks, so its expected output bit is
// (j % (n+1)) / n. Means are taken per class and per part of the vector (2n parts aligned to
// the blocks), so every ring or torus block, and thus every merge order, is checked on its own:
// a hop that weighed its sides wrongly would bias the block it finishes.
class MarsitVotes : public ::testing::TestWithParam<Shape> {};

TEST_P(MarsitVotes, EachBitIsAnUnbiasedVote) {
  const int n = GetParam().n, trials = 16, parts = 2 * n;
  const size_t words = 2 * 3 * 4 * 5 * 4;  // 480: divisible by 2n for n <= 6
  const size_t d = words * 64;
  std::vector<std::vector<double>> ones(n + 1, std::vector<double>(parts, 0));
  std::vector<std::vector<double>> samples = ones;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    std::vector<float> g(d);
    for (int trial = 0; trial < trials; ++trial) {
      // A fresh tensor per trial (zero compensation, its own seed): the inputs' signs are the votes.
      auto fresh = MarsitTensor::create(comm, "vote", d,
                                        {{"seed", std::to_string(1000 + trial)}, {"topology", GetParam().topology}});
      ASSERT_TRUE(fresh.isOk()) << fresh.status().toString();
      for (size_t j = 0; j < d; ++j) g[j] = me < static_cast<int>(j % (n + 1)) ? 1.0f : -1.0f;
      ASSERT_TRUE(fresh.value()->allreduce(g.data()).isOk());
      if (me == 0)
        for (size_t j = 0; j < d; ++j) {
          size_t part = j / (d / parts);
          ones[j % (n + 1)][part] += g[j] > 0;
          samples[j % (n + 1)][part] += 1;
        }
    }
  });
  for (int cls = 0; cls <= n; ++cls)
    for (int part = 0; part < parts; ++part) {
      double p = std::min(1.0, cls / static_cast<double>(n));
      double mean = ones[cls][part] / samples[cls][part];
      // 5 standard deviations of a mean of independent Bernoulli bits (false alarm ~6e-7 each).
      double tol = 5 * std::sqrt(p * (1 - p) / samples[cls][part]) + 1e-12;
      EXPECT_NEAR(mean, p, tol) << "class " << cls << " part " << part << " over " << samples[cls][part];
    }
}

INSTANTIATE_TEST_SUITE_P(N, MarsitVotes,
                         ::testing::Values(Shape{2, "ring"}, Shape{3, "ring"}, Shape{4, "ring"}, Shape{5, "ring"},
                                           Shape{6, "ring"}, Shape{4, "torus"}, Shape{6, "torus"}),
                         shapeName);

// What a rank sends beside the bits: argument headers, and its part of the scale allreduce
// (Rabenseifner; when the number of ranks is not a power of two, a folding partner also sends
// the whole vector of scales back to the rank folded into it).
double besideTheBits(size_t d) { return 512 + 3.0 * flatScalarCount(d, Params{}.scaleBlock) * sizeof(double); }

TEST(Marsit, WireBytesAreOneBitPerElementPerHop) {
  const int n = 4;
  const size_t d = 64 * 4000;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "big", d, {});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 1);
    uint64_t before = comm.bytesSent();
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    uint64_t sent = comm.bytesSent() - before;
    double expected = 2.0 * (n - 1) / n * (d / 64) * 8;
    EXPECT_GE(sent, expected);
    EXPECT_LE(sent, expected + besideTheBits(d)) << "headers and the scale allreduce only";
  });
}

// Torus X x Y: the row phases carry 2(X-1)/X of the words, the column phases 2(Y-1)/Y of a
// row block.
TEST(Marsit, TorusWireBytesAreOneBitPerElementPerHop) {
  const int n = 6;
  const size_t words = 6 * 1000, d = words * 64;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "big", d, {{"topology", "torus"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    double x = comm.torusGrid()[0].size(), y = comm.torusGrid().size();
    ASSERT_EQ(x * y, n);
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 1);
    uint64_t before = comm.bytesSent();
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    uint64_t sent = comm.bytesSent() - before;
    double expected = (2.0 * (x - 1) / x + 2.0 * (y - 1) / y / x) * words * 8;
    EXPECT_GE(sent, expected);
    EXPECT_LE(sent, expected + besideTheBits(d)) << "headers and the scale allreduce only";
  });
}

class MarsitFullPrecision : public ::testing::TestWithParam<Shape> {};

// Steps 1 and 2 are sign steps whose compensation must equal g + c_old - G in float64; step 3
// is the full-precision average of g + c, after which c is zero.
TEST_P(MarsitFullPrecision, EveryKStepsAveragesAndResets) {
  const int n = GetParam().n;
  const size_t d = 200;
  std::vector<std::vector<float>> beforeComp(n), input(n), out(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t = MarsitTensor::create(comm, "fp", d, {{"full_precision_every", "3"}, {"topology", GetParam().topology}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d);
    for (int step = 0; step < 3; ++step) {
      for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, step);
      std::vector<float> cOld = t.value()->compensation(), gIn = g;
      if (step < 2) {
        ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
        EXPECT_FALSE(t.value()->lastTimes().fullPrecision);
        for (size_t j = 0; j < d; ++j)
          ASSERT_NEAR(t.value()->compensation()[j], static_cast<double>(gIn[j]) + cOld[j] - static_cast<double>(g[j]),
                      1e-5)
              << "step " << step << " element " << j;
        continue;
      }
      beforeComp[me] = cOld;
      input[me] = gIn;
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
      EXPECT_TRUE(t.value()->lastTimes().fullPrecision);
    }
    out[me] = g;
    for (float c : t.value()->compensation()) ASSERT_EQ(c, 0.0f);
  });
  for (size_t j = 0; j < d; ++j) {
    double avg = 0;
    for (int r = 0; r < n; ++r) avg += (static_cast<double>(input[r][j]) + beforeComp[r][j]) / n;
    for (int r = 0; r < n; ++r) ASSERT_NEAR(out[r][j], avg, 1e-5) << j;
  }
}

INSTANTIATE_TEST_SUITE_P(N, MarsitFullPrecision, ::testing::Values(Shape{3, "ring"}, Shape{4, "torus"}), shapeName);

// The non-blocking form returns before the step ends, refuses a second step on the same tensor
// while one is pending, and keeps its place in the communicator's order: a dense allreduce
// posted right after it completes correctly on every rank. Rank 0 posts first and tries a
// second step before the others have joined, so its first step is surely still pending.
TEST(Marsit, AsyncStepKeepsOrderWithOtherCollectives) {
  const int n = 3;
  const size_t d = 64 * 5000;
  std::atomic<bool> rank0Checked{false};
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    // One eta for the whole tensor (scale_block=0), so every element's magnitude is g[0]'s.
    auto t = MarsitTensor::create(comm, "async", d, {{"scale_block", "0"}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d), g2(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 0);
    if (comm.rank() != 0)
      while (!rank0Checked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto request = t.value()->allreduceAsync(g.data());
    ASSERT_TRUE(request.isOk()) << request.status().toString();
    EXPECT_EQ(request.value()->algorithm(), "marsit-ring");
    if (comm.rank() == 0) {
      EXPECT_TRUE(t.value()->busy());
      auto second = t.value()->allreduceAsync(g2.data());
      EXPECT_EQ(second.status().code(), Code::kInvalidArgument);
      EXPECT_NE(second.status().message().find("still pending"), std::string::npos);
      rank0Checked = true;
    }
    double mine = comm.rank() + 1.0, sum = 0;
    auto dense = comm.allreduce(&mine, &sum, 1, DataType::kF64, ReduceOp::kSum);
    ASSERT_TRUE(dense.isOk());
    ASSERT_TRUE(request.value()->wait().isOk());
    ASSERT_TRUE(dense.value()->wait().isOk());
    EXPECT_FALSE(t.value()->busy());
    EXPECT_EQ(sum, n * (n + 1) / 2.0);
    float eta = std::fabs(g[0]);
    for (size_t j = 0; j < d; ++j) ASSERT_EQ(std::fabs(g[j]), eta) << j;
  });
}

// A rank that never joins the step: the others fail with a timeout (not a hang) naming the
// tensor and the peer they waited for. Which peer: the first rank to time out tells the
// others (runtime abort notices), and it may be rank 1 waiting on rank 0, itself waiting on
// rank 2, so the message names a waited-for peer rather than always rank 2.
TEST(Marsit, StalledRankFailsTheOthersNamingIt) {
  testing::runRanks(3,
                    [&](runtime::Communicator& comm) {
                      auto t = MarsitTensor::create(comm, "stall", 64 * 100, {});
                      ASSERT_TRUE(t.isOk());
                      if (comm.rank() == 2) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
                        return;
                      }
                      std::vector<float> g(64 * 100, 1.0f);
                      auto start = std::chrono::steady_clock::now();
                      Status st = t.value()->allreduce(g.data());
                      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                      EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
                      EXPECT_LT(s, 2.4) << st.toString();
                      EXPECT_NE(st.message().find("marsit allreduce of tensor stall"), std::string::npos)
                          << st.toString();
                      EXPECT_NE(st.message().find("waiting for rank"), std::string::npos) << st.toString();
                    },
                    {{"TSR_TIMEOUT_MS", "1000"}});
}

// Finite gradients whose float lanes of |g| would overflow still give a finite scale: the
// output is +-eta with eta the mean |g| (3e38 here), not Inf, and the residual is finite.
TEST(Marsit, HugeFiniteGradientsKeepAFiniteScale) {
  testing::runRanks(2, [](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "huge", 2048, {});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(2048);
    for (size_t j = 0; j < g.size(); ++j) g[j] = j % 2 ? 3e38f : -3e38f;
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    for (size_t j = 0; j < g.size(); ++j) {
      ASSERT_TRUE(std::isfinite(g[j])) << j;
      ASSERT_NEAR(std::fabs(g[j]), 3e38f, 1e32f) << j;
      ASSERT_TRUE(std::isfinite(t.value()->compensation()[j])) << j;
    }
  });
}

TEST(Marsit, NanFailsEveryRankAndBadParametersAreNamed) {
  testing::runRanks(3, [](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "layer3", 100, {});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(100, 1.0f);
    if (comm.rank() == 1) g[42] = std::nanf("");
    Status st = t.value()->allreduce(g.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("layer3"), std::string::npos) << st.message();
    if (comm.rank() == 1) {
      EXPECT_NE(st.message().find("element 42"), std::string::npos) << st.message();
    }
    // g and the compensation are unchanged after the failed step.
    EXPECT_EQ(g[0], 1.0f);
    EXPECT_EQ(t.value()->compensation()[0], 0.0f);
    EXPECT_EQ(t.value()->step(), 0u);
    auto prime = MarsitTensor::create(comm, "x", 10, {{"topology", "torus"}});
    EXPECT_EQ(prime.status().code(), Code::kNotSupported);
    EXPECT_NE(prime.status().message().find("topology=torus"), std::string::npos);
    auto bad = MarsitTensor::create(comm, "x", 10, {{"topology", "mesh"}});
    EXPECT_NE(bad.status().message().find("topology=mesh"), std::string::npos);
    EXPECT_NE(bad.status().message().find("ring or torus"), std::string::npos);
    auto k = MarsitTensor::create(comm, "x", 10, {{"full_precision_every", "-1"}});
    EXPECT_NE(k.status().message().find("full_precision_every=-1"), std::string::npos);
    auto unknown = MarsitTensor::create(comm, "x", 10, {{"sead", "1"}});
    EXPECT_NE(unknown.status().message().find("sead=1"), std::string::npos);
  });
}

}  // namespace
}  // namespace tsr::marsit
