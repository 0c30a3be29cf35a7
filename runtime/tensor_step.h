// The step protocol that every per-tensor handle (Marsit, SparDL, compressed) shares: check
// the buffer, refuse a second step while one is pending, hand one step task to the
// communicator (in the ranks' common order) and remember its request.
//
// State needs: name, count, step, g (the step's buffer), pending (RequestPtr), algorithm.
#pragma once

#include <memory>
#include <string>

#include "runtime/communicator.h"

namespace tsr::runtime {

template <typename State>
bool stepPending(const State& s) {
  return s.pending && !s.pending->done();
}

// `what` names the handle in messages ("marsit tensor"); makeTask(state, ctx) builds the task.
template <typename State, typename MakeTask>
Result<RequestPtr> submitTensorStep(Communicator& comm, const std::shared_ptr<State>& state, const char* what,
                                    float* g, uint32_t seqSpan, MakeTask makeTask) {
  State& s = *state;
  if (!g && s.count) return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": buffer is NULL");
  if (stepPending(s))
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": step " + std::to_string(s.step) +
                                              " is still pending; wait for it before the next");
  s.g = g;
  auto make = [state, makeTask](const algorithms::TaskContext& ctx) -> Result<std::unique_ptr<algorithms::Task>> {
    return makeTask(state, ctx);
  };
  TSR_ASSIGN_OR_RETURN(RequestPtr request, comm.submitTask(std::move(make), seqSpan, state));
  request->setAlgorithm(s.algorithm);
  s.pending = request;
  return request;
}

}  // namespace tsr::runtime
