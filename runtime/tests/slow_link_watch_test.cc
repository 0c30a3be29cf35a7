#include "runtime/slow_link_watch.h"

#include <gtest/gtest.h>

namespace tsr::runtime {
namespace {

using Clock = SlowLinkWatch::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using transport::PeerSendTime;

constexpr double kExpected = 100e6;  // bytes/s, the links to other hosts
constexpr uint64_t kMiB = 1u << 20;

// Rank 0's view of a 4-rank job: rank 1 on its host (not judged), ranks 2 and 3 elsewhere.
SlowLinkWatch fourRanks() { return SlowLinkWatch({0, 0, kExpected, kExpected}, SlowLinkWatch::Options{}); }

TEST(SlowLinkWatch, NamesOnlyAPeerWellBelowItsMeasuredRate) {
  SlowLinkWatch watch = fourRanks();
  Clock::time_point t{};
  t += seconds(1);
  ASSERT_TRUE(watch.due(t));
  std::vector<PeerSendTime> totals(4);
  EXPECT_TRUE(watch.judge(t, totals).empty());  // the first look only sets the baseline
  t += seconds(2);
  EXPECT_TRUE(watch.due(t));
  totals[1] = {64 * kMiB, 2.0};   // slow, but on this host: not judged
  totals[2] = {20 * kMiB, 2.0};   // 10.5 MB/s: a tenth
  totals[3] = {160 * kMiB, 2.0};  // 84 MB/s: fine
  auto slow = watch.judge(t, totals);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].peer, 2);
  EXPECT_NEAR(slow[0].bytesPerSecond, 20.0 * kMiB / 2.0, 1);
  EXPECT_EQ(slow[0].expected, kExpected);
  EXPECT_EQ(slow[0].bytes, 20 * kMiB);
}

TEST(SlowLinkWatch, JudgesTheWindowNotTheWholeRun) {
  SlowLinkWatch watch = fourRanks();
  Clock::time_point t = Clock::time_point{} + seconds(1);
  std::vector<PeerSendTime> totals(4);
  totals[2] = {1000 * kMiB, 10.0};  // fast for a long time before
  watch.judge(t, totals);
  t += seconds(2);
  totals[2] = {1000 * kMiB + 10 * kMiB, 12.0};  // then 10 MiB in 2 s
  auto slow = watch.judge(t, totals);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_NEAR(slow[0].busySeconds, 2.0, 1e-9);
}

TEST(SlowLinkWatch, TooLittleTrafficIsNotJudgedAndAWarnedPeerWaitsAMinute) {
  SlowLinkWatch watch = fourRanks();
  Clock::time_point t = Clock::time_point{} + seconds(1);
  std::vector<PeerSendTime> totals(4);
  watch.judge(t, totals);
  t += seconds(2);
  totals[2] = {kMiB, 2.0};  // slow, but under minBytes: a few small messages say little
  EXPECT_TRUE(watch.judge(t, totals).empty());
  t += seconds(2);
  totals[2] = {kMiB + 10 * kMiB, 4.0};
  EXPECT_EQ(watch.judge(t, totals).size(), 1u);
  t += seconds(2);
  totals[2] = {kMiB + 20 * kMiB, 6.0};
  EXPECT_TRUE(watch.judge(t, totals).empty()) << "warned again within the quiet minute";
  t += seconds(60);
  totals[2] = {kMiB + 30 * kMiB, 8.0};
  EXPECT_EQ(watch.judge(t, totals).size(), 1u);
}

TEST(SlowLinkWatch, NothingToJudgeOnOneHostOrWithoutMeasurements) {
  SlowLinkWatch oneHost({0, 0, 0}, SlowLinkWatch::Options{});
  EXPECT_FALSE(oneHost.due(Clock::now()));
  SlowLinkWatch watch = fourRanks();
  EXPECT_TRUE(watch.judge(Clock::now(), {}).empty());  // a transport that does not measure
}

}  // namespace
}  // namespace tsr::runtime
