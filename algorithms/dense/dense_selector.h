// Which dense algorithm serves a collective: TSR_ALGO when it names one for this collective,
// else the cost model's ranking (algorithms/dense/cost_model.h); an algorithm that cannot
// serve the job (no torus shape, ...) says why once in the log and the next one is tried.
// Every rank holds the same inputs (job shape, agreed link model), so all ranks choose alike.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "algorithms/dense/cost_model.h"
#include "algorithms/dense/dense_plans.h"

namespace tsr::algorithms {

struct SelectorSetup {
  int rank = 0, size = 1;
  DenseOptions dense;
  std::vector<std::vector<int>> grid;  // hosts x local ranks, empty when the job has none
  std::string gridWhyNot;
  JobShape shape;
  std::string forced;  // TSR_ALGO ("auto" = none)
};

class DenseSelector {
 public:
  DenseSelector() = default;
  explicit DenseSelector(SelectorSetup setup) : s_(std::move(setup)) {}
  void setLinks(const LinkModel& links) { links_ = links; }
  const LinkModel& links() const { return links_; }
  const JobShape& shape() const { return s_.shape; }

  Result<std::shared_ptr<Plan>> allreduce(size_t count, DataType dtype, ReduceOp op);
  Result<std::shared_ptr<Plan>> allgather(size_t count, DataType dtype);
  // The order allreduce / allgather would try, forced choice first (for logs and tests).
  std::vector<std::string> allreduceOrder(size_t bytes) const;
  std::vector<std::string> allgatherOrder(size_t bytesPerRank) const;

 private:
  Result<std::shared_ptr<Plan>> build(const std::string& algorithm, size_t count, DataType dtype, ReduceOp op,
                                      bool allgather);
  std::vector<std::string> order(std::vector<Candidate> ranked, const char* what, size_t bytes) const;
  void sayOnce(const std::string& algorithm, const std::string& why);

  SelectorSetup s_;
  LinkModel links_;
  std::mutex mutex_;
  std::set<std::string> said_;  // algorithms whose refusal was logged
};

}  // namespace tsr::algorithms
