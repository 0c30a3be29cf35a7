#include "algorithms/dense/shm_allreduce.h"

#include <cstring>

#include "algorithms/kernels/reduce.h"
#include "algorithms/plan/plan.h"

namespace tsr::algorithms {


ShmCall ShmAllreduce::callOf(const ShmCollectiveArgs& args) {
  ShmCall c;
  c.collective = static_cast<uint8_t>(args.barrier ? CollectiveKind::kBarrier : args.collective);
  c.dtype = static_cast<uint8_t>(args.dtype);
  c.op = static_cast<uint8_t>(args.op);
  c.count = args.count;
  c.root = args.root;
  return c;
}

ShmAllreduce::ShmAllreduce(ShmBoard board, RunIdentity id, uint64_t index, ShmCollectiveArgs args)
    : board_(board), id_(id), index_(index), args_(args), call_(callOf(args)),
      bytes_(args.count * dataTypeSize(args.dtype)) {}

bool ShmAllreduce::slotFree() const {
  // Slot index % 2 last held allreduce index - 2: every rank must have finished it.
  if (index_ < 2) return true;
  for (int r = 0; r < board_.size(); ++r)
    if (board_.area(r).done.load(std::memory_order_acquire) < index_ - 1) return false;
  return true;
}

void ShmAllreduce::post() {
  ShmSlot& slot = board_.area(id_.rank).slots[index_ % 2];
  if (bytes_) std::memcpy(slot.payload, args_.input, bytes_);
  slot.call = call_;
  slot.seq.store(uint64_t{id_.seq} + 1, std::memory_order_release);
  posted_ = true;
}

Status ShmAllreduce::mismatch(int peer, const ShmCall& theirs, const char* how) const {
  return shmMismatch(id_.rank, peer, id_.seq, call_, theirs, how);
}

Status ShmAllreduce::look(int peer) {
  const ShmSlot& slot = board_.area(peer).slots[index_ % 2];
  if (slot.seq.load(std::memory_order_acquire) == uint64_t{id_.seq} + 1) {
    if (firstShmDifference(call_, slot.call)) return mismatch(peer, slot.call, "called it");
    return Status::ok();
  }
  ShmRoute route;
  ShmCall theirs;
  if (board_.announced(peer, id_.seq, &route, &theirs) && route != ShmRoute::kBoard)
    return mismatch(peer, theirs, shmRouteDescription(route));
  return Status(Code::kInProgress, "");
}

void ShmAllreduce::finish() {
  // Rank order on every rank: the same bits everywhere. The input is in this rank's slot
  // already, so the output may alias it.
  if (bytes_ == 0) {  // a barrier
    board_.area(id_.rank).done.store(index_ + 1, std::memory_order_release);
    return;
  }
  std::memcpy(args_.output, board_.area(0).slots[index_ % 2].payload, bytes_);
  for (int r = 1; r < board_.size(); ++r)
    kernels::reduceInto(args_.output, board_.area(r).slots[index_ % 2].payload, args_.count, args_.dtype,
                        args_.op);
  if (args_.op == ReduceOp::kAvg)
    kernels::divideInPlace(args_.output, args_.count, args_.dtype, static_cast<uint64_t>(board_.size()));
  board_.area(id_.rank).done.store(index_ + 1, std::memory_order_release);
}

Status ShmAllreduce::progress() {
  if (status_.code() != Code::kInProgress) return status_;
  if (!posted_) {
    if (!slotFree()) return status_;
    post();
  }
  for (; nextPeer_ < board_.size(); ++nextPeer_) {
    if (nextPeer_ == id_.rank) continue;
    Status st = look(nextPeer_);
    if (st.code() == Code::kInProgress) return status_;
    if (!st.isOk()) return status_ = st;
  }
  // Finish in order: slot k % 2 may be reused once this rank's done counter passes k.
  if (board_.area(id_.rank).done.load(std::memory_order_relaxed) != index_) return status_;
  finish();
  return status_ = Status::ok();
}

void ShmAllreduce::abort(const Status& reason) {
  if (status_.code() == Code::kInProgress) status_ = reason;
}

int ShmAllreduce::waitingOn() const {
  if (status_.code() != Code::kInProgress) return -1;
  if (!posted_) {  // waiting for a slow peer to finish the allreduce before last
    for (int r = 0; r < board_.size(); ++r)
      if (r != id_.rank && index_ >= 2 && board_.area(r).done.load(std::memory_order_acquire) < index_ - 1)
        return r;
  }
  return nextPeer_ < board_.size() ? nextPeer_ : -1;
}

}  // namespace tsr::algorithms
