#include "algorithms/kernels/cast.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/isa.h"
#include "algorithms/kernels/reduce.h"
#include "algorithms/kernels/tests/isa_sweep.h"
#include "base/half.h"

namespace tsr::kernels {
namespace {

using testing::forEachIsa;

TEST(Cast, F16AndBf16MatchScalarConversions) {
  std::mt19937 gen(6);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  std::vector<float> x(1001);
  for (float& v : x) v = dist(gen);
  x[0] = 1e6f;  // f16 overflow -> inf
  x[1] = std::nanf("");
  forEachIsa([&](Isa) {
    std::vector<uint16_t> h(x.size()), b(x.size());
    std::vector<float> hx(x.size()), bx(x.size());
    castF32ToF16(x.data(), x.size(), h.data());
    castF32ToBf16(x.data(), x.size(), b.data());
    castF16ToF32(h.data(), h.size(), hx.data());
    castBf16ToF32(b.data(), b.size(), bx.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(h[i], floatToF16(x[i]));
      ASSERT_EQ(b[i], floatToBf16(x[i]));
      if (i >= 2) {
        ASSERT_LE(std::fabs(hx[i] - x[i]), std::fabs(x[i]) * 0x1p-11f + 0x1p-25f);
        ASSERT_LE(std::fabs(bx[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);
      }
    }
    EXPECT_TRUE(std::isinf(hx[0]));
    EXPECT_TRUE(std::isnan(hx[1]));
    EXPECT_TRUE(std::isnan(bx[1]));
  });
}

// ---- Bit-for-bit comparison of the dispatched casts (each ISA) with base/half.h per element.

// Lengths that exercise the vector tails (8- and 16-element steps) and the scalar remainder.
constexpr size_t kLengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000 + 3};

uint32_t bitsOf(float f) { return floatBits(f); }

// Runs `cast` over `in` (whole, and at every length of kLengths from several unaligned starts)
// and checks each output against `ref` bit for bit; words past the end must stay untouched.
template <typename In, typename Out, typename Cast, typename Ref>
void checkCast(const std::vector<In>& in, Cast cast, Ref ref, const char* what) {
  std::vector<Out> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) want[i] = ref(in[i]);
  auto same = [](Out a, Out b) { return std::memcmp(&a, &b, sizeof(Out)) == 0; };
  forEachIsa([&](Isa) {
    std::vector<Out> got(in.size());
    cast(in.data(), in.size(), got.data());
    for (size_t i = 0; i < in.size(); ++i) {
      if (!same(got[i], want[i])) {
        uint32_t gi = 0, wi = 0, ii = 0;
        std::memcpy(&gi, &got[i], sizeof(Out));
        std::memcpy(&wi, &want[i], sizeof(Out));
        std::memcpy(&ii, &in[i], sizeof(In));
        FAIL() << what << ": element " << i << " input 0x" << std::hex << ii << " got 0x" << gi << " want 0x" << wi;
      }
    }
    const size_t starts[] = {0, 1, 3, 8, 13};
    for (size_t len : kLengths) {
      for (size_t s : starts) {
        if (s + len > in.size()) continue;
        std::vector<Out> buf(len + 2);
        std::memset(buf.data(), 0xa5, buf.size() * sizeof(Out));
        Out guard = buf[0];
        cast(in.data() + s, len, buf.data() + 1);
        ASSERT_TRUE(same(buf[0], guard)) << what << " len " << len;
        ASSERT_TRUE(same(buf[len + 1], guard)) << what << " len " << len << " wrote past the end";
        for (size_t i = 0; i < len; ++i)
          ASSERT_TRUE(same(buf[i + 1], want[s + i])) << what << " len " << len << " start " << s << " element " << i;
      }
    }
  });
}

// Every f32 bit-pattern class that matters to a narrowing cast: both signs of zero, f32
// subnormals, every exponent with mantissas around each rounding position (ties odd/even,
// just below / above), Inf, signaling and quiet NaNs with payloads, and the f16 range edges.
std::vector<float> specialFloats() {
  std::vector<uint32_t> bits;
  std::mt19937_64 gen(42);
  const uint32_t mants[] = {0,        1,        2,        0x3ff,    0x400,    0xfff,    0x1000,   0x1001,   0x1fff,
                            0x2000,   0x3000,   0x3001,   0x2fff,   0x7fff,   0x8000,   0x8001,   0xffff,   0x10000,
                            0x18000,  0x17fff,  0x18001,  0x3fe000, 0x400000, 0x400001, 0x7fe000, 0x7ff000, 0x7fefff,
                            0x7ff001, 0x7fffff, 0x7fdfff, 0x7fc000, 0x200000, 0x001000, 0x003fff};
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t e = 0; e < 256; ++e) {
      for (uint32_t m : mants) bits.push_back(sign | (e << 23) | m);
      // Around a tie at every bit position s, with the bit above it even and odd, and random
      // bits above that.
      for (uint32_t s = 0; s < 23; ++s) {
        for (int r = 0; r < 4; ++r) {
          uint32_t high = r == 0 ? 0u : static_cast<uint32_t>(gen());
          high &= s + 1 < 23 ? (0x7fffffu << (s + 1)) & 0x7fffffu : 0u;
          for (uint32_t odd : {0u, 1u}) {
            uint32_t above = s + 1 < 23 ? odd << (s + 1) : 0u;
            uint32_t tie = high | above | (1u << s);
            for (uint32_t m : {tie - 1, tie, tie + 1}) bits.push_back(sign | (e << 23) | (m & 0x7fffffu));
          }
        }
      }
    }
    // The f16 edges: max finite (65504), the overflow tie 65520 and its neighbours, the smallest
    // normal 2^-14, the smallest subnormal 2^-24 and half of it.
    for (uint32_t c :
         {0x477fe000u, 0x477ff000u, 0x477fefffu, 0x477ff001u, 0x38800000u, 0x387fffffu, 0x387fe000u, 0x387ff000u,
          0x33800000u, 0x33000000u, 0x33000001u, 0x32ffffffu, 0x7f800000u, 0x7f800001u, 0x7fbfffffu, 0x7fc00000u,
          0x7fffffffu, 0x7f802000u, 0x7f801fffu, 0x7fa00000u, 0x7fc00001u, 0x7fffe000u, 0x7f80ffffu, 0x7f810000u})
      for (int d = -2; d <= 2; ++d) bits.push_back(sign | (c + static_cast<uint32_t>(d)));
  }
  // Every f32 whose exponent is near the f16 range edges, with random mantissas (dense).
  for (int k = 0; k < 1 << 20; ++k) {
    uint32_t r = static_cast<uint32_t>(gen());
    uint32_t e = (r & 1) ? 100 + (r >> 1) % 16 : 140 + (r >> 1) % 6;  // 2^-27..2^-12, 2^13..2^18
    bits.push_back((r & 0x80000000u) | (e << 23) | (static_cast<uint32_t>(gen()) & 0x7fffffu));
  }
  // Random bit patterns.
  for (int k = 0; k < 3 << 20; ++k) bits.push_back(static_cast<uint32_t>(gen()));
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = bitsFloat(bits[i]);
  return out;
}

std::vector<uint16_t> allHalfPatterns() {
  std::vector<uint16_t> v(65536 + 13);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i);  // wraps: tails too
  return v;
}

TEST(Cast, F32ToF16BitIdenticalToScalarOnEveryClass) {
  checkCast<float, uint16_t>(
      specialFloats(), castF32ToF16, [](float f) { return floatToF16(f); }, "f32->f16");
}

TEST(Cast, F32ToBf16BitIdenticalToScalarOnEveryClass) {
  checkCast<float, uint16_t>(
      specialFloats(), castF32ToBf16, [](float f) { return floatToBf16(f); }, "f32->bf16");
}

TEST(Cast, F16ToF32BitIdenticalToScalarOnAllPatterns) {
  checkCast<uint16_t, float>(
      allHalfPatterns(), castF16ToF32, [](uint16_t h) { return f16ToFloat(h); }, "f16->f32");
}

TEST(Cast, Bf16ToF32BitIdenticalToScalarOnAllPatterns) {
  checkCast<uint16_t, float>(
      allHalfPatterns(), castBf16ToF32, [](uint16_t h) { return bf16ToFloat(h); }, "bf16->f32");
}

// The two-level intra-host average: the same f16 values as reduceInto / divideInPlace, and what
// each rounding dropped is kept: result + dropped is the exact f32 sum (or the sum before the
// division); overflow (Inf) and NaN keep nothing. Every ISA gives the same bits.
TEST(Cast, F16SumAndAverageKeepWhatTheirRoundingDrops) {
  std::mt19937 gen(11);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  const size_t n = 4099;
  std::vector<uint16_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = floatToF16(dist(gen)), b[i] = floatToF16(dist(gen) * 1e-3f);
  a[1] = b[1] = floatToF16(65504.0f);  // the sum overflows f16
  a[20] = floatToF16(std::nanf(""));   // NaN and Inf inputs: their blocks take the scalar code
  b[37] = floatToF16(INFINITY);
  b[38] = 0x7d01;  // a signaling NaN
  std::vector<uint16_t> firstOut;
  std::vector<float> firstDropped;
  forEachIsa([&](Isa isa) {
    std::vector<uint16_t> plain = a, kept = a;
    std::vector<float> dropped(n, 0.0f);
    reduceInto(plain.data(), b.data(), n, DataType::kF16, ReduceOp::kSum);
    sumF16KeepingDropped(kept.data(), b.data(), n, dropped.data());
    ASSERT_EQ(kept, plain) << isaName(isa);
    EXPECT_EQ(dropped[1], 0.0f);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; ++i) {
      float exact = f16ToFloat(a[i]) + f16ToFloat(b[i]);
      if (!std::isfinite(f16ToFloat(kept[i]))) {
        ASSERT_EQ(dropped[i], 0.0f) << "element " << i;
        continue;
      }
      ASSERT_EQ(f16ToFloat(kept[i]) + dropped[i], exact) << "element " << i;
      nonzero += dropped[i] != 0.0f;
    }
    EXPECT_GT(nonzero, n / 2);  // small addends: most sums round
    std::vector<float> before(n);
    for (size_t i = 0; i < n; ++i) before[i] = f16ToFloat(kept[i]);
    std::vector<float> more = dropped;
    divideInPlace(plain.data(), n, DataType::kF16, 3);
    averageF16KeepingDropped(kept.data(), n, 3.0f, more.data());
    ASSERT_EQ(kept, plain) << isaName(isa);
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(before[i])) continue;
      ASSERT_NEAR(3.0 * f16ToFloat(kept[i]) + (more[i] - dropped[i]), before[i], 1e-6 * std::fabs(before[i]))
          << "element " << i;
    }
    if (firstOut.empty()) {
      firstOut = kept, firstDropped = more;
    } else {
      EXPECT_EQ(kept, firstOut) << isaName(isa);
      EXPECT_EQ(std::memcmp(more.data(), firstDropped.data(), n * sizeof(float)), 0) << isaName(isa);
    }
  });
}

TEST(Cast, NaNRulesOfHalfH) {
  // What the vector paths must reproduce (and what the hardware conversions do not by themselves):
  EXPECT_EQ(floatToF16(bitsFloat(0x7f802001u)), 0x7e00);   // payload dropped, quiet
  EXPECT_EQ(floatToF16(bitsFloat(0xffffffffu)), 0xfe00);   // sign kept
  EXPECT_EQ(bitsOf(f16ToFloat(0x7c01)), 0x7f802000u);      // a signaling f16 NaN stays signaling
  EXPECT_EQ(floatToBf16(bitsFloat(0x7f800001u)), 0x7fc0);  // bf16: quiet bit set, top payload kept
  EXPECT_EQ(floatToBf16(bitsFloat(0xff81ffffu)), 0xffc1);
}

// All 2^32 f32 inputs against the scalar conversions (8 s in Release here; run by hand with
// --gtest_also_run_disabled_tests --gtest_filter='*Exhaustive*').
TEST(Cast, DISABLED_ExhaustiveF32ToF16AndBf16) {
  if (bestIsa() != Isa::kAvx2) GTEST_SKIP() << "no AVX2";
  constexpr size_t kChunk = size_t{1} << 22;
  std::vector<float> in(kChunk);
  std::vector<uint16_t> h(kChunk), b(kChunk);
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += kChunk) {
    for (size_t i = 0; i < kChunk; ++i) in[i] = bitsFloat(static_cast<uint32_t>(base + i));
    castF32ToF16(in.data(), kChunk, h.data());
    castF32ToBf16(in.data(), kChunk, b.data());
    for (size_t i = 0; i < kChunk; ++i) {
      if (h[i] != floatToF16(in[i]) || b[i] != floatToBf16(in[i]))
        FAIL() << std::hex << "input 0x" << (base + i) << " f16 0x" << h[i] << " want 0x" << floatToF16(in[i])
               << " bf16 0x" << b[i] << " want 0x" << floatToBf16(in[i]);
    }
  }
}

TEST(Cast, VectorPathIsTheActiveOneOnThisCpu) {
  if (bestIsa() != Isa::kAvx2) GTEST_SKIP() << "no AVX2 here: the portable path only";
  EXPECT_EQ(activeIsa(), Isa::kAvx2);
  std::printf("F16C: %s\n", cpuHasF16c() ? "yes (f16 casts vectorized)" : "no (f16 casts portable)");
}

}  // namespace
}  // namespace tsr::kernels
