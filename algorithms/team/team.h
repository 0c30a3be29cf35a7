// Team: the ranks an algorithm family runs over, as the family sees them (a "team" in UCC's
// sense, gloo's Context). It holds only what the families use, so they build on the plan
// layer and never on the runtime; the runtime's Communicator implements it.
//
// Every rank must submit its tasks, plans and collectives in the same order: sequence numbers
// and tags are assigned in submission order, and a mismatch fails on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/plan/task.h"
#include "algorithms/team/request.h"
#include "base/dtype.h"

namespace tsr::algorithms {

class Team {
 public:
  virtual ~Team() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank r's machine identity: equal values mean the same machine.
  virtual const std::string& hostIdOf(int rank) const = 0;
  // The ring the ring plans use (topology/host_map.h ringOrder): a host's ranks adjacent.
  virtual const std::vector<int>& ringOrder() const = 0;
  // The host grid (grid[row][col] = rank, a row per host); empty when the job has none,
  // and then torusWhyNot() says why.
  virtual const std::vector<std::vector<int>>& torusGrid() const = 0;
  virtual const std::string& torusWhyNot() const = 0;
  // Ring order and chunking for plans built outside the team.
  virtual const DenseOptions& denseOptions() const = 0;
  // Whether the transport takes CUDA buffers itself (else device tensors stage on the host).
  virtual bool transportMovesCuda() const = 0;
  // The stream (a cudaStream_t) whose work produces the caller's device buffers, set by
  // tsr_comm_set_stream; null: the legacy default stream's.
  virtual void* callerStream() const { return nullptr; }
  // Has every thread that drives the transport run `bind` once first (a CUDA context made
  // current for device buffers: cudaThreadBinding); a team without such a transport ignores it.
  virtual void bindTransportThreads(std::function<void()> bind) { (void)bind; }

  // Runs the task `make` builds (on the team's progress thread, with `seqSpan` sequence
  // numbers); `keepAlive` lives until the task no longer touches memory.
  virtual Result<RequestPtr> submitTask(TaskFactory make, uint32_t seqSpan = 1,
                                        std::shared_ptr<void> keepAlive = nullptr) = 0;
  // Runs a plan built outside the team on input/output; rngSeed and rngStep key its random
  // merges.
  virtual Result<RequestPtr> submitPlan(std::shared_ptr<const Plan> plan, const void* input, void* output,
                                        uint64_t rngSeed = 0, uint32_t rngStep = 0) = 0;
  // The team's dense allreduce of host buffers, whatever memory the team's own users declared
  // for theirs (tsr_comm_set_memory_type); the team chooses the algorithm.
  virtual Result<RequestPtr> hostAllreduce(const void* input, void* output, size_t count, DataType dtype,
                                           ReduceOp op) = 0;
};

}  // namespace tsr::algorithms
