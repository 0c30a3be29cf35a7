// Test helpers for the shared-memory collectives: a segment (board and stages) over plain
// memory, and a loop that drives every rank's task from one thread.
#pragma once

#include <cstdlib>
#include <memory>
#include <vector>

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
        board(boardMemory.get(), n), staging(stagingMemory.get(), n) {
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

}  // namespace tsr::algorithms
