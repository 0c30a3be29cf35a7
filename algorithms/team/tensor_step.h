// The step protocol that every per-tensor handle (Marsit, SparDL, compressed) shares: check
// the buffer, refuse a second step while one is pending, hand one step task to the
// team (in the ranks' common order) and remember its request.
//
// State needs: name, count, step, g (the step's buffer), pending (RequestPtr), algorithm, and
// staging (shared_ptr<DeviceStaging>, null for a host tensor): a device tensor's step runs on
// the staging's pinned host buffer between two copies (device_staging.h). A State that also
// has `device` (Marsit and compressed: the direct device path) with it set takes g as it is,
// checked by checkDirect(state, g), and its makeTask builds a task that runs on the device
// arrays.
#pragma once

#include <memory>
#include <string>

#include "algorithms/plan/caller_gate.h"
#include "algorithms/team/device_path.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/first_step_agreement.h"
#include "algorithms/team/result_scale.h"
#include "algorithms/team/team.h"
#include "base/logging.h"

namespace tsr::algorithms {

template <typename State>
bool stepPending(const State& s) {
  return s.pending && !s.pending->done();
}

// `what` names the handle in messages ("marsit tensor"); makeTask(state, ctx) builds the task.
template <typename State, typename MakeTask>
Result<RequestPtr> submitTensorStep(Team& team, const std::shared_ptr<State>& state, const char* what, float* g,
                                    uint32_t seqSpan, MakeTask makeTask) {
  State& s = *state;
  if (!g && s.count) return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": buffer is NULL");
  if (stepPending(s))
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": step " + std::to_string(s.step) +
                                              " is still pending; wait for it before the next");
  if (s.staging) TSR_RETURN_IF_ERROR(s.staging->checkDevice(g));
  if constexpr (requires { s.device; }) {
    if (s.device) TSR_RETURN_IF_ERROR(checkDirect(s, g));
  }
  // A device step reads g only after the caller's work queued before this call (on the
  // communicator's stream, tsr_comm_set_stream, or the default stream): an event recorded
  // here, on the caller's thread, as ncclAllReduce's stream argument orders it.
  std::shared_ptr<StepKernels> direct;
  if constexpr (requires { s.device; }) {
    if (s.device) direct = s.device->kernels;
  }
  CallerEvent after;
  if (direct || s.staging) {
    auto event = direct ? direct->recordCallerEvent(team.callerStream())
                        : s.staging->copier().recordCallerEvent(team.callerStream());
    if (!event.isOk())
      return Status(event.status().code(), std::string(what) + " " + s.name + ": " + event.status().message());
    after = event.take();
  }
  s.g = s.staging ? s.staging->host() : g;
  TaskFactory make = [state, makeTask](const TaskContext& ctx) -> Result<std::unique_ptr<Task>> {
    return makeTask(state, ctx);
  };
  // Until a first step has found the ranks' settings equal (first_step_agreement.h), the step
  // compares them first, on a sequence number of its own.
  if constexpr (requires { s.agreement; }) {
    if (s.agreement && !s.agreement->agreed) {
      make = afterAgreement(std::move(make), s.agreement, std::string(what) + " " + s.name);
      seqSpan += kAgreementSeqSpan;
    }
  }
  // Scaled on the host buffer, before a staged step copies it back to the device.
  if constexpr (requires { s.resultScale; }) make = scaleResult(std::move(make), s.g, s.count, s.resultScale);
  if (s.staging) make = s.staging->wrap(g, std::move(make));
  // Started once the progress thread has polled the event as reached (caller_gate.h).
  if (direct) {
    make = afterCallerEvent(
        std::move(make), [direct](const CallerEvent& e) { return direct->reached(e); }, std::move(after),
        std::string(what) + " " + s.name);
  } else if (s.staging) {
    make = afterCallerEvent(
        std::move(make), [staging = s.staging](const CallerEvent& e) { return staging->copier().reached(e); },
        std::move(after), std::string(what) + " " + s.name);
  }
  TSR_ASSIGN_OR_RETURN(RequestPtr request, team.submitTask(std::move(make), seqSpan, state));
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

// A tensor declared with the op= its algorithm does not compute (result_scale.h). Not while a
// step is pending, nor on the direct device path (the result stays in device memory there).
template <typename State>
Status setTensorResultScale(State& s, const char* what, ResultScale scale) {
  if (stepPending(s))
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": a step is pending; wait for it first");
  if constexpr (requires { s.device; }) {
    if (s.device && scale != ResultScale::kNone)
      return Status(Code::kNotSupported, std::string(what) + " " + s.name +
                                             ": its result stays in device memory "
                                             "(the direct device path), where op= cannot rescale it; keep the "
                                             "algorithm's own op");
  }
  s.resultScale = scale;
  return Status::ok();
}

// Whether the tensor's kept-back state may be replaced now (setResidual): no step pending. On
// the direct device path the tensor writes it to the device itself.
template <typename State>
Status checkResidualReplace(const State& s, const char* what) {
  if (stepPending(s))
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": a step is pending; wait for it first");
  return Status::ok();
}

// Whether a tensor may switch to the direct device path now (its setDeviceKernels): before its
// first step, not staged, with kernels, and with a device step (`noDirect` empty).
template <typename State>
Status checkDirectSwitch(const State& s, const char* what, bool haveKernels, const std::string& noDirect) {
  auto refuse = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, std::string(what) + " " + s.name + ": direct device path: " + why);
  };
  if (stepPending(s)) return refuse("a step is pending; wait for it first");
  if (!haveKernels) return refuse("no device kernels given");
  if (!noDirect.empty()) return refuse(noDirect);
  if (s.step > 0) return refuse("step " + std::to_string(s.step) + " has run; choose the memory before the first step");
  if (s.staging) return refuse("the tensor is already staged (setStaging)");
  if constexpr (requires { s.resultScale; }) {
    if (s.resultScale != ResultScale::kNone) return refuse("its op= rescales the result on the host");
  }
  return Status::ok();
}

// A tensor's useDeviceMemory: takes the direct path (tensor.setDeviceKernels) or the staged one
// (tensor.setStaging) as chooseDevicePath says, logs the choice and its reason, returns that line.
template <typename Tensor>
Result<std::string> useTensorDeviceMemory(Tensor& tensor, const std::string& name, bool transportMovesCuda,
                                          const std::string& noDirect, const DeviceOpeners& open) {
  DevicePath path = chooseDevicePath(transportMovesCuda, noDirect);
  std::string where;
  if (path == DevicePath::kDirect) {
    TSR_ASSIGN_OR_RETURN(auto kernels, open.kernels());
    where = kernels->describe();
    TSR_RETURN_IF_ERROR(tensor.setDeviceKernels(std::move(kernels)));
  } else {
    TSR_ASSIGN_OR_RETURN(auto staging, open.staging());
    where = staging->copier().describe();
    TSR_RETURN_IF_ERROR(tensor.setStaging(std::move(staging)));
  }
  std::string note =
      "tensor " + name + ": memory=cuda on " + where + ": " + devicePathNote(path, transportMovesCuda, noDirect);
  log::get("runtime")->info("{}", note);
  return note;
}

}  // namespace tsr::algorithms
