#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "algorithms/compress/randomk_compressor.h"
#include "algorithms/compress/tests/test_util.h"

namespace tsr::compress {
namespace {

using testing::Buffer;
using testing::make;
using testing::randomTensor;
using testing::roundTrip;

TEST(Compressors, NoneIsExact) {
  auto x = randomTensor(1001, 1);
  auto c = make({{"compressor", "none"}}, x.size());
  EXPECT_EQ(roundTrip(*c, x), x);
}

TEST(Compressors, Fp16AndBf16WithinRelativeBound) {
  auto x = randomTensor(1001, 2, 10.0f);
  auto h = make({{"compressor", "fp16"}}, x.size());
  auto b = make({{"compressor", "bf16"}}, x.size());
  size_t bytes = 0;
  auto hx = roundTrip(*h, x, &bytes);
  EXPECT_EQ(bytes, 2 * x.size());
  auto bx = roundTrip(*b, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(hx[i] - x[i]), std::fabs(x[i]) * 0x1p-11f + 0x1p-24f) << i;
    EXPECT_LE(std::fabs(bx[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
  }
}

TEST(Compressors, OnebitKeepsSignsAndScalesByMeanAbs) {
  auto x = randomTensor(1000, 3);
  double meanAbs = 0;
  for (float v : x) meanAbs += std::fabs(v);
  meanAbs /= x.size();
  for (bool scaling : {false, true}) {
    auto c = make({{"compressor", "onebit"}, {"scaling", scaling ? "true" : "false"}}, x.size());
    size_t bytes = 0;
    auto y = roundTrip(*c, x, &bytes);
    EXPECT_EQ(bytes, 8 + 16 * 8u);
    const float eta = scaling ? static_cast<float>(meanAbs) : 1.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(std::fabs(y[i]), eta, 1e-6 * eta);
      ASSERT_EQ(y[i] > 0, x[i] > 0) << i;
      ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) + eta * 1.000001f);
    }
  }
}

// scale_block=128 on 1000 elements: eight scales (the last over 104 elements), each the mean
// |x| of its own block; the header is the eight floats, then the sign words.
TEST(Compressors, OnebitScaleBlocksKeepEachBlocksMeanAbs) {
  auto x = randomTensor(1000, 3);
  for (size_t j = 0; j < 128; ++j) x[j] *= 50.0f;  // a layer of a larger scale in the same bucket
  auto c = make({{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "128"}}, x.size());
  EXPECT_EQ(c->name(), "onebit(scaling=true, scale_block=128)");
  size_t bytes = 0;
  auto y = roundTrip(*c, x, &bytes);
  EXPECT_EQ(bytes, 8 * 4 + 16 * 8u);
  for (size_t b = 0; b < 8; ++b) {
    const size_t begin = b * 128, end = std::min<size_t>(begin + 128, x.size());
    double meanAbs = 0;
    for (size_t j = begin; j < end; ++j) meanAbs += std::fabs(x[j]);
    meanAbs /= static_cast<double>(end - begin);
    for (size_t j = begin; j < end; ++j) {
      ASSERT_NEAR(std::fabs(y[j]), meanAbs, 1e-6 * meanAbs) << "block " << b << " element " << j;
      ASSERT_EQ(y[j] > 0, x[j] > 0) << j;
    }
  }
  // A block past the tensor's size is one scale: the layout without blocks.
  auto whole = make({{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "4096"}}, x.size());
  auto plain = make({{"compressor", "onebit"}, {"scaling", "true"}}, x.size());
  EXPECT_EQ(roundTrip(*whole, x, &bytes), roundTrip(*plain, x));
  EXPECT_EQ(bytes, 8 + 16 * 8u);
}

TEST(Compressors, TopkKeepsExactlyTheLargest) {
  auto x = randomTensor(10000, 4);
  auto c = make({{"compressor", "topk"}, {"k", "0.01"}}, x.size());
  size_t bytes = 0;
  auto y = roundTrip(*c, x, &bytes);
  EXPECT_EQ(bytes, 8 + 100 * 8u);
  std::vector<float> mags(x.size());
  for (size_t i = 0; i < x.size(); ++i) mags[i] = std::fabs(x[i]);
  std::nth_element(mags.begin(), mags.begin() + 99, mags.end(), std::greater<float>());
  const float kth = mags[99];
  size_t kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0.0f) {
      ++kept;
      ASSERT_EQ(y[i], x[i]);
      ASSERT_GE(std::fabs(x[i]), kth);
    } else {
      ASSERT_LE(std::fabs(x[i]), kth);
    }
  }
  EXPECT_EQ(kept, 100u);
}

TEST(Compressors, RandomkSameSeedSameIndicesAndSummableValues) {
  const size_t n = 5000;
  auto x1 = randomTensor(n, 5), x2 = randomTensor(n, 6);
  auto c1 = make({{"compressor", "randomk"}, {"k", "50"}, {"seed", "17"}}, n);
  auto c2 = make({{"compressor", "randomk"}, {"k", "50"}, {"seed", "17"}}, n);
  for (int step = 0; step < 3; ++step) {
    Buffer b1(c1->maxCompressedBytes()), b2(c2->maxCompressedBytes());
    auto s1 = c1->compress(x1, b1.span());
    auto s2 = c2->compress(x2, b2.span());
    ASSERT_TRUE(s1.isOk() && s2.isOk());
    ASSERT_EQ(s1.value(), 8 + 50 * 4u);
    // Sum the value arrays without indices, then decompress: it is the sum at the shared indices.
    float* v1 = reinterpret_cast<float*>(b1.span().data() + 8);
    const float* v2 = reinterpret_cast<const float*>(b2.span().data() + 8);
    std::vector<float> single(n);
    ASSERT_TRUE(c1->decompress(b2.span().first(s2.value()), single).isOk());
    for (int i = 0; i < 50; ++i) v1[i] += v2[i];
    std::vector<float> sum(n);
    ASSERT_TRUE(c1->decompress(b1.span().first(s1.value()), sum).isOk());
    size_t kept = 0;
    for (size_t j = 0; j < n; ++j) {
      if (sum[j] != 0.0f) {
        ++kept;
        ASSERT_EQ(sum[j], x1[j] + x2[j]) << j;
        ASSERT_EQ(single[j], x2[j]);
      }
    }
    EXPECT_EQ(kept, 50u);
  }
  auto* r1 = dynamic_cast<RandomkCompressor*>(c1.get());
  auto* r2 = dynamic_cast<RandomkCompressor*>(c2.get());
  ASSERT_TRUE(r1 && r2);
  std::vector<uint32_t> a(r1->indicesFor(9).begin(), r1->indicesFor(9).end());
  std::vector<uint32_t> b(r2->indicesFor(9).begin(), r2->indicesFor(9).end());
  EXPECT_EQ(a, b);
  std::vector<uint32_t> other(r2->indicesFor(10).begin(), r2->indicesFor(10).end());
  EXPECT_NE(a, other);
}

TEST(Compressors, DitheringBoundedAndUnbiased) {
  const size_t n = 256;
  auto x = randomTensor(n, 7);
  float maxAbs = 0;
  for (float v : x) maxAbs = std::max(maxAbs, std::fabs(v));
  auto c = make({{"compressor", "dithering"}, {"k", "4"}, {"seed", "3"}}, n);
  const int trials = 2000;
  std::vector<double> mean(n, 0.0);
  for (int t = 0; t < trials; ++t) {
    size_t bytes = 0;
    auto y = roundTrip(*c, x, &bytes);
    ASSERT_EQ(bytes, 8 + 2 * n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LE(std::fabs(y[i] - x[i]), maxAbs / 4 * 1.0001f) << i;
      mean[i] += y[i];
    }
  }
  const double sigma = maxAbs / 4 / 2 / std::sqrt(static_cast<double>(trials));
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(mean[i] / trials, x[i], 5 * sigma) << i;
  auto nat = make(
      {{"compressor", "dithering"}, {"k", "3"}, {"dithering_partition", "natural"}, {"dithering_normalize", "l2"}}, n);
  auto y = roundTrip(*nat, x);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(y[i] == 0.0f || (y[i] > 0) == (x[i] > 0), true);
}

TEST(Compressors, NonFiniteInputNamesTheFirstBadIndex) {
  for (const char* kind : {"onebit", "topk", "randomk", "dithering", "fp16", "bf16", "none"}) {
    Params p{{"compressor", kind}};
    if (std::string(kind) == "topk" || std::string(kind) == "randomk" || std::string(kind) == "dithering") p["k"] = "4";
    auto c = make(p, 300);
    auto x = randomTensor(300, 8);
    x[123] = std::numeric_limits<float>::quiet_NaN();
    x[200] = std::numeric_limits<float>::infinity();
    Buffer buf(c->maxCompressedBytes());
    auto r = c->compress(x, buf.span());
    ASSERT_EQ(r.status().code(), Code::kNumericError) << kind;
    EXPECT_NE(r.status().message().find("index 123 of 300"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("nan"), std::string::npos) << r.status().message();
  }
}

TEST(Compressors, BadBuffersAndPayloadsAreRejected) {
  auto c = make({{"compressor", "topk"}, {"k", "10"}}, 100);
  auto x = randomTensor(100, 9);
  Buffer small(16);
  EXPECT_EQ(c->compress(x, small.span().first(16)).status().code(), Code::kInvalidArgument);
  Buffer buf(c->maxCompressedBytes() + 8);
  EXPECT_EQ(c->compress(x, buf.span().subspan(4)).status().code(), Code::kInvalidArgument);  // misaligned
  std::vector<float> wrong(99);
  EXPECT_EQ(c->compress(wrong, buf.span()).status().code(), Code::kInvalidArgument);
  auto bytes = c->compress(x, buf.span());
  ASSERT_TRUE(bytes.isOk());
  std::vector<float> out(100);
  EXPECT_EQ(c->decompress(buf.span().first(bytes.value() - 4), out).code(), Code::kInvalidArgument);
  reinterpret_cast<uint32_t*>(buf.span().data() + 8)[0] = 100;  // index out of range
  EXPECT_EQ(c->decompress(buf.span().first(bytes.value()), out).code(), Code::kInvalidArgument);
}

// A tensor of no elements: its spans may be null (an empty vector's data()), and nothing may be
// handed to memcpy or memset from them (found by fuzz/compressor_payload_fuzzer.cc).
TEST(Compressors, EmptyTensorWithNullSpansRoundTrips) {
  const Params kinds[] = {{{"compressor", "none"}},
                          {{"compressor", "fp16"}},
                          {{"compressor", "bf16"}},
                          {{"compressor", "onebit"}},
                          {{"compressor", "topk"}, {"k", "1"}},
                          {{"compressor", "randomk"}, {"k", "1"}},
                          {{"compressor", "dithering"}, {"k", "4"}}};
  for (const Params& p : kinds) {
    auto c = make(p, 0);
    ASSERT_NE(c, nullptr);
    Buffer buf(c->maxCompressedBytes());
    auto bytes = c->compress(std::span<const float>(), buf.span());
    ASSERT_TRUE(bytes.isOk()) << c->name() << ": " << bytes.status().toString();
    EXPECT_TRUE(c->decompress(buf.span().first(bytes.value()), std::span<float>()).isOk()) << c->name();
  }
}

}  // namespace
}  // namespace tsr::compress
