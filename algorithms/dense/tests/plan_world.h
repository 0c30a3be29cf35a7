// Test support: every rank's plan of a collective run over real UCX transports driven from
// one thread (no bootstrap, no progress threads), so plan tests cover N = 1..16 quickly.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "algorithms/plan/executor.h"
#include "transport/tests/ucx_world.h"
#include "transport/ucx_transport.h"

namespace tsr::algorithms::testing {

using transport::UcxTransport;

struct World {
  std::vector<std::unique_ptr<UcxTransport>> transports;
  explicit World(int n) : transports(transport::testing::makeWorld(n)) {}
};

inline World& worldOf(int n) {
  static std::map<int, std::unique_ptr<World>> worlds;
  auto& w = worlds[n];
  if (!w) w = std::make_unique<World>(n);
  return *w;
}

inline uint32_t nextSeq() {
  static uint32_t seq = 0;
  return ++seq;
}

// Where a run's scratch comes from: the test (a vector per rank), or the executor's own
// state (RunBuffers::scratch left null, as the communicator does for small runs).
enum class ScratchFrom { kTest, kExecutor };

// Runs plans[r] with buffers[r] on every rank to completion; returns each rank's status.
inline std::vector<Status> runAll(World& world, const std::vector<std::shared_ptr<Plan>>& plans,
                                  std::vector<RunBuffers> buffers, ScratchFrom from = ScratchFrom::kTest) {
  int n = static_cast<int>(plans.size());
  uint32_t seq = nextSeq();
  std::vector<std::vector<char>> scratch(n);
  std::vector<std::unique_ptr<PlanExecutor>> ex;
  std::vector<Status> st(n);
  for (int r = 0; r < n; ++r) {
    scratch[r].resize(plans[r]->scratchBytes + 1);
    buffers[r].scratch = from == ScratchFrom::kTest ? scratch[r].data() : nullptr;
    ex.push_back(std::make_unique<PlanExecutor>(plans[r], buffers[r], RunIdentity{r, 0, seq}, *world.transports[r]));
    st[r] = ex[r]->start();
  }
  // Runs until every rank is done; once one rank has failed, the others get a short grace
  // period (the runtime would spread an abort notice; here the test aborts them).
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  for (bool running = true; running && Clock::now() < deadline;) {
    running = false;
    bool failed = false;
    for (int r = 0; r < n; ++r) {
      world.transports[r]->progress();
      if (st[r].code() == Code::kInProgress) {
        st[r] = ex[r]->progress();
        running |= st[r].code() == Code::kInProgress;
      }
      failed |= !st[r].isOk() && st[r].code() != Code::kInProgress;
    }
    if (failed && running) deadline = std::min(deadline, Clock::now() + std::chrono::milliseconds(300));
  }
  for (int r = 0; r < n; ++r)
    if (st[r].code() == Code::kInProgress) {
      ex[r]->abort(Status(Code::kAborted, "aborted by the test after a peer failed"));
      st[r] = Status(Code::kAborted, "still running when a peer failed");
    }
  // Cancelled receives complete through progress: drain before the buffers go away.
  for (int spin = 0; spin < 100000; ++spin) {
    bool idle = true;
    for (int r = 0; r < n; ++r) {
      world.transports[r]->progress();
      idle &= ex[r]->quiescent();
    }
    if (idle) break;
  }
  return st;
}

}  // namespace tsr::algorithms::testing
