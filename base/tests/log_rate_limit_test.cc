// LogRateLimit lets `burst` lines through per window, counts the rest, and hands the count to
// the next line let through; printable() keeps outside text from reaching a log verbatim.
#include "base/log_rate_limit.h"

#include <gtest/gtest.h>

#include "base/logging.h"

namespace tsr::log {
namespace {

using std::chrono::seconds;

TEST(LogRateLimit, BurstPerWindowThenTheCountOfWhatWasHeldBack) {
  LogRateLimit limit(3, seconds(10));
  auto t0 = LogRateLimit::Clock::time_point{} + seconds(100);
  uint64_t heldBack = 99;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limit.allow(t0 + seconds(i), &heldBack));
    EXPECT_EQ(heldBack, 0u);
  }
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limit.allow(t0 + seconds(5), &heldBack));
  EXPECT_TRUE(limit.allow(t0 + seconds(10), &heldBack));  // a new window
  EXPECT_EQ(heldBack, 5u);
  EXPECT_TRUE(limit.allow(t0 + seconds(11), &heldBack));
  EXPECT_EQ(heldBack, 0u);
  EXPECT_TRUE(limit.allow(t0 + seconds(12), &heldBack));
  EXPECT_FALSE(limit.allow(t0 + seconds(13), &heldBack));
  EXPECT_EQ(limit.takeHeldBack(), 1u);
  EXPECT_EQ(limit.takeHeldBack(), 0u);
}

TEST(Printable, EscapesWhatIsNotPrintableAscii) {
  EXPECT_EQ(printable("job-7 ok"), "job-7 ok");
  EXPECT_EQ(printable("a\nb\x1b[31m\\\xff"), "a\\x0ab\\x1b[31m\\x5c\\xff");
  EXPECT_EQ(printable(std::string(100, 'x'), 8), "xxxxxxxx...");
  EXPECT_EQ(printable(std::string("\0z", 2)), "\\x00z");
}

}  // namespace
}  // namespace tsr::log
