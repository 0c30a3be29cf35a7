#include "runtime/bootstrap/wire.h"

#include <gtest/gtest.h>

namespace tsr::runtime::wire {
namespace {

Nonce nonceOf(uint8_t v) {
  Nonce n{};
  n.fill(v);
  return n;
}

TEST(Wire, HelloRoundTripAndGarbage) {
  std::string hello = encodeHello(nonceOf(7));
  ASSERT_EQ(hello.size(), kHelloBytes);
  auto back = decodeHello(hello);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back.value(), nonceOf(7));
  std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(40, ' ');
  auto bad = decodeHello(garbage.substr(0, kHelloBytes));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("not a Tessera bootstrap"), std::string::npos);
  hello[5] = 9;  // version
  EXPECT_NE(decodeHello(hello).status().message().find("version 9"), std::string::npos);
}

TEST(Wire, ClaimVerifiesOnlyWithTheRightSecretAndNonce) {
  auto bytes = encodeClaim("secret", nonceOf(1), 3, "job-7", nonceOf(2));
  ASSERT_TRUE(bytes.isOk());
  std::string_view all(bytes.value());
  auto head = decodeClaimHead(all.substr(0, kClaimHeadBytes));
  ASSERT_TRUE(head.isOk());
  EXPECT_EQ(head.value().rank, 3u);
  ASSERT_EQ(all.size(), kClaimHeadBytes + head.value().tailBytes());
  Claim claim = decodeClaimTail(head.value(), all.substr(kClaimHeadBytes));
  EXPECT_EQ(claim.jobId, "job-7");
  EXPECT_EQ(claim.nonce, nonceOf(2));
  EXPECT_TRUE(verifyClaim("secret", nonceOf(1), claim).isOk());
  EXPECT_FALSE(verifyClaim("other", nonceOf(1), claim).isOk());
  EXPECT_FALSE(verifyClaim("secret", nonceOf(9), claim).isOk());  // replay against a new nonce
  Claim forged = claim;
  forged.rank = 2;  // a claim cannot be re-labelled
  EXPECT_FALSE(verifyClaim("secret", nonceOf(1), forged).isOk());
}

TEST(Wire, ClaimHeadRejectsOversizedJobId) {
  auto bytes = encodeClaim("s", nonceOf(1), 0, "j", nonceOf(2));
  ASSERT_TRUE(bytes.isOk());
  std::string head = bytes.value().substr(0, kClaimHeadBytes);
  head[10] = '\x7f';  // job id length 0x7f01
  auto r = decodeClaimHead(head);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("exceeds"), std::string::npos);
  EXPECT_FALSE(encodeClaim("s", nonceOf(1), 0, std::string(300, 'j'), nonceOf(2)).isOk());
}

TEST(Wire, AnswerIsBoundToBothNoncesAndRanks) {
  auto bytes = encodeAnswer("s", nonceOf(1), nonceOf(2), "job", 4, 3);
  ASSERT_TRUE(bytes.isOk());
  auto answer = decodeAnswer(bytes.value());
  ASSERT_TRUE(answer.isOk());
  EXPECT_EQ(answer.value().rank, 4u);
  EXPECT_TRUE(verifyAnswer("s", nonceOf(1), nonceOf(2), "job", 3, answer.value()).isOk());
  EXPECT_FALSE(verifyAnswer("s", nonceOf(1), nonceOf(2), "job", 2, answer.value()).isOk());
  EXPECT_FALSE(verifyAnswer("s", nonceOf(1), nonceOf(3), "job", 3, answer.value()).isOk());
  EXPECT_FALSE(verifyAnswer("s", nonceOf(1), nonceOf(2), "other", 3, answer.value()).isOk());
}

TEST(Wire, FramesDetectTamperingAndReplay) {
  auto key = sessionKey("s", nonceOf(1), nonceOf(2), "job", 0, 1);
  auto otherKey = sessionKey("s", nonceOf(1), nonceOf(3), "job", 0, 1);
  ASSERT_TRUE(key.isOk() && otherKey.isOk());
  auto frame = encodeFrame(key.value(), 5, "payload");
  ASSERT_TRUE(frame.isOk());
  std::string f = frame.value();
  FrameHead head = decodeFrameHead(f);
  EXPECT_EQ(head.seq, 5u);
  EXPECT_EQ(head.length, 7u);
  std::string_view body = std::string_view(f).substr(kFrameHeadBytes);
  auto payload = body.substr(0, 7), mac = body.substr(7);
  EXPECT_TRUE(verifyFrame(key.value(), 5, payload, mac).isOk());
  EXPECT_FALSE(verifyFrame(key.value(), 6, payload, mac).isOk());       // replayed as seq 6
  EXPECT_FALSE(verifyFrame(otherKey.value(), 5, payload, mac).isOk());  // another link
  EXPECT_FALSE(verifyFrame(key.value(), 5, "paylOad", mac).isOk());     // tampered
  auto empty = encodeFrame(key.value(), 0, "");
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(empty.value().size(), kFrameHeadBytes + kDigestBytes);
}

}  // namespace
}  // namespace tsr::runtime::wire
