#include "transport/tag.h"

#include <gtest/gtest.h>

namespace tsr::transport {
namespace {

TEST(Tag, FieldsDoNotOverlap) {
  uint64_t a = makeDataTag(kMaxRanks - 1, 0, 0, 0);
  uint64_t b = makeDataTag(0, 255, 0, 0);
  uint64_t c = makeDataTag(0, 0, static_cast<uint32_t>(kTagSeqMask), 0);
  uint64_t d = makeDataTag(0, 0, 0, kHeaderMessageId);
  uint64_t e = makeControlTag(0, 0);
  uint64_t f = makePointToPointTag(0, 0, 0, 0);
  EXPECT_EQ(a & b, 0u);
  EXPECT_EQ((a | b) & c, 0u);
  EXPECT_EQ((a | b | c) & d, 0u);
  EXPECT_EQ((a | b | c | d) & e, 0u);
  EXPECT_EQ((a | b | c | d | e) & f, 0u);
  EXPECT_EQ(a | b | c | d | e | f, ~uint64_t{0});
  // A point-to-point message never matches a collective's of the same numbers.
  EXPECT_NE(makePointToPointTag(1, 2, 3, 4), makeDataTag(1, 2, 3, 4));
  EXPECT_EQ(tagSource(makePointToPointTag(9, 2, 3, kMaxPointToPointTag)), 9);
  EXPECT_EQ(tagSource(makeDataTag(77, 3, 9, 11)), 77);
  // Control tags of one communicator match the control mask; data tags never do.
  EXPECT_EQ(makeControlTag(5, 3) & kControlTagMask, makeControlTag(0, 3) & kControlTagMask);
  EXPECT_NE(makeDataTag(5, 3, 1, 1) & kControlTagMask, makeControlTag(0, 3) & kControlTagMask);
}

}  // namespace
}  // namespace tsr::transport
