// The communicator's small-allreduce board (algorithms/dense/shm_allreduce.h): when every rank
// runs on this host, allreduces of 1 B..4 KiB and barriers meet in a shared-memory segment
// instead of going through UCX as messages.
#include <algorithm>

#include "algorithms/dense/shm_allreduce.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/communicator.h"
#include "runtime/progress_engine.h"
#include "runtime/shm_segment.h"

namespace tsr::runtime {

using algorithms::ShmBoard;

Status Communicator::setUpShmBoard() {
  auto logger = log::get("runtime");
  const std::string& forced = config_.get("TSR_ALGO");
  shmAllowed_ = forced == "auto" || forced == "shm";
  shmForced_ = forced == "shm";
  if (size_ == 1 || !bootstrap_) {
    shmWhyNot_ = "a single rank needs no board";
    return Status::ok();
  }
  if (std::any_of(hostIds_.begin(), hostIds_.end(), [&](const std::string& h) { return h != hostIds_[0]; })) {
    shmWhyNot_ = "the ranks are on more than one host";
    return Status::ok();
  }
  // Rank 0 creates the segment and tells the others its name; every rank then says whether it
  // could map it, and the board is used only if all could (else all use messages).
  const size_t bytes = ShmBoard::bytesFor(size_);
  std::unique_ptr<ShmSegment> segment;
  std::string problem;
  if (rank_ == 0) {
    auto created = ShmSegment::create(bytes);
    if (created.isOk()) {
      segment = created.take();
      ShmBoard::format(segment->data(), size_);
    } else {
      problem = created.status().message();
    }
  }
  TSR_ASSIGN_OR_RETURN(auto names, bootstrap_->allGather(segment ? segment->name() : std::string()));
  if (rank_ != 0 && !names[0].empty()) {
    auto opened = ShmSegment::open(names[0], bytes);
    if (opened.isOk()) segment = opened.take();
    else problem = opened.status().message();
  }
  if (names[0].empty() && problem.empty()) problem = "rank 0 could not create it";
  TSR_ASSIGN_OR_RETURN(auto problems, bootstrap_->allGather(problem));
  if (rank_ == 0 && segment) segment->unlink();  // everyone has it mapped (or gave up)
  for (int r = 0; r < size_; ++r) {
    if (problems[r].empty()) continue;
    shmWhyNot_ = "rank " + std::to_string(r) + " cannot use the shared-memory board: " + problems[r];
    logger->warn("rank {}: small allreduces go as messages: {}", rank_, shmWhyNot_);
    return Status::ok();
  }
  shmSegment_ = std::move(segment);
  shmBoard_ = ShmBoard(shmSegment_->data(), size_);
  logger->debug("rank {}: allreduces of up to {} bytes meet in shared memory ({})", rank_,
                algorithms::kShmPayloadBytes, shmSegment_->name());
  return Status::ok();
}

bool Communicator::shmServes(size_t bytes) {
  if (!shmAllowed_) return false;
  if (shmSegment_ && bytes > 0 && bytes <= algorithms::kShmPayloadBytes &&
      bufferMemory_.load() == transport::MemoryType::kHost)
    return true;
  if (shmForced_ && !shmRefusalSaid_.exchange(true)) {
    std::string why = shmSegment_ ? "it carries 1.." + std::to_string(algorithms::kShmPayloadBytes) +
                                        " bytes of host memory, not " + std::to_string(bytes)
                                  : shmWhyNot_;
    log::get("runtime")->info("rank {}: shm cannot serve this allreduce: {}; the cost model chooses instead",
                              rank_, why);
  }
  return false;
}

Result<RequestPtr> Communicator::shmCollective(const algorithms::ShmAllreduceArgs& args) {
  uint64_t index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    index = shmIndex_++;
  }
  Submission s;
  s.make = [board = shmBoard_, index, args](const algorithms::TaskContext& ctx)
      -> Result<std::unique_ptr<algorithms::Task>> {
    return std::unique_ptr<algorithms::Task>(new algorithms::ShmAllreduce(board, ctx.id, index, args));
  };
  auto posted = post(std::move(s), 1, nullptr, algorithms::ShmRoute::kBoard, algorithms::ShmAllreduce::callOf(args));
  if (posted.isOk()) posted.value()->setAlgorithm(args.barrier ? "shm barrier" : "shm");
  return posted;
}

}  // namespace tsr::runtime
