// PointToPointTask: one send to, or one receive from, one peer (Communicator::send / recv),
// driven by the progress engine like a collective's task, so a point-to-point message gets
// the same timeout, dead-peer detection and abort as a collective. It takes no collective
// sequence number: only its two ranks call it, so its tag counts the pair's messages of that
// user tag instead (transport/tag.h), and a receive matches the sender's n-th message of the
// tag in order, as MPI's do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/plan/task.h"
#include "transport/transport.h"

namespace tsr::runtime {

class PointToPointTask final : public algorithms::Task {
 public:
  enum class Direction : uint8_t { kSend, kRecv };
  // `buffer` of `bytes` is the caller's; `what` names the call in errors ("send of 4096
  // bytes to rank 1 (tag 0, message 3)").
  PointToPointTask(transport::Transport& transport, Direction direction, int peer, uint64_t tag, void* buffer,
                   size_t bytes, transport::MemoryType memory, std::string what);

  Status start() override;
  Status progress() override;
  void abort(const Status& reason) override;
  bool quiescent() const override { return !completion_.posted || completion_.done; }
  int waitingOn() const override { return completion_.done ? -1 : peer_; }
  std::string describe() const override { return what_; }

 private:
  std::string where() const;  // "rank 0: send of ...", for errors

  transport::Transport& transport_;
  Direction direction_;
  int peer_;
  uint64_t tag_;
  void* buffer_;
  size_t bytes_;
  transport::MemoryType memory_;
  std::string what_;
  transport::Completion completion_;
};

}  // namespace tsr::runtime
