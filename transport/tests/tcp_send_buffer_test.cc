// Tessera's default UCX TCP send buffer (transport/ucx_context.cc) reaches UCX's sockets, a
// link rate sizes it, and a user's UCX_TCP_SNDBUF wins over both. Two transports in this process over UCX's TCP
// transport on loopback; the test reads SO_SNDBUF of every TCP socket the process holds.
#include <vector>

#include <gtest/gtest.h>

#include "transport/tag.h"
#include "transport/tests/tcp_sockets.h"
#include "transport/tests/ucx_world.h"
#include "transport/ucx_context.h"

namespace tsr::transport {
namespace {

// Two transports over UCX's TCP on loopback exchange one message (UCX connects on first use);
// returns the send buffers of the process's TCP sockets while they are still open.
std::vector<int> sendBuffersOfAConnectedPair(size_t tcpSendBuffer = 0) {
  testing::ScopedEnv tls("UCX_TLS", "tcp,self");
  testing::ScopedEnv devices("UCX_NET_DEVICES", "lo");
  auto world = testing::makeWorld(2, tcpSendBuffer);
  std::vector<uint8_t> out(1 << 20, 7), in(out.size(), 0);
  Completion s, r;
  uint64_t tag = makeDataTag(0, 1, 3, 9);
  EXPECT_TRUE(world[1]->recv(0, tag, kTagFullMask, in.data(), in.size(), MemoryType::kHost, &r).isOk());
  EXPECT_TRUE(world[0]->send(1, tag, out.data(), out.size(), MemoryType::kHost, &s).isOk());
  EXPECT_TRUE(testing::progressUntil(world, {&s, &r}));
  EXPECT_EQ(in, out);
  return testing::tcpSendBuffers();
}

int count(const std::vector<int>& sizes, int value) {
  int n = 0;
  for (int v : sizes) n += v == value;
  return n;
}

// The kernel doubles what setsockopt(SO_SNDBUF) asks for.
constexpr int kDefaultKernelBytes = 2 * 256 * 1024;

TEST(UcxTcpSendBuffer, TesseraDefaultIs256KiBOnEveryUcxConnection) {
  testing::ScopedEnv unset("UCX_TCP_SNDBUF", nullptr);
  std::vector<int> sizes = sendBuffersOfAConnectedPair();
  // Both ends of the one UCX connection, in this process.
  EXPECT_GE(count(sizes, kDefaultKernelBytes), 2) << ::testing::PrintToString(sizes);
}

TEST(UcxTcpSendBuffer, UsersSettingWins) {
  testing::ScopedEnv user("UCX_TCP_SNDBUF", "96k");
  std::vector<int> sizes = sendBuffersOfAConnectedPair(32 * 1024);
  EXPECT_GE(count(sizes, 2 * 96 * 1024), 2) << ::testing::PrintToString(sizes);
  EXPECT_EQ(count(sizes, kDefaultKernelBytes), 0) << ::testing::PrintToString(sizes);
  EXPECT_EQ(count(sizes, 2 * 32 * 1024), 0) << "the link rate's size: " << ::testing::PrintToString(sizes);
}

TEST(UcxTcpSendBuffer, ALinkRateSizesTheBuffer) {
  testing::ScopedEnv unset("UCX_TCP_SNDBUF", nullptr);
  std::vector<int> sizes = sendBuffersOfAConnectedPair(tcpSendBufferFor(1e9 / 8));
  EXPECT_GE(count(sizes, 2 * 32 * 1024), 2) << ::testing::PrintToString(sizes);
  EXPECT_EQ(count(sizes, kDefaultKernelBytes), 0) << ::testing::PrintToString(sizes);
}

// About 256 us of the link, as the nearest power of two (sizes just above 64 KiB in the
// kernel are slow), 16 KiB..256 KiB; an unknown rate keeps 256 KiB.
TEST(UcxTcpSendBuffer, SizeFollowsTheLinkRateWithinBounds) {
  EXPECT_EQ(tcpSendBufferFor(0), 256u * 1024);
  EXPECT_EQ(tcpSendBufferFor(-5), 256u * 1024);
  EXPECT_EQ(tcpSendBufferFor(1e9 / 8), 32u * 1024) << "1 Gbit/s: 31.25 KiB";
  EXPECT_EQ(tcpSendBufferFor(1.2e9 / 8), 32u * 1024) << "37.5 KiB: not 33-34 KiB's slow zone either";
  EXPECT_EQ(tcpSendBufferFor(2.5e9 / 8), 64u * 1024) << "2.5 Gbit/s: 78 KiB";
  EXPECT_EQ(tcpSendBufferFor(4e9 / 8), 128u * 1024) << "4 Gbit/s: 125 KiB";
  EXPECT_EQ(tcpSendBufferFor(100e6 / 8), 16u * 1024) << "100 Mbit/s: the floor";
  EXPECT_EQ(tcpSendBufferFor(1e6), 16u * 1024) << "8 Mbit/s: the floor";
  EXPECT_EQ(tcpSendBufferFor(10e9 / 8), 256u * 1024) << "10 Gbit/s: the ceiling";
}

// After the probe: only a clearly slow network (about 3 Gbit/s and below) changes the size;
// what the probe measures on a fast link (0.6-0.7 GB/s on the emulated 10 Gbit/s cluster
// with 2 cores) or nothing at all keeps the default. The probe's figures for the emulated
// 1 Gbit/s link (115-146 MB/s) all give 32 KiB.
TEST(UcxTcpSendBuffer, AProbedRateChangesTheSizeOnlyForASlowLink) {
  EXPECT_EQ(tcpSendBufferForProbed(114.7e6), 32u * 1024);
  EXPECT_EQ(tcpSendBufferForProbed(133.3e6), 32u * 1024);
  EXPECT_EQ(tcpSendBufferForProbed(145.6e6), 32u * 1024);
  EXPECT_EQ(tcpSendBufferForProbed(2.5e9 / 8), 64u * 1024);
  EXPECT_EQ(tcpSendBufferForProbed(12.5e6), 16u * 1024) << "100 Mbit/s: the floor";
  EXPECT_EQ(tcpSendBufferForProbed(3e9 / 8), 0u) << "128 KiB: not worth a second transport";
  EXPECT_EQ(tcpSendBufferForProbed(0.6e9), 0u);
  EXPECT_EQ(tcpSendBufferForProbed(0), 0u) << "not probed";
}

// Which UCX_TLS values leave same-host peers UCX's shared memory (else: TCP over loopback).
TEST(UcxTcpSendBuffer, UcxTlsNamesSharedMemoryOrNot) {
  EXPECT_TRUE(ucxTlsHasSharedMemory(nullptr)) << "unset: UCX's all";
  EXPECT_TRUE(ucxTlsHasSharedMemory(""));
  EXPECT_TRUE(ucxTlsHasSharedMemory("all"));
  EXPECT_TRUE(ucxTlsHasSharedMemory("tcp,self,sm"));
  EXPECT_TRUE(ucxTlsHasSharedMemory("tcp, posix:aux"));
  EXPECT_TRUE(ucxTlsHasSharedMemory("rc,SHM"));
  EXPECT_TRUE(ucxTlsHasSharedMemory("^tcp"));
  EXPECT_TRUE(ucxTlsHasSharedMemory("^posix")) << "sysv is left";
  EXPECT_FALSE(ucxTlsHasSharedMemory("tcp,self"));
  EXPECT_FALSE(ucxTlsHasSharedMemory("tcp"));
  EXPECT_FALSE(ucxTlsHasSharedMemory("tcp,cma")) << "cma moves large messages only";
  EXPECT_FALSE(ucxTlsHasSharedMemory("^sm"));
  EXPECT_FALSE(ucxTlsHasSharedMemory("^posix,sysv"));
}

// Whether the TCP segment defaults apply (without TCP, UCX would warn of them on every rank).
TEST(UcxTcpSendBuffer, UcxTlsNamesTcpOrNot) {
  EXPECT_TRUE(ucxTlsHasTcp(nullptr)) << "unset: UCX's all";
  EXPECT_TRUE(ucxTlsHasTcp(""));
  EXPECT_TRUE(ucxTlsHasTcp("all"));
  EXPECT_TRUE(ucxTlsHasTcp("tcp,self"));
  EXPECT_TRUE(ucxTlsHasTcp("sm, TCP:aux"));
  EXPECT_TRUE(ucxTlsHasTcp("^sm"));
  EXPECT_FALSE(ucxTlsHasTcp("shm,self"));
  EXPECT_FALSE(ucxTlsHasTcp("sm,self,cma"));
  EXPECT_FALSE(ucxTlsHasTcp("^tcp"));
  EXPECT_FALSE(ucxTlsHasTcp("^all"));
}

// UCX fixes the size per context: a second size gets a context of its own while the first
// still lives (the communicator's second transport after the probe, or ranks as threads with
// different settings); the same size is shared.
TEST(UcxTcpSendBuffer, EachSizeHasItsOwnContext) {
  auto standard = UcxContext::instance();
  auto small = UcxContext::instance(32 * 1024);
  auto again = UcxContext::instance(32 * 1024);
  ASSERT_TRUE(standard.isOk() && small.isOk() && again.isOk());
  EXPECT_NE(standard.value(), small.value());
  EXPECT_EQ(small.value(), again.value());
  EXPECT_EQ(standard.value()->tcpSendBuffer(), 256u * 1024);
  EXPECT_EQ(small.value()->tcpSendBuffer(), 32u * 1024);
  testing::ScopedEnv unset("UCX_TCP_SNDBUF", nullptr);
  std::vector<int> sizes = sendBuffersOfAConnectedPair(16 * 1024);
  EXPECT_GE(count(sizes, 2 * 16 * 1024), 2) << "with the 256 KiB context alive: " << ::testing::PrintToString(sizes);
}

}  // namespace
}  // namespace tsr::transport
