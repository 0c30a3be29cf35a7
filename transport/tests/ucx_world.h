// Test support: N UcxTransports in one process, connected, progressed from one thread.
#pragma once

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "transport/ucx_transport.h"

namespace tsr::transport::testing {

inline std::vector<std::unique_ptr<UcxTransport>> makeWorld(int n, size_t tcpSendBuffer = 0) {
  std::vector<std::unique_ptr<UcxTransport>> world;
  std::vector<std::string> addresses;
  for (int r = 0; r < n; ++r) {
    auto t = UcxTransport::create(r, n, tcpSendBuffer);
    EXPECT_TRUE(t.isOk()) << t.status().toString();
    addresses.push_back(t.value()->localAddress());
    world.push_back(t.take());
  }
  for (auto& t : world) EXPECT_TRUE(t->connect(addresses).isOk());
  return world;
}

// Progresses every transport until all completions are done (true) or 20 s pass (false).
inline bool progressUntil(std::vector<std::unique_ptr<UcxTransport>>& world,
                          std::initializer_list<Completion*> completions) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto& t : world) t->progress();
    bool all = true;
    for (auto* c : completions) all = all && c->done;
    if (all) return true;
  }
  return false;
}

}  // namespace tsr::transport::testing
