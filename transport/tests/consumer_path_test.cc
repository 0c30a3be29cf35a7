// The consumer path (transport.h) over real UCX: messages handed over where they land, ones
// that come before their receive, other lengths, cancelled receives. Transports in one
// process, progressed from one thread.
#include <chrono>
#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

#include "transport/tag.h"
#include "transport/tests/ucx_world.h"
#include "transport/ucx_transport.h"

namespace tsr::transport {
namespace {

using testing::makeWorld;
using testing::progressUntil;

// Copies what it is given and counts the calls.
struct Keep : Consumer {
  std::vector<uint8_t> got;
  size_t bytes = 0;
  int calls = 0;
  explicit Keep(size_t n) : bytes(n) {}
  void consume(const void* data) override {
    ++calls;
    got.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  }
};

std::vector<uint8_t> pattern(size_t bytes, uint8_t first) {
  std::vector<uint8_t> v(bytes);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Posted first, then sent; sizes from one byte to 8 MiB (beyond UCX's eager segments: the
// rendezvous fetch).
TEST(ConsumerPath, PostedReceivesGetEveryMessageOnce) {
  auto world = makeWorld(2);
  uint32_t id = 0;
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{512} << 10, size_t{8} << 20}) {
    auto out = pattern(bytes, static_cast<uint8_t>(bytes));
    Keep keep(bytes);
    Completion s, r;
    uint64_t tag = makeDataTag(0, 1, 3, ++id);
    ASSERT_TRUE(world[1]->recvToConsumer(0, tag, bytes, &keep, &r).isOk());
    ASSERT_TRUE(world[0]->sendToConsumer(1, tag, out.data(), bytes, &s).isOk());
    ASSERT_TRUE(progressUntil(world, {&s, &r})) << bytes;
    EXPECT_TRUE(s.status.isOk()) << s.status.toString();
    EXPECT_TRUE(r.status.isOk()) << r.status.toString();
    EXPECT_EQ(r.bytes, bytes);
    EXPECT_EQ(keep.calls, 1) << bytes;
    EXPECT_TRUE(keep.got == out) << bytes << " bytes arrived changed";
  }
}

// Sent before the receive exists: kept aside, handed over when the receive is posted; two
// messages with different tags do not mix.
TEST(ConsumerPath, MessagesBeforeTheirReceiveAreKeptUntilPosted) {
  auto world = makeWorld(3);
  auto a = pattern(100000, 1), b = pattern(100000, 2);
  Completion sa, sb;
  uint64_t tagA = makeDataTag(0, 0, 9, 1), tagB = makeDataTag(2, 0, 9, 1);
  ASSERT_TRUE(world[0]->sendToConsumer(1, tagA, a.data(), a.size(), &sa).isOk());
  ASSERT_TRUE(world[2]->sendToConsumer(1, tagB, b.data(), b.size(), &sb).isOk());
  ASSERT_TRUE(progressUntil(world, {&sa, &sb}));
  for (int i = 0; i < 1000; ++i) world[1]->progress();  // both land before any receive
  Keep fromB(b.size()), fromA(a.size());
  Completion rb, ra;
  ASSERT_TRUE(world[1]->recvToConsumer(2, tagB, b.size(), &fromB, &rb).isOk());
  ASSERT_TRUE(world[1]->recvToConsumer(0, tagA, a.size(), &fromA, &ra).isOk());
  ASSERT_TRUE(progressUntil(world, {&ra, &rb}));
  EXPECT_TRUE(fromA.got == a);
  EXPECT_TRUE(fromB.got == b);
}

// Another length than asked: the receive completes with the length it saw and nothing is
// consumed (the caller names the mismatch), whether the message came first or not.
TEST(ConsumerPath, OtherLengthCompletesWithoutConsuming) {
  auto world = makeWorld(2);
  auto out = pattern(3000, 5);
  for (bool early : {false, true}) {
    Keep keep(2000);
    Completion s, r;
    uint64_t tag = makeDataTag(0, 0, 11, early ? 2 : 1);
    if (!early) {
      ASSERT_TRUE(world[1]->recvToConsumer(0, tag, 2000, &keep, &r).isOk());
    }
    ASSERT_TRUE(world[0]->sendToConsumer(1, tag, out.data(), out.size(), &s).isOk());
    ASSERT_TRUE(progressUntil(world, {&s}));
    for (int i = 0; i < 1000; ++i) world[1]->progress();
    if (early) {
      ASSERT_TRUE(world[1]->recvToConsumer(0, tag, 2000, &keep, &r).isOk());
    }
    ASSERT_TRUE(progressUntil(world, {&r}));
    EXPECT_EQ(r.bytes, 3000u) << (early ? "early" : "posted");
    EXPECT_EQ(keep.calls, 0) << (early ? "early" : "posted");
  }
}

// A cancelled receive ends at once with an error, and a later message for it is not handed
// to the consumer it no longer owns.
TEST(ConsumerPath, CancelledReceiveEndsAndLetsGo) {
  auto world = makeWorld(2);
  Keep keep(64);
  Completion r, s;
  uint64_t tag = makeDataTag(0, 0, 12, 1);
  ASSERT_TRUE(world[1]->recvToConsumer(0, tag, 64, &keep, &r).isOk());
  world[1]->cancel(&r);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.status.code(), Code::kAborted) << r.status.toString();
  auto out = pattern(64, 9);
  ASSERT_TRUE(world[0]->sendToConsumer(1, tag, out.data(), out.size(), &s).isOk());
  ASSERT_TRUE(progressUntil(world, {&s}));
  for (int i = 0; i < 1000; ++i) world[1]->progress();
  EXPECT_EQ(keep.calls, 0);
}

}  // namespace
}  // namespace tsr::transport
