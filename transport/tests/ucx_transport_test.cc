// Two or three UcxTransports in one process, progressed from one thread: real UCX traffic.
#include "transport/ucx_transport.h"

#include <chrono>
#include <numeric>

#include <gtest/gtest.h>

#include "transport/tag.h"
#include "transport/tests/ucx_world.h"

namespace tsr::transport {
namespace {

using testing::makeWorld;
using testing::progressUntil;

TEST(UcxTransport, SendsAndReceivesSmallAndLargeMessages) {
  auto world = makeWorld(2);
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{100000}, size_t{8} << 20}) {
    std::vector<uint8_t> out(bytes), in(bytes, 0);
    std::iota(out.begin(), out.end(), uint8_t{3});
    Completion s, r;
    uint64_t tag = makeDataTag(0, 1, 7, 42);
    ASSERT_TRUE(world[1]->recv(0, tag, kTagFullMask, in.data(), in.size(), MemoryType::kHost, &r).isOk());
    ASSERT_TRUE(world[0]->send(1, tag, out.data(), out.size(), MemoryType::kHost, &s).isOk());
    ASSERT_TRUE(progressUntil(world, {&s, &r})) << bytes;
    EXPECT_TRUE(s.status.isOk()) << s.status.toString();
    EXPECT_TRUE(r.status.isOk()) << r.status.toString();
    EXPECT_EQ(r.bytes, bytes);
    EXPECT_EQ(in, out);
  }
  EXPECT_GE(world[0]->bytesSent(), (size_t{8} << 20));
}

TEST(UcxTransport, TagsKeepMessagesApart) {
  auto world = makeWorld(3);
  int a = 1, b = 2, got1 = 0, got2 = 0;
  Completion s1, s2, r1, r2;
  ASSERT_TRUE(world[2]->recv(1, makeDataTag(1, 0, 0, 5), kTagFullMask, &got2, 4, MemoryType::kHost, &r2).isOk());
  ASSERT_TRUE(world[2]->recv(0, makeDataTag(0, 0, 0, 5), kTagFullMask, &got1, 4, MemoryType::kHost, &r1).isOk());
  ASSERT_TRUE(world[0]->send(2, makeDataTag(0, 0, 0, 5), &a, 4, MemoryType::kHost, &s1).isOk());
  ASSERT_TRUE(world[1]->send(2, makeDataTag(1, 0, 0, 5), &b, 4, MemoryType::kHost, &s2).isOk());
  ASSERT_TRUE(progressUntil(world, {&s1, &s2, &r1, &r2}));
  EXPECT_EQ(got1, 1);
  EXPECT_EQ(got2, 2);
}

TEST(UcxTransport, TruncatedReceiveIsAMismatch) {
  auto world = makeWorld(2);
  std::vector<int> big(1000, 1);
  int small = 0;
  Completion s, r;
  uint64_t tag = makeDataTag(0, 0, 1, 1);
  ASSERT_TRUE(world[1]->recv(0, tag, kTagFullMask, &small, 4, MemoryType::kHost, &r).isOk());
  ASSERT_TRUE(world[0]->send(1, tag, big.data(), 4000, MemoryType::kHost, &s).isOk());
  ASSERT_TRUE(progressUntil(world, {&r}));
  EXPECT_EQ(r.status.code(), Code::kMismatch) << r.status.toString();
  progressUntil(world, {&s});
}

TEST(UcxTransport, CancelledReceiveCompletesWithAnError) {
  auto world = makeWorld(2);
  int x = 0;
  Completion r;
  ASSERT_TRUE(world[1]->recv(0, makeDataTag(0, 0, 2, 2), kTagFullMask, &x, 4, MemoryType::kHost, &r).isOk());
  world[1]->cancel(&r);
  ASSERT_TRUE(progressUntil(world, {&r}));
  EXPECT_TRUE(r.status.isError());
}

TEST(UcxTransport, RegisteredMemoryIsUsableAndOutlivesItsTransport) {
  auto world = makeWorld(1);
  std::shared_ptr<RegisteredMemory> memory = world[0]->registeredMemory();
  ASSERT_TRUE(memory);
  auto a = memory->allocate(1 << 20);
  auto b = memory->allocate(100);
  ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().toString() << b.status().toString();
  static_cast<char*>(a.value())[(1 << 20) - 1] = 7;
  EXPECT_TRUE(memory->contains(a.value()));
  EXPECT_EQ(memory->blocks(), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.value()) % 64, 0u);
  memory->release(a.value());
  EXPECT_FALSE(memory->contains(a.value()));
  int local = 0;
  memory->release(&local);  // not ours: ignored
  EXPECT_EQ(memory->blocks(), 1u);
  world.clear();  // the transport goes; the memory and its context stay
  static_cast<char*>(b.value())[99] = 1;
  memory->release(b.value());
  EXPECT_EQ(memory->blocks(), 0u);
}

}  // namespace
}  // namespace tsr::transport
