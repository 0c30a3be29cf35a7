#include "algorithms/dense/shm_staged_collective.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/reduce.h"

namespace tsr::algorithms {

ShmStagedCollective::ShmStagedCollective(ShmStaging staging, ShmBoard board, RunIdentity id, uint64_t firstTicket,
                                         ShmCollectiveArgs args)
    : staging_(staging),
      board_(board),
      id_(id),
      first_(firstTicket),
      args_(args),
      layout_(layoutOf(args, staging.size())),
      call_(ShmBoardCollective::callOf(args)),
      esize_(dataTypeSize(args.dtype)),
      chunks_(layout_.chunks()) {}

int ShmStagedCollective::firstPeerBelow(ShmCounter ShmStagingArea::*counter, uint64_t need) const {
  for (int r = 0; r < staging_.size(); ++r)
    if (r != id_.rank && (staging_.area(r).*counter).value.load(std::memory_order_acquire) < need) return r;
  return -1;
}

bool ShmStagedCollective::stageFree(uint64_t ticket) const {
  // The stage last held ticket - 2: every rank, this one too (an earlier allreduce may still
  // be running), must have copied it out.
  if (ticket < 2) return true;
  return staging_.area(id_.rank).gathered.value.load(std::memory_order_acquire) >= ticket - 1 &&
         firstPeerBelow(&ShmStagingArea::gathered, ticket - 1) < 0;
}

void ShmStagedCollective::post(uint64_t chunk) {
  const uint64_t ticket = first_ + chunk;
  ShmStagingArea& mine = staging_.area(id_.rank);
  unsigned char* stage = staging_.stage(id_.rank, ticket);
  for (int i = 0, n = layout_.posts(id_.rank); i < n; ++i) {
    const ShmPiece p = layout_.post(chunk, id_.rank, i);
    std::memcpy(stage + p.stage * esize_, static_cast<const unsigned char*>(args_.input) + p.buffer * esize_,
                p.count * esize_);
  }
  mine.headers[ticket % 2] = ShmStageHeader{ticket, id_.seq, call_};
  mine.posted.value.store(ticket + 1, std::memory_order_release);
}

Status ShmStagedCollective::notPosted(int peer) const {
  ShmRoute route;
  ShmCall theirs;
  if (board_.announced(peer, id_.seq, &route, &theirs) &&
      (route != ShmRoute::kStaged || firstShmDifference(call_, theirs)))
    return shmMismatch(id_.rank, peer, id_.seq, call_, theirs, shmRouteDescription(route));
  return Status(Code::kInProgress, "");
}

Status ShmStagedCollective::checkPeersPosted(uint64_t chunk) {
  const uint64_t ticket = first_ + chunk;
  for (int r = 0; r < staging_.size(); ++r) {
    if (r == id_.rank || !layout_.waitsForPost(id_.rank, r)) continue;
    const ShmStagingArea& peer = staging_.area(r);
    if (peer.posted.value.load(std::memory_order_acquire) < ticket + 1) {
      Status st = notPosted(r);
      if (st.code() == Code::kInProgress) return st;
      return status_ = st;
    }
    // A peer cannot post ticket + 2 before this rank gathers `ticket`, so the header is
    // this ticket's; it must be this collective's.
    const ShmStageHeader& h = peer.headers[ticket % 2];
    if (h.seq != id_.seq || firstShmDifference(call_, h.call))
      return status_ =
                 shmMismatch(id_.rank, r, id_.seq, call_, h.call,
                             h.seq != id_.seq ? "was at another collective in the shared-memory stages" : "called it");
  }
  return Status::ok();
}

void ShmStagedCollective::reduce(uint64_t chunk) {
  const uint64_t ticket = first_ + chunk;
  const ShmPiece s = layout_.reduce(chunk, id_.rank);
  unsigned char* out = static_cast<unsigned char*>(args_.output) + s.buffer * esize_;
  // In blocks of 8 KiB, so the N-1 passes over the output hit the L1 cache.
  const size_t block = 8192 / esize_;
  for (size_t done = 0; done < s.count; done += block) {
    const size_t n = std::min(block, s.count - done), at = (s.stage + done) * esize_;
    unsigned char* o = out + done * esize_;
    std::memcpy(o, staging_.stage(0, ticket) + at, n * esize_);
    for (int r = 1; r < staging_.size(); ++r)
      kernels::reduceInto(o, staging_.stage(r, ticket) + at, n, args_.dtype, args_.op);
    if (args_.op == ReduceOp::kAvg) kernels::divideInPlace(o, n, args_.dtype, static_cast<uint64_t>(staging_.size()));
    if (layout_.writesBack()) std::memcpy(staging_.stage(id_.rank, ticket) + at, o, n * esize_);
  }
  staging_.area(id_.rank).reduced.value.store(ticket + 1, std::memory_order_release);
}

bool ShmStagedCollective::backInPlace(uint64_t chunk, const ShmPiece& p) const {
  if (layout_.posts(id_.rank) != 1) return false;
  const ShmPiece posted = layout_.post(chunk, id_.rank, 0);
  return posted.stage == p.stage && posted.count == p.count &&
         static_cast<const unsigned char*>(args_.input) + posted.buffer * esize_ ==
             static_cast<const unsigned char*>(args_.output) + p.buffer * esize_;
}

bool ShmStagedCollective::gather(uint64_t chunk) {
  const uint64_t ticket = first_ + chunk;
  for (; nextGatherPeer_ < staging_.size(); ++nextGatherPeer_) {
    const int r = nextGatherPeer_;
    const ShmPiece p = layout_.gather(chunk, id_.rank, r);
    if (p.count == 0 || (r == id_.rank && backInPlace(chunk, p))) continue;
    // Every peer has posted this chunk (checked before the reduction); an allreduce's pieces
    // are the peers' reduced slices.
    if (r != id_.rank && layout_.gathersReduced() &&
        staging_.area(r).reduced.value.load(std::memory_order_acquire) < ticket + 1)
      return false;
    std::memcpy(static_cast<unsigned char*>(args_.output) + p.buffer * esize_,
                staging_.stage(r, ticket) + p.stage * esize_, p.count * esize_);
  }
  nextGatherPeer_ = 0;
  staging_.area(id_.rank).gathered.value.store(ticket + 1, std::memory_order_release);
  return true;
}

Status ShmStagedCollective::progress() {
  if (status_.code() != Code::kInProgress) return status_;
  // Each phase takes this rank's tickets in order, across allreduces too (an earlier one may
  // still be running): the counters only ever count up, one ticket at a time.
  ShmStagingArea& mine = staging_.area(id_.rank);
  auto myTurn = [&](ShmCounter& counter, uint64_t chunk) {
    return counter.value.load(std::memory_order_relaxed) == first_ + chunk;
  };
  for (bool moved = true; moved;) {
    moved = false;
    // Post ahead while the stage is free: peers may still be reducing the chunk before.
    if (posted_ < chunks_ && myTurn(mine.posted, posted_) && stageFree(first_ + posted_)) {
      post(posted_++);
      moved = true;
    }
    if (reduced_ < posted_ && myTurn(mine.reduced, reduced_)) {
      Status st = checkPeersPosted(reduced_);
      if (!st.isOk() && st.code() != Code::kInProgress) return status_;
      if (st.isOk()) {
        reduce(reduced_++);
        moved = true;
      }
    }
    if (gathered_ < reduced_ && myTurn(mine.gathered, gathered_) && gather(gathered_)) {
      ++gathered_;
      moved = true;
    }
  }
  if (gathered_ == chunks_) status_ = Status::ok();
  return status_;
}

void ShmStagedCollective::abort(const Status& reason) {
  if (status_.code() == Code::kInProgress) status_ = reason;
}

int ShmStagedCollective::waitingOn() const {
  if (status_.code() != Code::kInProgress) return -1;
  if (gathered_ < reduced_)
    return layout_.gathersReduced() ? firstPeerBelow(&ShmStagingArea::reduced, first_ + gathered_ + 1) : -1;
  if (reduced_ < posted_) {
    for (int r = 0; r < staging_.size(); ++r)
      if (r != id_.rank && layout_.waitsForPost(id_.rank, r) &&
          staging_.area(r).posted.value.load(std::memory_order_acquire) < first_ + reduced_ + 1)
        return r;
    return -1;
  }
  if (posted_ < chunks_ && first_ + posted_ >= 2)
    return firstPeerBelow(&ShmStagingArea::gathered, first_ + posted_ - 1);
  return -1;
}

}  // namespace tsr::algorithms
