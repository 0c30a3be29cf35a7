// Ranks as threads for the C API tests: each thread gets its own communicator from
// tsr_comm_init_config with explicit launch keys over real UCX.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/port_reservation.h"
#include "tessera/tessera.h"

namespace tsr::ctest {

inline std::string lastError() { return tsr_last_error(); }

// Runs body(comm, rank) on n threads, each with its own communicator from explicit params. A
// body taking comm by reference may destroy it itself and set it to NULL.
// local(r) gives rank r's (local_rank, local_size); by default every rank is on one host.
template <typename Body>
inline void runCRanks(int n, Body body, std::vector<std::pair<std::string, std::string>> extra = {},
                      std::function<std::pair<int, int>(int)> local = nullptr) {
  auto reserved = tsr::PortReservation::reserve(n, true);
  ASSERT_TRUE(reserved.isOk());
  std::string peers;
  for (uint16_t p : reserved.value().ports())
    peers += (peers.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::string rank = std::to_string(r), size = std::to_string(n);
      auto [lr, ls] = local ? local(r) : std::pair<int, int>{r, n};
      std::string localRank = std::to_string(lr), localSize = std::to_string(ls);
      std::vector<tsr_param_t> params{{"rank", rank.c_str()},
                                      {"size", size.c_str()},
                                      {"local_rank", localRank.c_str()},
                                      {"local_size", localSize.c_str()},
                                      {"peers", peers.c_str()},
                                      {"secret", "c-api-test-secret-16+bytes"}};
      for (const auto& [k, v] : extra) params.push_back({k.c_str(), v.c_str()});
      tsr_comm_t comm = nullptr;
      if (tsr_comm_init_config(&comm, params.data(), params.size()) != TSR_OK) {
        failures[r] = lastError();
        return;
      }
      body(comm, r);
      if (tsr_comm_destroy(comm) != TSR_OK) failures[r] = lastError();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

}  // namespace tsr::ctest
