#include "algorithms/dense/shm_board_collective.h"

#include <cstring>

#include "algorithms/kernels/reduce.h"
#include "algorithms/plan/plan.h"

namespace tsr::algorithms {

ShmCall ShmBoardCollective::callOf(const ShmCollectiveArgs& args) {
  ShmCall c;
  c.collective = static_cast<uint8_t>(args.barrier ? CollectiveKind::kBarrier : args.collective);
  c.dtype = static_cast<uint8_t>(args.dtype);
  c.op = static_cast<uint8_t>(args.op);
  c.count = args.count;
  c.root = args.root;
  return c;
}

size_t ShmBoardCollective::payloadBytes(const ShmCollectiveArgs& args, int size, int rank) {
  if (args.barrier) return 0;
  const size_t bytes = args.count * dataTypeSize(args.dtype);
  switch (args.collective) {
    case CollectiveKind::kReduceScatter:
      return bytes * static_cast<size_t>(size);
    case CollectiveKind::kBroadcast:
      return rank == args.root ? bytes : 0;
    default:
      return bytes;
  }
}

bool ShmBoardCollective::fits(const ShmCollectiveArgs& args, int size) {
  if (args.barrier) return true;
  const int biggest = args.collective == CollectiveKind::kBroadcast ? args.root : 0;
  return payloadBytes(args, size, biggest) <= kShmPayloadBytes;
}

ShmBoardCollective::ShmBoardCollective(ShmBoard board, RunIdentity id, uint64_t index, ShmCollectiveArgs args)
    : board_(board),
      id_(id),
      index_(index),
      args_(args),
      call_(callOf(args)),
      bytes_(payloadBytes(args, board.size(), id.rank)) {}

std::string ShmBoardCollective::describe() const {
  return args_.barrier ? "barrier" : collectiveName(args_.collective);
}

bool ShmBoardCollective::slotFree() const {
  // Slot index % 2 last held board collective index - 2: every rank must have finished it.
  if (index_ < 2) return true;
  for (int r = 0; r < board_.size(); ++r)
    if (board_.area(r).done.load(std::memory_order_acquire) < index_ - 1) return false;
  return true;
}

void ShmBoardCollective::post() {
  ShmSlot& slot = board_.area(id_.rank).slots[index_ % 2];
  if (bytes_) std::memcpy(slot.payload, args_.input, bytes_);
  slot.call = call_;
  slot.seq.store(uint64_t{id_.seq} + 1, std::memory_order_release);
  posted_ = true;
}

Status ShmBoardCollective::mismatch(int peer, const ShmCall& theirs, const char* how) const {
  return shmMismatch(id_.rank, peer, id_.seq, call_, theirs, how);
}

bool ShmBoardCollective::needs(int peer) const {
  // Every rank checks every peer's call, a broadcast's other ranks too although they read
  // only the root's slot: a rank that named another root (or called something else) is then
  // named on every rank, not only on the two that think they are root.
  return peer != id_.rank;
}

Status ShmBoardCollective::look(int peer) {
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

void ShmBoardCollective::deliver() {
  // The input is in this rank's slot already, so the output may alias it.
  const int n = board_.size();
  const size_t slot = index_ % 2, esize = dataTypeSize(args_.dtype), bytes = args_.count * esize;
  auto payload = [&](int r) { return board_.area(r).slots[slot].payload; };
  auto* out = static_cast<unsigned char*>(args_.output);
  if (args_.collective == CollectiveKind::kAllgather) {
    for (int r = 0; r < n; ++r) std::memcpy(out + static_cast<size_t>(r) * bytes, payload(r), bytes);
  } else if (args_.collective == CollectiveKind::kBroadcast) {
    std::memcpy(out, payload(args_.root), bytes);
  } else {  // allreduce, or reduce_scatter's block `rank`; in rank order on every rank
    const size_t at = args_.collective == CollectiveKind::kReduceScatter ? static_cast<size_t>(id_.rank) * bytes : 0;
    std::memcpy(out, payload(0) + at, bytes);
    for (int r = 1; r < n; ++r) kernels::reduceInto(out, payload(r) + at, args_.count, args_.dtype, args_.op);
    if (args_.op == ReduceOp::kAvg) kernels::divideInPlace(out, args_.count, args_.dtype, static_cast<uint64_t>(n));
  }
}

void ShmBoardCollective::finish() {
  if (!args_.barrier) deliver();
  board_.area(id_.rank).done.store(index_ + 1, std::memory_order_release);
}

Status ShmBoardCollective::progress() {
  if (status_.code() != Code::kInProgress) return status_;
  if (!posted_) {
    if (!slotFree()) return status_;
    post();
  }
  for (; nextPeer_ < board_.size(); ++nextPeer_) {
    if (!needs(nextPeer_)) continue;
    Status st = look(nextPeer_);
    if (st.code() == Code::kInProgress) return status_;
    if (!st.isOk()) return status_ = st;
  }
  // Finish in order: slot k % 2 may be reused once this rank's done counter passes k.
  if (board_.area(id_.rank).done.load(std::memory_order_relaxed) != index_) return status_;
  finish();
  return status_ = Status::ok();
}

void ShmBoardCollective::abort(const Status& reason) {
  if (status_.code() == Code::kInProgress) status_ = reason;
}

int ShmBoardCollective::waitingOn() const {
  if (status_.code() != Code::kInProgress) return -1;
  if (!posted_) {  // waiting for a slow peer to finish the board collective before last
    for (int r = 0; r < board_.size(); ++r)
      if (r != id_.rank && index_ >= 2 && board_.area(r).done.load(std::memory_order_acquire) < index_ - 1) return r;
  }
  return nextPeer_ < board_.size() ? nextPeer_ : -1;
}

}  // namespace tsr::algorithms
