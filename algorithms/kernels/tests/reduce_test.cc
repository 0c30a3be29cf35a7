#include "algorithms/kernels/reduce.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/tests/isa_sweep.h"
#include "base/half.h"

namespace tsr::kernels {
namespace {

using testing::forEachIsa;

template <typename T>
T refOp(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMin:
      return b < a ? b : a;
    case ReduceOp::kMax:
      return a < b ? b : a;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if constexpr (std::is_integral_v<T>) return op == ReduceOp::kBand ? a & b : op == ReduceOp::kBor ? a | b : a ^ b;
      break;
  }
  return a;
}

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd};
// Odd sizes exercise the vector tails.
constexpr size_t kCounts[] = {0, 1, 7, 33, 1000, 4099};

template <typename T>
void checkTyped(DataType dtype) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  std::vector<ReduceOp> ops(std::begin(kOps), std::end(kOps));
  if constexpr (std::is_integral_v<T>) ops.insert(ops.end(), {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor});
  for (size_t n : kCounts) {
    for (ReduceOp op : ops) {
      std::vector<T> a(n), b(n);
      for (size_t i = 0; i < n; ++i) {
        // Every bit for the bitwise ops (signs included), small values for the others.
        a[i] = isBitwiseOp(op) ? static_cast<T>(gen()) : static_cast<T>(dist(gen));
        b[i] = isBitwiseOp(op) ? static_cast<T>(gen()) : static_cast<T>(dist(gen));
      }
      std::vector<T> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = refOp(a[i], b[i], op);
      forEachIsa([&](Isa) {
        std::vector<T> got = a;
        reduceInto(got.data(), b.data(), n, dtype, op);
        ASSERT_TRUE(n == 0 || std::memcmp(got.data(), want.data(), n * sizeof(T)) == 0)
            << dataTypeName(dtype) << " " << reduceOpName(op) << " n=" << n;
        // The source at any byte offset (a message reduced where it landed in the
        // transport's buffer): the same bits (UBSan checks the loads in its build).
        for (size_t shift = 1; shift < sizeof(T); ++shift) {
          std::vector<unsigned char> odd(n * sizeof(T) + shift);
          if (n) std::memcpy(odd.data() + shift, b.data(), n * sizeof(T));
          got = a;
          reduceInto(got.data(), odd.data() + shift, n, dtype, op);
          ASSERT_TRUE(n == 0 || std::memcmp(got.data(), want.data(), n * sizeof(T)) == 0)
              << dataTypeName(dtype) << " " << reduceOpName(op) << " n=" << n << " source off by " << shift;
        }
      });
    }
  }
}

TEST(Reduce, F32AllOpsMatchReferenceOnBothIsas) { checkTyped<float>(DataType::kF32); }
TEST(Reduce, F64AllOpsMatchReferenceOnBothIsas) { checkTyped<double>(DataType::kF64); }
TEST(Reduce, I32AllOpsMatchReferenceOnBothIsas) { checkTyped<int32_t>(DataType::kI32); }
TEST(Reduce, I64AllOpsMatchReferenceOnBothIsas) { checkTyped<int64_t>(DataType::kI64); }

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void checkHalf(DataType dtype) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (size_t n : kCounts) {
    std::vector<uint16_t> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = FromF(dist(gen));
      b[i] = FromF(dist(gen));
    }
    for (ReduceOp op : kOps) {
      forEachIsa([&](Isa) {
        std::vector<uint16_t> got = a, shifted = a;
        reduceInto(got.data(), b.data(), n, dtype, op);
        std::vector<unsigned char> odd(2 * n + 1);  // the source off by one byte
        if (n) std::memcpy(odd.data() + 1, b.data(), 2 * n);
        reduceInto(shifted.data(), odd.data() + 1, n, dtype, op);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], FromF(refOp(ToF(a[i]), ToF(b[i]), op))) << i << " " << reduceOpName(op);
          ASSERT_EQ(shifted[i], got[i]) << i << " " << reduceOpName(op) << ", source off by one byte";
        }
      });
    }
  }
}

TEST(Reduce, F16ReducesThroughFloat) { checkHalf<f16ToFloat, floatToF16>(DataType::kF16); }
TEST(Reduce, Bf16ReducesThroughFloat) { checkHalf<bf16ToFloat, floatToBf16>(DataType::kBF16); }

// Every f16 bit pattern (zeros, subnormals, normals, the largest, Inf, NaNs with payloads)
// against partners that make sums overflow, products underflow and min/max meet signed zeros,
// in blocks that mix special and finite lanes: the vector path (F16C) gives the portable
// loop's bits in every lane.
TEST(Reduce, F16VectorPathMatchesThePortableLoopOnEveryValue) {
  if (bestIsa() != Isa::kAvx2 || !cpuHasF16c()) GTEST_SKIP() << "no AVX2 + F16C here";
  const uint16_t partners[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
                               0x7c00, 0xfc00, 0x7e00, 0x7d01, 0xfe55, 0x5bff, 0x2e66, 0x1400, 0xc001};
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (uint16_t p : partners)
    for (ReduceOp op : kOps) {
      // The partner as src, and as dst; plus a rotating partner per lane.
      std::vector<uint16_t> same(all.size(), p), rotating(all.size());
      for (size_t i = 0; i < all.size(); ++i) rotating[i] = partners[(i + p) % std::size(partners)];
      for (int form = 0; form < 3; ++form) {
        std::vector<uint16_t> a = form == 1 ? same : all, b = form == 0 ? same : form == 1 ? all : rotating;
        std::vector<uint16_t> want = a, got = a;
        ASSERT_TRUE(setActiveIsa(Isa::kPortable));
        reduceInto(want.data(), b.data(), a.size(), DataType::kF16, op);
        ASSERT_TRUE(setActiveIsa(Isa::kAvx2));
        reduceInto(got.data(), b.data(), a.size(), DataType::kF16, op);
        for (size_t i = 0; i < a.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << reduceOpName(op) << " form " << form << ": " << std::hex << a[i] << " with "
                                     << b[i];
      }
    }
  ASSERT_TRUE(setActiveIsa(bestIsa()));
}

// The average's last step on every f16 value: the same bits on both paths.
TEST(Reduce, F16VectorDivideMatchesThePortableLoopOnEveryValue) {
  if (bestIsa() != Isa::kAvx2 || !cpuHasF16c()) GTEST_SKIP() << "no AVX2 + F16C here";
  std::vector<uint16_t> all(65536 + 5);  // a tail too
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 7);
  for (uint64_t divisor : {2, 3, 4, 7, 1000, 70000}) {
    std::vector<uint16_t> want = all, got = all;
    ASSERT_TRUE(setActiveIsa(Isa::kPortable));
    divideInPlace(want.data(), want.size(), DataType::kF16, divisor);
    ASSERT_TRUE(setActiveIsa(Isa::kAvx2));
    divideInPlace(got.data(), got.size(), DataType::kF16, divisor);
    for (size_t i = 0; i < all.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "divisor " << divisor << ": " << std::hex << all[i];
  }
  ASSERT_TRUE(setActiveIsa(bestIsa()));
}

TEST(Reduce, IntegerOverflowWraps) {
  int32_t a[2] = {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
  int32_t b[2] = {1, -1};
  reduceInto(a, b, 2, DataType::kI32, ReduceOp::kSum);
  EXPECT_EQ(a[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(a[1], std::numeric_limits<int32_t>::max());
}

TEST(Reduce, DivideFinishesAverage) {
  float f[3] = {3.0f, -3.0f, 1.0f};
  divideInPlace(f, 3, DataType::kF32, 3);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -1.0f);
  EXPECT_EQ(f[2], 1.0f / 3.0f);
  int32_t i[4] = {7, -7, 6, -1};
  divideInPlace(i, 4, DataType::kI32, 2);  // toward zero
  EXPECT_EQ(i[0], 3);
  EXPECT_EQ(i[1], -3);
  EXPECT_EQ(i[2], 3);
  EXPECT_EQ(i[3], 0);
  int64_t l[2] = {std::numeric_limits<int64_t>::min(), 9};
  divideInPlace(l, 2, DataType::kI64, 4);
  EXPECT_EQ(l[0], std::numeric_limits<int64_t>::min() / 4);
  EXPECT_EQ(l[1], 2);
  uint16_t h[1] = {floatToF16(6.0f)};
  divideInPlace(h, 1, DataType::kF16, 4);
  EXPECT_EQ(f16ToFloat(h[0]), 1.5f);
  double d[1] = {1.0};
  divideInPlace(d, 1, DataType::kF64, 4);
  EXPECT_EQ(d[0], 0.25);
}

TEST(Reduce, ScaleInPlace) {
  float f[2] = {2.0f, -4.0f};
  scaleInPlace(f, 2, DataType::kF32, 0.25);
  EXPECT_EQ(f[0], 0.5f);
  EXPECT_EQ(f[1], -1.0f);
  int64_t l[2] = {7, -7};
  scaleInPlace(l, 2, DataType::kI64, 0.5);
  EXPECT_EQ(l[0], 3);
  EXPECT_EQ(l[1], -3);
  uint16_t b[1] = {floatToBf16(3.0f)};
  scaleInPlace(b, 1, DataType::kBF16, 2.0);
  EXPECT_EQ(bf16ToFloat(b[0]), 6.0f);
}

}  // namespace
}  // namespace tsr::kernels
