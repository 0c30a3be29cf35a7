// Communicator: dense collectives on device (CUDA) buffers, staged through pinned host memory
// (runtime/dense_staging.h). Tested with a host-memcpy fake copier; on a GPU: docs/gpu.md.
#include "algorithms/plan/executor.h"
#include "base/logging.h"
#include "runtime/communicator.h"
#include "runtime/dense_staging.h"
#include "runtime/progress_engine.h"
#include "runtime/scratch_pool.h"

namespace tsr::runtime {

namespace {
// Set on the calling thread while an algorithm's hostAllreduce posts: its buffers are host memory.
thread_local bool tHostCall = false;

// The calling thread's own settings, per communicator (setThreadBuffers); a few at most.
struct ThreadBuffers {
  uint64_t comm;
  transport::MemoryType memory;
  void* stream;
};
thread_local std::vector<ThreadBuffers> tThreadBuffers;

const ThreadBuffers* threadBuffersOf(uint64_t comm) {
  for (const ThreadBuffers& b : tThreadBuffers)
    if (b.comm == comm) return &b;
  return nullptr;
}
}  // namespace

uint64_t Communicator::newThreadKey() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

transport::MemoryType Communicator::bufferMemory() const {
  const ThreadBuffers* mine = threadBuffersOf(threadKey_);
  return mine ? mine->memory : bufferMemory_.load();
}

void* Communicator::callerStream() const {
  const ThreadBuffers* mine = threadBuffersOf(threadKey_);
  return mine ? mine->stream : callerStream_.load();
}

Status Communicator::setThreadBuffers(transport::MemoryType memory, void* stream) {
  if (memory == transport::MemoryType::kCuda)
    TSR_RETURN_IF_ERROR(openStaging());
  else if (memory != transport::MemoryType::kHost)
    return memoryTypeRefused(memory);
  clearThreadBuffers();
  tThreadBuffers.push_back({threadKey_, memory, stream});
  return Status::ok();
}

void Communicator::clearThreadBuffers() {
  std::erase_if(tThreadBuffers, [&](const ThreadBuffers& b) { return b.comm == threadKey_; });
}

Status Communicator::memoryTypeRefused(transport::MemoryType memory) const {
  return Status(Code::kInvalidArgument, "rank " + std::to_string(rank_) + ": memory type " +
                                            std::to_string(static_cast<int>(memory)) +
                                            " is neither host (0) nor CUDA (1)");
}

Status Communicator::setBufferMemory(transport::MemoryType memory) {
  if (memory == transport::MemoryType::kHost) {
    bufferMemory_ = memory;
    return Status::ok();
  }
  if (memory != transport::MemoryType::kCuda) return memoryTypeRefused(memory);
  TSR_RETURN_IF_ERROR(openStaging());
  bufferMemory_ = memory;
  return Status::ok();
}

Status Communicator::openStaging() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (staging_) return Status::ok();
  }
  auto copier = algorithms::openCudaCopier();
  if (!copier.isOk())
    return Status(Code::kNotSupported,
                  "rank " + std::to_string(rank_) +
                      ": dense collectives on CUDA buffers need a CUDA device (they are staged through "
                      "pinned host memory; there is no GPU reduction for them): " +
                      copier.status().message() +
                      "; pass host buffers, or declare a tensor with memory=cuda (tsr_tensor_create)");
  installStaging(copier.take(), false);
  return Status::ok();
}

Status Communicator::useDeviceCopier(std::unique_ptr<DeviceCopier> copier) {
  if (!copier) return Status(Code::kInvalidArgument, "rank " + std::to_string(rank_) + ": useDeviceCopier: no copier");
  installStaging(std::move(copier), true);
  bufferMemory_ = transport::MemoryType::kCuda;
  return Status::ok();
}

void Communicator::installStaging(std::unique_ptr<DeviceCopier> copier, bool replace) {
  auto staging = std::make_shared<DenseStaging>(std::move(copier));
  std::lock_guard<std::mutex> lock(mutex_);
  if (staging_ && !replace) return;  // another thread opened one meanwhile
  log::get("runtime")->info("rank {}: dense collectives take CUDA buffers, staged through pinned host memory ({})",
                            rank_, staging->describe());
  staging_ = std::move(staging);
}

bool Communicator::stagesThisCall() const { return bufferMemory() == transport::MemoryType::kCuda && !tHostCall; }

Result<RequestPtr> Communicator::hostAllreduce(const void* input, void* output, size_t count, DataType dtype,
                                               ReduceOp op) {
  const bool outer = tHostCall;
  tHostCall = true;
  auto posted = allreduce(input, output, count, dtype, op);
  tHostCall = outer;
  return posted;
}

Result<RequestPtr> Communicator::submitDense(std::shared_ptr<const algorithms::Plan> plan, const void* input,
                                             size_t inBytes, void* output, size_t outBytes) {
  if (!stagesThisCall()) return submit(std::move(plan), input, output);
  std::shared_ptr<DenseStaging> staging;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    staging = staging_;
  }
  std::string what = "rank " + std::to_string(rank_) + ": " + algorithms::collectiveName(plan->collective);
  TSR_RETURN_IF_ERROR(staging->checkDevice(what.c_str(), "input", input, inBytes));
  TSR_RETURN_IF_ERROR(staging->checkDevice(what.c_str(), "output", output, outBytes));
  TSR_ASSIGN_OR_RETURN(algorithms::CallerEvent after, callerEvent(*staging, what));
  // On this thread, never the progress thread's (dense_staging.h says why).
  TSR_ASSIGN_OR_RETURN(auto pinned, staging->takeBuffers(what, input, inBytes, output, outBytes));
  std::shared_ptr<void> scratch;  // host scratch, as for a host run
  if (plan->scratchBytes > kPooledScratchFrom) {
    TSR_ASSIGN_OR_RETURN(scratch, scratchPool_->acquire(plan->scratchBytes));
  }
  Submission s;
  s.make = staging->stage(plan, input, inBytes, output, outBytes, scratch.get(), std::move(after), std::move(pinned));
  std::string algorithm = plan->algorithm + " (staged from CUDA memory)";
  // Announced as the plan it runs: its messages are those of a host run of that plan.
  algorithms::ShmCall call{static_cast<uint8_t>(plan->collective), static_cast<uint8_t>(plan->dtype),
                           static_cast<uint8_t>(plan->op), plan->count, plan->root};
  auto posted = post(std::move(s), 1, std::move(scratch), algorithms::ShmRoute::kPlan, call);
  if (posted.isOk()) posted.value()->setAlgorithm(std::move(algorithm));
  return posted;
}

Result<algorithms::CallerEvent> Communicator::callerEvent(DenseStaging& staging, const std::string& what) {
  auto event = staging.callerEvent(callerStream());
  if (!event.isOk()) return Status(event.status().code(), what + ": " + event.status().message());
  return event;
}

}  // namespace tsr::runtime
