// A Transport that hands every call to another one: tests derive from it and override only
// what they watch or change (a tap that records, flips or drops messages). Header-only; not
// linked into the library.
#pragma once

#include <string>
#include <vector>

#include "transport/transport.h"

namespace tsr::transport::testing {

class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(Transport& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const std::string& localAddress() const override { return inner_.localAddress(); }
  Status connect(const std::vector<std::string>& a) override { return inner_.connect(a); }
  Status send(int peer, uint64_t tag, const void* b, size_t bytes, MemoryType t, Completion* c) override {
    return inner_.send(peer, tag, b, bytes, t, c);
  }
  Status recv(int peer, uint64_t tag, uint64_t mask, void* b, size_t bytes, MemoryType t, Completion* c) override {
    return inner_.recv(peer, tag, mask, b, bytes, t, c);
  }
  Status sendToConsumer(int peer, uint64_t tag, const void* b, size_t bytes, Completion* c) override {
    return inner_.sendToConsumer(peer, tag, b, bytes, c);
  }
  Status recvToConsumer(int peer, uint64_t tag, size_t bytes, Consumer* consumer, Completion* c) override {
    return inner_.recvToConsumer(peer, tag, bytes, consumer, c);
  }
  void cancel(Completion* c) override { inner_.cancel(c); }
  bool progress() override { return inner_.progress(); }
  bool armEvents() override { return inner_.armEvents(); }
  void sleepUntilEvent(int ms) override { inner_.sleepUntilEvent(ms); }
  void wake() override { inner_.wake(); }
  Status peerStatus(int peer) const override { return inner_.peerStatus(peer); }
  void markPeerLeft(int peer) override { inner_.markPeerLeft(peer); }
  bool peerLeft(int peer) const override { return inner_.peerLeft(peer); }
  void abandonPendingOnClose() override { inner_.abandonPendingOnClose(); }
  void beginLeaving() override { inner_.beginLeaving(); }
  bool supportsMemoryType(MemoryType t) const override { return inner_.supportsMemoryType(t); }
  uint64_t bytesSent() const override { return inner_.bytesSent(); }
  std::vector<PeerSendTime> sendTimes() const override { return inner_.sendTimes(); }

 protected:
  Transport& inner_;
};

}  // namespace tsr::transport::testing
