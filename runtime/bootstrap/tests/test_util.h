// Helpers for the multi-rank bootstrap tests: free loopback ports, per-rank LaunchInfo, a log
// capture on the "bootstrap" logger, and ranks run as threads.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>

#include "base/logging.h"
#include "base/port_reservation.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/handshake.h"

namespace tsr::runtime::testing {

namespace asio = detail::asio;
using detail::tcp;

// `n` distinct free ports on 127.0.0.1, reserved for the life of the test process (see
// base/port_reservation.h), so tests running in parallel never share one.
inline std::vector<uint16_t> freePorts(int n) {
  static std::vector<PortReservation> held;
  auto r = PortReservation::reserve(n, true);
  if (!r.isOk()) return {};
  held.push_back(r.take());
  return held.back().ports();
}

inline std::vector<LaunchInfo> localInfos(int n, const std::string& secret = "test-secret-of-16+bytes",
                                          const std::string& jobId = "job-1") {
  std::vector<uint16_t> ports = freePorts(n);
  std::vector<LaunchInfo> infos(n);
  for (int r = 0; r < n; ++r) {
    LaunchInfo& info = infos[r];
    info.rank = r;
    info.size = n;
    info.localRank = r;
    info.localSize = n;
    for (int p = 0; p < n; ++p) info.peers.push_back({"127.0.0.1", ports[p]});
    info.secret = secret;
    info.jobId = jobId;
    info.source = "test";
  }
  return infos;
}

// Rank r's blob in call c: rank 0's is empty, rank 1's first one is 1 MiB, others are small.
inline std::string blobFor(int rank, int call) {
  size_t size = rank == 0 ? 0 : (rank == 1 && call == 0) ? (1u << 20) : 100u * rank + call;
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131 + rank * 7 + call * 3) & 0xff);
  return s;
}

// What one rank saw: the status of its first failure, and every all-gather's result.
struct RankOutcome {
  Status status;
  std::vector<std::vector<std::string>> gathers;
};

// Rank body: create, `calls` all-gathers of blobFor(rank, call), then a barrier.
inline RankOutcome runRank(const LaunchInfo& info, BootstrapOptions options, int calls) {
  RankOutcome out;
  auto bootstrap = Bootstrap::create(info, options);
  if (!bootstrap.isOk()) {
    out.status = bootstrap.status();
    return out;
  }
  for (int c = 0; c < calls; ++c) {
    auto blobs = bootstrap.value()->allGather(blobFor(info.rank, c));
    if (!blobs.isOk()) {
      out.status = blobs.status();
      return out;
    }
    out.gathers.push_back(blobs.take());
  }
  out.status = bootstrap.value()->barrier();
  return out;
}

// Captures what the "bootstrap" logger writes while alive. Create and destroy it while no
// bootstrap thread runs (spdlog's sink list is not guarded).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    tsr::log::get("bootstrap")->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = tsr::log::get("bootstrap")->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const {
    std::string all;
    for (const auto& line : sink_->last_formatted()) all += line;
    return all;
  }
  // Polls until `needle` has been logged or `ms` pass.
  bool waitFor(const std::string& needle, int ms = 5000) const {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      if (text().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

// Waits until something listens on 127.0.0.1:port.
inline bool waitListening(uint16_t port, int ms = 5000) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  asio::io_context io;
  while (std::chrono::steady_clock::now() < end) {
    tcp::socket s(io);
    boost::system::error_code ec;
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (!ec) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace tsr::runtime::testing
