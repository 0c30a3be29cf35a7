#include "tests/support/thread_world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

namespace tsr::testing {

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
  runRanksEach(size, body, [&](int) { return settings; });
}

void runRanksEach(int size, const std::function<void(runtime::Communicator&)>& body,
                  const std::function<Settings(int rank)>& settingsOf) {
  runRanksWrapped(size, body, settingsOf, nullptr);
}

void runRanksWrapped(int size, const std::function<void(runtime::Communicator&)>& body,
                     const std::function<Settings(int rank)>& settingsOf,
                     const runtime::Communicator::TransportWrapper& wrap) {
  auto reserved = PortReservation::reserve(size, true);
  ASSERT_TRUE(reserved.isOk()) << reserved.status().toString();
  PortReservation reservation = reserved.take();  // held until every rank has finished
  const std::vector<uint16_t>& ports = reservation.ports();
  std::vector<std::thread> threads;
  std::vector<std::string> failures(size);
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      runtime::Config config;
      config.set("TSR_BOOTSTRAP_TIMEOUT_MS", "20000").ignore();
      for (const auto& [k, v] : settingsOf(r)) {
        Status st = config.set(k, v);
        if (!st.isOk()) failures[r] = st.toString();
      }
      auto comm = runtime::Communicator::create(threadLaunchInfo(r, size, ports), config, wrap);
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
