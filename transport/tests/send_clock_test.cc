#include "transport/send_clock.h"

#include <gtest/gtest.h>

namespace tsr::transport {
namespace {

using Clock = SendClock::Clock;
using std::chrono::milliseconds;

TEST(SendClock, OverlappingSendsCountTheirBusyTimeOnce) {
  SendClock clock(3);
  Clock::time_point t0{};
  clock.posted(1, t0);
  clock.posted(1, t0 + milliseconds(100));
  clock.completed(1, 1000, t0 + milliseconds(300));
  clock.completed(1, 3000, t0 + milliseconds(500));
  auto totals = clock.totals(t0 + milliseconds(900));
  EXPECT_EQ(totals[1].bytes, 4000u);
  EXPECT_DOUBLE_EQ(totals[1].busySeconds, 0.5);
  EXPECT_EQ(totals[2].bytes, 0u);  // other peers untouched
  EXPECT_DOUBLE_EQ(totals[2].busySeconds, 0);
}

TEST(SendClock, IdleGapsAreNotCountedAndSendsInFlightCountSoFar) {
  SendClock clock(2);
  Clock::time_point t0{};
  clock.posted(0, t0);
  clock.completed(0, 100, t0 + milliseconds(200));
  clock.posted(0, t0 + milliseconds(1200));  // a second of nothing in between
  auto totals = clock.totals(t0 + milliseconds(1500));
  EXPECT_EQ(totals[0].bytes, 100u);
  EXPECT_DOUBLE_EQ(totals[0].busySeconds, 0.5);
}

TEST(SendClock, AFailedSendEndsItsBusyTimeWithoutBytes) {
  SendClock clock(1);
  Clock::time_point t0{};
  clock.posted(0, t0);
  clock.completed(0, 0, t0 + milliseconds(100));
  clock.completed(0, 50, t0 + milliseconds(200));  // nothing in flight: ignored
  auto totals = clock.totals(t0 + milliseconds(300));
  EXPECT_EQ(totals[0].bytes, 0u);
  EXPECT_DOUBLE_EQ(totals[0].busySeconds, 0.1);
}

}  // namespace
}  // namespace tsr::transport
