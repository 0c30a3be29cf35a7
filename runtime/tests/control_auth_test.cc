// ControlAuth on its own: what a receiver accepts, what it drops, and what sealing costs.
#include "runtime/control_auth.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace tsr::runtime {
namespace {

Digest keyFor(const std::string& secret, const std::string& nonce0 = "nonce-of-rank-0") {
  auto key = deriveControlKey(secret, "job", {"card 0 " + nonce0, "card 1", "card 2"});
  EXPECT_TRUE(key.isOk()) << key.status().toString();
  return key.isOk() ? key.value() : Digest{};
}

const std::string kSecret = "a job secret of 16+ bytes";

TEST(ControlAuth, KeyIsTheSameForTheSameJobAndCardsOnly) {
  EXPECT_EQ(keyFor(kSecret), keyFor(kSecret));
  EXPECT_NE(keyFor(kSecret), keyFor("another secret of 16+ bytes"));
  EXPECT_NE(keyFor(kSecret), keyFor(kSecret, "another nonce"));  // the next communicator
  auto otherJob = deriveControlKey(kSecret, "job2", {"card 0 nonce-of-rank-0", "card 1", "card 2"});
  ASSERT_TRUE(otherJob.isOk());
  EXPECT_NE(keyFor(kSecret), otherJob.value());
  // Lengths are part of the input: moving a byte between cards changes the key.
  auto shifted = deriveControlKey(kSecret, "job", {"card 0 nonce-of-rank-", "0card 1", "card 2"});
  ASSERT_TRUE(shifted.isOk());
  EXPECT_NE(keyFor(kSecret), shifted.value());
  // TSR_INSECURE=1 without a secret still has a key, from the cards alone.
  EXPECT_NE(keyFor(""), Digest{});
}

TEST(ControlAuth, ASealedMessageOpensOnItsReceiverOnce) {
  ControlAuth rank1(keyFor(kSecret), 1, 3, 0), rank0(keyFor(kSecret), 0, 3, 0), rank2(keyFor(kSecret), 2, 3, 0);
  auto wire = rank1.seal(0, "goodbye");
  ASSERT_TRUE(wire.isOk());
  EXPECT_EQ(wire.value().size(), 7 + kControlOverhead);
  // Redirected to another rank, or claimed by another sender: wrong MAC.
  EXPECT_FALSE(rank2.open(1, wire.value()).isOk());
  EXPECT_FALSE(rank0.open(2, wire.value()).isOk());
  auto body = rank0.open(1, wire.value());
  ASSERT_TRUE(body.isOk()) << body.status().toString();
  EXPECT_EQ(body.value(), "goodbye");
  // The same bytes again: a replay.
  auto again = rank0.open(1, wire.value());
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.status().message().find("replayed"), std::string::npos) << again.status().toString();
}

TEST(ControlAuth, AnOlderMessageIsDroppedAfterANewerOneAndGapsAreFine) {
  ControlAuth rank1(keyFor(kSecret), 1, 3, 0), rank0(keyFor(kSecret), 0, 3, 0);
  auto first = rank1.seal(0, "a");
  auto toOther = rank1.seal(2, "b");  // a counter rank 0 never sees
  auto third = rank1.seal(0, "c");
  ASSERT_TRUE(first.isOk() && toOther.isOk() && third.isOk());
  ASSERT_TRUE(rank0.open(1, third.value()).isOk());
  EXPECT_FALSE(rank0.open(1, first.value()).isOk());
  // Another sender's counters are its own.
  ControlAuth rank2(keyFor(kSecret), 2, 3, 0);
  auto fromTwo = rank2.seal(0, "d");
  ASSERT_TRUE(fromTwo.isOk());
  EXPECT_TRUE(rank0.open(2, fromTwo.value()).isOk());
}

TEST(ControlAuth, ForgedAlteredOrUnsealedMessagesAreDropped) {
  ControlAuth rank1(keyFor(kSecret), 1, 3, 0), rank0(keyFor(kSecret), 0, 3, 0);
  ControlAuth stranger(keyFor("not the job's secret!!"), 1, 3, 0);
  ControlAuth otherComm(keyFor(kSecret), 1, 3, 1);
  auto forged = stranger.seal(0, "1\n-1:-1\nforged");
  auto elsewhere = otherComm.seal(0, "1\n-1:-1\nfor communicator 1");
  ASSERT_TRUE(forged.isOk() && elsewhere.isOk());
  EXPECT_FALSE(rank0.open(1, forged.value()).isOk());
  EXPECT_FALSE(rank0.open(1, elsewhere.value()).isOk());
  EXPECT_FALSE(rank0.open(1, "goodbye").isOk());
  EXPECT_FALSE(rank0.open(1, std::string(80, 'x')).isOk());
  EXPECT_FALSE(rank0.open(1, "").isOk());
  auto genuine = rank1.seal(0, "1\n-1:-1\nreal");
  ASSERT_TRUE(genuine.isOk());
  for (size_t at : {size_t{0}, size_t{9}, genuine.value().size() - 1}) {
    std::string altered = genuine.value();
    altered[at] ^= 1;
    EXPECT_FALSE(rank0.open(1, altered).isOk()) << "byte " << at;
  }
  // Senders outside the job, or this rank itself.
  EXPECT_FALSE(rank0.open(3, genuine.value()).isOk());
  EXPECT_FALSE(rank0.open(-1, genuine.value()).isOk());
  EXPECT_FALSE(rank0.open(0, genuine.value()).isOk());
  // None of these moved the window: the genuine one still opens.
  EXPECT_TRUE(rank0.open(1, genuine.value()).isOk());
}

// Control messages are rare (an abort or mismatch notice, a goodbye per peer at the end), so
// this is for the record: what one seal and one open cost.
TEST(ControlAuth, SealAndOpenCostMicroseconds) {
  ControlAuth rank1(keyFor(kSecret), 1, 2, 0), rank0(keyFor(kSecret), 0, 2, 0);
  const std::string body = "4\n17:17\nallreduce #17: count differs: rank 1 called 99, rank 0 called 100";
  constexpr int kRounds = 20000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    auto wire = rank1.seal(0, body);
    ASSERT_TRUE(wire.isOk());
    ASSERT_TRUE(rank0.open(1, wire.value()).isOk());
  }
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kRounds;
  std::printf("seal + open of a %zu-byte notice: %.2f us\n", body.size(), us);
  RecordProperty("seal_and_open_us", std::to_string(us));
  EXPECT_LT(us, 1000.0);  // generous: shared machines; a few microseconds is the expectation
}

// What deriving the key adds to a communicator's creation, for 1024 ranks' cards.
TEST(ControlAuth, KeyForAThousandRanksCostsLittle) {
  std::vector<std::string> cards(1024, std::string(300, 'c'));
  auto start = std::chrono::steady_clock::now();
  auto key = deriveControlKey(kSecret, "job", cards);
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(key.isOk());
  std::printf("control key over 1024 cards of 300 bytes: %.0f us\n", us);
  RecordProperty("derive_1024_us", std::to_string(us));
  EXPECT_LT(us, 100000.0);
}

}  // namespace
}  // namespace tsr::runtime
