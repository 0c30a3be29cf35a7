// Dense algorithm selection (see dense_selector.h).
#include "algorithms/dense/dense_selector.h"

#include <algorithm>

#include <fmt/format.h>

#include "algorithms/dense/dense_algorithms.h"
#include "base/logging.h"

namespace tsr::algorithms {

std::vector<std::string> DenseSelector::order(std::vector<Candidate> ranked, const char* what, size_t bytes) const {
  // TSR_ALGO first when it names an algorithm of this collective, even one the cost model
  // would not consider for this job (the torus on one host); then the model's ranking.
  static const std::vector<std::string> allreduces = plannedAlgorithms(false), allgathers = plannedAlgorithms(true);
  const auto& valid = std::string(what) == "allgather" ? allgathers : allreduces;
  std::vector<std::string> names;
  if (std::find(valid.begin(), valid.end(), s_.forced) != valid.end()) names.push_back(s_.forced);
  for (const Candidate& c : ranked)
    if (c.algorithm != s_.forced) names.push_back(c.algorithm);
  auto logger = log::get("runtime");
  if (logger->should_log(spdlog::level::debug)) {
    std::string estimates;
    for (const Candidate& c : ranked) estimates += fmt::format(" {} {:.1f} us;", c.algorithm, c.seconds * 1e6);
    logger->debug("{} of {} B on {} ranks ({} hosts): {}{} (estimates:{} links: {})", what, bytes, s_.size,
                  s_.shape.hosts, names.front(), names.front() == s_.forced ? " (TSR_ALGO)" : "", estimates,
                  describe(links_));
  }
  return names;
}

std::vector<std::string> DenseSelector::allreduceOrder(size_t bytes) const {
  return order(rankAllreduce(bytes, s_.shape, links_), "allreduce", bytes);
}

std::vector<std::string> DenseSelector::allgatherOrder(size_t bytesPerRank) const {
  return order(rankAllgather(bytesPerRank, s_.shape, links_), "allgather", bytesPerRank);
}

void DenseSelector::sayOnce(const std::string& algorithm, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (said_.insert(algorithm).second)
    log::get("runtime")->info("rank {}: {} cannot serve this job: {}; trying the next algorithm", s_.rank, algorithm,
                              why);
}

Result<std::shared_ptr<Plan>> DenseSelector::build(const std::string& algorithm, size_t count, DataType dtype,
                                                   ReduceOp op, bool allgather) {
  const int r = s_.rank, n = s_.size;
  if (allgather) {
    if (algorithm == "bruck") return bruckAllgatherPlan(r, n, count, dtype, s_.dense);
    return ringAllgatherPlan(r, n, count, dtype, s_.dense);
  }
  if (algorithm == "rabenseifner") return rabenseifnerAllreducePlan(r, n, count, dtype, op, s_.dense);
  if (algorithm == "doubling") return doublingAllreducePlan(r, n, count, dtype, op, s_.dense);
  if (algorithm == "torus" || algorithm == "hier") {
    if (s_.grid.empty()) return Status(Code::kNotSupported, s_.gridWhyNot);
    return algorithm == "torus" ? torusAllreducePlan(r, n, count, dtype, op, s_.grid, s_.dense)
                                : hierAllreducePlan(r, n, count, dtype, op, s_.grid, s_.dense);
  }
  return ringAllreducePlan(r, n, count, dtype, op, s_.dense);
}

Result<std::shared_ptr<Plan>> DenseSelector::allreduce(size_t count, DataType dtype, ReduceOp op) {
  Status last(Code::kInternal, "no allreduce algorithm");
  for (const std::string& name : allreduceOrder(count * dataTypeSize(dtype))) {
    auto plan = build(name, count, dtype, op, false);
    if (plan.isOk() || plan.status().code() != Code::kNotSupported) return plan;
    sayOnce(name, plan.status().message());
    last = plan.status();
  }
  return last;
}

Result<std::shared_ptr<Plan>> DenseSelector::allgather(size_t count, DataType dtype) {
  auto names = allgatherOrder(count * dataTypeSize(dtype));
  return build(names.front(), count, dtype, ReduceOp::kSum, true);
}

}  // namespace tsr::algorithms
