// The argument headers of a plan run (executor.h, "Argument headers"): checking a peer's
// header, and a small first message riding with it.
#include <cstring>

#include "algorithms/plan/executor.h"
#include "transport/tag.h"

namespace tsr::algorithms {

using transport::Completion;

namespace {

uint8_t hashName(const std::string& s) {
  uint8_t h = 0;
  for (char c : s) h = static_cast<uint8_t>(h * 31 + static_cast<uint8_t>(c));
  return h;
}

std::string describeHeader(const WireHeader& h) {
  return describeCall(h.collective, h.count, static_cast<DataType>(h.dtype), static_cast<ReduceOp>(h.op), h.root);
}

}  // namespace

WireHeader PlanExecutor::headerOf(const Plan& p, RunIdentity id) {
  WireHeader h;
  h.collective = static_cast<uint8_t>(p.collective);
  h.dtype = static_cast<uint8_t>(p.dtype);
  h.op = static_cast<uint8_t>(p.op);
  // Reducing on arrival changes how the ring's messages travel: ranks that differ there
  // (TSR_ARRIVAL_REDUCE set differently) are told apart like different algorithms.
  h.algorithmHash = hashName(p.reducesOnArrival ? p.algorithm + " on arrival" : p.algorithm);
  h.comm = id.comm;
  h.seq = id.seq;
  h.root = p.root;
  h.sender = id.rank;
  h.count = p.count;
  return h;
}

Status PlanExecutor::checkHeader(const WireHeader& theirs, int peer) const {
  if (theirs.magic != myHeader_.magic)
    return Status(Code::kMismatch,
                  "rank " + std::to_string(id_.rank) + " got a malformed header from rank " + std::to_string(peer));
  const char* field = nullptr;
  if (theirs.collective != myHeader_.collective)
    field = "collective";
  else if (theirs.count != myHeader_.count)
    field = "count";
  else if (theirs.dtype != myHeader_.dtype)
    field = "dtype";
  else if (theirs.op != myHeader_.op)
    field = "op";
  else if (theirs.root != myHeader_.root)
    field = "root";
  else if (theirs.algorithmHash != myHeader_.algorithmHash)
    field = "algorithm";
  if (!field) return Status::ok();
  // The header carries a hash of the algorithm only: say what makes it differ.
  std::string hint = std::string(field) == "algorithm"
                         ? "; this rank runs " + plan_->algorithm +
                               (plan_->reducesOnArrival ? " reducing on arrival" : "") +
                               " (TSR_ALGO and TSR_ARRIVAL_REDUCE must be the same on every rank)"
                         : "";
  return Status(Code::kMismatch, std::string(field) + " differs: rank " + std::to_string(id_.rank) + " called " +
                                     describeHeader(myHeader_) + " but rank " + std::to_string(peer) + " called " +
                                     describeHeader(theirs) + " (collective #" + std::to_string(id_.seq) + ")" + hint);
}

bool PlanExecutor::inlinable(uint32_t index) const {
  if (plan_->ops[index].onArrival) return false;  // the consumer path carries no header
  size_t bytes = plan_->ops[index].count * dataTypeSize(plan_->dtype);
  // An empty first message (a barrier's round) is the header itself.
  return bytes <= kInlineBytes && buffers_.memory == transport::MemoryType::kHost;
}

Status PlanExecutor::sendInline(uint32_t index, size_t slot) {
  const PlanOp& op = plan_->ops[index];
  size_t bytes = op.count * dataTypeSize(plan_->dtype);
  uint8_t* out = headerBytes_ + (plan_->recvPeers.size() + slot) * kHeaderSlot;
  std::memcpy(out, &myHeader_, sizeof(WireHeader));
  if (bytes) std::memcpy(out + sizeof(WireHeader), resolve(op.src), bytes);
  uint64_t tag = transport::makeDataTag(id_.rank, id_.comm, id_.seq, transport::kHeaderMessageId);
  TSR_RETURN_IF_ERROR(transport_.send(op.peer, tag, out, sizeof(WireHeader) + bytes, transport::MemoryType::kHost,
                                      &completions_[index]));
  inFlight_.push_back(index);
  return Status::ok();
}

// The first receive from a peer, when small: its data may come with the header.
Status PlanExecutor::postFirstRecv(uint32_t index, size_t slot) {
  PeerIn& h = in_[slot];
  switch (h.state) {
    case HeaderIn::kPending:
      h.firstWaits = true;
      return Status::ok();
    case HeaderIn::kWithPayload:
      land(index, slot);
      return Status::ok();
    case HeaderIn::kAlone:
      break;  // the peer sent it on its own: receive it as usual
  }
  h.firstWaits = false;
  return post(index, true);
}

// Copies a first message that came with the header to where the transport would have put it.
void PlanExecutor::land(uint32_t index, size_t slot) {
  const PlanOp& op = plan_->ops[index];
  size_t bytes = op.count * dataTypeSize(plan_->dtype);
  void* into = op.kind == OpKind::kRecv ? resolve(op.dst) : resolve(op.staging);
  if (bytes) std::memcpy(into, headerBytes_ + slot * kHeaderSlot + sizeof(WireHeader), bytes);
  Completion& c = completions_[index];
  c = Completion{};
  c.posted = c.done = true;
  c.bytes = bytes;
  inFlight_.push_back(index);
  in_[slot].firstWaits = false;
  landed_ = true;
}

// A header arrived (alone or with the first message): check it, then let the first receive go.
Status PlanExecutor::takeHeader(size_t slot) {
  PeerIn& h = in_[slot];
  int peer = plan_->recvPeers[slot];
  const uint8_t* bytes = headerBytes_ + slot * kHeaderSlot;
  auto where = [&] {  // built only for an error
    return "rank " + std::to_string(id_.rank) + ": " + collectiveName(plan_->collective) + " #" +
           std::to_string(id_.seq) + ": rank " + std::to_string(peer);
  };
  const size_t received = inHeader(slot).bytes;
  if (received < sizeof(WireHeader))
    return Status(Code::kMismatch, where() + " sent a malformed header (" + std::to_string(received) + " bytes)");
  WireHeader theirs;
  std::memcpy(&theirs, bytes, sizeof theirs);
  TSR_RETURN_IF_ERROR(checkHeader(theirs, peer));
  ++headersChecked_;
  size_t payload = received - sizeof(WireHeader);
  uint32_t first = plan_->firstRecvOp[slot];
  const bool emptyFirst = plan_->ops[first].count == 0 && inlinable(first);  // the header is that message
  if (payload == 0 && !emptyFirst) {
    h.state = HeaderIn::kAlone;
    return h.firstWaits ? postFirstRecv(first, slot) : Status::ok();
  }
  size_t expected = plan_->ops[first].count * dataTypeSize(plan_->dtype);
  if (!inlinable(first)) {  // same arguments, yet only the peer inlined
    if (buffers_.memory != transport::MemoryType::kHost)
      return Status(Code::kMismatch, where() +
                                         " sent its first message from host memory with the header, but "
                                         "this rank's buffers are device memory: every rank must pass the "
                                         "same memory type");
    return Status(Code::kMismatch, where() + " sent its first message (" + std::to_string(payload) +
                                       " bytes) with the header, where this rank expects " + std::to_string(expected) +
                                       " bytes on their own (up to " + std::to_string(kInlineBytes) +
                                       " ride with it here: are the ranks "
                                       "running different Tessera builds?)");
  }
  if (payload != expected)
    return Status(Code::kMismatch, where() + " sent " + std::to_string(payload) + " bytes where " +
                                       std::to_string(expected) + " were expected (count or dtype differ)");
  h.state = HeaderIn::kWithPayload;
  if (h.firstWaits) land(first, slot);
  return Status::ok();
}

}  // namespace tsr::algorithms
