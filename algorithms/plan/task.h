// Task: one rank's part of a collective, driven without blocking by the communicator's
// progress thread. PlanExecutor is the task for static plans; algorithms whose messages
// depend on the data (SparDL's sparse blocks, Marsit's merged bits, SelSync's decision)
// implement their own and are submitted with Communicator::submitTask.
//
// Contract (the progress thread relies on it):
//  * start() and progress() return Ok when done, InProgress while running, or the error
//    that ended the run; they never block.
//  * abort() cancels what is in flight; quiescent() turns true once no transport operation
//    refers to the task's memory any more (the engine keeps the task alive until then).
//  * waitingOn() names the peer the task waits for (-1 if none), for timeout messages.
//  * Messages use tags made from id.comm, id.seq and a message id (transport/tag.h); a task
//    given a span of S sequence numbers owns seq .. seq+S-1 (sub-executors each take one).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "transport/transport.h"

namespace tsr::algorithms {

struct RunIdentity {
  int rank = 0;
  uint32_t comm = 0;
  uint32_t seq = 0;
};

struct TaskContext {
  transport::Transport& transport;
  RunIdentity id;  // id.seq is the first of the task's sequence numbers
  uint32_t seqSpan = 1;
  int size = 1;  // ranks in the communicator
};

class Task {
 public:
  virtual ~Task() = default;
  virtual Status start() = 0;
  virtual Status progress() = 0;
  virtual void abort(const Status& reason) = 0;
  virtual bool quiescent() const = 0;
  virtual int waitingOn() const = 0;
  // What this task is, for messages: "allreduce", "spardl allreduce", ...
  virtual std::string describe() const = 0;
};

// Builds a task on the progress thread, when the collective starts.
using TaskFactory = std::function<Result<std::unique_ptr<Task>>(const TaskContext&)>;

}  // namespace tsr::algorithms
