#include "algorithms/spardl/spardl.h"

#include <cstdio>

#include "algorithms/spardl/spardl_step.h"
#include "algorithms/team/tensor_step.h"

namespace tsr::spardl {

Result<std::unique_ptr<SparDLTensor>> SparDLTensor::create(algorithms::Team& comm, std::string name, size_t count,
                                                           const std::map<std::string, std::string>& params) {
  auto named = [&](const Status& st) { return Status(st.code(), "spardl tensor " + name + ": " + st.message()); };
  if (count > 0xffffffffull) return named(Status(Code::kNotSupported, "tensors above 2^32 elements are not supported"));
  auto parsed = parseParams(params, comm.size());
  if (!parsed.isOk()) return named(parsed.status());
  TSR_ASSIGN_OR_RETURN(auto s, makeState(std::move(name), count, parsed.value(), comm.rank(), comm.ringOrder()));
  return std::unique_ptr<SparDLTensor>(new SparDLTensor(comm, std::move(s)));
}

SparDLTensor::SparDLTensor(algorithms::Team& comm, std::shared_ptr<SparDLState> state)
    : comm_(comm), state_(std::move(state)) {}
SparDLTensor::~SparDLTensor() = default;

Result<algorithms::RequestPtr> SparDLTensor::allreduceAsync(float* g) {
  return algorithms::submitTensorStep(
      comm_, state_, "spardl tensor", g, 1,
      [](const std::shared_ptr<SparDLState>& state, const algorithms::TaskContext& ctx) {
        return std::unique_ptr<algorithms::Task>(new SparDLStepTask(state, ctx));
      });
}

Status SparDLTensor::allreduce(float* g) {
  TSR_ASSIGN_OR_RETURN(algorithms::RequestPtr request, allreduceAsync(g));
  return request->wait();
}

Status SparDLTensor::setStaging(std::shared_ptr<algorithms::DeviceStaging> staging) {
  return algorithms::setTensorStaging(*state_, "spardl tensor", std::move(staging));
}
bool SparDLTensor::busy() const { return algorithms::stepPending(*state_); }
uint64_t SparDLTensor::step() const { return state_->step; }
const std::string& SparDLTensor::algorithm() const { return state_->algorithm; }
const StepStats& SparDLTensor::lastStats() const { return state_->stats; }
const std::vector<float>& SparDLTensor::residual() const { return state_->residual; }
Status SparDLTensor::setResidual(const float* values) {
  TSR_RETURN_IF_ERROR(algorithms::checkResidualReplace(*state_, "spardl tensor"));
  std::copy_n(values, state_->count, state_->residual.begin());
  return Status::ok();
}
Status SparDLTensor::setResultScale(algorithms::ResultScale scale) {
  return algorithms::setTensorResultScale(*state_, "spardl tensor", scale);
}

std::string SparDLTensor::settingsText() const {
  char density[32];
  std::snprintf(density, sizeof density, "%.15g", state_->params.density);
  return "algorithm=" + state_->algorithm + "; density=" + density;
}

void SparDLTensor::setAgreement(std::shared_ptr<algorithms::SettingsAgreement> agreement) {
  state_->agreement = std::move(agreement);
}

size_t SparDLTensor::preselection() const { return state_->kPrime; }
uint64_t SparDLTensor::lastCrossCount() const { return state_->lastCrossCount; }

}  // namespace tsr::spardl
