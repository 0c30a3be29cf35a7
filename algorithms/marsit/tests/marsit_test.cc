// Marsit over real UCX (ranks as threads): every rank ends with the same bits; the output is
// eta*(+-1) with eta the mean |g + c| over ranks (float64 reference) and the compensation is
// what the sign discarded; each output bit is an unbiased vote (mean over seeds = fraction of
// ranks with that sign); the ring sends 2(N-1)/N * ceil(D/64) * 8 bytes (+ headers); every K
// steps a full-precision average resets the compensation; NaN fails every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/marsit/marsit.h"
#include "tests/support/thread_world.h"

namespace tsr::marsit {
namespace {

float inputOf(int rank, size_t j, int step) {
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + step) *
         (1.0f + 0.1f * rank);
}

class MarsitRanks : public ::testing::TestWithParam<int> {};

TEST_P(MarsitRanks, IdenticalEverywhereScaledByEtaAndCompensated) {
  const int n = GetParam();
  const size_t d = 1000;  // not a multiple of 64
  std::vector<std::vector<float>> out(n), comp(n), in(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t = MarsitTensor::create(comm, "w1", d, {{"seed", "7"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, 0);
    in[me] = g;
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

INSTANTIATE_TEST_SUITE_P(N, MarsitRanks, ::testing::Values(1, 2, 3, 5, 6, 7, 8));

TEST(Marsit, EachBitIsAnUnbiasedVote) {
  const int n = 4, trials = 160;
  const size_t d = 128;
  std::vector<double> ones(d, 0);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    for (int trial = 0; trial < trials; ++trial) {
      auto t = MarsitTensor::create(comm, "vote", d, {{"seed", std::to_string(1000 + trial)}});
      ASSERT_TRUE(t.isOk());
      std::vector<float> g(d);
      // Element j: the first (j % 5) ranks vote +, the others -.
      for (size_t j = 0; j < d; ++j) g[j] = me < static_cast<int>(j % 5) ? 1.0f : -1.0f;
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
      if (me == 0)
        for (size_t j = 0; j < d; ++j) ones[j] += g[j] > 0;
    }
  });
  for (size_t j = 0; j < d; ++j) {
    double p = std::min(1.0, (j % 5) / static_cast<double>(n));
    double mean = ones[j] / trials;
    // 4.5 standard deviations of a mean over `trials` Bernoulli draws (false alarm ~1e-5 per bit).
    double tol = 4.5 * std::sqrt(p * (1 - p) / trials) + 1e-9;
    EXPECT_NEAR(mean, p, tol) << "element " << j;
  }
}

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
    EXPECT_LE(sent, expected + 2048) << "headers and the scalar allreduce only";
  });
}

TEST(Marsit, FullPrecisionEveryKStepsAveragesAndResets) {
  const int n = 3;
  const size_t d = 200;
  std::vector<std::vector<float>> beforeComp(n), input(n), out(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t = MarsitTensor::create(comm, "fp", d, {{"full_precision_every", "3"}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d);
    for (int step = 0; step < 3; ++step) {
      for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, step);
      if (step == 2) {
        beforeComp[me] = t.value()->compensation();
        input[me] = g;
      }
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
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

TEST(Marsit, NanFailsEveryRankAndBadParametersAreNamed) {
  testing::runRanks(3, [](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "layer3", 100, {});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(100, 1.0f);
    if (comm.rank() == 1) g[42] = std::nanf("");
    Status st = t.value()->allreduce(g.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("layer3"), std::string::npos) << st.message();
    if (comm.rank() == 1) EXPECT_NE(st.message().find("element 42"), std::string::npos) << st.message();
    auto bad = MarsitTensor::create(comm, "x", 10, {{"topology", "torus"}});
    EXPECT_NE(bad.status().message().find("topology=torus"), std::string::npos);
    auto unknown = MarsitTensor::create(comm, "x", 10, {{"sead", "1"}});
    EXPECT_NE(unknown.status().message().find("sead=1"), std::string::npos);
  });
}

}  // namespace
}  // namespace tsr::marsit
