#include "algorithms/marsit/marsit.h"

#include <algorithm>
#include <cstdio>

#include "algorithms/kernels/sign_ops.h"
#include "algorithms/marsit/marsit_device.h"
#include "algorithms/marsit/marsit_hier_step.h"
#include "algorithms/marsit/marsit_plan.h"
#include "algorithms/marsit/marsit_step.h"
#include "algorithms/team/device_path.h"
#include "algorithms/team/tensor_step.h"

namespace tsr::marsit {

Result<std::unique_ptr<MarsitTensor>> MarsitTensor::create(algorithms::Team& comm, std::string name, size_t count,
                                                           const std::map<std::string, std::string>& params) {
  auto parsed = parseParams(params);
  if (!parsed.isOk()) return Status(parsed.status().code(), "marsit tensor " + name + ": " + parsed.status().message());
  TSR_ASSIGN_OR_RETURN(auto s, makeState(std::move(name), count, parsed.value(), comm.rank(), comm.size(),
                                         comm.torusGrid(), comm.torusWhyNot(), comm.denseOptions()));
  return std::unique_ptr<MarsitTensor>(new MarsitTensor(comm, std::move(s)));
}

MarsitTensor::MarsitTensor(algorithms::Team& comm, std::shared_ptr<MarsitState> state)
    : comm_(comm), state_(std::move(state)) {}
MarsitTensor::~MarsitTensor() = default;

Result<algorithms::RequestPtr> MarsitTensor::allreduceAsync(float* g) {
  // Sequence numbers: the scalar allreduce and the bit plan run side by side; two-level runs
  // the intra-host average before them.
  return algorithms::submitTensorStep(
      comm_, state_, "marsit tensor", g, state_->twoLevel ? 3 : 2,
      [](const std::shared_ptr<MarsitState>& state, const algorithms::TaskContext& ctx) {
        // Host memory or the direct device path alike.
        if (state->twoLevel) return std::unique_ptr<algorithms::Task>(new MarsitHierStepTask(state, ctx));
        return std::unique_ptr<algorithms::Task>(new MarsitStepTask(state, ctx));
      });
}

Status MarsitTensor::allreduce(float* g) {
  TSR_ASSIGN_OR_RETURN(algorithms::RequestPtr request, allreduceAsync(g));
  return request->wait();
}

Status MarsitTensor::setStaging(std::shared_ptr<algorithms::DeviceStaging> staging) {
  if (state_->device && staging)
    return Status(Code::kInvalidArgument, "marsit tensor " + state_->name +
                                              ": it runs on the direct device path; "
                                              "its compensation lives on the device and cannot be staged");
  return algorithms::setTensorStaging(*state_, "marsit tensor", std::move(staging));
}

namespace {
// Why this tensor has no device step (empty: it has one). Ring, torus and two-level
// (intra=none|fp16, marsit_hier_step.h) all have one.
std::string noDirectStep(const MarsitState&) { return ""; }
}  // namespace

Status MarsitTensor::setDeviceKernels(std::shared_ptr<algorithms::StepKernels> kernels) {
  MarsitState& s = *state_;
  TSR_RETURN_IF_ERROR(algorithms::checkDirectSwitch(s, "marsit tensor", kernels != nullptr, noDirectStep(s)));
  TSR_ASSIGN_OR_RETURN(s.device, MarsitDeviceArrays::create(std::move(kernels), s));
  return Status::ok();
}

Result<std::string> MarsitTensor::useDeviceMemory(const algorithms::DeviceOpeners& open) {
  return algorithms::useTensorDeviceMemory(*this, state_->name, comm_.transportMovesCuda(), noDirectStep(*state_),
                                           open);
}

bool MarsitTensor::directDevice() const { return state_->device != nullptr; }
bool MarsitTensor::busy() const { return algorithms::stepPending(*state_); }
const std::vector<float>& MarsitTensor::compensation() const {
  MarsitState& s = *state_;
  if (s.device)  // the copy that residual() and callers read; the device holds the real one
    s.device->kernels->readToHost(s.comp.data(), s.device->comp.as<float>(), s.comp.size() * sizeof(float)).ignore();
  return s.comp;
}
const std::vector<float>& MarsitTensor::intraResidual() const {
  MarsitState& s = *state_;
  if (s.device && s.twoLevel)  // read back, as compensation()
    s.device->kernels->readToHost(s.intraResidual.data(), s.device->intraResidual.as<float>(), s.count * sizeof(float))
        .ignore();
  return s.intraResidual;
}
void MarsitTensor::residual(float* out) const {
  const MarsitState& s = *state_;
  compensation();
  intraResidual();
  if (!s.twoLevel) {
    std::copy(s.comp.begin(), s.comp.end(), out);
    return;
  }
  std::copy(s.intraResidual.begin(), s.intraResidual.end(), out);
  const size_t off = s.hier.shardOffset;
  for (size_t k = 0; k < s.comp.size() && off + k < s.count; ++k)
    out[off + k] += static_cast<float>(s.ranksPerRow) * s.comp[k];
}
Status MarsitTensor::setResidual(const float* values) {
  MarsitState& s = *state_;
  TSR_RETURN_IF_ERROR(algorithms::checkResidualReplace(s, "marsit tensor"));
  if (s.device) return writeDeviceResidual(s, values);
  if (!s.twoLevel) {
    std::copy_n(values, s.count, s.comp.begin());
    // With momentum the next step adds the carry c + mu M (kernels::momentumHandOff), not c:
    // made again from the new c, or it would send the old one (and a moved tensor's, none).
    if (s.params.momentum > 0)
      for (size_t j = 0; j < s.count; ++j) s.shift[j] = s.comp[j] + s.params.momentum * s.prev[j];
    return Status::ok();
  }
  std::copy_n(values, s.count, s.intraResidual.begin());
  std::fill(s.comp.begin(), s.comp.end(), 0.0f);
  s.intraResidualOnce = s.intraType != DataType::kF16;
  return Status::ok();
}
Status MarsitTensor::setResultScale(algorithms::ResultScale scale) {
  return algorithms::setTensorResultScale(*state_, "marsit tensor", scale);
}
size_t MarsitTensor::shardOffset() const { return state_->twoLevel ? state_->hier.shardOffset : 0; }
uint64_t MarsitTensor::step() const { return state_->step; }
float MarsitTensor::momentum() const { return state_->params.momentum; }
size_t MarsitTensor::scaleSpan() const {
  return state_->twoLevel ? std::max<size_t>(state_->count, 1) : state_->scaleSpan;
}
const StepTimes& MarsitTensor::lastTimes() const { return state_->times; }
const std::string& MarsitTensor::name() const { return state_->name; }
size_t MarsitTensor::count() const { return state_->count; }
const std::string& MarsitTensor::algorithm() const { return state_->algorithm; }

std::string MarsitTensor::settingsText() const {
  const Params& p = state_->params;
  char momentum[32];
  std::snprintf(momentum, sizeof momentum, "%.7g", static_cast<double>(p.momentum));
  return "algorithm=" + state_->algorithm + "; seed=" + std::to_string(p.seed) +
         "; full_precision_every=" + std::to_string(p.fullPrecisionEvery) +
         "; intra=" + (p.topology == Topology::kTwoLevel ? dataTypeName(p.intraType) : "none") +
         "; pack=" + (p.chunkedPack ? "chunked" : "whole") + "; momentum=" + momentum +
         "; scale_block=" + std::to_string(p.scaleBlock);
}

void MarsitTensor::setAgreement(std::shared_ptr<algorithms::SettingsAgreement> agreement) {
  state_->agreement = std::move(agreement);
}

}  // namespace tsr::marsit
