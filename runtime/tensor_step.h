// The step protocol that every per-tensor handle (Marsit, SparDL, compressed) shares: check
// the buffer, refuse a second step while one is pending, hand one step task to the
// communicator (in the ranks' common order) and remember its request.
//
// State needs: name, count, step, g (the step's buffer), pending (RequestPtr), algorithm, and
// staging (shared_ptr<DeviceStaging>, null for a host tensor): a device tensor's step runs on
// the staging's pinned host buffer between two copies (device_staging.h). A State that also
// has `device` (Marsit: the direct device path) with it set takes g as it is, checked by
// checkDirect(state, g), and its makeTask builds the device task.
#pragma once

#include <memory>
#include <string>

#include "runtime/communicator.h"
#include "runtime/device_staging.h"

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
  if (s.staging) TSR_RETURN_IF_ERROR(s.staging->checkDevice(g));
  if constexpr (requires { s.device; }) {
    if (s.device) TSR_RETURN_IF_ERROR(checkDirect(s, g));
  }
  s.g = s.staging ? s.staging->host() : g;
  algorithms::TaskFactory make = [state, makeTask](const algorithms::TaskContext& ctx) -> Result<std::unique_ptr<algorithms::Task>> {
    return makeTask(state, ctx);
  };
  if (s.staging) make = s.staging->wrap(g, std::move(make));
  TSR_ASSIGN_OR_RETURN(RequestPtr request, comm.submitTask(std::move(make), seqSpan, state));
  request->setAlgorithm(s.algorithm);
  s.pending = request;
  return request;
}

// Makes the tensor's later steps take device buffers through `staging` (null: host buffers
// again). Not while a step is pending; the staging must hold the tensor's count floats.
template <typename State>
Status setTensorStaging(State& s, const char* what, std::shared_ptr<DeviceStaging> staging) {
  if (stepPending(s))
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": a step is pending; wait for it first");
  if (staging && staging->count() != s.count)
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": staging holds " +
                                              std::to_string(staging->count()) + " floats, the tensor " +
                                              std::to_string(s.count));
  s.staging = std::move(staging);
  return Status::ok();
}

}  // namespace tsr::runtime
