#include "algorithms/plan/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/reduce.h"
#include "algorithms/kernels/sign.h"
#include "transport/tag.h"

namespace tsr::algorithms {

using transport::Completion;

namespace {
size_t roundUp64(size_t n) { return (n + 63) / 64 * 64; }
}  // namespace

PlanExecutor::PlanExecutor(std::shared_ptr<const Plan> plan, RunBuffers buffers, RunIdentity id,
                           transport::Transport& transport)
    : plan_(std::move(plan)), buffers_(buffers), id_(id), transport_(transport) {
  const Plan& p = *plan_;
  const size_t ops = p.ops.size(), recvPeers = p.recvPeers.size();
  completions_.resize(ops + recvPeers + p.sendPeers.size());
  if (p.reducesOnArrival) arrivals_.resize(ops);
  myHeader_ = headerOf(p, id);
  bool ownScratch = !buffers_.scratch && p.scratchBytes > 0 && buffers_.memory == transport::MemoryType::kHost;
  // Block layout (64-byte aligned parts): header slots, scratch, op index lists, in_.
  size_t headers = roundUp64((recvPeers + p.sendPeers.size()) * kHeaderSlot);
  size_t scratch = ownScratch ? roundUp64(p.scratchBytes) : 0;
  size_t lists = roundUp64(4 * ops * sizeof(uint32_t));
  size_t peers = recvPeers * sizeof(PeerIn);
  size_t total = std::max<size_t>(64, headers + scratch + lists + roundUp64(peers));
  block_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, total)));
  if (!block_) throw std::bad_alloc();
  uint8_t* at = block_.get();
  headerBytes_ = at;  // not zeroed: written before read
  if (ownScratch) buffers_.scratch = at + headers;
  auto* words = reinterpret_cast<uint32_t*>(at + headers + scratch);
  pending_ = words;
  std::copy(p.depCount.begin(), p.depCount.end(), pending_);
  inFlight_.data = words + ops;
  readyTransfers_.data = words + 2 * ops;
  readyLocal_.data = words + 3 * ops;
  in_ = reinterpret_cast<PeerIn*>(at + headers + scratch + lists);
  std::uninitialized_value_construct_n(in_, recvPeers);
}

// Where the rounding of an op's f16 sum or division into the output is kept, or null.
float* PlanExecutor::droppedAt(const PlanOp& op) const {
  if (!buffers_.droppedRounding || plan_->dtype != DataType::kF16 || op.dst.slot != Slot::kOutput ||
      (plan_->op != ReduceOp::kSum && plan_->op != ReduceOp::kAvg))
    return nullptr;
  return buffers_.droppedRounding + op.dst.offset / sizeof(uint16_t);
}

void* PlanExecutor::resolve(const BufferRef& ref) const {
  switch (ref.slot) {
    case Slot::kInput:
      return const_cast<char*>(static_cast<const char*>(buffers_.input)) + ref.offset;
    case Slot::kOutput:
      return static_cast<char*>(buffers_.output) + ref.offset;
    case Slot::kScratch:
      return static_cast<char*>(buffers_.scratch) + ref.offset;
  }
  return nullptr;
}

Status PlanExecutor::fail(Status status) {
  if (status_.code() == Code::kInProgress) status_ = std::move(status);
  for (auto& c : completions_) transport_.cancel(&c);  // the header receives too
  return status_;
}

void PlanExecutor::abort(const Status& reason) { fail(reason).ignore(); }

bool PlanExecutor::quiescent() const {
  return std::all_of(completions_.begin(), completions_.end(), [](const Completion& c) { return !c.posted || c.done; });
}

int PlanExecutor::waitingOn() const {
  for (size_t i = 0; i < plan_->recvPeers.size(); ++i)
    if (!completions_[plan_->ops.size() + i].done) return plan_->recvPeers[i];
  for (uint32_t index : inFlight_) {
    const PlanOp& op = plan_->ops[index];
    if (op.kind != OpKind::kSend && !completions_[index].done) return op.peer;
  }
  for (uint32_t index : inFlight_)
    if (!completions_[index].done) return plan_->ops[index].peer;
  return -1;
}

Status PlanExecutor::start() {
  const Plan& p = *plan_;
  const auto host = transport::MemoryType::kHost;
  if (buffers_.memory == transport::MemoryType::kCuda && !buffers_.kernels)
    return fail(
        Status(Code::kInternal, p.algorithm + " plan on rank " + std::to_string(id_.rank) +
                                    ": device buffers (memory=cuda) but no device kernels to do its local math"));
  // Reductions on arrival run in the transport's consumer, which keeps no rounding.
  if (buffers_.droppedRounding && p.reducesOnArrival)
    return fail(Status(Code::kInternal, p.algorithm + " plan on rank " + std::to_string(id_.rank) +
                                            ": reduces on arrival, so it cannot keep its rounding (droppedRounding)"));
  // Every header receive takes a header with a payload, whatever this rank's plan expects:
  // a peer whose plan differs is then still heard, and its arguments named.
  for (size_t i = 0; i < p.recvPeers.size(); ++i) {
    int peer = p.recvPeers[i];
    uint64_t tag = transport::makeDataTag(peer, id_.comm, id_.seq, transport::kHeaderMessageId);
    Status st = transport_.recv(peer, tag, transport::kTagFullMask, headerBytes_ + i * kHeaderSlot, kHeaderSlot, host,
                                &inHeader(i));
    if (!st.isOk()) return fail(st);
  }
  for (size_t i = 0; i < p.sendPeers.size(); ++i) {
    if (inlinable(p.firstSendOp[i])) continue;  // sent with that first message
    int peer = p.sendPeers[i];
    uint64_t tag = transport::makeDataTag(id_.rank, id_.comm, id_.seq, transport::kHeaderMessageId);
    Status st = transport_.send(peer, tag, &myHeader_, sizeof(WireHeader), host, &outHeader(i));
    if (!st.isOk()) return fail(st);
  }
  for (uint32_t i = 0; i < p.ops.size(); ++i)
    if (pending_[i] == 0) enqueue(i);
  return progress();
}

Status PlanExecutor::post(uint32_t index, bool plain) {
  const PlanOp& op = plan_->ops[index];
  size_t bytes = op.count * dataTypeSize(plan_->dtype);
  if (op.onArrival) return postOnArrival(index);
  int32_t slot = plan_->peerSlot[index];
  if (!plain && slot >= 0 && inlinable(index)) {
    if (op.kind == OpKind::kSend) return sendInline(index, static_cast<size_t>(slot));
    return postFirstRecv(index, static_cast<size_t>(slot));
  }
  Completion* c = &completions_[index];
  Status st;
  if (op.kind == OpKind::kSend) {
    uint64_t tag = transport::makeDataTag(id_.rank, id_.comm, id_.seq, op.msgId);
    st = transport_.send(op.peer, tag, resolve(op.src), bytes, buffers_.memory, c);
  } else {
    uint64_t tag = transport::makeDataTag(op.peer, id_.comm, id_.seq, op.msgId);
    void* into = op.kind == OpKind::kRecv ? resolve(op.dst) : resolve(op.staging);
    st = transport_.recv(op.peer, tag, transport::kTagFullMask, into, bytes, buffers_.memory, c);
  }
  if (!st.isOk()) return st;
  inFlight_.push_back(index);
  return Status::ok();
}

Status PlanExecutor::finishLocal(uint32_t index) {
  if (buffers_.memory == transport::MemoryType::kCuda) return finishOnDevice(index);
  const PlanOp& op = plan_->ops[index];
  size_t bytes = op.count * dataTypeSize(plan_->dtype);
  switch (op.kind) {
    case OpKind::kCopy:
      if (bytes && resolve(op.dst) != resolve(op.src)) std::memmove(resolve(op.dst), resolve(op.src), bytes);
      break;
    case OpKind::kReduce:
    case OpKind::kRecvReduce: {
      const void* src = resolve(op.kind == OpKind::kReduce ? op.src : op.staging);
      if (float* dropped = droppedAt(op))
        kernels::sumF16KeepingDropped(static_cast<uint16_t*>(resolve(op.dst)), static_cast<const uint16_t*>(src),
                                      op.count, dropped);
      else
        kernels::reduceInto(resolve(op.dst), src, op.count, plan_->dtype, plan_->op);
      break;
    }
    case OpKind::kRecvMerge: {
      // Words are keyed by their index in the whole bit vector (and the plan's round), so
      // every rank's merge of a word draws its own, replayable randomness.
      auto t0 = std::chrono::steady_clock::now();
      kernels::RngStream rng{buffers_.rngSeed, static_cast<uint32_t>(id_.rank), buffers_.rngStep};
      auto* dst = static_cast<uint64_t*>(resolve(op.dst));
      uint64_t firstWord = op.dst.offset / sizeof(uint64_t) + uint64_t{op.mergeRound} * plan_->count;
      kernels::signMerge(static_cast<const uint64_t*>(resolve(op.staging)), dst, dst, op.count, op.mergeA, op.mergeB,
                         rng, firstWord);
      if (buffers_.mergeNanos)
        *buffers_.mergeNanos +=
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      break;
    }
    case OpKind::kDivide:
      if (float* dropped = droppedAt(op))
        kernels::averageF16KeepingDropped(static_cast<uint16_t*>(resolve(op.dst)), op.count,
                                          static_cast<float>(op.divisor), dropped);
      else
        kernels::divideInPlace(resolve(op.dst), op.count, plan_->dtype, op.divisor);
      break;
    case OpKind::kLocal:
      if (!buffers_.local)
        return Status(Code::kInternal, plan_->algorithm + " plan: op " + std::to_string(index) +
                                           " is a local op but the run has no handler for it");
      return buffers_.local(op);
    default:
      break;
  }
  return Status::ok();
}

// The same ops on device buffers, through the run's kernels; a failed kernel names the op.
Status PlanExecutor::finishOnDevice(uint32_t index) {
  const PlanOp& op = plan_->ops[index];
  StepKernels& k = *buffers_.kernels;
  size_t bytes = op.count * dataTypeSize(plan_->dtype);
  Status st;
  switch (op.kind) {
    case OpKind::kCopy:
      st = k.copy(resolve(op.dst), resolve(op.src), bytes);
      break;
    case OpKind::kReduce:
    case OpKind::kRecvReduce: {
      const void* src = resolve(op.kind == OpKind::kReduce ? op.src : op.staging);
      if (float* dropped = droppedAt(op))
        st = k.reduceF16KeepingDropped(static_cast<uint16_t*>(resolve(op.dst)), static_cast<const uint16_t*>(src),
                                       op.count, dropped);
      else
        st = k.reduce(resolve(op.dst), src, op.count, plan_->dtype, plan_->op);
      break;
    }
    case OpKind::kRecvMerge: {
      auto t0 = std::chrono::steady_clock::now();
      kernels::RngStream rng{buffers_.rngSeed, static_cast<uint32_t>(id_.rank), buffers_.rngStep};
      auto* dst = static_cast<uint64_t*>(resolve(op.dst));
      uint64_t firstWord = op.dst.offset / sizeof(uint64_t) + uint64_t{op.mergeRound} * plan_->count;
      st = k.signMerge(static_cast<const uint64_t*>(resolve(op.staging)), dst, dst, op.count, op.mergeA, op.mergeB, rng,
                       firstWord);
      if (buffers_.mergeNanos)
        *buffers_.mergeNanos +=
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      break;
    }
    case OpKind::kDivide:
      if (float* dropped = droppedAt(op))
        st = k.averageF16KeepingDropped(static_cast<uint16_t*>(resolve(op.dst)), op.count, op.divisor, dropped);
      else
        st = k.divide(resolve(op.dst), op.count, plan_->dtype, op.divisor);
      break;
    case OpKind::kLocal:
      if (!buffers_.local)
        return Status(Code::kInternal, plan_->algorithm + " plan: op " + std::to_string(index) +
                                           " is a local op but the run has no handler for it");
      return buffers_.local(op);
    default:
      break;
  }
  if (st.isOk()) return st;
  return Status(st.code(), "rank " + std::to_string(id_.rank) + ": " + plan_->algorithm + " plan op " +
                               std::to_string(index) + " on " + k.describe() + ": " + st.message());
}

namespace {
bool isTransfer(OpKind kind) {
  return kind == OpKind::kSend || kind == OpKind::kRecv || kind == OpKind::kRecvReduce || kind == OpKind::kRecvMerge;
}
}  // namespace

void PlanExecutor::enqueue(uint32_t index) {
  if (isTransfer(plan_->ops[index].kind))
    readyTransfers_.push_back(index);
  else
    readyLocal_.push_back(index);
}

void PlanExecutor::markDone(uint32_t index) {
  ++doneCount_;
  for (uint32_t next : plan_->dependents[index])
    if (--pending_[next] == 0) enqueue(next);
}

Status PlanExecutor::postReadyTransfers() {
  for (uint32_t index : readyTransfers_) TSR_RETURN_IF_ERROR(post(index));
  readyTransfers_.clear();
  return Status::ok();
}

Status PlanExecutor::collect() {
  auto context = [&](int peer, const Status& st, const char* what) {
    Status health = transport_.peerStatus(peer);
    std::string where = "rank " + std::to_string(id_.rank) + ": " + collectiveName(plan_->collective) + " #" +
                        std::to_string(id_.seq) + ": " + what + " rank " + std::to_string(peer) + ": ";
    if (!health.isOk()) return Status(Code::kPeerFailed, where + health.message());
    return Status(st.code(), where + st.message());
  };
  for (size_t i = 0; i < plan_->recvPeers.size(); ++i) {
    Completion& c = inHeader(i);
    if (!c.done || in_[i].state != HeaderIn::kPending) continue;
    if (!c.status.isOk()) return context(plan_->recvPeers[i], c.status, "header from");
    TSR_RETURN_IF_ERROR(takeHeader(i));
  }
  for (size_t i = 0; i < plan_->sendPeers.size(); ++i)
    if (outHeader(i).done && !outHeader(i).status.isOk())
      return context(plan_->sendPeers[i], outHeader(i).status, "header to");

  size_t kept = 0;
  for (size_t k = 0; k < inFlight_.size(); ++k) {
    uint32_t index = inFlight_[k];
    Completion& c = completions_[index];
    if (!c.done) {
      inFlight_[kept++] = index;
      continue;
    }
    const PlanOp& op = plan_->ops[index];
    bool isSend = op.kind == OpKind::kSend;
    // Nothing from a peer is used, nor its failure reported, before its header was checked: a
    // peer that called something else is then named with the field that differs, whatever came
    // first (a broadcast's tree data may overtake the header riding on its agreement round, and
    // a larger message than expected fails its receive). A peer that sent us data sends us its
    // header too; a dead one fails the header's receive.
    if (!isSend && !op.onArrival && !headerTaken(op.peer)) {
      inFlight_[kept++] = index;
      continue;
    }
    if (!c.status.isOk()) return context(op.peer, c.status, isSend ? "send to" : "receive from");
    size_t expected = op.count * dataTypeSize(plan_->dtype);
    if (!isSend && c.bytes != expected)
      return Status(Code::kMismatch, "rank " + std::to_string(id_.rank) + ": " + collectiveName(plan_->collective) +
                                         " #" + std::to_string(id_.seq) + ": rank " + std::to_string(op.peer) +
                                         " sent " + std::to_string(c.bytes) + " bytes where " +
                                         std::to_string(expected) + " were expected (count or dtype differ)");
    // Reduced on arrival: the transport has already handed the message to arrivals_.
    if ((op.kind == OpKind::kRecvReduce && !op.onArrival) || op.kind == OpKind::kRecvMerge)
      TSR_RETURN_IF_ERROR(finishLocal(index));
    markDone(index);
  }
  inFlight_.resize(kept);
  return Status::ok();
}

bool PlanExecutor::headerTaken(int peer) const {
  const auto& peers = plan_->recvPeers;
  for (size_t i = 0; i < peers.size(); ++i)
    if (peers[i] == peer) return in_[i].state != HeaderIn::kPending;
  return true;
}

Status PlanExecutor::progress() {
  if (status_.code() != Code::kInProgress) return status_;
  Status st = collect();
  if (!st.isOk()) return fail(st);
  // FIFO, so chunks go out in the order the plan lists them; a transfer as soon as it is
  // ready, local ops in between. A caller's kLocal op (a chunk's packing) may be long: after
  // one, post what it unblocked and give the transport a turn before the next.
  for (;;) {
    st = postReadyTransfers();
    if (!st.isOk()) return fail(st);
    if (localHead_ == readyLocal_.size()) break;
    uint32_t index = readyLocal_[localHead_++];
    st = finishLocal(index);
    if (!st.isOk()) return fail(st);
    markDone(index);
    if (plan_->ops[index].kind == OpKind::kLocal) {
      st = postReadyTransfers();
      if (!st.isOk()) return fail(st);
      break;
    }
  }
  bool headersDone = headersChecked_ == plan_->recvPeers.size();
  for (size_t i = 0; headersDone && i < plan_->sendPeers.size(); ++i)
    headersDone = !outHeader(i).posted || outHeader(i).done;
  if (doneCount_ == plan_->ops.size() && headersDone) status_ = Status::ok();
  if (status_.code() == Code::kInProgress && landed_) {
    landed_ = false;  // a first message landed while posting: finish it on this turn
    return progress();
  }
  return status_;
}

}  // namespace tsr::algorithms
