// A replacement joining a running job, at the link level (join_link.h), over real sockets on
// loopback: a process with the job's join key is taken and gets its welcome; one without it
// (another job's key, garbage) is refused at the handshake and never reaches the member; a
// replacement whose member vanishes goes on to the next; the welcome's secret is sealed.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "runtime/bootstrap/join_link.h"
#include "runtime/bootstrap/join_wire.h"
#include "runtime/bootstrap/tests/test_util.h"

namespace tsr::runtime {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

JoinCredentials credentials(const std::string& secret) {
  auto key = joinKey(secret, "job-1");
  return JoinCredentials{std::string(asView(key.value())), "job-1", 500};
}

// Waits (bounded) until the listener holds `n` replacements and takes them.
std::vector<PendingJoiner> takeWhenWaiting(JoinListener& door, size_t n) {
  std::vector<PendingJoiner> taken;
  for (auto until = Clock::now() + std::chrono::seconds(10); taken.size() < n && Clock::now() < until;) {
    for (auto& j : door.take()) taken.push_back(std::move(j));
    if (taken.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return taken;
}

TEST(Join, AReplacementWithTheSecretIsTakenAndWelcomed) {
  auto infos = localInfos(2);
  auto door = JoinListener::open(infos[0], credentials("test-secret-of-16+bytes"));
  ASSERT_TRUE(door.isOk()) << door.status().toString();
  JoinRequest mine{"", 4242, "machine-7"};
  auto joining = std::async(std::launch::async, [&] {
    return requestToJoin({infos[0].peers[0]}, credentials("test-secret-of-16+bytes"), mine, 10000);
  });
  auto taken = takeWhenWaiting(*door.value(), 1);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].request.port, 4242);
  EXPECT_EQ(taken[0].request.hostId, "machine-7");
  EXPECT_EQ(taken[0].host(), "127.0.0.1");  // no host given: where the member saw it
  Digest secret{};
  secret[0] = 0x5a;
  auto sealed = sealForLink(taken[0].sessionKey, "test", secret);
  ASSERT_TRUE(sealed.isOk());
  EXPECT_NE(sealed.value(), secret);
  ASSERT_TRUE(sendWelcome(taken[0], "hello " + toHex(sealed.value().data(), kDigestBytes), 2000).isOk());
  auto welcome = joining.get();
  ASSERT_TRUE(welcome.isOk()) << welcome.status().toString();
  EXPECT_EQ(welcome.value().payload, "hello " + toHex(sealed.value().data(), kDigestBytes));
  EXPECT_EQ(welcome.value().from, infos[0].peers[0].toString());
  auto opened = sealForLink(welcome.value().sessionKey, "test", sealed.value());
  ASSERT_TRUE(opened.isOk());
  EXPECT_EQ(opened.value(), secret);          // only the two ends of this link can open it
  EXPECT_TRUE(door.value()->take().empty());  // taken once
}

// Without the job secret nobody gets past the handshake: the member never sees the request,
// and the stranger is told nothing but its refusal, at its deadline.
TEST(Join, AStrangerWithoutTheSecretIsRefused) {
  auto infos = localInfos(2);
  auto door = JoinListener::open(infos[0], credentials("test-secret-of-16+bytes"));
  ASSERT_TRUE(door.isOk());
  const auto started = Clock::now();
  auto stranger = requestToJoin({infos[0].peers[0]}, credentials("another-jobs-secret-16+"), {"", 4243, "x"}, 1500);
  ASSERT_FALSE(stranger.isOk());
  EXPECT_EQ(stranger.status().code(), Code::kTimeout) << stranger.status().toString();
  EXPECT_NE(stranger.status().message().find("refused our claim"), std::string::npos) << stranger.status().message();
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(door.value()->take().empty());
}

// A member that is not there (refused), then one that closes the link after taking the
// request (it died): the replacement goes on and is welcomed by the next.
TEST(Join, AReplacementGoesOnToTheNextMemberWhenOneIsGone) {
  auto infos = localInfos(3);
  auto first = JoinListener::open(infos[1], credentials("test-secret-of-16+bytes"));
  auto second = JoinListener::open(infos[2], credentials("test-secret-of-16+bytes"));
  ASSERT_TRUE(first.isOk() && second.isOk());
  auto joining = std::async(std::launch::async, [&] {
    return requestToJoin(infos[0].peers, credentials("test-secret-of-16+bytes"), {"", 4244, "m"}, 10000);
  });
  auto taken = takeWhenWaiting(*first.value(), 1);
  ASSERT_EQ(taken.size(), 1u);
  taken.clear();  // the link closes: as if this member died
  first.value().reset();
  auto next = takeWhenWaiting(*second.value(), 1);
  ASSERT_EQ(next.size(), 1u);
  ASSERT_TRUE(sendWelcome(next[0], "in", 2000).isOk());
  auto welcome = joining.get();
  ASSERT_TRUE(welcome.isOk()) << welcome.status().toString();
  EXPECT_EQ(welcome.value().from, infos[2].peers[2].toString());
}

TEST(Join, RequestsRoundTripAndBadOnesAreNamed) {
  auto r = detail::decodeJoinRequest(detail::encodeJoinRequest({"tsr3", 29400, "id-3"}));
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r.value().host, "tsr3");
  EXPECT_EQ(r.value().port, 29400);
  EXPECT_EQ(r.value().hostId, "id-3");
  EXPECT_FALSE(detail::decodeJoinRequest("tsr3\n70000\nid").isOk());
  EXPECT_FALSE(detail::decodeJoinRequest("tsr3 29400").isOk());
  EXPECT_NE(detail::decodeJoinRequest("h\nx\ni").status().message().find("port 'x'"), std::string::npos);
}

}  // namespace
}  // namespace tsr::runtime
