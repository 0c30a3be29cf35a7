// Strangers at a rank's bootstrap port: garbage bytes, the wrong secret, the right secret but
// the wrong rank, and silence. Each is refused and logged with its address and reason (nothing
// it sent verbatim, and a flood of them in a few lines); none joins, none holds the job up, and
// the job still gathers the right blobs.
#include <gtest/gtest.h>

#include <future>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/tests/test_util.h"

namespace tsr::runtime {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

void expectCorrect(const RankOutcome& out, int rank, int n) {
  ASSERT_TRUE(out.status.isOk()) << "rank " << rank << ": " << out.status.toString();
  ASSERT_EQ(out.gathers.size(), 1u);
  ASSERT_EQ(out.gathers[0].size(), static_cast<size_t>(n));
  for (int from = 0; from < n; ++from)
    EXPECT_TRUE(out.gathers[0][from] == blobFor(from, 0)) << "rank " << rank << " from " << from;
}

// Connects, sends `bytes`, and reads until the other side closes. Returns our local address.
std::string sendGarbage(uint16_t port, const std::string& bytes) {
  asio::io_context io;
  tcp::socket s(io);
  boost::system::error_code ec;
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_FALSE(ec) << ec.message();
  std::string me = detail::endpointString(s.local_endpoint(ec));
  asio::write(s, asio::buffer(bytes), ec);
  char buf[256];
  while (!ec) s.read_some(asio::buffer(buf), ec);  // the greeting, then EOF when refused
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  return me;
}

TEST(BootstrapStrangers, AreRefusedLoggedAndTheJobStillFinishes) {
  const int n = 3;
  auto infos = localInfos(n);
  BootstrapOptions options;
  options.timeoutMs = 20000;
  options.handshakeTimeoutMs = 5000;
  LogCapture log;
  // Ranks 1 and 2 start; rank 1 waits for its left neighbour, rank 0, which starts last.
  auto rank1 = std::async(std::launch::async, runRank, infos[1], options, 1);
  auto rank2 = std::async(std::launch::async, runRank, infos[2], options, 1);
  uint16_t port1 = infos[1].peers[1].port;
  ASSERT_TRUE(waitListening(port1));

  // A silent stranger holds a connection open the whole time.
  asio::io_context io;
  tcp::socket silent(io);
  silent.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port1));

  std::string garbageFrom = sendGarbage(port1, "GET / HTTP/1.1\r\nHost: tessera\r\n\r\n" + std::string(64, 'x'));
  EXPECT_TRUE(log.waitFor("rejected bootstrap connection from " + garbageFrom + ": not a Tessera bootstrap claim"))
      << log.text();

  detail::HandshakeParams wrongSecret{0, 1, infos[0].jobId, "not-the-secret", std::chrono::milliseconds(3000)};
  Status s = detail::dialOnce(infos[0].peers[1], wrongSecret);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("refused our claim"), std::string::npos) << s.message();
  EXPECT_TRUE(log.waitFor("the claim's HMAC does not verify (wrong job secret")) << log.text();

  detail::HandshakeParams wrongRank{2, 1, infos[0].jobId, infos[0].secret, std::chrono::milliseconds(3000)};
  EXPECT_FALSE(detail::dialOnce(infos[0].peers[1], wrongRank).isOk());
  EXPECT_TRUE(
      log.waitFor("authenticated as rank 2, but only rank 0 (the left neighbour) may "
                  "connect here"))
      << log.text();

  detail::HandshakeParams wrongJob{0, 1, "job-2", infos[0].secret, std::chrono::milliseconds(3000)};
  EXPECT_FALSE(detail::dialOnce(infos[0].peers[1], wrongJob).isOk());
  EXPECT_TRUE(log.waitFor("holds the job secret but claims job id 'job-2', which is not this job's")) << log.text();

  // The real rank 0 joins at once although the silent stranger is still connected.
  auto start = Clock::now();
  RankOutcome out0 = runRank(infos[0], options, 1);
  RankOutcome out1 = rank1.get();
  RankOutcome out2 = rank2.get();
  auto elapsedMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_LT(elapsedMs, options.handshakeTimeoutMs) << "the silent stranger held the job up";
  expectCorrect(out0, 0, n);
  expectCorrect(out1, 1, n);
  expectCorrect(out2, 2, n);
}

TEST(BootstrapStrangers, SilentStrangerIsDroppedAfterTheHandshakeTimeout) {
  auto infos = localInfos(2);
  BootstrapOptions options;
  options.timeoutMs = 20000;
  options.handshakeTimeoutMs = 300;
  LogCapture log;
  auto rank1 = std::async(std::launch::async, runRank, infos[1], options, 1);
  uint16_t port1 = infos[1].peers[1].port;
  ASSERT_TRUE(waitListening(port1));
  asio::io_context io;
  tcp::socket silent(io);
  silent.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port1));
  std::string from = detail::endpointString(silent.local_endpoint());
  EXPECT_TRUE(log.waitFor("rejected bootstrap connection from " + from + ": no complete handshake within 300 ms"))
      << log.text();
  RankOutcome out0 = runRank(infos[0], options, 1);
  RankOutcome out1 = rank1.get();
  expectCorrect(out0, 0, 2);
  expectCorrect(out1, 1, 2);
}

TEST(BootstrapStrangers, OversizedClaimIsRefused) {
  auto infos = localInfos(2);
  BootstrapOptions options;
  options.timeoutMs = 20000;
  LogCapture log;
  auto rank1 = std::async(std::launch::async, runRank, infos[1], options, 1);
  uint16_t port1 = infos[1].peers[1].port;
  ASSERT_TRUE(waitListening(port1));
  // A well-formed claim head announcing a 65535-byte job id.
  std::string head = {'T', 'S', 'R', 'B', 0, static_cast<char>(wire::kVersion), 0, 0, 0, 0, '\xff', '\xff'};
  std::string from = sendGarbage(port1, head);
  EXPECT_TRUE(log.waitFor("rejected bootstrap connection from " + from + ": claimed job id length 65535 exceeds 256"))
      << log.text();
  RankOutcome out0 = runRank(infos[0], options, 1);
  RankOutcome out1 = rank1.get();
  expectCorrect(out0, 0, 2);
  expectCorrect(out1, 1, 2);
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A job id with a terminal escape and a line of its own: from a stranger (wrong secret) none
// of it is repeated; from a holder of the secret (another job) it is repeated escaped.
TEST(BootstrapStrangers, NothingTheyClaimReachesTheLogVerbatim) {
  auto infos = localInfos(2);
  BootstrapOptions options;
  options.timeoutMs = 20000;
  LogCapture log;
  auto rank1 = std::async(std::launch::async, runRank, infos[1], options, 1);
  ASSERT_TRUE(waitListening(infos[1].peers[1].port));
  const std::string forged = "job\x1b[31m\n[tessera rank 1] [bootstrap] [info] all is well";
  detail::HandshakeParams stranger{0, 1, forged, "not-the-secret", std::chrono::milliseconds(3000)};
  EXPECT_FALSE(detail::dialOnce(infos[0].peers[1], stranger).isOk());
  EXPECT_TRUE(log.waitFor("the claim's HMAC does not verify")) << log.text();
  detail::HandshakeParams otherJob{0, 1, forged, infos[0].secret, std::chrono::milliseconds(3000)};
  EXPECT_FALSE(detail::dialOnce(infos[0].peers[1], otherJob).isOk());
  EXPECT_TRUE(log.waitFor("claims job id 'job\\x1b[31m\\x0a[tessera rank 1]")) << log.text();
  RankOutcome out0 = runRank(infos[0], options, 1);
  EXPECT_TRUE(out0.status.isOk() && rank1.get().status.isOk());
  EXPECT_EQ(log.text().find('\x1b'), std::string::npos) << log.text();
  EXPECT_EQ(count(log.text(), "all is well"), 1u) << "only the escaped echo of the holder of the secret";
}

// Sixty garbage connections: ten lines, then one saying how many more there were.
TEST(BootstrapStrangers, AFloodOfRejectionsIsLoggedInAFewLines) {
  auto infos = localInfos(2);
  BootstrapOptions options;
  options.timeoutMs = 20000;
  LogCapture log;
  auto rank1 = std::async(std::launch::async, runRank, infos[1], options, 1);
  uint16_t port1 = infos[1].peers[1].port;
  ASSERT_TRUE(waitListening(port1));
  for (int i = 0; i < 60; ++i) sendGarbage(port1, std::string(16, 'x'));
  RankOutcome out0 = runRank(infos[0], options, 1);
  EXPECT_TRUE(out0.status.isOk() && rank1.get().status.isOk());
  std::string text = log.text();
  EXPECT_EQ(count(text, "rejected bootstrap connection from"), 10u) << text;
  // waitListening's probe connection is one of the rejected too.
  EXPECT_NE(text.find("51 more bootstrap connections were rejected and not logged one by one"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace tsr::runtime
