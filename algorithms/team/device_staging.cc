#include "algorithms/team/device_staging.h"

#include <utility>

namespace tsr::algorithms {
namespace {

// copy to host -> host step -> copy back, polled by the progress thread.
class StagedTask final : public Task {
 public:
  StagedTask(std::shared_ptr<DeviceStaging> staging, float* device, TaskFactory hostStep, const TaskContext& ctx)
      : staging_(std::move(staging)), device_(device), hostStep_(std::move(hostStep)), ctx_(ctx) {}

  Status start() override {
    TSR_RETURN_IF_ERROR(named(staging_->copier().postToHost(staging_->host(), device_, bytes(), nullptr)));
    copying_ = true;
    phase_ = Phase::kToHost;
    return progress();
  }

  Status progress() override {
    if (phase_ == Phase::kToHost) {
      TSR_ASSIGN_OR_RETURN(bool done, copiesDone());
      if (!done) return Status(Code::kInProgress, "");
      auto made = hostStep_(ctx_);
      if (!made.isOk()) return made.status();
      inner_ = made.take();
      phase_ = Phase::kHostStep;
      Status st = inner_->start();
      return st.code() == Code::kInProgress || !st.isOk() ? st : copyBack();
    }
    if (phase_ == Phase::kHostStep) {
      Status st = inner_->progress();
      // A failed step copies nothing back: the device buffer keeps the caller's gradient.
      return st.code() == Code::kInProgress || !st.isOk() ? st : copyBack();
    }
    if (phase_ == Phase::kToDevice) {
      TSR_ASSIGN_OR_RETURN(bool done, copiesDone());
      if (!done) return Status(Code::kInProgress, "");
      phase_ = Phase::kDone;
    }
    return Status::ok();
  }

  void abort(const Status& reason) override {
    if (inner_ && phase_ == Phase::kHostStep) inner_->abort(reason);
  }

  // A posted copy still refers to the device buffer and host(): not quiescent until it ends.
  bool quiescent() const override {
    if (copying_) {
      auto done = staging_->copier().finished();
      if (done.isOk() && !done.value()) return false;
      copying_ = false;
    }
    return !inner_ || inner_->quiescent();
  }

  int waitingOn() const override { return inner_ && phase_ == Phase::kHostStep ? inner_->waitingOn() : -1; }

  std::string describe() const override {
    std::string what = inner_ ? inner_->describe() : "step";
    return what + " of device tensor " + staging_->tensor() + " (staged through pinned host memory)";
  }

 private:
  enum class Phase { kIdle, kToHost, kHostStep, kToDevice, kDone };

  size_t bytes() const { return staging_->count() * sizeof(float); }

  Status named(const Status& st) const {
    if (st.isOk()) return st;
    return Status(st.code(), "device tensor " + staging_->tensor() + ": " + st.message());
  }

  Result<bool> copiesDone() {
    auto done = staging_->copier().finished();
    if (!done.isOk()) {
      copying_ = false;
      return named(done.status());
    }
    if (done.value()) copying_ = false;
    return done.value();
  }

  Status copyBack() {
    TSR_RETURN_IF_ERROR(named(staging_->copier().postToDevice(device_, staging_->host(), bytes())));
    copying_ = true;
    phase_ = Phase::kToDevice;
    return progress();
  }

  std::shared_ptr<DeviceStaging> staging_;
  float* device_;
  TaskFactory hostStep_;
  TaskContext ctx_;
  std::unique_ptr<Task> inner_;
  Phase phase_ = Phase::kIdle;
  mutable bool copying_ = false;
};

}  // namespace

Result<std::shared_ptr<DeviceStaging>> DeviceStaging::create(std::unique_ptr<DeviceCopier> copier, std::string tensor,
                                                             size_t count) {
  std::shared_ptr<DeviceStaging> s(new DeviceStaging(std::move(copier), std::move(tensor), count));
  auto pinned = s->copier_->allocPinned(count * sizeof(float));
  if (!pinned.isOk())
    return Status(pinned.status().code(),
                  "device tensor " + s->tensor_ + ": pinned host staging buffer: " + pinned.status().message());
  s->host_ = static_cast<float*>(pinned.value());
  return s;
}

DeviceStaging::~DeviceStaging() {
  if (host_) copier_->freePinned(host_);
}

Status DeviceStaging::checkDevice(const float* device) const {
  if (count_ == 0) return Status::ok();
  Status st = copier_->checkDevice(device, count_ * sizeof(float));
  if (st.isOk()) return st;
  return Status(st.code(), "device tensor " + tensor_ + " (memory=cuda): " + st.message());
}

TaskFactory DeviceStaging::wrap(float* device, TaskFactory hostStep) {
  std::shared_ptr<DeviceStaging> self = shared_from_this();
  return [self, device, hostStep = std::move(hostStep)](const TaskContext& ctx) -> Result<std::unique_ptr<Task>> {
    return std::unique_ptr<Task>(new StagedTask(self, device, hostStep, ctx));
  };
}

Result<std::shared_ptr<DeviceStaging>> openDeviceStaging(const std::string& tensor, size_t count) {
  auto copier = openCudaCopier();
  if (!copier.isOk())
    return Status(copier.status().code(), "tensor " + tensor +
                                              ": memory=cuda is not possible here: " + copier.status().message() +
                                              "; declare it memory=host and pass host memory");
  return DeviceStaging::create(copier.take(), tensor, count);
}

}  // namespace tsr::algorithms
