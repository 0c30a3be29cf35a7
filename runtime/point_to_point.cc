#include "runtime/point_to_point.h"

#include <utility>

#include "transport/tag.h"

namespace tsr::runtime {

PointToPointTask::PointToPointTask(transport::Transport& transport, Direction direction, int peer, uint64_t tag,
                                   void* buffer, size_t bytes, transport::MemoryType memory, std::string what)
    : transport_(transport),
      direction_(direction),
      peer_(peer),
      tag_(tag),
      buffer_(buffer),
      bytes_(bytes),
      memory_(memory),
      what_(std::move(what)) {}

std::string PointToPointTask::where() const { return "rank " + std::to_string(transport_.rank()) + ": " + what_; }

Status PointToPointTask::start() {
  Status st = direction_ == Direction::kSend
                  ? transport_.send(peer_, tag_, buffer_, bytes_, memory_, &completion_)
                  : transport_.recv(peer_, tag_, transport::kTagFullMask, buffer_, bytes_, memory_, &completion_);
  if (!st.isOk()) return Status(st.code(), where() + ": " + st.message());
  return progress();
}

Status PointToPointTask::progress() {
  if (!completion_.done) return Status(Code::kInProgress, "");
  if (!completion_.status.isOk()) {
    // A failed endpoint says why the peer is gone better than the operation does.
    Status health = transport_.peerStatus(peer_);
    if (!health.isOk()) return Status(Code::kPeerFailed, where() + ": " + health.message());
    if (completion_.status.code() == Code::kMismatch)  // the transport's "larger than the buffer"
      return Status(Code::kMismatch, where() + ": rank " + std::to_string(peer_) + " sent more than the " +
                                         std::to_string(bytes_) + " bytes expected");
    return Status(completion_.status.code(), where() + ": " + completion_.status.message());
  }
  if (direction_ == Direction::kRecv && completion_.bytes != bytes_)
    return Status(Code::kMismatch, where() + ": rank " + std::to_string(peer_) + " sent " +
                                       std::to_string(completion_.bytes) + " bytes where " + std::to_string(bytes_) +
                                       " were expected");
  return Status::ok();
}

void PointToPointTask::abort(const Status&) {
  if (completion_.posted && !completion_.done) transport_.cancel(&completion_);
}

}  // namespace tsr::runtime
