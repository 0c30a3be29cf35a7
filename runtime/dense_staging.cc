#include "runtime/dense_staging.h"

#include <algorithm>

#include "algorithms/plan/caller_gate.h"

namespace tsr::runtime {

namespace {

// One dense collective on device buffers: to host, the host task, back to the device.
class StagedHostTask final : public algorithms::Task {
 public:
  StagedHostTask(std::shared_ptr<DenseStaging> staging, std::string what, DenseStaging::HostTaskMaker make,
                 const void* input, size_t inBytes, void* output, size_t outBytes,
                 std::shared_ptr<PinnedBuffers> pinned, const algorithms::TaskContext& ctx)
      : staging_(std::move(staging)),
        pinned_(std::move(pinned)),
        what_(std::move(what)),
        make_(std::move(make)),
        input_(input),
        inBytes_(inBytes),
        output_(output),
        outBytes_(outBytes),
        ctx_(ctx) {}

  Status start() override {
    hostIn_ = pinned_->in;
    hostOut_ = pinned_->out;
    // Started once the caller's event has been reached (stageTask): the copy waits for nothing.
    if (inBytes_) TSR_RETURN_IF_ERROR(named(staging_->copier().postToHost(hostIn_, input_, inBytes_, nullptr)));
    copying_ = inBytes_ > 0;
    phase_ = Phase::kToHost;
    return progress();
  }

  Status progress() override {
    if (phase_ == Phase::kToHost) {
      TSR_ASSIGN_OR_RETURN(bool done, copiesDone());
      if (!done) return Status(Code::kInProgress, "copying to host");
      executor_ = make_(hostIn_, hostOut_, ctx_);
      phase_ = Phase::kHostPlan;
      Status st = executor_->start();
      if (st.code() != Code::kOk) return st;  // in progress, or the plan's error
      return copyBack();
    }
    if (phase_ == Phase::kHostPlan) {
      Status st = executor_->progress();
      if (st.code() != Code::kOk) return st;
      return copyBack();
    }
    if (phase_ == Phase::kToDevice) {
      TSR_ASSIGN_OR_RETURN(bool done, copiesDone());
      if (!done) return Status(Code::kInProgress, "copying to the device");
      phase_ = Phase::kDone;
    }
    return Status::ok();
  }

  void abort(const Status& reason) override {
    if (executor_) executor_->abort(reason);
  }
  // Posted copies cannot be cancelled: the buffers are in use until they have finished.
  bool quiescent() const override {
    if (copying_) {
      auto done = staging_->copier().finished();
      if (!done.isOk() || done.value()) copying_ = false;
    }
    return !copying_ && (!executor_ || executor_->quiescent());
  }
  int waitingOn() const override { return executor_ && phase_ == Phase::kHostPlan ? executor_->waitingOn() : -1; }
  std::string describe() const override { return what_ + " on device buffers (staged through pinned host memory)"; }

 private:
  enum class Phase { kIdle, kToHost, kHostPlan, kToDevice, kDone };

  bool inPlace() const { return input_ == output_; }

  Status named(const Status& st) const {
    if (st.isOk()) return st;
    return Status(st.code(), what_ + " on device buffers (" + staging_->describe() + "): " + st.message());
  }
  template <typename V>
  Result<V> named(Result<V> result) const {
    if (result.isOk()) return result;
    return named(result.status());
  }

  Result<bool> copiesDone() {
    auto done = staging_->copier().finished();
    if (!done.isOk()) {
      copying_ = false;
      return named(done);
    }
    if (done.value()) copying_ = false;
    return done.value();
  }

  Status copyBack() {
    if (outBytes_) TSR_RETURN_IF_ERROR(named(staging_->copier().postToDevice(output_, hostOut_, outBytes_)));
    copying_ = outBytes_ > 0;
    phase_ = Phase::kToDevice;
    return progress();
  }

  std::shared_ptr<DenseStaging> staging_;
  std::shared_ptr<PinnedBuffers> pinned_;
  std::string what_;
  DenseStaging::HostTaskMaker make_;
  const void* input_;
  size_t inBytes_;
  void* output_;
  size_t outBytes_;
  algorithms::TaskContext ctx_;
  void* hostIn_ = nullptr;
  void* hostOut_ = nullptr;
  std::unique_ptr<algorithms::Task> executor_;
  Phase phase_ = Phase::kIdle;
  mutable bool copying_ = false;
};

}  // namespace

PinnedBuffers::~PinnedBuffers() {
  if (out && out != in) staging->givePinned(out, outSize);
  if (in) staging->givePinned(in, inSize);
}

DenseStaging::~DenseStaging() {
  for (auto& [p, bytes] : spare_) copier_->freePinned(p);
  for (void* p : excess_) copier_->freePinned(p);
}

Status DenseStaging::checkDevice(const char* collective, const char* which, const void* p, size_t bytes) const {
  if (bytes == 0) return Status::ok();
  Status st = copier_->checkDevice(p, bytes);
  if (st.isOk()) return st;
  return Status(st.code(), std::string(collective) + ": " + which + " (memory type CUDA): " + st.message());
}

Result<void*> DenseStaging::takePinned(size_t bytes) {
  std::vector<void*> excess;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    excess.swap(excess_);
  }
  for (void* p : excess) copier_->freePinned(p);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
      if (it->second >= bytes && (best == spare_.end() || it->second < best->second)) best = it;
    if (best != spare_.end()) {
      void* p = best->first;
      kept_ -= best->second;
      spare_.erase(best);
      return p;
    }
  }
  auto pinned = copier_->allocPinned(std::max<size_t>(bytes, 1));
  if (!pinned.isOk())
    return Status(pinned.status().code(),
                  "pinned host staging buffer of " + std::to_string(bytes) + " bytes: " + pinned.status().message());
  return pinned.value();
}

void DenseStaging::givePinned(void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kept_ + bytes <= kKeptPinnedBytes) {
    spare_.emplace_back(p, std::max<size_t>(bytes, 1));
    kept_ += std::max<size_t>(bytes, 1);
  } else {
    excess_.push_back(p);  // not freed here: this may be the progress thread
  }
}

algorithms::TaskFactory DenseStaging::stage(std::shared_ptr<const algorithms::Plan> plan, const void* input,
                                            size_t inBytes, void* output, size_t outBytes, void* scratch,
                                            algorithms::CallerEvent after, std::shared_ptr<PinnedBuffers> pinned) {
  std::string what = algorithms::collectiveName(plan->collective);
  HostTaskMaker make = [plan = std::move(plan), scratch](const void* hostIn, void* hostOut,
                                                         const algorithms::TaskContext& ctx) {
    algorithms::RunBuffers host{hostIn, hostOut, scratch, transport::MemoryType::kHost};
    return std::unique_ptr<algorithms::Task>(new algorithms::PlanExecutor(plan, host, ctx.id, ctx.transport));
  };
  return stageTask(std::move(what), std::move(make), input, inBytes, output, outBytes, std::move(after),
                   std::move(pinned));
}

Result<std::shared_ptr<PinnedBuffers>> DenseStaging::takeBuffers(const std::string& what, const void* input,
                                                                 size_t inBytes, const void* output, size_t outBytes) {
  auto pinned = std::make_shared<PinnedBuffers>();
  pinned->staging = shared_from_this();
  auto named = [&](const Status& st) {
    return Status(st.code(), what + " on device buffers (" + describe() + "): " + st.message());
  };
  pinned->inSize = input == output ? std::max(inBytes, outBytes) : inBytes;
  auto in = takePinned(pinned->inSize);
  if (!in.isOk()) return named(in.status());
  pinned->in = pinned->out = in.value();
  if (input != output) {
    pinned->outSize = outBytes;
    auto out = takePinned(outBytes);
    if (!out.isOk()) return named(out.status());
    pinned->out = out.value();
  }
  return pinned;
}

algorithms::TaskFactory DenseStaging::stageTask(std::string what, HostTaskMaker make, const void* input, size_t inBytes,
                                                void* output, size_t outBytes, algorithms::CallerEvent after,
                                                std::shared_ptr<PinnedBuffers> pinned) {
  std::shared_ptr<DenseStaging> self = shared_from_this();
  algorithms::TaskFactory staged =
      [self, what, make = std::move(make), input, inBytes, output, outBytes,
       pinned = std::move(pinned)](const algorithms::TaskContext& ctx) -> Result<std::unique_ptr<algorithms::Task>> {
    return std::unique_ptr<algorithms::Task>(
        new StagedHostTask(self, what, make, input, inBytes, output, outBytes, pinned, ctx));
  };
  // Polled on the progress thread, never waited for on the copier's stream (caller_gate.h).
  return algorithms::afterCallerEvent(
      std::move(staged), [self](const algorithms::CallerEvent& e) { return self->copier_->reached(e); },
      std::move(after), std::move(what));
}

Result<algorithms::CallerEvent> DenseStaging::callerEvent(void* callerStream) {
  return copier_->recordCallerEvent(callerStream);
}

}  // namespace tsr::runtime
