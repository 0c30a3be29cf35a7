#include "algorithms/compressed/compressed_tensor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "algorithms/compress/momentum.h"
#include "algorithms/compress/registry.h"
#include "algorithms/compressed/compressed_device.h"
#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_hier_device.h"
#include "algorithms/compressed/compressed_hier_step.h"
#include "algorithms/compressed/compressed_step.h"
#include "algorithms/team/device_path.h"
#include "algorithms/team/tensor_step.h"

namespace tsr::compressed {

namespace {

std::vector<uint64_t> scratchFor(const algorithms::Plan& plan) {
  return std::vector<uint64_t>((plan.scratchBytes + 7) / 8);
}

std::string formatMu(float mu) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(mu));
  return text;
}

}  // namespace

Result<std::unique_ptr<CompressedTensor>> CompressedTensor::create(algorithms::Team& comm, std::string name,
                                                                   size_t count,
                                                                   const std::map<std::string, std::string>& params) {
  const std::string who = "compressed tensor " + name + ": ";
  auto named = [&](const Status& st) { return Status(st.code(), who + st.message()); };
  compress::Params kv = params;
  auto algo = kv.find("algorithm");
  if (algo != kv.end()) {
    if (algo->second != "compressed")
      return named(Status(Code::kInvalidArgument, "algorithm=" + algo->second + " is not accepted here (compressed)"));
    kv.erase(algo);
  }
  // intra= selects the two-level schedule; it is not a compressor key.
  std::optional<DataType> intra;
  if (auto it = kv.find("intra"); it != kv.end()) {
    auto parsed = parseIntra(it->second);
    if (!parsed.isOk()) return named(parsed.status());
    intra = parsed.value();
    kv.erase(it);
  }
  // optimizer_momentum= (the momentum hand-off, compressed_step.h) wraps the step either way.
  float handoff = 0.0f;
  if (auto it = kv.find("optimizer_momentum"); it != kv.end()) {
    char* end = nullptr;
    const float v = std::strtof(it->second.c_str(), &end);
    if (it->second.empty() || *end || !(v >= 0.0f && v < 1.0f))
      return named(Status(Code::kInvalidArgument, "optimizer_momentum=" + it->second +
                                                      ": accepted: a number in [0, 1), the momentum of the optimizer "
                                                      "that applies the result (0: no hand-off)"));
    handoff = v;
    kv.erase(it);
  }
  if (handoff > 0 && intra)
    return named(Status(Code::kNotSupported, "optimizer_momentum=" + params.at("optimizer_momentum") +
                                                 " with intra=" + params.at("intra") +
                                                 ": the two-level schedule has no momentum hand-off; use the flat "
                                                 "schedule or optimizer_momentum=0"));
  auto withEnv = compress::withEnvironmentDefaults(kv);
  if (!withEnv.isOk()) return named(withEnv.status());
  const compress::Params given = kv;  // without the environment's: its values are named in errors
  kv = withEnv.take();
  const compress::Params completed = kv;  // before this tensor's own defaults (ef=)
  auto fromEnv = [&](const Status& st) { return named(compress::nameEnvironmentSource(st, given, completed)); };
  if (auto m = kv.find("momentum"); handoff > 0 && m != kv.end() && m->second == "nesterov")
    return named(Status(Code::kInvalidArgument, "optimizer_momentum=" + params.at("optimizer_momentum") +
                                                    " with momentum=nesterov: both apply momentum; keep one "
                                                    "(optimizer_momentum for an optimizer with momentum)"));
  kv.emplace("ef", "vanilla");  // nothing is lost unless the caller says ef=none

  auto s = std::make_shared<CompressedState>();
  s->name = std::move(name);
  s->count = count;
  s->rank = comm.rank();
  s->size = comm.size();
  const auto& options = comm.denseOptions();
  auto flag = algorithms::ringAllreducePlan(s->rank, s->size, 2, DataType::kF64, ReduceOp::kSum, options);
  if (!flag.isOk()) return named(flag.status());
  if (intra) {
    Status st = setUpTwoLevel(*s, comm, *intra, kv);
    if (!st.isOk()) return fromEnv(st);
  } else {
    auto made = compress::createCompressor(kv, count);
    if (!made.isOk()) return fromEnv(made.status());
    s->compressor = made.take();
    s->algorithm = "compressed:" + s->compressor->name();
    if (handoff > 0) s->algorithm += " handoff(mu=" + formatMu(handoff) + ")";
    s->slotWords = 1 + (s->compressor->maxCompressedBytes() + 7) / 8;
    s->mine.assign(s->slotWords, 0);
    s->all.assign(s->slotWords * s->size, 0);
    s->decoded.resize(count);
    s->sum.resize(count);
    s->handoff = handoff;
    if (handoff > 0) s->estimate.assign(count, 0.0f);
    auto gather = algorithms::ringAllgatherPlan(s->rank, s->size, s->slotWords, DataType::kI64, options);
    if (!gather.isOk()) return named(gather.status());
    s->gatherPlan = gather.take();
    s->gatherScratch = scratchFor(*s->gatherPlan);
  }
  // The compressor's name carries its resolved keys (k as a count, levels, scaling, mu), not the
  // seed of its random draws.
  s->settings = "seed=" + (kv.count("seed") ? kv.at("seed") : std::string("0"));
  s->flagPlan = flag.take();
  s->flagScratch = scratchFor(*s->flagPlan);
  return std::unique_ptr<CompressedTensor>(new CompressedTensor(comm, std::move(s)));
}

CompressedTensor::CompressedTensor(algorithms::Team& comm, std::shared_ptr<CompressedState> state)
    : comm_(comm), state_(std::move(state)) {}
CompressedTensor::~CompressedTensor() = default;

Result<algorithms::RequestPtr> CompressedTensor::allreduceAsync(float* g) {
  // Sequence numbers: the NaN flag, then the all-gather of payloads; two-level: the host
  // average, the flag, the column gather of payloads, the row gather of blocks.
  return algorithms::submitTensorStep(
      comm_, state_, "compressed tensor", g, state_->hier ? 4 : 2,
      [](const std::shared_ptr<CompressedState>& state, const algorithms::TaskContext& ctx) {
        if (state->hier) return std::unique_ptr<algorithms::Task>(new CompressedHierStepTask(state, ctx));
        return std::unique_ptr<algorithms::Task>(new CompressedStepTask(state, ctx));  // host or direct
      });
}

Status CompressedTensor::allreduce(float* g) {
  TSR_ASSIGN_OR_RETURN(algorithms::RequestPtr request, allreduceAsync(g));
  return request->wait();
}

Status CompressedTensor::setStaging(std::shared_ptr<algorithms::DeviceStaging> staging) {
  if (state_->device && staging)
    return Status(Code::kInvalidArgument, "compressed tensor " + state_->name +
                                              ": it runs on the direct device path; "
                                              "its compressor state lives on the device and cannot be staged");
  return algorithms::setTensorStaging(*state_, "compressed tensor", std::move(staging));
}

namespace {
// Why this tensor has no device step (empty: it has one): its compressor (two-level: its
// shard's; an empty shard has none and nothing to compress) has no device form.
std::string noDirectStep(const CompressedState& s) {
  if (!s.compressor) return "";
  return DeviceCodec::noDeviceForm(*s.compressor);
}
}  // namespace

Status CompressedTensor::setDeviceKernels(std::shared_ptr<algorithms::StepKernels> kernels) {
  CompressedState& s = *state_;
  TSR_RETURN_IF_ERROR(algorithms::checkDirectSwitch(s, "compressed tensor", kernels != nullptr, noDirectStep(s)));
  TSR_ASSIGN_OR_RETURN(s.device, CompressedDevice::create(std::move(kernels), s));
  return Status::ok();
}

Result<std::string> CompressedTensor::useDeviceMemory(const algorithms::DeviceOpeners& open) {
  return algorithms::useTensorDeviceMemory(*this, state_->name, comm_.transportMovesCuda(), noDirectStep(*state_),
                                           open);
}

bool CompressedTensor::directDevice() const { return state_->device != nullptr; }
bool CompressedTensor::busy() const { return algorithms::stepPending(*state_); }
uint64_t CompressedTensor::step() const { return state_->step; }
const std::string& CompressedTensor::algorithm() const { return state_->algorithm; }
size_t CompressedTensor::slotBytes() const { return state_->slotWords * 8; }

std::string CompressedTensor::settingsText() const {
  return "algorithm=" + state_->algorithm + "; " + state_->settings;
}

void CompressedTensor::setAgreement(std::shared_ptr<algorithms::SettingsAgreement> agreement) {
  state_->agreement = std::move(agreement);
}

void CompressedTensor::residual(float* out) const {
  if (state_->hier && state_->device) return twoLevelDeviceResidual(*state_, out);
  if (state_->hier) return twoLevelResidual(*state_, out);
  if (state_->device) {
    state_->device->codec->readError(out).ignore();
    return;
  }
  auto e = state_->compressor->feedbackError();
  if (e.empty())
    std::fill(out, out + state_->count, 0.0f);
  else
    std::copy(e.begin(), e.end(), out);
}

Status CompressedTensor::setResidual(const float* values) {
  CompressedState& s = *state_;
  TSR_RETURN_IF_ERROR(algorithms::checkResidualReplace(s, "compressed tensor"));
  if (s.hier && s.device) return writeTwoLevelDeviceResidual(s, values);
  if (s.hier) {
    CompressedHier& h = *s.hier;
    std::copy_n(values, s.count, h.intraResidual.begin());
    if (s.compressor) s.compressor->setFeedbackError(std::vector<float>(s.compressor->count(), 0.0f));
    h.intraResidualOnce = h.intraType != DataType::kF16;
    return Status::ok();
  }
  std::span<const float> given(values, s.count);
  bool kept = false;
  if (s.device) {
    TSR_ASSIGN_OR_RETURN(kept, s.device->codec->writeError(values));
  } else {
    kept = s.compressor->setFeedbackError(given);
  }
  if (kept) return Status::ok();
  if (std::all_of(given.begin(), given.end(), [](float v) { return v == 0.0f; })) return Status::ok();
  return Status(Code::kInvalidArgument,
                "compressed tensor " + s.name +
                    ": ef=none keeps no residual, so only "
                    "zeros can be set; declare it with error feedback (the default) to carry one");
}

Status CompressedTensor::setResultScale(algorithms::ResultScale scale) {
  return algorithms::setTensorResultScale(*state_, "compressed tensor", scale);
}

void CompressedTensor::momentum(float* out) const {
  const CompressedState& s = *state_;
  if (s.device && !s.hier) {
    s.device->codec->readMomentum(out).ignore();
    return;
  }
  const auto* m = dynamic_cast<const compress::NesterovMomentum*>(s.compressor.get());
  if (s.hier || !m) {
    std::fill(out, out + s.count, 0.0f);
    return;
  }
  std::copy(m->momentum().begin(), m->momentum().end(), out);
}

}  // namespace tsr::compressed
