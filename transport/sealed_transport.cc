#include "transport/sealed_transport.h"

#include <cstdio>

#include "transport/tag.h"

namespace tsr::transport {
namespace {

// Control messages carry their own MAC (runtime/control_auth.h) and are received from any
// source, so both sides leave them unsealed.
bool isControl(uint64_t tag) { return (tag >> kTagCtlShift) & 1; }

std::string tagText(uint64_t tag) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(tag));
  return text;
}

}  // namespace

struct SealedTransport::Op {
  enum Kind { kSend, kRecv, kConsumerRecv } kind = kSend;
  Completion* outer = nullptr;
  int peer = -1;
  Completion inner{};
  void* out = nullptr;  // kRecv: the caller's buffer
  size_t capacity = 0;  // kRecv, kConsumerRecv: the caller's bytes
  std::vector<char> staging;
  std::unique_ptr<OpeningConsumer> consumer;
  Status consumerError;  // kConsumerRecv: the message failed to open
};

// Opens a sealed message where the inner transport lands it, then hands the plaintext on.
class SealedTransport::OpeningConsumer final : public Consumer {
 public:
  OpeningConsumer(SealedTransport& owner, Op& op, Consumer* user, uint64_t tag)
      : owner_(owner), op_(op), user_(user), tag_(tag) {}
  void consume(const void* data) override {
    size_t bytes = 0;
    op_.consumerError = owner_.openMessage(op_.peer, tag_, static_cast<const char*>(data), op_.capacity + kSealOverhead,
                                           op_.staging.data(), op_.capacity, &bytes);
    if (op_.consumerError.isOk()) user_->consume(op_.staging.data());
  }

 private:
  SealedTransport& owner_;
  Op& op_;
  Consumer* user_;
  uint64_t tag_;
};

SealedTransport::SealedTransport(Transport& inner, const std::vector<LinkKeys>& keys, std::vector<bool> sealed,
                                 std::vector<std::string> hosts)
    : inner_(inner), links_(keys.size()), sealed_(std::move(sealed)), hosts_(std::move(hosts)) {
  for (size_t r = 0; r < keys.size(); ++r) {
    if (r >= sealed_.size() || !sealed_[r]) continue;
    links_[r].sender = std::make_unique<Sealer>(keys[r].send);
    links_[r].receiver = std::make_unique<Sealer>(keys[r].recv);
  }
}

SealedTransport::~SealedTransport() = default;

SealedTransport::Op& SealedTransport::newOp(int kind, Completion* c, int peer) {
  Op& op = ops_.emplace_back();
  op.kind = static_cast<Op::Kind>(kind);
  op.outer = c;
  op.peer = peer;
  return op;
}

std::vector<char> SealedTransport::takeBuffer(size_t bytes) {
  auto it = spare_.lower_bound(bytes);
  if (it == spare_.end() || it->first > 2 * bytes + 4096) return std::vector<char>(bytes);
  std::vector<char> b = std::move(it->second);
  spare_.erase(it);
  return b;
}

void SealedTransport::giveBuffer(std::vector<char> buffer) {
  if (spare_.size() >= 64) spare_.erase(spare_.begin());  // bounded: drop the smallest
  size_t capacity = buffer.size();
  spare_.emplace(capacity, std::move(buffer));
}

Status SealedTransport::checkSealable(int peer, size_t bytes, bool sending) const {
  if (bytes <= kMaxSealedBytes) return Status::ok();
  // Refused on both sides: the receiver of a message its sender could not seal would otherwise
  // wait out the timeout.
  return Status(Code::kInvalidArgument,
                "rank " + std::to_string(inner_.rank()) + ": sealed transport (TSR_SECURE=encrypt): a message of " +
                    std::to_string(bytes) + " bytes " + (sending ? "to " : "from ") + peerLabel(peer, hosts_) +
                    " is over the " + std::to_string(kMaxSealedBytes) + " bytes one sealed message holds");
}

Result<SealedTransport::Op*> SealedTransport::startSend(int peer, uint64_t tag, const void* buffer, size_t bytes,
                                                        Completion* c) {
  TSR_RETURN_IF_ERROR(checkSealable(peer, bytes, true));  // before its staging is allocated
  Link& link = links_[peer];
  Op& op = newOp(Op::kSend, c, peer);
  op.staging = takeBuffer(bytes + kSealOverhead);
  Status st = link.sender->seal(link.nextSeq++, tag, buffer, bytes, op.staging.data());
  if (!st.isOk()) {
    giveBuffer(std::move(op.staging));
    ops_.pop_back();
    return st;
  }
  *c = Completion{};
  c->posted = true;
  byOuter_[c] = &op;
  return &op;
}

Status SealedTransport::undoIfFailed(Status posted, Op* op) {
  if (posted.isOk()) return posted;
  byOuter_.erase(op->outer);
  giveBuffer(std::move(op->staging));
  ops_.remove_if([op](const Op& o) { return &o == op; });
  return posted;
}

Status SealedTransport::send(int peer, uint64_t tag, const void* buffer, size_t bytes, MemoryType type, Completion* c) {
  if (!isSealed(peer) || isControl(tag)) return inner_.send(peer, tag, buffer, bytes, type, c);
  if (type != MemoryType::kHost) return Status(Code::kNotSupported, "sealed transport: host memory only");
  TSR_ASSIGN_OR_RETURN(Op * op, startSend(peer, tag, buffer, bytes, c));
  return undoIfFailed(inner_.send(peer, tag, op->staging.data(), bytes + kSealOverhead, MemoryType::kHost, &op->inner),
                      op);
}

Status SealedTransport::sendToConsumer(int peer, uint64_t tag, const void* buffer, size_t bytes, Completion* c) {
  if (!isSealed(peer) || isControl(tag)) return inner_.sendToConsumer(peer, tag, buffer, bytes, c);
  TSR_ASSIGN_OR_RETURN(Op * op, startSend(peer, tag, buffer, bytes, c));
  return undoIfFailed(inner_.sendToConsumer(peer, tag, op->staging.data(), bytes + kSealOverhead, &op->inner), op);
}

Status SealedTransport::recv(int peer, uint64_t tag, uint64_t tagMask, void* buffer, size_t bytes, MemoryType type,
                             Completion* c) {
  if (!isSealed(peer) || isControl(tag)) return inner_.recv(peer, tag, tagMask, buffer, bytes, type, c);
  if (type != MemoryType::kHost) return Status(Code::kNotSupported, "sealed transport: host memory only");
  TSR_RETURN_IF_ERROR(checkSealable(peer, bytes, false));
  Op& op = newOp(Op::kRecv, c, peer);
  op.out = buffer;
  op.capacity = bytes;
  op.staging = takeBuffer(bytes + kSealOverhead);
  *c = Completion{};
  c->posted = true;
  Status st = inner_.recv(peer, tag, tagMask, op.staging.data(), bytes + kSealOverhead, MemoryType::kHost, &op.inner);
  if (!st.isOk()) {
    giveBuffer(std::move(op.staging));
    ops_.pop_back();
    return st;
  }
  byOuter_[c] = &op;
  return Status::ok();
}

Status SealedTransport::recvToConsumer(int peer, uint64_t tag, size_t bytes, Consumer* consumer, Completion* c) {
  if (!isSealed(peer) || isControl(tag)) return inner_.recvToConsumer(peer, tag, bytes, consumer, c);
  TSR_RETURN_IF_ERROR(checkSealable(peer, bytes, false));
  Op& op = newOp(Op::kConsumerRecv, c, peer);
  op.capacity = bytes;
  op.staging = takeBuffer(bytes);
  op.consumer = std::make_unique<OpeningConsumer>(*this, op, consumer, tag);
  *c = Completion{};
  c->posted = true;
  Status st = inner_.recvToConsumer(peer, tag, bytes + kSealOverhead, op.consumer.get(), &op.inner);
  if (!st.isOk()) {
    giveBuffer(std::move(op.staging));
    ops_.pop_back();
    return st;
  }
  byOuter_[c] = &op;
  return Status::ok();
}

Status SealedTransport::openMessage(int from, uint64_t tag, const char* sealed, size_t sealedBytes, void* out,
                                    size_t capacity, size_t* bytes) {
  auto named = [&](const std::string& why) {
    return Status(Code::kTransport, "rank " + std::to_string(inner_.rank()) + ": message from " +
                                        peerLabel(from, hosts_) + " (tag " + tagText(tag) + ") " + why);
  };
  if (!isSealed(from)) return named("is not from a sealed link");
  if (sealedBytes < kSealOverhead || sealedBytes - kSealOverhead > capacity)
    return named("has " + std::to_string(sealedBytes) + " sealed bytes for a buffer of " + std::to_string(capacity) +
                 " (tampered or forged)");
  uint64_t seq = 0;
  Status st = links_[from].receiver->open(tag, sealed, sealedBytes, out, &seq);
  if (!st.isOk()) return named(st.message() + ": tampered, forged or moved from another message");
  if (!links_[from].window.accept(seq)) return named("repeats sequence number " + std::to_string(seq) + " (a replay)");
  *bytes = sealedBytes - kSealOverhead;
  return Status::ok();
}

void SealedTransport::finish(Op& op) {
  Completion* c = op.outer;
  c->status = op.inner.status;
  c->tag = op.inner.tag;
  c->bytes = 0;
  if (op.kind == Op::kRecv && op.inner.status.isOk()) {
    int from = op.peer >= 0 ? op.peer : tagSource(op.inner.tag);
    c->status = openMessage(from, op.inner.tag, op.staging.data(), op.inner.bytes, op.out, op.capacity, &c->bytes);
  } else if (op.kind == Op::kConsumerRecv && op.inner.status.isOk()) {
    // Another length was not consumed: report it as the caller's length, as the inner does.
    c->bytes = op.inner.bytes >= kSealOverhead ? op.inner.bytes - kSealOverhead : 0;
    if (op.inner.bytes == op.capacity + kSealOverhead) c->status = op.consumerError;
  }
  c->handle = nullptr;
  c->done = true;
  byOuter_.erase(c);
  giveBuffer(std::move(op.staging));
}

void SealedTransport::cancel(Completion* c) {
  auto it = byOuter_.find(c);
  if (it == byOuter_.end()) return inner_.cancel(c);
  inner_.cancel(&it->second->inner);
}

bool SealedTransport::progress() {
  bool busy = inner_.progress();
  for (auto it = ops_.begin(); it != ops_.end();) {
    if (!it->inner.done) {
      ++it;
      continue;
    }
    finish(*it);
    it = ops_.erase(it);
    busy = true;
  }
  return busy;
}

bool SealedTransport::armEvents() {
  for (const Op& op : ops_)
    if (op.inner.done) return false;  // finished underneath, not yet reported
  return inner_.armEvents();
}

}  // namespace tsr::transport
