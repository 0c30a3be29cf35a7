#include "runtime/shm_path.h"

#include <algorithm>

#include "algorithms/dense/shm_staged_collective.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/shm_segment.h"

namespace tsr::runtime {

using algorithms::ShmBoard;
using algorithms::ShmStaging;

namespace {

// The board, then the stages from the next page.
size_t boardBytes(int size) { return (ShmBoard::bytesFor(size) + 4095) / 4096 * 4096; }

}  // namespace

ShmPath::ShmPath(int rank, int size, const std::string& algo)
    : rank_(rank), size_(size), allowed_(algo == "auto" || algo == "shm"), forced_(algo == "shm") {}

ShmPath::~ShmPath() = default;

Result<std::unique_ptr<ShmPath>> ShmPath::setUp(int rank, int size, const std::vector<std::string>& hostIds,
                                                Bootstrap* bootstrap, const std::string& algo) {
  std::unique_ptr<ShmPath> path(new ShmPath(rank, size, algo));
  if (size == 1 || !bootstrap) {
    path->whyNot_ = "a single rank needs no board";
    return path;
  }
  if (std::any_of(hostIds.begin(), hostIds.end(), [&](const std::string& h) { return h != hostIds[0]; })) {
    path->whyNot_ = "the ranks are on more than one host";
    return path;
  }
  const size_t bytes = boardBytes(size) + ShmStaging::bytesFor(size);
  std::unique_ptr<ShmSegment> segment;
  std::string problem;
  if (rank == 0) {
    auto created = ShmSegment::create(bytes);
    if (created.isOk()) {
      segment = created.take();
      ShmBoard::format(segment->data(), size);
      ShmStaging::format(static_cast<char*>(segment->data()) + boardBytes(size), size);
    } else {
      problem = created.status().message();
    }
  }
  TSR_ASSIGN_OR_RETURN(auto names, bootstrap->allGather(segment ? segment->name() : std::string()));
  if (rank != 0 && !names[0].empty()) {
    auto opened = ShmSegment::open(names[0], bytes);
    if (opened.isOk())
      segment = opened.take();
    else
      problem = opened.status().message();
  }
  if (names[0].empty() && problem.empty()) problem = "rank 0 could not create it";
  TSR_ASSIGN_OR_RETURN(auto problems, bootstrap->allGather(problem));
  if (rank == 0 && segment) segment->unlink();  // everyone has it mapped (or gave up)
  auto logger = log::get("runtime");
  for (int r = 0; r < size; ++r) {
    if (problems[r].empty()) continue;
    path->whyNot_ = "rank " + std::to_string(r) + " cannot use the shared-memory board: " + problems[r];
    logger->warn("rank {}: collectives go as messages (no shared-memory segment): {}", rank, path->whyNot_);
    return path;
  }
  path->segment_ = std::move(segment);
  path->board_ = ShmBoard(path->segment_->data(), size);
  path->staging_ = ShmStaging(static_cast<char*>(path->segment_->data()) + boardBytes(size), size);
  logger->debug(
      "rank {}: collectives meet in shared memory ({}): allreduces up to {} bytes on the board, the rest in stages",
      rank, path->segment_->name(), algorithms::kShmPayloadBytes);
  return path;
}

ShmPath::Way ShmPath::wayFor(const algorithms::ShmCollectiveArgs& args) {
  if (!allowed_) return Way::kNone;
  if (segment_ && (args.barrier || args.count > 0)) {
    if (algorithms::ShmBoardCollective::fits(args, size_)) return Way::kBoard;
    // Else the stages, which serve every size but a reduce_scatter of fewer elements per stage than ranks.
    return algorithms::ShmStagedLayout::serves(args.collective, args.dtype, size_) ? Way::kStaged : Way::kNone;
  }
  if (forced_ && !args.barrier && !refusalSaid_.exchange(true)) {
    std::string why = segment_ ? "an empty buffer needs no collective" : whyNot_;
    log::get("runtime")->info("rank {}: shm cannot serve this collective: {}; the cost model chooses instead", rank_,
                              why);
  }
  return Way::kNone;
}

ShmPath::Call ShmPath::take(Way way, const algorithms::ShmCollectiveArgs& args) {
  using algorithms::ShmBoardCollective;
  using algorithms::ShmStagedCollective;
  if (way == Way::kBoard) {
    const uint64_t index = boardIndex_.fetch_add(1);
    bytes_ += ShmBoardCollective::payloadBytes(args, size_, rank_);  // its slot, read by the peers
    return {algorithms::ShmRoute::kBoard, args.barrier ? "shm barrier" : "shm",
            [board = board_, index](const algorithms::ShmCollectiveArgs& a, const algorithms::TaskContext& ctx) {
              return std::unique_ptr<algorithms::Task>(new ShmBoardCollective(board, ctx.id, index, a));
            }};
  }
  const algorithms::ShmStagedLayout layout = ShmStagedCollective::layoutOf(args, size_);
  const uint64_t first = ticket_.fetch_add(layout.chunks());
  bytes_ += layout.bytesPublished(rank_);
  return {algorithms::ShmRoute::kStaged, "shm-staged",
          [staging = staging_, board = board_, first](const algorithms::ShmCollectiveArgs& a,
                                                      const algorithms::TaskContext& ctx) {
            return std::unique_ptr<algorithms::Task>(new ShmStagedCollective(staging, board, ctx.id, first, a));
          }};
}

void ShmPath::announce(uint64_t seq, algorithms::ShmRoute route, const algorithms::ShmCall& call) {
  if (segment_) board_.announce(rank_, seq, route, call);
}

std::string ShmPath::segmentName() const { return segment_ ? segment_->name() : std::string(); }

}  // namespace tsr::runtime
