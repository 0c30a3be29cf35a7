// Test helpers for the shared-memory collectives: a segment (board and stages) over plain
// memory, a loop that drives every rank's task from one thread, and a check of mismatches.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/dense/shm_board.h"
#include "algorithms/dense/shm_staging.h"
#include "base/status.h"

namespace tsr::algorithms {

struct Segment {
  std::unique_ptr<void, void (*)(void*)> boardMemory, stagingMemory;
  ShmBoard board;
  ShmStaging staging;
  explicit Segment(int n)
      : boardMemory(std::aligned_alloc(64, ShmBoard::bytesFor(n)), std::free),
        stagingMemory(std::aligned_alloc(4096, ShmStaging::bytesFor(n)), std::free),
        board(boardMemory.get(), n),
        staging(stagingMemory.get(), n) {
    ShmBoard::format(boardMemory.get(), n);
    ShmStaging::format(stagingMemory.get(), n);
  }
};

// Drives the tasks until none is in progress (bounded); returns each one's status.
template <typename TaskType>
std::vector<Status> drive(std::vector<std::unique_ptr<TaskType>>& tasks, int turns = 100000) {
  std::vector<Status> st(tasks.size(), Status(Code::kInProgress, ""));
  for (size_t i = 0; i < tasks.size(); ++i) st[i] = tasks[i]->start();
  for (int turn = 0; turn < turns; ++turn) {
    bool running = false;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (st[i].code() == Code::kInProgress) st[i] = tasks[i]->progress();
      running |= st[i].code() == Code::kInProgress;
    }
    if (!running) break;
  }
  return st;
}

// Each status is a TSR_ERR_MISMATCH whose message holds every one of `words` (both calls).
inline void expectMismatchNaming(const std::vector<Status>& statuses, std::initializer_list<const char*> words) {
  for (const Status& st : statuses) {
    EXPECT_EQ(st.code(), Code::kMismatch) << st.toString();
    for (const char* w : words) EXPECT_NE(st.message().find(w), std::string::npos) << w << " in: " << st.message();
  }
}

}  // namespace tsr::algorithms
