// SealedTransport: the encrypted, authenticated data plane (TSR_SECURE=encrypt). It wraps the
// transport the communicator would use and seals every message to or from a peer on another
// host with AES-256-GCM (sealing.h) under that link's key for that direction; messages between
// ranks of one host pass through untouched (they never leave the machine).
//
// A send seals into a staging buffer and sends that; a receive lands in a staging buffer and is
// opened into the caller's buffer when it completes. A message that does not authenticate
// (tampered, forged, moved to another tag) or that was seen before (replayed) fails its
// receive with an error naming the peer, so the collective fails on every rank instead of
// returning a wrong result. The consumer path (reduce on arrival) opens the message into a
// staging buffer and hands the plaintext to the consumer. CUDA memory is not moved: the device
// paths stage through host memory. Costs: one pass of AES-GCM over each byte on each side, and
// 24 bytes per message.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport/sealing.h"
#include "transport/transport.h"

namespace tsr::transport {

struct LinkKeys {
  LinkKey send;  // for messages this rank sends to the peer
  LinkKey recv;  // for messages it receives from the peer
};

class SealedTransport final : public Transport {
 public:
  // keys[r]: the link keys with rank r; sealed[r]: whether messages with r are sealed.
  // `hosts` names peers in errors.
  SealedTransport(Transport& inner, const std::vector<LinkKeys>& keys, std::vector<bool> sealed,
                  std::vector<std::string> hosts);
  ~SealedTransport() override;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const std::string& localAddress() const override { return inner_.localAddress(); }
  Status connect(const std::vector<std::string>& addresses) override { return inner_.connect(addresses); }

  Status send(int peer, uint64_t tag, const void* buffer, size_t bytes, MemoryType type,
              Completion* completion) override;
  Status recv(int peer, uint64_t tag, uint64_t tagMask, void* buffer, size_t bytes, MemoryType type,
              Completion* completion) override;
  Status sendToConsumer(int peer, uint64_t tag, const void* buffer, size_t bytes, Completion* completion) override;
  Status recvToConsumer(int peer, uint64_t tag, size_t bytes, Consumer* consumer, Completion* completion) override;
  void cancel(Completion* completion) override;

  bool progress() override;
  bool armEvents() override;
  void sleepUntilEvent(int timeoutMs) override { inner_.sleepUntilEvent(timeoutMs); }
  void wake() override { inner_.wake(); }
  Status peerStatus(int peer) const override { return inner_.peerStatus(peer); }
  void markPeerLeft(int peer) override { inner_.markPeerLeft(peer); }
  bool peerLeft(int peer) const override { return inner_.peerLeft(peer); }
  void abandonPendingOnClose() override { inner_.abandonPendingOnClose(); }
  void beginLeaving() override { inner_.beginLeaving(); }
  bool supportsMemoryType(MemoryType type) const override { return type == MemoryType::kHost; }
  uint64_t bytesSent() const override { return inner_.bytesSent(); }
  std::vector<PeerSendTime> sendTimes() const override { return inner_.sendTimes(); }

 private:
  struct Op;
  class OpeningConsumer;
  struct Link {
    std::unique_ptr<Sealer> sender, receiver;
    uint64_t nextSeq = 0;
    ReplayWindow window;
  };

  bool isSealed(int peer) const { return peer >= 0 && peer < static_cast<int>(sealed_.size()) && sealed_[peer]; }
  Op& newOp(int kind, Completion* c, int peer);
  std::vector<char> takeBuffer(size_t bytes);
  void giveBuffer(std::vector<char> buffer);
  Result<Op*> startSend(int peer, uint64_t tag, const void* buffer, size_t bytes, Completion* c);
  // Ok when `bytes` fit one sealed message (kMaxSealedBytes), else the error naming them.
  Status checkSealable(int peer, size_t bytes, bool sending) const;
  // The inner transport's answer to a sealed send; a refusal forgets the operation.
  Status undoIfFailed(Status posted, Op* op);
  // Opens a received sealed message from `from` into out (message bytes in *bytes).
  Status openMessage(int from, uint64_t tag, const char* sealed, size_t sealedBytes, void* out, size_t capacity,
                     size_t* bytes);
  void finish(Op& op);

  Transport& inner_;
  std::vector<Link> links_;
  std::vector<bool> sealed_;
  std::vector<std::string> hosts_;
  std::list<Op> ops_;                               // sealed operations in flight
  std::unordered_map<Completion*, Op*> byOuter_;    // for cancel()
  std::multimap<size_t, std::vector<char>> spare_;  // staging buffers by capacity
};

}  // namespace tsr::transport
