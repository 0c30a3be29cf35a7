#include "tests/support/thread_world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

namespace tsr::testing {

// Bound (not listening) until released: the ranks' bootstrap acceptors can
// still listen there, but a test running in parallel cannot be handed the same port.
PortReservation::~PortReservation() {
  for (int fd : fds) close(fd);
}

PortReservation freePorts(int n) {
  PortReservation reservation;
  std::vector<int>& fds = reservation.fds;
  std::vector<uint16_t>& ports = reservation.ports;
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    // Bound without SO_REUSEADDR (so the port is unique), then flagged, so the bootstrap
    // acceptor (which sets it too) may bind and listen while we still hold the port.
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ports.push_back(ntohs(a.sin_port));
    fds.push_back(fd);
  }
  return reservation;
}

runtime::LaunchInfo threadLaunchInfo(int rank, int size, const std::vector<uint16_t>& ports,
                                     const std::string& secret) {
  runtime::LaunchInfo info;
  info.rank = rank;
  info.size = size;
  info.localRank = rank;
  info.localSize = size;
  for (int r = 0; r < size; ++r) info.peers.push_back({"127.0.0.1", ports[r]});
  info.secret = secret;
  info.jobId = "thread-world";
  info.source = "test";
  return info;
}

void runRanks(int size, const std::function<void(runtime::Communicator&)>& body,
              const std::map<std::string, std::string>& settings) {
  PortReservation reservation = freePorts(size);
  const std::vector<uint16_t>& ports = reservation.ports;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(size);
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      runtime::Config config;
      config.set("TSR_BOOTSTRAP_TIMEOUT_MS", "20000").ignore();
      for (const auto& [k, v] : settings) {
        Status st = config.set(k, v);
        if (!st.isOk()) failures[r] = st.toString();
      }
      auto comm = runtime::Communicator::create(threadLaunchInfo(r, size, ports), config);
      if (!comm.isOk()) {
        failures[r] = comm.status().toString();
        return;
      }
      body(*comm.value());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

}  // namespace tsr::testing
