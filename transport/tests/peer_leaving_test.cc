// A peer's endpoint failing is a warning while this rank still works with it, and quiet once
// this rank has begun leaving (said goodbye): at the end of a job a peer may close before its
// goodbye is read, which is not news (seen: "lost its connection" after a clean job, 6 of 30
// runs on the emulated cluster).
#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include "base/logging.h"
#include "transport/tag.h"
#include "transport/tests/ucx_world.h"

namespace tsr::transport {
namespace {

using testing::makeWorld;
using testing::progressUntil;

// Captures what the transport logger writes at warn and above while it lives.
class TransportWarnings {
 public:
  TransportWarnings() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    sink_->set_level(spdlog::level::warn);
    log::get("transport")->sinks().push_back(sink_);
  }
  ~TransportWarnings() {
    auto& sinks = log::get("transport")->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// Rank 0 sees rank 1 go (rank 1's transport destroyed) after leaving or not; what it logged.
std::string lossSeenByRankZero(bool leaving) {
  auto world = makeWorld(2);
  uint64_t value = 7, got = 0;  // one message first, so the endpoints are wired up
  Completion s, r;
  uint64_t tag = makeDataTag(0, 1, 1, 1);
  EXPECT_TRUE(world[1]->recv(0, tag, kTagFullMask, &got, sizeof got, MemoryType::kHost, &r).isOk());
  EXPECT_TRUE(world[0]->send(1, tag, &value, sizeof value, MemoryType::kHost, &s).isOk());
  EXPECT_TRUE(progressUntil(world, {&s, &r}));

  TransportWarnings warnings;
  world[0]->setPeerHosts({"host-a", "host-b"});  // as the communicator does
  if (leaving) world[0]->beginLeaving();
  world[1].reset();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (world[0]->peerStatus(1).isOk() && std::chrono::steady_clock::now() < deadline) world[0]->progress();
  Status seen = world[0]->peerStatus(1);
  EXPECT_EQ(seen.code(), Code::kPeerFailed) << seen.toString();  // recorded either way
  return warnings.text();
}

TEST(UcxPeerLoss, IsAWarningWhileThisRankStillWorks) {
  std::string logged = lossSeenByRankZero(false);
  // The peer is named with its host, as every other error names it.
  EXPECT_NE(logged.find("rank 0 lost its connection to rank 1 (host-b) (UCX: "), std::string::npos) << logged;
}

TEST(UcxPeerLoss, IsQuietOnceThisRankBeganLeaving) {
  std::string logged = lossSeenByRankZero(true);
  EXPECT_EQ(logged, "");
}

}  // namespace
}  // namespace tsr::transport
