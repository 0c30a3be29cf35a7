#include "bindings/torch/work_tessera.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <torch/version.h>  // TORCH_VERSION_*: which Event API this torch has

#include "bindings/torch/placement.h"

namespace tessera_torch {
namespace {

#if !(TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
constexpr std::chrono::microseconds kLongestPoll(200);  // older torch's Event cannot synchronize
#endif

// The streams a stream-side wait holds now, process-wide (holdCallersStream). A collective's
// last step queues copies on a stream of PyTorch's pool and synchronizes it on the completing
// thread, where the releases are given too: that stream must not be one held before the
// copies, which would then never end. A stream goes in before its hold is queued;
// the last step picks its stream and queues its copies under the lock, so no hold comes
// between; nobody holds the lock while waiting on the device.
struct HeldStreams {
  std::mutex mutex;
  std::multiset<void*> streams;
};
HeldStreams& held() {
  static HeldStreams h;
  return h;
}

// A stream of PyTorch's pool (32 per priority, handed out in turn) that no wait holds; the
// caller has held().mutex.
c10::Stream poolStreamNotHeld(c10::Device device) {
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
#if TESSERA_TORCH_CUDA
  for (int tries = 0; tries < 64; ++tries) {
    c10::Stream s = impl.getStreamFromGlobalPool(device, /*isHighPriority=*/tries >= 32);
    if (!held().streams.count(s.native_handle())) return s;
  }
#endif
  return impl.getStreamFromGlobalPool(device, false);
}

// PyTorch makes a device's pool of streams at its first use, and making a stream may wait for
// streams already held: made before the first hold, not by complete() behind it, which takes a
// pool stream and would then wait for the hold it is to release (seen on an H200). Once per
// device: taking a stream moves the pool's turn, which the caller's own streams follow.
void makePoolStreams(c10::Device device) {
  static std::mutex mutex;
  static std::set<c10::DeviceIndex> made;
  std::lock_guard<std::mutex> lock(mutex);
  if (made.insert(device.index()).second)
    c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStreamFromGlobalPool(device, false);
}

}  // namespace

WorkTessera::WorkTessera(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, Finish finish,
                         std::optional<c10::Device> device, std::vector<at::Tensor> kept)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      finish_(std::move(finish)),
      kept_(std::move(kept)),
      device_(device),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()),
          device ? std::vector<c10::Device>{*device} : std::vector<c10::Device>{})) {}

WorkTessera::~WorkTessera() {
  if (request_) tsr_request_free(request_);
}

void WorkTessera::watch(tsr_request_t request, std::string what, std::shared_ptr<OwedCompletions> owed) {
  request_ = request;
  what_ = std::move(what);
  owed_ = std::move(owed);
  if (owed_) owed_->add();
  // The callback holds a reference until it has run: a Work dropped by its caller (DDP keeps
  // only the Future) still completes it.
  c10::raw::intrusive_ptr::incref(this);
  tsr_status_t st = tsr_request_on_complete(request_, &WorkTessera::onComplete, this);
  if (st != TSR_OK) {
    std::string why = tsr_last_error();
    c10::raw::intrusive_ptr::decref(this);
    completeOnce(st, "cannot watch the request: " + why);
  }
}

void WorkTessera::failNow(const std::string& message) { completeOnce(TSR_ERR_INVALID_ARGUMENT, message); }

void WorkTessera::onComplete(void* self, tsr_status_t status) {
  auto* work = static_cast<WorkTessera*>(self);
  // Tessera sets this thread's last error to the request's message before calling back.
  std::string message = status == TSR_OK ? std::string() : std::string(tsr_last_error());
  // Not here, on the progress thread: completing runs the Future's callbacks (completion_threads.h),
  // and even once a wait() has completed it, the last reference may go here, and with it
  // tensors whose Python objects need the GIL.
  postCompletion([work, status, message] {
    work->completeOnce(status, message);
    c10::raw::intrusive_ptr::decref(work);
  });
}

void WorkTessera::completeOnce(tsr_status_t status, const std::string& message) {
  if (claimed_.exchange(true)) return;
  {
    OwedCompletions::Completing scope(owed_.get());
    complete(status, message);
  }
  if (owed_) owed_->done();
}

void WorkTessera::runFinish() {
  if (!finish_) return;
  // The copies back into the caller's tensors are the collective's writes, not the program's:
  // below autograd, as c10d's kernels run, so a parameter (a leaf that requires grad) or an
  // inference tensor takes them whatever the completing thread's grad or inference mode.
  at::AutoDispatchBelowADInplaceOrView belowAutograd;
  if (!device_) return finish_();
  // CUDA tensors: the last step's copies, on a pool stream no wait holds, are done before the
  // Work completes, so nothing of ours still runs when the caller frees a tensor.
  // Waited on through an event recorded under the lock, not by synchronizing the stream: a
  // hold queued on that stream once the lock is let go (a caller's current stream may be
  // this pool stream) would otherwise make this completion wait for another Work's.
  c10::Event copied(c10::DeviceType::CUDA);
  {
    std::lock_guard<std::mutex> lock(held().mutex);
    c10::StreamGuard onPool(poolStreamNotHeld(*device_));
    finish_();
    copied.record(c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(*device_));
  }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  copied.synchronize();
#else
  for (auto pause = std::chrono::microseconds(5); !copied.query(); pause = std::min(pause * 2, kLongestPoll))
    std::this_thread::sleep_for(pause);
#endif
}

void WorkTessera::complete(tsr_status_t status, const std::string& message) {
  // CUDA tensors: a stream of PyTorch's pool is current while the last step runs and the
  // Future completes, which records its events there (not on the default stream, which would
  // order the caller's later work after everything queued there since).
  std::optional<c10::StreamGuard> onPool;
  if (device_) {
    std::lock_guard<std::mutex> lock(held().mutex);
    onPool.emplace(poolStreamNotHeld(*device_));
  }
  std::exception_ptr error;
  if (status == TSR_OK) {
    try {
      runFinish();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(std::runtime_error("tessera: " + what_ + ": " + e.what()));
    }
  } else {
    error = std::make_exception_ptr(
        std::runtime_error("tessera: " + what_ + " failed (" + tsr_status_string(status) + "): " + message));
  }
  finish(error);  // the Work first: a Future callback may look at it
  std::vector<std::pair<tsr_stream_hold_t, void*>> holds;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    holds.swap(holds_);
    holdsReleased_ = true;
  }
  for (auto [hold, stream] : holds) {
    tsr_stream_release(hold);  // the outputs are in place (or never will be)
    std::lock_guard<std::mutex> lock(held().mutex);
    held().streams.erase(held().streams.find(stream));
  }
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

bool WorkTessera::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool WorkTessera::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr WorkTessera::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exception_;
}

bool WorkTessera::holdCallersStream() {
  // Checked (0|1) by the communicator's configuration; 1 by default.
  static const char* const setting = std::getenv("TSR_TORCH_STREAM_WAIT");
  static const bool blocking = setting && std::strcmp(setting, "0") == 0;
  if (blocking) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) return false;  // the result is in place: nothing to hold
  }
  // Queued without mutex_: a hold may allocate its flags, which may wait for the device, and
  // complete() needs mutex_ to release the holds that device may be waiting on. On the
  // tensors' device, whichever is the thread's current one: the hold's flags live there.
  c10::DeviceGuard onDevice(*device_);
  void* stream = currentStream(*device_);
  // Only a non-blocking stream, never the legacy default stream (PyTorch's default one) nor
  // another blocking one: the legacy stream and every blocking stream wait for each other, and
  // calls that synchronize implicitly (making a stream, allocating pinned memory) on any
  // thread, those that would complete the collective included, wait for them all: a held
  // legacy stream hung (docs/gpu.md). There wait() blocks the calling thread, as
  // TSR_TORCH_STREAM_WAIT=0 does.
  if (!isNonBlockingStream(stream)) return false;
  makePoolStreams(*device_);  // before the first hold: makePoolStreams says why
  {
    std::lock_guard<std::mutex> heldLock(held().mutex);
    held().streams.insert(stream);  // before the hold is queued: poolStreamNotHeld
  }
  tsr_stream_hold_t hold = nullptr;
  if (tsr_stream_hold(stream, &hold) != TSR_OK) {
    {
      std::lock_guard<std::mutex> heldLock(held().mutex);
      held().streams.erase(held().streams.find(stream));
    }
    TORCH_WARN_ONCE("tessera: Work.wait() on CUDA tensors blocks the calling thread: ", tsr_last_error());
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!holdsReleased_) {
      holds_.emplace_back(hold, stream);
      return true;
    }
  }
  // complete() has released the holds meanwhile: the result is in place, let this one go.
  tsr_stream_release(hold);
  std::lock_guard<std::mutex> heldLock(held().mutex);
  held().streams.erase(held().streams.find(stream));
  return true;
}

bool WorkTessera::wait(std::chrono::milliseconds timeout) {
  // CUDA tensors (unless TSR_TORCH_STREAM_WAIT=0): the caller's stream waits instead of the caller.
  if (device_ && timeout == kNoTimeout && holdCallersStream()) return true;
  // Without a timeout: drive Tessera on this thread (as MPI_Wait does); the collective's own
  // timeout bounds it. Then complete here unless a completion thread already does: no
  // hand-over to wait for. With one, the progress thread drives and this thread waits no longer.
  if (request_ && timeout == kNoTimeout) {
    tsr_status_t status = tsr_wait(request_);
    std::string message = status == TSR_OK ? std::string() : std::string(tsr_last_error());
    // Refused, not ended (a wait in a completion callback of Tessera's): the collective goes on.
    if (status != TSR_OK && tsr_test(request_) == TSR_IN_PROGRESS)
      throw std::runtime_error("tessera: " + what_ + ": " + message);
    completeOnce(status, message);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    throw std::runtime_error("tessera: " + what_ + ": not finished within " + std::to_string(timeout.count()) + " ms");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

}  // namespace tessera_torch
