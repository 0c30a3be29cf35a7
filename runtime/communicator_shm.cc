// The communicator's one-host shared-memory path (runtime/shm_path.h): collectives that it
// serves are posted as its tasks. CUDA buffers take the same path through pinned host memory,
// so every rank takes it whatever its buffers are.
#include "base/logging.h"
#include "runtime/communicator.h"
#include "runtime/dense_staging.h"
#include "runtime/progress_engine.h"
#include "runtime/shm_path.h"

namespace tsr::runtime {

Status Communicator::setUpShmPath() {
  TSR_ASSIGN_OR_RETURN(shm_, ShmPath::setUp(rank_, size_, hostIds_, bootstrap_.get(), config_.get("TSR_ALGO")));
  return Status::ok();
}

std::optional<Result<RequestPtr>> Communicator::viaShm(const algorithms::ShmCollectiveArgs& args) {
  const ShmPath::Way way = shm_->wayFor(args);
  if (way == ShmPath::Way::kNone) return std::nullopt;
  // Before the call takes its place in the segment: a refused call takes none.
  auto staged = prepareShmDevice(args);
  if (!staged.isOk()) return Result<RequestPtr>(staged.status());
  return postShm(args, shm_->take(way, args), staged.take());
}

std::string Communicator::shmSegmentName() const { return shm_ ? shm_->segmentName() : std::string(); }

std::shared_ptr<DenseStaging> Communicator::deviceStaging() {
  if (!stagesThisCall()) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return staging_;
}

std::pair<size_t, size_t> Communicator::shmBufferBytes(const algorithms::ShmCollectiveArgs& args) const {
  const size_t bytes = args.count * dataTypeSize(args.dtype), all = bytes * static_cast<size_t>(size_);
  switch (args.collective) {
    case algorithms::CollectiveKind::kReduceScatter:
      return {all, bytes};
    case algorithms::CollectiveKind::kAllgather:
      return {bytes, all};
    default:
      return {bytes, bytes};
  }
}

Result<StagedInput> Communicator::prepareShmDevice(const algorithms::ShmCollectiveArgs& args) {
  auto staging = deviceStaging();
  if (!staging || args.barrier) return StagedInput{};
  const auto [in, out] = shmBufferBytes(args);
  std::string what = "rank " + std::to_string(rank_) + ": " + algorithms::collectiveName(args.collective);
  TSR_RETURN_IF_ERROR(staging->checkDevice(what.c_str(), "input", args.input, in));
  TSR_RETURN_IF_ERROR(staging->checkDevice(what.c_str(), "output", args.output, out));
  StagedInput staged;
  TSR_ASSIGN_OR_RETURN(staged.after, callerEvent(*staging, what));
  // On this thread, never the progress thread's (dense_staging.h says why).
  TSR_ASSIGN_OR_RETURN(staged.pinned, staging->takeBuffers(what, args.input, in, args.output, out));
  return staged;
}

Result<RequestPtr> Communicator::postShm(const algorithms::ShmCollectiveArgs& args, ShmPath::Call call,
                                         StagedInput staged) {
  Submission s;
  std::string algorithm = std::move(call.algorithm);
  // Staged when the buffers were found to be device memory (prepareShmDevice took the pinned ones).
  if (std::shared_ptr<DenseStaging> staging = staged.pinned ? staged.pinned->staging : nullptr) {
    const auto [in, out] = shmBufferBytes(args);
    s.make = staging->stageTask(
        algorithms::collectiveName(args.collective),
        [args, make = call.make](const void* hostIn, void* hostOut, const algorithms::TaskContext& ctx) {
          algorithms::ShmCollectiveArgs host = args;
          host.input = hostIn;
          host.output = hostOut;
          return make(host, ctx);
        },
        args.input, in, args.output, out, std::move(staged.after), std::move(staged.pinned));
    algorithm += " (staged from CUDA memory)";
  } else {
    s.make = [args, make = call.make](const algorithms::TaskContext& ctx) -> Result<std::unique_ptr<algorithms::Task>> {
      return make(args, ctx);
    };
  }
  auto posted = post(std::move(s), 1, nullptr, call.route, algorithms::ShmBoardCollective::callOf(args));
  if (posted.isOk()) posted.value()->setAlgorithm(std::move(algorithm));
  return posted;
}

}  // namespace tsr::runtime
