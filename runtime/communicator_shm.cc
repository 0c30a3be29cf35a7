// The communicator's shared-memory segment: when every rank runs on this host, collectives
// and barriers meet there instead of going through UCX as messages: barriers, and collectives
// whose payload fits a 4 KiB slot, on the board (algorithms/dense/shm_board_collective.h);
// larger ones in chunks through the stages (algorithms/dense/shm_staged_collective.h), faster
// than the message plans (docs/performance.md, "One host: allreduce" and "One host:
// reduce-scatter, all-gather and broadcast"). CUDA buffers take the same
// route through pinned host memory, so every rank takes it whatever its buffers are.
#include <algorithm>

#include "algorithms/dense/shm_board_collective.h"
#include "algorithms/dense/shm_staged_collective.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/communicator.h"
#include "runtime/dense_staging.h"
#include "runtime/progress_engine.h"
#include "runtime/shm_segment.h"

namespace tsr::runtime {

using algorithms::ShmBoard;
using algorithms::ShmStaging;

namespace {

// The board, then the stages from the next page.
size_t boardBytes(int size) { return (ShmBoard::bytesFor(size) + 4095) / 4096 * 4096; }

}  // namespace

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
  const size_t bytes = boardBytes(size_) + ShmStaging::bytesFor(size_);
  std::unique_ptr<ShmSegment> segment;
  std::string problem;
  if (rank_ == 0) {
    auto created = ShmSegment::create(bytes);
    if (created.isOk()) {
      segment = created.take();
      ShmBoard::format(segment->data(), size_);
      ShmStaging::format(static_cast<char*>(segment->data()) + boardBytes(size_), size_);
    } else {
      problem = created.status().message();
    }
  }
  TSR_ASSIGN_OR_RETURN(auto names, bootstrap_->allGather(segment ? segment->name() : std::string()));
  if (rank_ != 0 && !names[0].empty()) {
    auto opened = ShmSegment::open(names[0], bytes);
    if (opened.isOk())
      segment = opened.take();
    else
      problem = opened.status().message();
  }
  if (names[0].empty() && problem.empty()) problem = "rank 0 could not create it";
  TSR_ASSIGN_OR_RETURN(auto problems, bootstrap_->allGather(problem));
  if (rank_ == 0 && segment) segment->unlink();  // everyone has it mapped (or gave up)
  for (int r = 0; r < size_; ++r) {
    if (problems[r].empty()) continue;
    shmWhyNot_ = "rank " + std::to_string(r) + " cannot use the shared-memory board: " + problems[r];
    logger->warn("rank {}: collectives go as messages (no shared-memory segment): {}", rank_, shmWhyNot_);
    return Status::ok();
  }
  shmSegment_ = std::move(segment);
  shmBoard_ = ShmBoard(shmSegment_->data(), size_);
  shmStaging_ = ShmStaging(static_cast<char*>(shmSegment_->data()) + boardBytes(size_), size_);
  logger->debug(
      "rank {}: collectives meet in shared memory ({}): allreduces up to {} bytes on the board, the rest in stages",
      rank_, shmSegment_->name(), algorithms::kShmPayloadBytes);
  return Status::ok();
}

Communicator::ShmWay Communicator::shmWay(const algorithms::ShmCollectiveArgs& args) {
  if (!shmAllowed_) return ShmWay::kNone;
  if (shmSegment_ && (args.barrier || args.count > 0)) {
    if (algorithms::ShmBoardCollective::fits(args, size_)) return ShmWay::kBoard;
    // Else the stages, which serve every size but a reduce_scatter of fewer elements per stage than ranks.
    return algorithms::ShmStagedLayout::serves(args.collective, args.dtype, size_) ? ShmWay::kStaged : ShmWay::kNone;
  }
  if (shmForced_ && !shmRefusalSaid_.exchange(true)) {
    std::string why = shmSegment_ ? "an empty buffer needs no collective" : shmWhyNot_;
    log::get("runtime")->info("rank {}: shm cannot serve this collective: {}; the cost model chooses instead", rank_,
                              why);
  }
  return ShmWay::kNone;
}

std::optional<Result<RequestPtr>> Communicator::viaShm(const algorithms::ShmCollectiveArgs& args) {
  switch (shmWay(args)) {
    case ShmWay::kBoard:
      return shmCollective(args);
    case ShmWay::kStaged:
      return shmStaged(args);
    case ShmWay::kNone:
      break;
  }
  return std::nullopt;
}

Result<RequestPtr> Communicator::shmCollective(const algorithms::ShmCollectiveArgs& args) {
  TSR_RETURN_IF_ERROR(checkShmDevice(args));  // before the index is taken: a refused call takes none
  uint64_t index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    index = shmIndex_++;
  }
  shmBytes_ += algorithms::ShmBoardCollective::payloadBytes(args, size_, rank_);  // its slot, read by the peers
  return postShm(
      args, algorithms::ShmRoute::kBoard, args.barrier ? "shm barrier" : "shm",
      [board = shmBoard_, index](const algorithms::ShmCollectiveArgs& a, const algorithms::TaskContext& ctx) {
        return std::unique_ptr<algorithms::Task>(new algorithms::ShmBoardCollective(board, ctx.id, index, a));
      });
}

Result<RequestPtr> Communicator::shmStaged(const algorithms::ShmCollectiveArgs& args) {
  using algorithms::ShmStagedCollective;
  TSR_RETURN_IF_ERROR(checkShmDevice(args));
  const algorithms::ShmStagedLayout layout = ShmStagedCollective::layoutOf(args, size_);
  uint64_t first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = shmTicket_;
    shmTicket_ += layout.chunks();
  }
  shmBytes_ += layout.bytesPublished(rank_);
  return postShm(args, algorithms::ShmRoute::kStaged, "shm-staged",
                 [staging = shmStaging_, board = shmBoard_, first](const algorithms::ShmCollectiveArgs& a,
                                                                   const algorithms::TaskContext& ctx) {
                   return std::unique_ptr<algorithms::Task>(new ShmStagedCollective(staging, board, ctx.id, first, a));
                 });
}

std::string Communicator::shmSegmentName() const { return shmSegment_ ? shmSegment_->name() : std::string(); }

std::shared_ptr<DenseStaging> Communicator::deviceStaging() {
  if (bufferMemory_.load() != transport::MemoryType::kCuda) return nullptr;
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

Status Communicator::checkShmDevice(const algorithms::ShmCollectiveArgs& args) {
  auto staging = deviceStaging();
  if (!staging || args.barrier) return Status::ok();
  const auto [in, out] = shmBufferBytes(args);
  std::string what = "rank " + std::to_string(rank_) + ": " + algorithms::collectiveName(args.collective);
  TSR_RETURN_IF_ERROR(staging->checkDevice(what.c_str(), "input", args.input, in));
  return staging->checkDevice(what.c_str(), "output", args.output, out);
}

Result<RequestPtr> Communicator::postShm(const algorithms::ShmCollectiveArgs& args, algorithms::ShmRoute route,
                                         std::string algorithm, ShmTaskMaker make) {
  Submission s;
  auto staging = deviceStaging();
  if (staging && !args.barrier) {
    const auto [in, out] = shmBufferBytes(args);
    s.make = staging->stageTask(
        algorithms::collectiveName(args.collective),
        [args, make](const void* hostIn, void* hostOut, const algorithms::TaskContext& ctx) {
          algorithms::ShmCollectiveArgs host = args;
          host.input = hostIn;
          host.output = hostOut;
          return make(host, ctx);
        },
        args.input, in, args.output, out);
    algorithm += " (staged from CUDA memory)";
  } else {
    s.make = [args, make](const algorithms::TaskContext& ctx) -> Result<std::unique_ptr<algorithms::Task>> {
      return make(args, ctx);
    };
  }
  auto posted = post(std::move(s), 1, nullptr, route, algorithms::ShmBoardCollective::callOf(args));
  if (posted.isOk()) posted.value()->setAlgorithm(std::move(algorithm));
  return posted;
}

}  // namespace tsr::runtime
