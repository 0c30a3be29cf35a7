#include "algorithms/team/result_scale.h"

#include <string>
#include <utility>

namespace tsr::algorithms {
namespace {

class ScaledResultTask final : public Task {
 public:
  ScaledResultTask(std::unique_ptr<Task> inner, float* data, size_t count, ResultScale scale, int size)
      : inner_(std::move(inner)), data_(data), count_(count), scale_(scale), size_(static_cast<float>(size)) {}
  Status start() override { return afterStep(inner_->start()); }
  Status progress() override { return afterStep(inner_->progress()); }
  void abort(const Status& reason) override { inner_->abort(reason); }
  bool quiescent() const override { return inner_->quiescent(); }
  int waitingOn() const override { return inner_->waitingOn(); }
  std::string describe() const override { return inner_->describe(); }

 private:
  Status afterStep(Status st) {
    if (!st.isOk() || scaled_) return st;
    scaled_ = true;
    // Division for the average, as the callers' own x / N would do it.
    if (scale_ == ResultScale::kOverRanks)
      for (size_t j = 0; j < count_; ++j) data_[j] /= size_;
    else
      for (size_t j = 0; j < count_; ++j) data_[j] *= size_;
    return st;
  }

  std::unique_ptr<Task> inner_;
  float* data_;
  size_t count_;
  ResultScale scale_;
  float size_;
  bool scaled_ = false;
};

}  // namespace

TaskFactory scaleResult(TaskFactory make, float* data, size_t count, ResultScale scale) {
  if (scale == ResultScale::kNone) return make;
  return [make = std::move(make), data, count, scale](const TaskContext& ctx) -> Result<std::unique_ptr<Task>> {
    TSR_ASSIGN_OR_RETURN(auto inner, make(ctx));
    return std::unique_ptr<Task>(new ScaledResultTask(std::move(inner), data, count, scale, ctx.size));
  };
}

}  // namespace tsr::algorithms
