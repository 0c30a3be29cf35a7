// The one-host shared-memory path: when every rank runs on this host, collectives and
// barriers meet in one shared segment instead of going through UCX as messages: barriers, and
// collectives whose payload fits a 4 KiB slot, on the board
// (algorithms/dense/shm_board_collective.h); larger ones in chunks through the stages
// (algorithms/dense/shm_staged_collective.h), faster than the message plans
// (docs/performance.md, "One host"). The communicator owns one (communicator_shm.cc) and posts
// the tasks it makes; this object holds the segment and the places each call takes in it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/shm_board_collective.h"
#include "algorithms/dense/shm_staging.h"
#include "algorithms/plan/task.h"

namespace tsr::runtime {

class Bootstrap;
class ShmSegment;

class ShmPath {
 public:
  enum class Way { kNone, kBoard, kStaged };
  // Makes a call's task on host buffers (the caller's, or pinned copies of CUDA ones).
  using TaskMaker = std::function<std::unique_ptr<algorithms::Task>(const algorithms::ShmCollectiveArgs&,
                                                                    const algorithms::TaskContext&)>;
  struct Call {
    algorithms::ShmRoute route;  // as announced on the board
    std::string algorithm;       // "shm", "shm barrier", "shm-staged"
    TaskMaker make;
  };

  // Collective over the bootstrap (every rank calls it): rank 0 creates the segment and tells
  // the others its name; every rank says whether it could map it, and the path has a segment
  // only if all could (else every rank's collectives go as messages, whyNot() says why).
  // `algo` is TSR_ALGO: the path serves only under auto and shm.
  static Result<std::unique_ptr<ShmPath>> setUp(int rank, int size, const std::vector<std::string>& hostIds,
                                                Bootstrap* bootstrap, const std::string& algo);
  ~ShmPath();

  // How `args` would go: on the board, through the stages, or not here (no segment,
  // TSR_ALGO names another algorithm, or a shape the stages do not serve).
  Way wayFor(const algorithms::ShmCollectiveArgs& args);
  // The call `way` (not kNone) takes, with its place in the segment taken now: every rank
  // takes its calls in the same order, so their places agree.
  Call take(Way way, const algorithms::ShmCollectiveArgs& args);
  // Tells the peers what collective `seq` is (the board checks that they agree).
  void announce(uint64_t seq, algorithms::ShmRoute route, const algorithms::ShmCall& call);

  // Bytes written to the segment for the peers (Communicator::bytesSent).
  uint64_t bytesPublished() const { return bytes_.load(std::memory_order_relaxed); }
  // The segment's name ("" when there is none; unlinked once every rank has it mapped).
  std::string segmentName() const;

 private:
  ShmPath(int rank, int size, const std::string& algo);

  int rank_, size_;
  bool allowed_, forced_;  // TSR_ALGO is auto or shm; is shm
  std::string whyNot_;     // why there is no segment, for TSR_ALGO=shm
  std::unique_ptr<ShmSegment> segment_;
  algorithms::ShmBoard board_;
  algorithms::ShmStaging staging_;
  std::atomic<bool> refusalSaid_{false};
  std::atomic<uint64_t> boardIndex_{0};  // board collectives so far
  std::atomic<uint64_t> ticket_{0};      // staged chunks so far
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace tsr::runtime
