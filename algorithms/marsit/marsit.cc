#include "algorithms/marsit/marsit.h"

#include <algorithm>

#include "algorithms/kernels/sign_ops.h"
#include "algorithms/marsit/marsit_plan.h"
#include "algorithms/marsit/marsit_device_step.h"
#include "algorithms/marsit/marsit_hier_device_step.h"
#include "algorithms/marsit/marsit_hier_step.h"
#include "algorithms/marsit/marsit_step.h"
#include "algorithms/team/device_path.h"
#include "algorithms/team/tensor_step.h"

namespace tsr::marsit {

Result<Params> parseParams(const std::map<std::string, std::string>& kv) {
  Params p;
  bool twoLevel = false, topologyRing = false, momentumGiven = false, blockGiven = false;
  for (const auto& [key, value] : kv) {
    auto bad = [&](const std::string& accepted) {
      return Status(Code::kInvalidArgument, "marsit: " + key + "=" + value + " is not accepted (" + accepted + ")");
    };
    char* end = nullptr;
    if (key == "seed") {
      unsigned long long v = std::strtoull(value.c_str(), &end, 0);
      if (value.empty() || *end) return bad("an unsigned integer");
      p.seed = v;
    } else if (key == "full_precision_every") {
      long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 0 || v > 1000000) return bad("an integer in 0..1000000 (0 = never)");
      p.fullPrecisionEvery = static_cast<int>(v);
    } else if (key == "algorithm") {
      if (value != "marsit") return bad("marsit");
    } else if (key == "topology") {
      if (value == "ring") topologyRing = true;
      else if (value == "torus") p.topology = Topology::kTorus;
      else return bad("ring or torus");
    } else if (key == "pack") {
      if (value == "chunked") p.chunkedPack = true;
      else if (value == "whole") p.chunkedPack = false;
      else return bad("chunked or whole");
    } else if (key == "intra") {
      if (value == "none") p.intraType = DataType::kF32;
      else if (value == "fp16") p.intraType = DataType::kF16;
      else return bad("none or fp16");
      twoLevel = true;
    } else if (key == "momentum") {
      float v = std::strtof(value.c_str(), &end);
      if (value.empty() || *end || !(v >= 0.0f && v < 1.0f)) return bad("a number in [0, 1): the optimizer's momentum");
      p.momentum = v;
      momentumGiven = true;
    } else if (key == "scale_block") {
      unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end || value[0] == '-' || v % kScaleBlockUnit != 0 || v > (1ull << 40))
        return bad("0 (one scale for the tensor) or a multiple of 1024 elements");
      p.scaleBlock = static_cast<size_t>(v);
      blockGiven = true;
    } else {
      return Status(Code::kInvalidArgument, "marsit: unknown parameter " + key + "=" + value +
                                                " (accepted: seed, full_precision_every, algorithm, topology, intra, "
                                                "pack, momentum, scale_block)");
    }
  }
  if (twoLevel) {
    if (p.topology == Topology::kTorus || topologyRing)
      return Status(Code::kInvalidArgument, "marsit: intra=" + kv.at("intra") + " selects the two-level "
                                            "schedule, which cannot be combined with topology=" + kv.at("topology"));
    p.topology = Topology::kTwoLevel;
    // The two-level schedule runs the paper's form only (momentum 0, one scale).
    if ((momentumGiven && p.momentum != 0.0f) || (blockGiven && p.scaleBlock != 0))
      return Status(Code::kInvalidArgument, "marsit: intra=" + kv.at("intra") +
                                                " (two-level) supports momentum=0 and scale_block=0 only");
    p.momentum = 0.0f;
    p.scaleBlock = 0;
  }
  return p;
}

namespace {

std::vector<uint64_t> scratchFor(const algorithms::Plan& plan) {
  return std::vector<uint64_t>((plan.scratchBytes + 7) / 8);
}

}  // namespace

Result<std::unique_ptr<MarsitTensor>> MarsitTensor::create(algorithms::Team& comm, std::string name,
                                                           size_t count,
                                                           const std::map<std::string, std::string>& params) {
  auto named = [&](const Status& st) {
    return Status(st.code(), "marsit tensor " + name + ": " + st.message());
  };
  auto parsed = parseParams(params);
  if (!parsed.isOk()) return named(parsed.status());
  auto s = std::make_shared<MarsitState>();
  s->params = parsed.value();
  s->count = count;
  s->rank = comm.rank();
  s->size = comm.size();
  s->comp.assign(count, 0.0f);
  s->work.resize(count);
  s->bits.resize(kernels::wordsForElements(count));
  const auto& grid = comm.torusGrid();
  const auto& options = comm.denseOptions();
  bool torus = s->params.topology == Topology::kTorus;
  s->twoLevel = s->params.topology == Topology::kTwoLevel;
  if ((torus || s->twoLevel) && grid.empty())
    return Status(Code::kNotSupported,
                  "marsit tensor " + name + ": " + (torus ? "topology=torus" : "the two-level schedule (intra=)") +
                      ": this job of " + std::to_string(comm.size()) + " ranks has no host grid (" +
                      comm.torusWhyNot() + "); use topology=ring");
  if (s->twoLevel) {
    auto hier = marsitHierPlans(s->rank, s->size, count, s->params.intraType, grid, options,
                                s->params.chunkedPack);
    if (!hier.isOk()) return named(hier.status());
    s->hier = hier.take();
    s->bitPlan = s->hier.bits;
    s->intraType = s->params.intraType;
    s->ranksPerRow = static_cast<int>(grid[0].size());
    s->comp.assign(s->hier.shardCount, 0.0f);
    s->shard.resize(s->hier.shardCount);
    s->intraResidual.assign(count, 0.0f);
    if (s->intraType == DataType::kF16) s->dropped.assign(s->hier.padded, 0.0f);
    s->bits.assign(s->hier.padded / 64, 0);
    s->intraBuffer.assign((s->hier.padded * dataTypeSize(s->intraType) + 7) / 8, 0);
    s->rowScratch = scratchFor(*s->hier.rowReduceScatter);
  } else {
    const bool chunked = s->params.chunkedPack;
    auto bitPlan = torus ? algorithms::torusSignMergePlan(s->rank, s->size, s->bits.size(), grid, options, chunked)
                         : marsitRingPlan(s->rank, s->size, s->bits.size(), options, chunked);
    if (!bitPlan.isOk()) return named(bitPlan.status());
    s->bitPlan = bitPlan.take();
  }
  s->algorithm = s->bitPlan->algorithm;
  if (!s->twoLevel) sizeFlatState(*s);
  auto scalarPlan = algorithms::ringAllreducePlan(s->rank, s->size, s->scalarIn.size(), DataType::kF64,
                                                  ReduceOp::kSum, options);
  if (!scalarPlan.isOk()) return named(scalarPlan.status());
  s->scalarPlan = scalarPlan.take();
  if (s->params.fullPrecisionEvery > 0) {
    auto full = torus || s->twoLevel ? algorithms::torusAllreducePlan(s->rank, s->size, count, DataType::kF32, ReduceOp::kAvg, grid, options)
                      : algorithms::ringAllreducePlan(s->rank, s->size, count, DataType::kF32, ReduceOp::kAvg, options);
    if (!full.isOk()) return named(full.status());
    s->fullPlan = full.take();
    s->fullScratch = scratchFor(*s->fullPlan);
  }
  s->bitScratch = scratchFor(*s->bitPlan);
  s->scalarScratch = scratchFor(*s->scalarPlan);
  s->name = std::move(name);
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
        if (state->twoLevel && state->device)
          return std::unique_ptr<algorithms::Task>(new MarsitHierDeviceStepTask(state, ctx));
        if (state->twoLevel) return std::unique_ptr<algorithms::Task>(new MarsitHierStepTask(state, ctx));
        if (state->device) return std::unique_ptr<algorithms::Task>(new MarsitDeviceStepTask(state, ctx));
        return std::unique_ptr<algorithms::Task>(new MarsitStepTask(state, ctx));
      });
}

Status MarsitTensor::allreduce(float* g) {
  TSR_ASSIGN_OR_RETURN(algorithms::RequestPtr request, allreduceAsync(g));
  return request->wait();
}

Status MarsitTensor::setStaging(std::shared_ptr<algorithms::DeviceStaging> staging) {
  if (state_->device && staging)
    return Status(Code::kInvalidArgument, "marsit tensor " + state_->name + ": it runs on the direct device path; "
                                          "its compensation lives on the device and cannot be staged");
  return algorithms::setTensorStaging(*state_, "marsit tensor", std::move(staging));
}

namespace {
// Why this tensor has no device step (empty: it has one). Ring, torus and two-level
// (intra=none|fp16, marsit_hier_device_step.h) all have one.
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
    s.device->kernels
        ->readToHost(s.intraResidual.data(), s.device->intraResidual.as<float>(), s.count * sizeof(float))
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
  if (!s.twoLevel) {
    std::copy_n(values, s.count, s.comp.begin());
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

}  // namespace tsr::marsit
