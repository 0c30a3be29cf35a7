// Error feedback and Nesterov momentum against float64 references of their formulas.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "algorithms/compress/error_feedback.h"
#include "algorithms/compress/momentum.h"
#include "algorithms/compress/tests/test_util.h"

namespace tsr::compress {
namespace {

using testing::Buffer;
using testing::make;
using testing::randomTensor;
using testing::roundTrip;

std::vector<double> onebitRef(const std::vector<double>& c) {
  double eta = 0;
  for (double v : c) eta += std::fabs(v);
  eta /= c.size();
  std::vector<double> out(c.size());
  for (size_t i = 0; i < c.size(); ++i) out[i] = c[i] > 0 ? eta : -eta;
  return out;
}

std::vector<double> topkRef(const std::vector<double>& c, size_t k) {
  std::vector<size_t> idx(c.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return std::fabs(c[a]) > std::fabs(c[b]); });
  std::vector<double> out(c.size(), 0.0);
  for (size_t i = 0; i < k; ++i) out[idx[i]] = c[idx[i]];
  return out;
}

void expectClose(std::span<const float> got, const std::vector<double>& want, double tol, const char* what, int step) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " step " << step << " i " << i;
}

TEST(ErrorFeedback, OnebitMatchesFloat64Reference) {
  const size_t n = 1000;
  auto c = make({{"compressor", "onebit"}, {"scaling", "true"}, {"ef", "vanilla"}}, n);
  auto* ef = dynamic_cast<ErrorFeedback*>(c.get());
  ASSERT_NE(ef, nullptr);
  std::vector<double> e(n, 0.0);
  for (int step = 0; step < 6; ++step) {
    auto g = randomTensor(n, 100 + step);
    std::vector<double> corrected(n);
    for (size_t i = 0; i < n; ++i) corrected[i] = g[i] + e[i];
    auto decoded = onebitRef(corrected);
    for (size_t i = 0; i < n; ++i) e[i] = corrected[i] - decoded[i];
    auto out = roundTrip(*c, g);
    expectClose(out, decoded, 1e-5, "payload", step);
    expectClose(ef->error(), e, 1e-5, "error", step);
  }
}

TEST(ErrorFeedback, TopkMatchesFloat64ReferenceAndConservesMass) {
  const size_t n = 2000, k = 50;
  auto c = make({{"compressor", "topk"}, {"k", "50"}, {"ef", "vanilla"}}, n);
  auto* ef = dynamic_cast<ErrorFeedback*>(c.get());
  std::vector<double> e(n, 0.0);
  for (int step = 0; step < 6; ++step) {
    auto g = randomTensor(n, 200 + step);
    std::vector<double> corrected(n);
    for (size_t i = 0; i < n; ++i) corrected[i] = g[i] + e[i];
    auto decoded = topkRef(corrected, k);
    for (size_t i = 0; i < n; ++i) e[i] = corrected[i] - decoded[i];
    auto out = roundTrip(*c, g);
    expectClose(out, decoded, 1e-5, "payload", step);
    expectClose(ef->error(), e, 1e-5, "error", step);
  }
}

TEST(ErrorFeedback, NonFiniteInputLeavesErrorUntouched) {
  const size_t n = 100;
  auto c = make({{"compressor", "topk"}, {"k", "5"}, {"ef", "vanilla"}}, n);
  auto* ef = dynamic_cast<ErrorFeedback*>(c.get());
  roundTrip(*c, randomTensor(n, 1));
  std::vector<float> before(ef->error().begin(), ef->error().end());
  auto bad = randomTensor(n, 2);
  bad[42] = -std::numeric_limits<float>::infinity();
  Buffer buf(c->maxCompressedBytes());
  auto r = c->compress(bad, buf.span());
  EXPECT_EQ(r.status().code(), Code::kNumericError);
  EXPECT_NE(r.status().message().find("index 42"), std::string::npos) << r.status().message();
  EXPECT_TRUE(std::equal(before.begin(), before.end(), ef->error().begin()));
}

// A caller that re-lays-out its tensor moves the error along: the next step adds the error it
// set, through momentum too; a compressor without error feedback says it has none to set.
TEST(ErrorFeedback, SetErrorIsWhatTheNextStepAdds) {
  const size_t n = 64, k = 4;
  auto c = make({{"compressor", "topk"}, {"k", "4"}, {"ef", "vanilla"}, {"momentum", "nesterov"}}, n);
  std::vector<float> e(n);
  for (size_t i = 0; i < n; ++i) e[i] = 0.01f * static_cast<float>(i);
  ASSERT_TRUE(c->setFeedbackError(e));
  EXPECT_TRUE(std::equal(e.begin(), e.end(), c->feedbackError().begin()));
  std::vector<float> zeros(n, 0.0f);
  auto out = roundTrip(*c, zeros);  // momentum of zeros stays zero: corrected = e
  std::vector<double> corrected(e.begin(), e.end());
  expectClose(out, topkRef(corrected, k), 1e-6, "payload", 0);
  auto plain = make({{"compressor", "topk"}, {"k", "4"}, {"ef", "none"}}, n);
  EXPECT_FALSE(plain->setFeedbackError(e));
  EXPECT_FALSE(c->setFeedbackError(std::vector<float>(n - 1)));  // not its size
}

TEST(Momentum, NesterovMatchesFloat64Reference) {
  const size_t n = 1000;
  const double mu = 0.8;
  auto c = make({{"compressor", "none"}, {"momentum", "nesterov"}, {"momentum_mu", "0.8"}}, n);
  auto* mom = dynamic_cast<NesterovMomentum*>(c.get());
  ASSERT_NE(mom, nullptr);
  std::vector<double> m(n, 0.0);
  for (int step = 0; step < 6; ++step) {
    auto g = randomTensor(n, 300 + step);
    std::vector<double> p(n);
    for (size_t i = 0; i < n; ++i) {
      m[i] = mu * m[i] + g[i];
      p[i] = g[i] + mu * m[i];
    }
    auto out = roundTrip(*c, g);
    expectClose(out, p, 1e-5, "g'", step);
    expectClose(mom->momentum(), m, 1e-5, "m", step);
  }
}

TEST(Momentum, DefaultMuIsPointNine) {
  auto c = make({{"compressor", "fp16"}, {"momentum", "nesterov"}}, 10);
  auto* mom = dynamic_cast<NesterovMomentum*>(c.get());
  ASSERT_NE(mom, nullptr);
  EXPECT_FLOAT_EQ(mom->mu(), 0.9f);
}

TEST(Decorators, MomentumOverErrorFeedbackOverOnebit) {
  const size_t n = 800;
  const double mu = 0.9;
  auto c = make({{"compressor", "onebit"}, {"scaling", "true"}, {"ef", "vanilla"}, {"momentum", "nesterov"}}, n);
  EXPECT_NE(c->name().find("nesterov"), std::string::npos);
  EXPECT_NE(c->name().find("ef(onebit"), std::string::npos) << c->name();
  std::vector<double> m(n, 0.0), e(n, 0.0);
  for (int step = 0; step < 5; ++step) {
    auto g = randomTensor(n, 400 + step);
    std::vector<double> corrected(n);
    for (size_t i = 0; i < n; ++i) {
      m[i] = mu * m[i] + g[i];
      corrected[i] = g[i] + mu * m[i] + e[i];
    }
    auto decoded = onebitRef(corrected);
    for (size_t i = 0; i < n; ++i) e[i] = corrected[i] - decoded[i];
    auto out = roundTrip(*c, g);
    expectClose(out, decoded, 1e-4, "payload", step);
  }
}

}  // namespace
}  // namespace tsr::compress
