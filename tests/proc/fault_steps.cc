#include "tests/proc/fault_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "algorithms/covap/covap.h"
#include "algorithms/selsync/selsync.h"
#include "algorithms/tensors/tensor_registry.h"
#include "tests/proc/worker_report.h"

using namespace tsr;
using runtime::Communicator;

namespace {

// Every survivor's `value` the same (an all-gather over next)? "" or what differs.
std::string agreed(Communicator& next, double value, const std::string& what) {
  std::vector<double> mine{value}, all(next.size());
  if (Status s = wait(next.allgather(mine.data(), all.data(), 1, DataType::kF64)); !s.isOk()) return s.toString();
  if (std::adjacent_find(all.begin(), all.end(), std::not_equal_to<>()) != all.end())
    return "the survivors' " + what + " differ";
  return "";
}

double sum(const std::vector<float>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

class DenseSteps final : public FaultSteps {
 public:
  DenseSteps(Communicator& comm, size_t count) : comm_(comm), buf_(count, 1.0f) {}
  std::function<Status()> post(int, const std::function<void()>& midway) override {
    auto req = comm_.allreduce(buf_.data(), buf_.data(), buf_.size(), DataType::kF32, ReduceOp::kAvg);
    midway();
    return [req = std::move(req)]() mutable { return wait(std::move(req)); };
  }
  std::string moveAndCheck(Communicator&) override { return ""; }
  std::string movedLine() const override { return ""; }

 private:
  Communicator& comm_;
  std::vector<float> buf_;
};

// FAULT_TENSOR=topk: a compressed tensor of top-k 1% with error feedback (its residual moves
// at the step's commit); any other name is a tensor algorithm with its defaults.
algorithms::TensorSpec tensorSpec(const std::string& algorithm, size_t count) {
  if (algorithm == "topk")
    return {"g", count, DataType::kF32, {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "0.01"}}};
  return {"g", count, DataType::kF32, {{"algorithm", algorithm}}};
}

// The tensor made again on the survivors' communicator with its residual (as tsr_tensor_move
// does): the failed step left the residual as it was (its redo must not count the gradient
// twice), and the next step gives every survivor the same result.
class TensorSteps final : public FaultSteps {
 public:
  TensorSteps(std::unique_ptr<algorithms::Tensor> t, std::string algorithm, size_t count)
      : tensor_(std::move(t)), algorithm_(std::move(algorithm)), buf_(count, 1.0f) {}
  std::function<Status()> post(int, const std::function<void()>& midway) override {
    before_.resize(buf_.size());
    tensor_->residual(before_.data());
    auto req = tensor_->allreduceAsync(buf_.data());
    midway();
    return [req = std::move(req)]() mutable { return wait(std::move(req)); };
  }
  std::string moveAndCheck(Communicator& next) override {
    if (tensor_->busy()) return "the failed step is still pending";
    std::vector<float> held(buf_.size());
    tensor_->residual(held.data());
    if (!std::all_of(held.begin(), held.end(), [](float v) { return std::isfinite(v); }))
      return "the residual after the failed step is not finite";
    if (std::memcmp(held.data(), before_.data(), held.size() * sizeof(float)) != 0)
      return "the failed step changed the residual";
    if (algorithm_ == "topk" && std::all_of(held.begin(), held.end(), [](float v) { return v == 0.0f; }))
      return "nothing was held back before the failure";
    auto moved = algorithms::makeTensor(next, tensorSpec(algorithm_, buf_.size()), "fault_worker");
    if (!moved.isOk()) return moved.status().toString();
    if (Status s = moved.value()->setResidual(held.data()); !s.isOk()) return s.toString();
    std::vector<float> x(buf_.size(), static_cast<float>(next.rank() + 1));
    if (Status s = wait(moved.value()->allreduceAsync(x.data())); !s.isOk()) return "its step: " + s.toString();
    return agreed(next, sum(x), "results of its step");
  }
  std::string movedLine() const override { return "; tensor moved, its step agreed"; }

 private:
  std::unique_ptr<algorithms::Tensor> tensor_;
  std::string algorithm_;
  std::vector<float> buf_, before_;  // before_: the residual as the last step began
};

// COVAP over two buckets (interval 2: one is averaged each step, the other held back). A
// victim dies between handing over its two buckets, as in a backward pass. The failed step
// must leave the residuals and the step count as they were; moved, the handle steps on from
// there and the survivors agree.
class CovapSteps final : public FaultSteps {
 public:
  CovapSteps(std::unique_ptr<covap::Covap> c, size_t count, int rank)
      : covap_(std::move(c)),
        grads_{std::vector<float>(count / 2), std::vector<float>(count - count / 2)},
        rank_(rank) {}
  std::function<Status()> post(int i, const std::function<void()>& midway) override {
    before_ = {covap_->residual(0), covap_->residual(1)};
    stepBefore_ = covap_->step();
    for (auto& g : grads_) std::fill(g.begin(), g.end(), static_cast<float>((rank_ + 1) * (i + 1)));
    covap_->beginStep();
    Status first = covap_->bucketReady(1, grads_[1].data());
    midway();
    if (first.isOk()) first = covap_->bucketReady(0, grads_[0].data());
    return [this, first] {
      Status s = covap_->finishStep();
      return first.isOk() ? s : first;
    };
  }
  std::string moveAndCheck(Communicator& next) override {
    if (covap_->step() != stepBefore_) return "the failed step was counted";
    for (size_t b = 0; b < 2; ++b)
      if (covap_->residual(b) != before_[b])
        return "the failed step changed bucket " + std::to_string(b) + "'s residual";
    if (sum(before_[0]) + sum(before_[1]) == 0) return "nothing was held back before the failure";
    if (Status s = covap_->moveTo(next); !s.isOk()) return "the move: " + s.toString();
    if (covap_->step() != stepBefore_ || covap_->residual(0) != before_[0] || covap_->residual(1) != before_[1])
      return "the move lost the step or a residual";
    for (auto& g : grads_) std::fill(g.begin(), g.end(), static_cast<float>(next.rank() + 1));
    covap_->beginStep();
    for (size_t b : {size_t{1}, size_t{0}})
      if (Status s = covap_->bucketReady(b, grads_[b].data()); !s.isOk()) return "its step: " + s.toString();
    if (Status s = covap_->finishStep(); !s.isOk()) return "its step: " + s.toString();
    if (covap_->step() != stepBefore_ + 1) return "the step after the move was not counted";
    return agreed(next, sum(grads_[0]) * 3 + sum(grads_[1]), "results of its step");
  }
  std::string movedLine() const override { return "; covap moved, its step agreed"; }

 private:
  std::unique_ptr<covap::Covap> covap_;
  std::vector<std::vector<float>> grads_, before_;
  int rank_;
  uint64_t stepBefore_ = 0;
};

// SelSync synchronizing every step (delta 0), one bucket: a failed step leaves the bucket
// (this rank's local model) and the counts as they were; moved, the next step averages over
// the survivors.
class SelSyncSteps final : public FaultSteps {
 public:
  SelSyncSteps(std::unique_ptr<selsync::SelSync> s, size_t count, int rank)
      : selsync_(std::move(s)), model_(count), rank_(rank) {}
  std::function<Status()> post(int i, const std::function<void()>& midway) override {
    std::fill(model_.begin(), model_.end(), static_cast<float>(rank_ + i));  // a local update
    before_ = model_;
    syncedBefore_ = selsync_->stats().syncSteps;
    midway();
    return [this, i] {
      auto r = selsync_->step((rank_ + 1.0) * (i + 1), {model_.data()});
      return r.isOk() ? Status::ok() : r.status();
    };
  }
  std::string moveAndCheck(Communicator& next) override {
    if (model_ != before_) return "the failed step changed the model";
    if (selsync_->stats().syncSteps != syncedBefore_) return "the failed step was counted";
    selsync_->moveTo(next);
    auto r = selsync_->step(1.0, {model_.data()});
    if (!r.isOk()) return "its step: " + r.status().toString();
    if (!r.value().synchronized || selsync_->stats().syncSteps != syncedBefore_ + 1)
      return "the step after the move did not synchronize";
    return agreed(next, sum(model_), "models");
  }
  std::string movedLine() const override { return "; selsync moved, its step agreed"; }

 private:
  std::unique_ptr<selsync::SelSync> selsync_;
  std::vector<float> model_, before_;
  int rank_;
  uint64_t syncedBefore_ = 0;
};

}  // namespace

Result<std::unique_ptr<FaultSteps>> makeFaultSteps(Communicator& comm, size_t count) {
  const char* algorithm = std::getenv("FAULT_TENSOR");
  if (!algorithm) return std::unique_ptr<FaultSteps>(new DenseSteps(comm, count));
  const std::string name = algorithm;
  if (name == "covap") {
    TSR_ASSIGN_OR_RETURN(
        auto c, covap::Covap::create(comm, {{"interval", "2"}, {"ef_init", "0.5"}}, {count / 2, count - count / 2}));
    return std::unique_ptr<FaultSteps>(new CovapSteps(std::move(c), count, comm.rank()));
  }
  if (name == "selsync") {
    TSR_ASSIGN_OR_RETURN(auto s, selsync::SelSync::create(comm, {{"delta", "0"}}, {count}));
    return std::unique_ptr<FaultSteps>(new SelSyncSteps(std::move(s), count, comm.rank()));
  }
  TSR_ASSIGN_OR_RETURN(auto t, algorithms::makeTensor(comm, tensorSpec(algorithm, count), "fault_worker"));
  return std::unique_ptr<FaultSteps>(new TensorSteps(std::move(t), name, count));
}
