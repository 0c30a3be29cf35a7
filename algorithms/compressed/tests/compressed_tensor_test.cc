// CompressedTensor over real UCX (ranks as threads): the result is the same on every rank and
// equals the float64 average of what each rank's compressor would decode; with error feedback
// nothing is lost: sum of new residuals + N * result = sum of (gradients + old residuals);
// NaN fails every rank without touching state; parameters and TSR_COMPRESS_* are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "algorithms/compress/registry.h"
#include "algorithms/compressed/compressed_tensor.h"
#include "tests/support/thread_world.h"

namespace tsr::compressed {
namespace {

float inputOf(int rank, size_t j, int step) {
  return std::cos(0.21f * static_cast<float>(j + 3) * static_cast<float>(rank + 1) + 0.7f * step) *
         (1.0f + 0.2f * rank);
}

struct Case {
  int n;
  std::map<std::string, std::string> params;
  std::string name;
};
std::string caseName(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

class Compressed : public ::testing::TestWithParam<Case> {};

// Three steps; after each, N * result + sum of residuals equals sum of (g + old residual),
// and the result is the average of the ranks' own decoded payloads (recomputed here with a
// twin compressor fed the same corrected input).
TEST_P(Compressed, AverageOfDecodedPayloadsAndNothingLost) {
  const int n = GetParam().n;
  const size_t d = 777;
  std::vector<std::vector<std::vector<float>>> in(3, std::vector<std::vector<float>>(n)), out = in, resBefore = in,
                                                                                          resAfter = in;
  std::string algorithm;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto t = CompressedTensor::create(comm, "w", d, GetParam().params);
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    if (me == 0) algorithm = t.value()->algorithm();
    std::vector<float> g(d);
    for (int step = 0; step < 3; ++step) {
      for (size_t j = 0; j < d; ++j) g[j] = inputOf(me, j, step);
      in[step][me] = g;
      resBefore[step][me].resize(d);
      t.value()->residual(resBefore[step][me].data());
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
      out[step][me] = g;
      resAfter[step][me].resize(d);
      t.value()->residual(resAfter[step][me].data());
    }
    EXPECT_EQ(t.value()->step(), 3u);
  });
  EXPECT_EQ(algorithm.rfind("compressed:", 0), 0u) << algorithm;
  for (int step = 0; step < 3; ++step) {
    for (int r = 1; r < n; ++r)
      ASSERT_EQ(std::memcmp(out[step][r].data(), out[step][0].data(), d * sizeof(float)), 0) << r;
    // The identity holds for what enters error feedback: the gradient itself unless momentum
    // rewrites it first (its formula is tested in algorithms/compress/tests).
    const auto& p = GetParam().params;
    bool ef = p.count("ef") == 0 || p.at("ef") == "vanilla";
    if (!ef || p.count("momentum")) continue;
    for (size_t j = 0; j < d; ++j) {
      double lhs = n * static_cast<double>(out[step][0][j]), rhs = 0;
      for (int r = 0; r < n; ++r) {
        lhs += resAfter[step][r][j];
        rhs += static_cast<double>(in[step][r][j]) + resBefore[step][r][j];
      }
      ASSERT_NEAR(lhs, rhs, 1e-4 * n) << "step " << step << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, Compressed,
    ::testing::Values(
        Case{1, {{"compressor", "topk"}, {"k", "0.1"}}, "topk1"},
        Case{3, {{"compressor", "topk"}, {"k", "0.1"}}, "topk3"},
        Case{5, {{"compressor", "randomk"}, {"k", "50"}, {"seed", "9"}}, "randomk5"},
        Case{4, {{"compressor", "onebit"}, {"scaling", "true"}}, "onebit4"},
        Case{2, {{"compressor", "dithering"}, {"k", "4"}}, "dithering2"},
        Case{3, {{"compressor", "fp16"}, {"momentum", "nesterov"}}, "fp16momentum3"},
        Case{3, {{"compressor", "none"}, {"ef", "none"}, {"algorithm", "compressed"}}, "none3"},
        // The momentum hand-off keeps the identity: the result is M' - mu M.
        Case{4,
             {{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "128"}, {"optimizer_momentum", "0.9"}},
             "onebitHandOff4"},
        Case{3, {{"compressor", "topk"}, {"k", "0.1"}, {"optimizer_momentum", "0.5"}}, "topkHandOff3"}),
    caseName);

// compressor=none, ef=none: exactly the average (same order of additions on every rank).
TEST(CompressedExact, NoneIsThePlainAverage) {
  const int n = 3;
  const size_t d = 100;
  std::vector<std::vector<float>> out(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    auto t = CompressedTensor::create(comm, "b", d, {{"compressor", "none"}, {"ef", "none"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 0);
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    out[comm.rank()] = g;
  });
  for (size_t j = 0; j < d; ++j) {
    double avg = 0;
    for (int r = 0; r < n; ++r) avg += inputOf(r, j, 0) / 3.0;
    ASSERT_NEAR(out[0][j], avg, 1e-6) << j;
  }
}

// randomk with a shared seed: every rank keeps the same k indices, so the result has at most
// k non-zeros.
TEST(CompressedExact, RandomKPicksTheSameIndicesEverywhere) {
  testing::runRanks(4, [](runtime::Communicator& comm) {
    auto t = CompressedTensor::create(comm, "r", 1000, {{"compressor", "randomk"}, {"k", "25"}, {"seed", "4"}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(1000);
    for (size_t j = 0; j < g.size(); ++j) g[j] = 1.0f + inputOf(comm.rank(), j, 0) * 0.1f;
    ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
    size_t nonzero = 0;
    for (float v : g) nonzero += v != 0.0f;
    EXPECT_EQ(nonzero, 25u);
  });
}

TEST(CompressedErrors, NanAndParametersAreNamed) {
  testing::runRanks(3, [](runtime::Communicator& comm) {
    auto t = CompressedTensor::create(comm, "emb", 64, {{"compressor", "topk"}, {"k", "8"}});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(64, 0.25f), before(64), after(64);
    t.value()->residual(before.data());
    if (comm.rank() == 2) g[7] = INFINITY;
    Status st = t.value()->allreduce(g.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("emb"), std::string::npos);
    if (comm.rank() == 2) {
      EXPECT_NE(st.message().find("element 7"), std::string::npos) << st.message();
    }
    t.value()->residual(after.data());
    EXPECT_EQ(before, after);
    EXPECT_EQ(t.value()->step(), 0u);
    auto missing = CompressedTensor::create(comm, "x", 10, {{"k", "3"}});
    EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
    EXPECT_NE(missing.status().message().find("compressor"), std::string::npos) << missing.status().message();
    auto algo = CompressedTensor::create(comm, "x", 10, {{"algorithm", "spardl"}});
    EXPECT_NE(algo.status().message().find("algorithm=spardl"), std::string::npos);
  });
}

// A finite gradient that one rank's compressor cannot take (g + e overflowing after error
// feedback; a value past f16's range) fails the step on every rank, named on that rank, with
// every tensor as before; the next step goes on. It failed there alone, and the others waited
// out the timeout in the gather (the communicator then aborted).
TEST(CompressedErrors, AValueOneRankCannotEncodeFailsTheStepOnEveryRank) {
  struct Case {
    std::map<std::string, std::string> params;
    int odd;         // the rank with the value
    float residual;  // set at element 5 on that rank first (0: none)
    float value;     // its gradient at element 5
  };
  for (const Case& c : {Case{{{"compressor", "topk"}, {"k", "8"}}, 2, 3e38f, 3e38f},
                        Case{{{"compressor", "fp16"}, {"ef", "none"}}, 1, 0.0f, 66000.0f},
                        Case{{{"compressor", "none"}}, 0, -3e38f, -3e38f}}) {
    testing::runRanks(3, [&](runtime::Communicator& comm) {
      auto t = CompressedTensor::create(comm, "big", 64, c.params);
      ASSERT_TRUE(t.isOk()) << t.status().toString();
      std::vector<float> residual(64, 0.0f), before(64), after(64), g(64, 0.5f);
      if (comm.rank() == c.odd && c.residual != 0.0f) {
        residual[5] = c.residual;
        ASSERT_TRUE(t.value()->setResidual(residual.data()).isOk());
      }
      t.value()->residual(before.data());
      if (comm.rank() == c.odd) g[5] = c.value;
      Status st = t.value()->allreduce(g.data());
      EXPECT_EQ(st.code(), Code::kNumericError) << c.params.at("compressor") << ": " << st.toString();
      if (comm.rank() == c.odd) {
        EXPECT_NE(st.message().find("element 5"), std::string::npos) << st.message();
      }
      t.value()->residual(after.data());
      EXPECT_EQ(before, after);
      std::vector<float> fine(64, 0.5f);
      EXPECT_TRUE(t.value()->allreduce(fine.data()).isOk()) << "the next step";
    });
  }
}

// The momentum hand-off: an optimizer with momentum mu that adds each result to its buffer
// (B = mu B + result) holds the step's compressed estimate itself, M'. With the same input on
// every rank that is the decoded onebit payload: one magnitude per scale block, at every step
// (the buffer no longer sums the errors of past steps).
TEST(CompressedHandOff, AMomentumOptimizerHoldsTheCompressedEstimate) {
  const size_t d = 1000, block = 256;
  const float mu = 0.9f;
  testing::runRanks(3, [&](runtime::Communicator& comm) {
    auto t = CompressedTensor::create(
        comm, "h", d,
        {{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "256"}, {"optimizer_momentum", "0.9"}});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    EXPECT_EQ(t.value()->algorithm(), "compressed:ef(onebit(scaling=true, scale_block=256)) handoff(mu=0.9)");
    std::vector<float> g(d), buffer(d, 0.0f);
    for (int step = 0; step < 5; ++step) {
      for (size_t j = 0; j < d; ++j) g[j] = inputOf(0, j, step) * (j < block ? 20.0f : 1.0f);
      ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
      for (size_t j = 0; j < d; ++j) buffer[j] = mu * buffer[j] + g[j];
      for (size_t b = 0; b * block < d; ++b) {
        const float eta = std::fabs(buffer[b * block]);
        EXPECT_GT(eta, 0.0f);
        for (size_t j = b * block; j < std::min(d, (b + 1) * block); ++j)
          ASSERT_NEAR(std::fabs(buffer[j]), eta, 1e-5f * eta) << "step " << step << " element " << j;
      }
    }
    // The errors name the key and the value.
    auto bad = CompressedTensor::create(comm, "x", 10, {{"compressor", "fp16"}, {"optimizer_momentum", "1.5"}});
    EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("optimizer_momentum=1.5"), std::string::npos) << bad.status().message();
    auto both = CompressedTensor::create(
        comm, "x", 10, {{"compressor", "fp16"}, {"optimizer_momentum", "0.9"}, {"momentum", "nesterov"}});
    EXPECT_EQ(both.status().code(), Code::kInvalidArgument);
    EXPECT_NE(both.status().message().find("momentum=nesterov"), std::string::npos) << both.status().message();
    auto twoLevel = CompressedTensor::create(
        comm, "x", 10, {{"compressor", "fp16"}, {"optimizer_momentum", "0.9"}, {"intra", "none"}});
    EXPECT_EQ(twoLevel.status().code(), Code::kNotSupported);
    EXPECT_NE(twoLevel.status().message().find("intra=none"), std::string::npos) << twoLevel.status().message();
  });
}

// TSR_COMPRESS_* supply what the parameters leave out.
TEST(CompressedErrors, EnvironmentDefaults) {
  setenv("TSR_COMPRESS_COMPRESSOR", "fp16", 1);
  testing::runRanks(2, [](runtime::Communicator& comm) {
    auto t = CompressedTensor::create(comm, "e", 10, {});
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    EXPECT_EQ(t.value()->algorithm(), "compressed:ef(fp16)");
  });
  unsetenv("TSR_COMPRESS_COMPRESSOR");
}

}  // namespace
}  // namespace tsr::compressed
