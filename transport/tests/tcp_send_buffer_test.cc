// Tessera's default UCX TCP send buffer (transport/ucx_context.cc) reaches UCX's sockets, and a
// user's UCX_TCP_SNDBUF wins over it. Two transports in this process over UCX's TCP transport
// on loopback; the test reads SO_SNDBUF of every TCP socket the process holds.
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "transport/tag.h"
#include "transport/tests/ucx_world.h"

namespace tsr::transport {
namespace {

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1); else unsetenv(name_);
  }
 private:
  const char* name_;
  std::optional<std::string> old_;
};

// SO_SNDBUF of every IPv4/IPv6 stream socket open in this process.
std::vector<int> tcpSendBuffers() {
  std::vector<int> sizes;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return sizes;
  while (dirent* e = readdir(dir)) {
    int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    int type = 0, domain = 0, size = 0;
    socklen_t len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) continue;
    if (domain != AF_INET && domain != AF_INET6) continue;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len) == 0) sizes.push_back(size);
  }
  closedir(dir);
  return sizes;
}

// Two transports over UCX's TCP on loopback exchange one message (UCX connects on first use);
// returns the send buffers of the process's TCP sockets while they are still open.
std::vector<int> sendBuffersOfAConnectedPair() {
  ScopedEnv tls("UCX_TLS", "tcp,self");
  ScopedEnv devices("UCX_NET_DEVICES", "lo");
  auto world = testing::makeWorld(2);
  std::vector<uint8_t> out(1 << 20, 7), in(out.size(), 0);
  Completion s, r;
  uint64_t tag = makeDataTag(0, 1, 3, 9);
  EXPECT_TRUE(world[1]->recv(0, tag, kTagFullMask, in.data(), in.size(), MemoryType::kHost, &r).isOk());
  EXPECT_TRUE(world[0]->send(1, tag, out.data(), out.size(), MemoryType::kHost, &s).isOk());
  EXPECT_TRUE(testing::progressUntil(world, {&s, &r}));
  EXPECT_EQ(in, out);
  return tcpSendBuffers();
}

int count(const std::vector<int>& sizes, int value) {
  int n = 0;
  for (int v : sizes) n += v == value;
  return n;
}

// The kernel doubles what setsockopt(SO_SNDBUF) asks for.
constexpr int kDefaultKernelBytes = 2 * 256 * 1024;

TEST(UcxTcpSendBuffer, TesseraDefaultIs256KiBOnEveryUcxConnection) {
  ScopedEnv unset("UCX_TCP_SNDBUF", nullptr);
  std::vector<int> sizes = sendBuffersOfAConnectedPair();
  // Both ends of the one UCX connection, in this process.
  EXPECT_GE(count(sizes, kDefaultKernelBytes), 2) << ::testing::PrintToString(sizes);
}

TEST(UcxTcpSendBuffer, UsersSettingWins) {
  ScopedEnv user("UCX_TCP_SNDBUF", "96k");
  std::vector<int> sizes = sendBuffersOfAConnectedPair();
  EXPECT_GE(count(sizes, 2 * 96 * 1024), 2) << ::testing::PrintToString(sizes);
  EXPECT_EQ(count(sizes, kDefaultKernelBytes), 0) << ::testing::PrintToString(sizes);
}

}  // namespace
}  // namespace tsr::transport
