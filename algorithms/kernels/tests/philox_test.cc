#include "algorithms/kernels/philox.h"

#include <set>

#include <gtest/gtest.h>

namespace tsr::kernels {
namespace {

// Known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds).
TEST(Philox, MatchesRandom123KnownAnswers) {
  Philox4x32 a = philox4x32(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(a.v[0], 0x6627e8d5u);
  EXPECT_EQ(a.v[1], 0xe169c58du);
  EXPECT_EQ(a.v[2], 0xbc57ac4cu);
  EXPECT_EQ(a.v[3], 0x9b00dbd8u);
  Philox4x32 b = philox4x32(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(b.v[0], 0x408f276du);
  EXPECT_EQ(b.v[1], 0x41c83b0eu);
  EXPECT_EQ(b.v[2], 0xa20bc7c6u);
  EXPECT_EQ(b.v[3], 0x6d5451fdu);
  Philox4x32 c = philox4x32(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[1], 0x94fdccebu);
  EXPECT_EQ(c.v[2], 0x5001e420u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

TEST(Philox, StreamsDifferBySeedRankStepPurposeAndIndex) {
  std::set<uint64_t> seen;
  const RngStream base{1, 2, 3};
  auto word = [](const RngStream& s, RngPurpose p, uint64_t i) { return philoxWord64(philoxDraw(s, p, i), 0); };
  seen.insert(word(base, RngPurpose::kMergeMask, 0));
  seen.insert(word(RngStream{2, 2, 3}, RngPurpose::kMergeMask, 0));
  seen.insert(word(RngStream{1, 3, 3}, RngPurpose::kMergeMask, 0));
  seen.insert(word(RngStream{1, 2, 4}, RngPurpose::kMergeMask, 0));
  seen.insert(word(base, RngPurpose::kZeroSign, 0));
  seen.insert(word(base, RngPurpose::kMergeMask, 1));
  seen.insert(word(base, RngPurpose::kMergeMask, uint64_t{1} << 32));
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(word(base, RngPurpose::kMergeMask, 5), word(base, RngPurpose::kMergeMask, 5));
}

TEST(Philox, UniformBelowStaysInRange) {
  for (uint64_t bound : {1ull, 2ull, 3ull, 1000ull, (1ull << 40) + 7}) {
    for (uint64_t i = 0; i < 1000; ++i) {
      uint64_t r = philoxWord64(philoxDraw(RngStream{9, 0, 0}, RngPurpose::kTest, i), 1);
      EXPECT_LT(uniformBelow(r, bound), bound);
    }
  }
  EXPECT_EQ(uniformBelow(~0ull, 10), 9u);
  EXPECT_EQ(uniformBelow(0, 10), 0u);
}

}  // namespace
}  // namespace tsr::kernels
