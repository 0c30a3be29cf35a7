#include "algorithms/marsit/marsit.h"

#include <cmath>
#include <cstring>

#include "algorithms/kernels/sign.h"
#include "algorithms/marsit/marsit_plan.h"

namespace tsr::marsit {

namespace {
Status wait(Result<runtime::RequestPtr> posted) {
  return posted.isOk() ? posted.value()->wait() : posted.status();
}
}  // namespace

Result<Params> parseParams(const std::map<std::string, std::string>& kv) {
  Params p;
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
      if (value != "ring") return bad("ring (the torus variant is not implemented yet)");
    } else {
      return Status(Code::kInvalidArgument, "marsit: unknown parameter " + key + "=" + value +
                                                " (accepted: seed, full_precision_every, algorithm, topology)");
    }
  }
  return p;
}

Result<std::unique_ptr<MarsitTensor>> MarsitTensor::create(runtime::Communicator& comm, std::string name,
                                                           size_t count,
                                                           const std::map<std::string, std::string>& params) {
  TSR_ASSIGN_OR_RETURN(Params p, parseParams(params));
  auto t = std::unique_ptr<MarsitTensor>(new MarsitTensor(comm, std::move(name), count, p));
  auto plan = marsitRingPlan(comm.rank(), comm.size(), t->bits_.size(), comm.denseOptions());
  if (!plan.isOk()) return plan.status();
  t->plan_ = plan.take();
  return t;
}

MarsitTensor::MarsitTensor(runtime::Communicator& comm, std::string name, size_t count, Params p)
    : comm_(comm), name_(std::move(name)), count_(count), params_(p), comp_(count, 0.0f),
      work_(count), bits_((count + 63) / 64) {}

Status MarsitTensor::allreduce(float* g) {
  if (!g && count_) return Status(Code::kInvalidArgument, "marsit tensor " + name_ + ": buffer is NULL");
  for (size_t j = 0; j < count_; ++j) work_[j] = g[j] + comp_[j];
  // One small allreduce carries both the shared magnitude and whether any rank saw a NaN or
  // Inf, so a bad value fails the step on every rank instead of leaving peers waiting.
  size_t bad = kernels::firstNonFinite(work_.data(), count_);
  double mine[2] = {bad < count_ ? 0.0 : (count_ ? kernels::sumAbs(work_.data(), count_) / count_ : 0.0),
                    bad < count_ ? 1.0 : 0.0};
  double sum[2] = {0, 0};
  TSR_RETURN_IF_ERROR(wait(comm_.allreduce(mine, sum, 2, DataType::kF64, ReduceOp::kSum)));
  if (sum[1] > 0)
    return Status(Code::kNumericError,
                  "marsit tensor " + name_ + ": " + std::to_string(static_cast<int>(sum[1])) +
                      " rank(s) had NaN or Inf in gradient + compensation" +
                      (bad < count_ ? " (rank " + std::to_string(comm_.rank()) + ": element " +
                                          std::to_string(bad) + " is " + std::to_string(work_[bad]) + ")"
                                    : std::string()));
  const uint64_t step = step_;
  if (params_.fullPrecisionEvery > 0 && (step + 1) % params_.fullPrecisionEvery == 0) {
    TSR_RETURN_IF_ERROR(wait(comm_.allreduce(work_.data(), g, count_, DataType::kF32, ReduceOp::kAvg)));
    std::fill(comp_.begin(), comp_.end(), 0.0f);
    ++step_;
    return Status::ok();
  }
  double eta = sum[0] / comm_.size();
  kernels::RngStream coin{params_.seed, static_cast<uint32_t>(comm_.rank()), static_cast<uint32_t>(step)};
  kernels::signPack(work_.data(), count_, bits_.data(), coin);
  TSR_RETURN_IF_ERROR(wait(comm_.submitPlan(plan_, bits_.data(), bits_.data(), params_.seed,
                                            static_cast<uint32_t>(step))));
  kernels::signDecompress(bits_.data(), count_, static_cast<float>(eta), g);
  for (size_t j = 0; j < count_; ++j) comp_[j] = work_[j] - g[j];
  ++step_;
  return Status::ok();
}

}  // namespace tsr::marsit
