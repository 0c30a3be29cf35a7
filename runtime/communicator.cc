#include "runtime/communicator.h"

#include <cstdint>
#include <optional>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/progress_engine.h"
#include "runtime/scratch_pool.h"
#include "transport/ucx_transport.h"

namespace tsr::runtime {

namespace {
enum PlanKind { kAllreducePlan, kAllgatherPlan, kReduceScatterPlan, kBroadcastPlan, kBarrierPlan };

// An output that shares bytes with the input, other than exactly in place (the input at byte
// `inPlaceAt` of the output, or the output at byte `outputAt` of the input), would be written
// while it is read: refused rather than a wrong result (reduce_scatter takes both in-place forms).
Status checkOverlap(const char* what, int rank, const void* input, size_t inBytes, const void* output, size_t outBytes,
                    std::optional<size_t> inPlaceAt, std::optional<size_t> outputAt = std::nullopt) {
  if (!input || !output || !inBytes || !outBytes) return Status::ok();
  auto in = reinterpret_cast<uintptr_t>(input), out = reinterpret_cast<uintptr_t>(output);
  if ((inPlaceAt && in == out + *inPlaceAt) || (outputAt && out == in + *outputAt)) return Status::ok();
  if (in < out + outBytes && out < in + inBytes)
    return Status(Code::kInvalidArgument, std::string(what) + " on rank " + std::to_string(rank) +
                                              ": the output overlaps the input without being in place (" +
                                              std::to_string(inBytes) + " input bytes, " + std::to_string(outBytes) +
                                              " output bytes, " +
                                              (out > in ? "output " + std::to_string(out - in) + " bytes after input"
                                                        : "input " + std::to_string(in - out) + " bytes after output") +
                                              ")");
  return Status::ok();
}
}  // namespace

transport::Transport& Communicator::active() const {
  if (sealed_) return *sealed_;
  if (wrapped_) return *wrapped_;
  return *transport_;
}

bool Communicator::transportMovesCuda() const {
  return transport_ && active().supportsMemoryType(transport::MemoryType::kCuda);
}

void Communicator::bindTransportThreads(std::function<void()> bind) {
  if (transport_) transport_->setThreadBinding(std::move(bind));
}

std::shared_ptr<ScratchPool> Communicator::makeScratchPool() { return std::make_shared<ScratchPool>(); }

Communicator::~Communicator() {
  // Order matters: stop the thread, then close endpoints (their callbacks may still write
  // into the engine's completions), then free the engine.
  if (engine_) engine_->stop();
  wrapped_.reset();
  transport_.reset();
  sealed_.reset();  // after the transport: its pending operations' completions live here
  engine_.reset();
}

Status Communicator::checkArgs(const char* what, const void* input, const void* output, size_t count, DataType dtype,
                               const ReduceOp* op, int root) const {
  auto where = [&] { return std::string(what) + " on rank " + std::to_string(rank_) + ": "; };  // errors only
  if (!isValidDataType(static_cast<int>(dtype)))
    return Status(Code::kInvalidArgument, where() + "invalid dtype " + std::to_string(static_cast<int>(dtype)));
  if (op && !isValidReduceOp(static_cast<int>(*op)))
    return Status(Code::kInvalidArgument, where() + "invalid op " + std::to_string(static_cast<int>(*op)));
  if (op && isBitwiseOp(*op) && isFloatType(dtype))
    return Status(Code::kInvalidArgument, where() + "op " + reduceOpName(*op) +
                                              " is bitwise: it takes int32 and int64, not " + dataTypeName(dtype));
  if (count > 0 && input == nullptr && (root < 0 || root == rank_))
    return Status(Code::kInvalidArgument, where() + "input buffer is NULL with count " + std::to_string(count));
  if (count > 0 && output == nullptr)
    return Status(Code::kInvalidArgument, where() + "output buffer is NULL with count " + std::to_string(count));
  if (count > (size_t{1} << 40))
    return Status(Code::kInvalidArgument, where() + "count " + std::to_string(count) + " is too large");
  return Status::ok();
}

Result<std::shared_ptr<const algorithms::Plan>> Communicator::cachedPlan(const PlanKey& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  auto [kind, count, dtypeInt, opInt, root] = key;
  auto dtype = static_cast<DataType>(dtypeInt);
  auto op = static_cast<ReduceOp>(opInt);
  Result<std::shared_ptr<algorithms::Plan>> plan = Status(Code::kInternal, "no plan");
  switch (kind) {
    case kAllreducePlan:
      plan = selector_->allreduce(count, dtype, op);
      break;
    case kAllgatherPlan:
      plan = selector_->allgather(count, dtype);
      break;
    case kReduceScatterPlan:
      plan = algorithms::ringReduceScatterPlan(rank_, size_, count, dtype, op, hostDense_);
      break;
    case kBroadcastPlan:
      plan = algorithms::binomialBroadcastPlan(rank_, size_, root, count, dtype, dense_);
      break;
    case kBarrierPlan:
      plan = algorithms::disseminationBarrierPlan(rank_, size_);
      break;
  }
  if (!plan.isOk()) return plan.status();
  // An empty call still meets its peers. With no elements a plan sends nothing, so a rank that
  // called with 0 while the others called with 4 went on "ok", leaving them to the timeout: it
  // runs the barrier's messages instead, carrying the call in their headers, which the peers
  // compare as they would the collective's. A barrier's cost, for a call that moves nothing.
  if (count == 0 && size_ > 1 && kind != kBarrierPlan) {
    TSR_ASSIGN_OR_RETURN(std::shared_ptr<algorithms::Plan> empty, algorithms::disseminationBarrierPlan(rank_, size_));
    const algorithms::Plan& call = *plan.value();
    empty->algorithm = call.algorithm;  // the name chosen for the call (TSR_ALGO), compared as a full call's
    empty->collective = call.collective;
    empty->dtype = call.dtype;
    empty->op = call.op;
    empty->root = call.root;
    empty->count = 0;
    plan = std::move(empty);
  }
  std::shared_ptr<const algorithms::Plan> shared = plan.take();
  std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.size() > 256) plans_.clear();  // bounded: trainers reuse a few shapes
  plans_[key] = shared;
  return shared;
}

Result<RequestPtr> Communicator::submitPlan(std::shared_ptr<const algorithms::Plan> plan, const void* input,
                                            void* output, uint64_t rngSeed, uint32_t rngStep) {
  if (!plan) return Status(Code::kInvalidArgument, "submitPlan on rank " + std::to_string(rank_) + ": no plan");
  return submit(std::move(plan), input, output, rngSeed, rngStep);
}

Result<RequestPtr> Communicator::submit(std::shared_ptr<const algorithms::Plan> plan, const void* input, void* output,
                                        uint64_t rngSeed, uint32_t rngStep) {
  // Small scratch comes with the executor's own state (RunBuffers::scratch); larger from
  // the pool of registered memory, reused across steps.
  std::shared_ptr<void> scratch;
  if (plan->scratchBytes > kPooledScratchFrom) {
    TSR_ASSIGN_OR_RETURN(scratch, scratchPool_->acquire(plan->scratchBytes));
  }
  Submission s;
  // Host buffers: device buffers of dense collectives reach here staged (submitDense), and a
  // barrier has none, whatever setBufferMemory said.
  s.buffers = algorithms::RunBuffers{input,   output, scratch.get(), transport::MemoryType::kHost, rngSeed, rngStep,
                                     nullptr, {},     nullptr};
  std::string algorithm = plan->algorithm;
  algorithms::ShmCall call{static_cast<uint8_t>(plan->collective), static_cast<uint8_t>(plan->dtype),
                           static_cast<uint8_t>(plan->op), plan->count, plan->root};
  s.plan = std::move(plan);
  auto posted = post(std::move(s), 1, std::move(scratch), algorithms::ShmRoute::kPlan, call);
  if (posted.isOk()) posted.value()->setAlgorithm(std::move(algorithm));
  return posted;
}

Result<RequestPtr> Communicator::submitTask(TaskFactory make, uint32_t seqSpan, std::shared_ptr<void> keepAlive) {
  if (seqSpan == 0 || seqSpan > 1024)
    return Status(Code::kInvalidArgument, "a task takes 1..1024 sequence numbers, not " + std::to_string(seqSpan));
  Submission s;
  s.make = std::move(make);
  return post(std::move(s), seqSpan, std::move(keepAlive), algorithms::ShmRoute::kTask);
}

Result<RequestPtr> Communicator::post(Submission s, uint32_t seqSpan, std::shared_ptr<void> keepAlive,
                                      algorithms::ShmRoute route, const algorithms::ShmCall& call) {
  s.keepAlive = std::move(keepAlive);
  s.request = std::make_shared<Request>();
  s.seqSpan = seqSpan;
  s.timeoutMs = timeoutMs_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s.seq = seq_;
    seq_ += seqSpan;
  }
  shm_->announce(s.seq, route, call);
  RequestPtr request = s.request;
  engine_->submit(std::move(s));
  return request;
}

Result<RequestPtr> Communicator::allreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  TSR_RETURN_IF_ERROR(checkArgs("allreduce", input, output, count, dtype, &op, -1));
  const size_t bytes = count * dataTypeSize(dtype);
  TSR_RETURN_IF_ERROR(checkOverlap("allreduce", rank_, input, bytes, output, bytes, 0));
  if (auto shm = viaShm({input, output, count, dtype, op, false})) return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kAllreducePlan, count, int(dtype), int(op), -1}));
  return submitDense(std::move(plan), input, bytes, output, bytes);
}

Result<RequestPtr> Communicator::allgather(const void* input, void* output, size_t countPerRank, DataType dtype) {
  TSR_RETURN_IF_ERROR(checkArgs("allgather", input, output, countPerRank, dtype, nullptr, -1));
  const size_t bytes = countPerRank * dataTypeSize(dtype);
  TSR_RETURN_IF_ERROR(checkOverlap("allgather", rank_, input, bytes, output, bytes * size_, bytes * rank_));
  if (auto shm =
          viaShm({input, output, countPerRank, dtype, ReduceOp::kSum, false, algorithms::CollectiveKind::kAllgather}))
    return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kAllgatherPlan, countPerRank, int(dtype), 0, -1}));
  return submitDense(std::move(plan), input, bytes, output, bytes * size_);
}

Result<RequestPtr> Communicator::reduceScatter(const void* input, void* output, size_t countPerRank, DataType dtype,
                                               ReduceOp op) {
  TSR_RETURN_IF_ERROR(checkArgs("reduce_scatter", input, output, countPerRank, dtype, &op, -1));
  const size_t bytes = countPerRank * dataTypeSize(dtype);
  TSR_RETURN_IF_ERROR(checkOverlap("reduce_scatter", rank_, input, bytes * size_, output, bytes, 0, bytes * rank_));
  if (auto shm = viaShm({input, output, countPerRank, dtype, op, false, algorithms::CollectiveKind::kReduceScatter}))
    return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kReduceScatterPlan, countPerRank, int(dtype), int(op), -1}));
  return submitDense(std::move(plan), input, bytes * size_, output, bytes);
}

Result<RequestPtr> Communicator::broadcast(const void* input, void* output, size_t count, DataType dtype, int root) {
  if (root < 0 || root >= size_)
    return Status(Code::kInvalidArgument, "broadcast on rank " + std::to_string(rank_) + ": root " +
                                              std::to_string(root) + " is not a rank of this " + std::to_string(size_) +
                                              "-rank communicator");
  TSR_RETURN_IF_ERROR(checkArgs("broadcast", input, output, count, dtype, nullptr, root));
  const size_t bytes = count * dataTypeSize(dtype);
  if (root == rank_) TSR_RETURN_IF_ERROR(checkOverlap("broadcast", rank_, input, bytes, output, bytes, 0));
  if (auto shm =
          viaShm({input, output, count, dtype, ReduceOp::kSum, false, algorithms::CollectiveKind::kBroadcast, root}))
    return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kBroadcastPlan, count, int(dtype), 0, root}));
  return submitDense(std::move(plan), input, bytes, output, bytes);
}

Result<RequestPtr> Communicator::barrier() {
  if (auto shm = viaShm({nullptr, nullptr, 0, DataType::kF32, ReduceOp::kSum, true})) return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kBarrierPlan, 0, 0, 0, -1}));
  return submit(std::move(plan), nullptr, nullptr);
}

void Communicator::abort(const std::string& why) {
  engine_->abort(Status(Code::kAborted, "rank " + std::to_string(rank_) + " aborted: " + why));
}

void Communicator::revoke(const std::string& why) {
  engine_->abort(Status(
      Code::kRevoked, "rank " + std::to_string(rank_) + " revoked the communicator" + (why.empty() ? "" : " " + why)));
}

Status Communicator::health() const { return engine_->health(); }

uint64_t Communicator::bytesSent() const { return transport_->bytesSent() + shm_->bytesPublished(); }

}  // namespace tsr::runtime
