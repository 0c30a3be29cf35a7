// Marsit's parameters and per-tensor state, apart from the communicator (marsit_step.h), so
// that tests and fuzz targets build exactly the state a tensor would.
#include <algorithm>
#include <cerrno>

#include "algorithms/kernels/sign_ops.h"
#include "algorithms/marsit/marsit_plan.h"
#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

Result<Params> parseParams(const std::map<std::string, std::string>& kv) {
  Params p;
  bool twoLevel = false, topologyRing = false, momentumGiven = false, blockGiven = false;
  for (const auto& entry : kv) {
    // Named references, not a structured binding: clang before 16 cannot capture those.
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    auto bad = [&](const std::string& accepted) {
      return Status(Code::kInvalidArgument, "marsit: " + key + "=" + value + " is not accepted (" + accepted + ")");
    };
    char* end = nullptr;
    if (key == "seed") {
      errno = 0;
      unsigned long long v = std::strtoull(value.c_str(), &end, 0);
      // strtoull takes "-1" as 2^64 - 1, and saturates past it (2^64 and 2^64+1 would agree).
      if (value.empty() || *end || value.find('-') != std::string::npos || errno == ERANGE)
        return bad("an unsigned 64-bit integer");
      p.seed = v;
    } else if (key == "full_precision_every") {
      long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 0 || v > 1000000) return bad("an integer in 0..1000000 (0 = never)");
      p.fullPrecisionEvery = static_cast<int>(v);
    } else if (key == "algorithm") {
      if (value != "marsit") return bad("marsit");
    } else if (key == "topology") {
      if (value == "ring")
        topologyRing = true;
      else if (value == "torus")
        p.topology = Topology::kTorus;
      else
        return bad("ring or torus");
    } else if (key == "pack") {
      if (value == "chunked")
        p.chunkedPack = true;
      else if (value == "whole")
        p.chunkedPack = false;
      else
        return bad("chunked or whole");
    } else if (key == "intra") {
      if (value == "none")
        p.intraType = DataType::kF32;
      else if (value == "fp16")
        p.intraType = DataType::kF16;
      else
        return bad("none or fp16");
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
      return Status(Code::kInvalidArgument, "marsit: intra=" + kv.at("intra") +
                                                " selects the two-level "
                                                "schedule, which cannot be combined with topology=" +
                                                kv.at("topology"));
    p.topology = Topology::kTwoLevel;
    // The two-level schedule runs the paper's form only (momentum 0, one scale).
    if ((momentumGiven && p.momentum != 0.0f) || (blockGiven && p.scaleBlock != 0))
      return Status(Code::kInvalidArgument,
                    "marsit: intra=" + kv.at("intra") + " (two-level) supports momentum=0 and scale_block=0 only");
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

Result<std::shared_ptr<MarsitState>> makeState(std::string name, size_t count, const Params& params, int rank, int size,
                                               const std::vector<std::vector<int>>& grid,
                                               const std::string& torusWhyNot,
                                               const algorithms::DenseOptions& options) {
  auto named = [&](const Status& st) { return Status(st.code(), "marsit tensor " + name + ": " + st.message()); };
  auto s = std::make_shared<MarsitState>();
  s->params = params;
  s->count = count;
  s->rank = rank;
  s->size = size;
  s->comp.assign(count, 0.0f);
  s->work.resize(count);
  s->bits.resize(kernels::wordsForElements(count));
  bool torus = s->params.topology == Topology::kTorus;
  s->twoLevel = s->params.topology == Topology::kTwoLevel;
  if ((torus || s->twoLevel) && grid.empty())
    return Status(Code::kNotSupported, "marsit tensor " + name + ": " +
                                           (torus ? "topology=torus" : "the two-level schedule (intra=)") +
                                           ": this job of " + std::to_string(size) + " ranks has no host grid (" +
                                           torusWhyNot + "); use topology=ring");
  if (s->twoLevel) {
    auto hier = marsitHierPlans(s->rank, s->size, count, s->params.intraType, grid, options, s->params.chunkedPack);
    if (!hier.isOk()) return named(hier.status());
    s->hier = hier.take();
    s->bitPlan = s->hier.bits;
    s->intraType = s->params.intraType;
    s->ranksPerRow = static_cast<int>(grid[0].size());
    s->comp.assign(s->hier.shardCount, 0.0f);
    s->shard.resize(s->hier.shardCount);
    s->shardOut.resize(s->hier.shardCount);
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
  auto scalarPlan = scalePlan(s->rank, s->size, s->scalarIn.size(), options);
  if (!scalarPlan.isOk()) return named(scalarPlan.status());
  s->scalarPlan = scalarPlan.take();
  if (s->params.fullPrecisionEvery > 0) {
    auto full =
        torus || s->twoLevel
            ? algorithms::torusAllreducePlan(s->rank, s->size, count, DataType::kF32, ReduceOp::kAvg, grid, options)
            : algorithms::ringAllreducePlan(s->rank, s->size, count, DataType::kF32, ReduceOp::kAvg, options);
    if (!full.isOk()) return named(full.status());
    s->fullPlan = full.take();
    s->fullScratch = scratchFor(*s->fullPlan);
  }
  s->bitScratch = scratchFor(*s->bitPlan);
  s->scalarScratch = scratchFor(*s->scalarPlan);
  s->name = std::move(name);
  return s;
}

}  // namespace tsr::marsit
