// Communicator::send / recv, the per-call timeout and drain. A message between two ranks is a
// task of its own in the progress engine (point_to_point.h): it is numbered per (peer, tag)
// on both sides instead of taking a collective sequence number, which the ranks that do not
// take part would never see.
#include <string>

#include "runtime/communicator.h"
#include "runtime/point_to_point.h"
#include "runtime/progress_engine.h"
#include "transport/tag.h"

namespace tsr::runtime {

Result<RequestPtr> Communicator::send(const void* input, size_t count, DataType dtype, int peer, uint32_t tag) {
  return postPointToPoint(true, const_cast<void*>(input), count, dtype, peer, tag);
}

Result<RequestPtr> Communicator::recv(void* output, size_t count, DataType dtype, int peer, uint32_t tag) {
  return postPointToPoint(false, output, count, dtype, peer, tag);
}

Result<RequestPtr> Communicator::postPointToPoint(bool isSend, void* buffer, size_t count, DataType dtype, int peer,
                                                  uint32_t tag) {
  const char* call = isSend ? "send" : "recv";
  const std::string where = std::string(call) + " on rank " + std::to_string(rank_) + ": ";
  if (peer < 0 || peer >= size_)
    return Status(Code::kInvalidArgument, where + "peer " + std::to_string(peer) +
                                              " is not a rank of this communicator (0.." + std::to_string(size_ - 1) +
                                              ")");
  if (peer == rank_)
    return Status(Code::kInvalidArgument, where + "peer " + std::to_string(peer) + " is this rank itself");
  if (tag > transport::kMaxPointToPointTag)
    return Status(Code::kInvalidArgument, where + "tag " + std::to_string(tag) + " is over the largest, " +
                                              std::to_string(transport::kMaxPointToPointTag));
  if (count > 0 && !buffer)  // before checkArgs, which would call a receive's buffer the input
    return Status(Code::kInvalidArgument,
                  where + (isSend ? "the data" : "the output buffer") + " is NULL with count " + std::to_string(count));
  TSR_RETURN_IF_ERROR(checkArgs(call, buffer, buffer, count, dtype, nullptr, -1));
  if (bufferMemory() != transport::MemoryType::kHost)
    return Status(Code::kNotSupported, where + "device buffers are not taken yet (memory type host only)");

  Submission s;
  s.request = std::make_shared<Request>();
  s.pointToPoint = true;
  s.seqSpan = 0;
  s.timeoutMs = timeoutMs_;
  uint32_t n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    n = (isSend ? sentCount_ : receivedCount_)[{peer, tag}]++;
    s.seq = seq_;
  }
  const size_t bytes = count * dataTypeSize(dtype);
  const int source = isSend ? rank_ : peer;  // the tag names the sender on both sides
  std::string what = std::string(call) + " of " + std::to_string(count) + " " + dataTypeName(dtype) +
                     (isSend ? " to rank " : " from rank ") + std::to_string(peer) + " (tag " + std::to_string(tag) +
                     ", message " + std::to_string(n) + ")";
  auto direction = isSend ? PointToPointTask::Direction::kSend : PointToPointTask::Direction::kRecv;
  s.make = [=](const algorithms::TaskContext& context) -> Result<std::unique_ptr<algorithms::Task>> {
    const uint64_t wireTag = transport::makePointToPointTag(source, context.id.comm, n, tag);
    return std::unique_ptr<algorithms::Task>(std::make_unique<PointToPointTask>(
        context.transport, direction, peer, wireTag, buffer, bytes, transport::MemoryType::kHost, what));
  };
  RequestPtr request = s.request;
  engine_->submit(std::move(s));
  return request;
}

Status Communicator::setTimeout(int ms) {
  if (ms <= 0) return Status(Code::kInvalidArgument, "timeout " + std::to_string(ms) + " ms: it must be > 0");
  timeoutMs_ = ms;
  return Status::ok();
}

Status Communicator::drain() {
  engine_->waitUntilIdle();
  return engine_->health();
}

}  // namespace tsr::runtime
