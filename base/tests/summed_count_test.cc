// A count summed over ranks is printed as a count only when it is one: a peer may send any
// double, and converting one out of int's range is undefined behaviour (found by
// fuzz/marsit_fuzzer.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/summed_count.h"

namespace tsr {
namespace {

TEST(SummedCount, WholeNumbersUpToTheLimitAreCounts) {
  EXPECT_EQ(summedCount(0, 4, "rank(s)"), "0 rank(s)");
  EXPECT_EQ(summedCount(3, 4, "rank(s)"), "3 rank(s)");
  EXPECT_EQ(summedCount(4, 4, "rank(s)"), "4 rank(s)");
}

TEST(SummedCount, AnythingElseIsNamedMalformed) {
  for (double bad : {1e300, -1e300, 5.0, -1.0, 2.5, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    std::string text = summedCount(bad, 4, "rank(s)");
    EXPECT_EQ(text.rfind("some rank(s) (", 0), 0u) << bad << ": " << text;
    EXPECT_NE(text.find("malformed"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace tsr
