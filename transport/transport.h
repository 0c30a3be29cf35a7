// The transport seam: non-blocking tagged send/receive between ranks, nothing about
// collectives. UcxTransport is the real one; tests may substitute their own.
//
// Threading: one thread (the communicator's progress thread) owns a Transport and makes every
// call on it. Completions are caller-owned records that the transport fills in during
// progress(); no heap allocation per message on our side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "transport/send_clock.h"

namespace tsr::transport {

enum class MemoryType : uint8_t { kHost = 0, kCuda = 1 };

// How errors name a peer: "rank 2 (tsr2)" when its host is known (hosts[rank]), else "rank 2".
inline std::string peerLabel(int peer, const std::vector<std::string>& hosts) {
  std::string s = "rank " + std::to_string(peer);
  if (peer >= 0 && peer < static_cast<int>(hosts.size()) && !hosts[peer].empty()) s += " (" + hosts[peer] + ")";
  return s;
}

struct Completion {
  bool posted = false;
  bool done = false;
  Status status;
  size_t bytes = 0;        // bytes received (receives only)
  uint64_t tag = 0;        // sender's tag (receives only)
  void* handle = nullptr;  // transport's in-flight request, null once done
};

// Takes a message where it lands (the consumer path below): consume() runs inside progress(),
// with exactly the bytes the receive asked for, and must not keep `data`.
struct Consumer {
  virtual ~Consumer() = default;
  virtual void consume(const void* data) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's address, to exchange through the bootstrap.
  virtual const std::string& localAddress() const = 0;
  // Creates endpoints to every other rank from their addresses (indexed by rank).
  virtual Status connect(const std::vector<std::string>& addresses) = 0;

  virtual Status send(int peer, uint64_t tag, const void* buffer, size_t bytes, MemoryType type,
                      Completion* completion) = 0;
  virtual Status recv(int peer, uint64_t tag, uint64_t tagMask, void* buffer, size_t bytes, MemoryType type,
                      Completion* completion) = 0;
  // The consumer path: a message sent with sendToConsumer is matched (peer, tag) by a
  // recvToConsumer, whose consumer gets the bytes straight from the transport's receive
  // buffer, with no copy into a buffer of ours (a message that comes first is kept aside
  // until its receive is posted). A message of another length completes the receive without
  // consuming, its length in Completion::bytes. Both sides must use the path for a message.
  virtual Status sendToConsumer(int peer, uint64_t tag, const void* buffer, size_t bytes, Completion* completion) {
    (void)peer, (void)tag, (void)buffer, (void)bytes, (void)completion;
    return Status(Code::kNotSupported, "this transport has no consumer path");
  }
  virtual Status recvToConsumer(int peer, uint64_t tag, size_t bytes, Consumer* consumer, Completion* completion) {
    (void)peer, (void)tag, (void)bytes, (void)consumer, (void)completion;
    return Status(Code::kNotSupported, "this transport has no consumer path");
  }
  // Asks an in-flight operation to stop; its completion then reports an error.
  virtual void cancel(Completion* completion) = 0;

  // Drives communication; returns true when anything happened.
  virtual bool progress() = 0;
  // Sleeping in two halves, so the thread that sleeps need not hold the transport: armEvents()
  // (with the same exclusive access as progress()) returns false when work is already
  // pending; then sleepUntilEvent() (any thread, no exclusive access) waits until the
  // transport has work or wake() is called, at most timeoutMs.
  virtual bool armEvents() = 0;
  virtual void sleepUntilEvent(int timeoutMs) = 0;
  // Thread-safe: interrupts sleepUntilEvent from another thread.
  virtual void wake() = 0;

  // Ok while the peer is healthy; the failure that the transport saw otherwise.
  virtual Status peerStatus(int peer) const = 0;
  // The peer said goodbye (destroyed its communicator): later failures of its endpoint are
  // expected and quiet, and operations with it fail naming why.
  virtual void markPeerLeft(int peer) = 0;
  // The peer said goodbye (markPeerLeft). Once this rank is leaving too (beginLeaving), it may
  // still send to such a peer: one leaving after an error lingers, reading, until every peer
  // it still counts has said goodbye, and must not wait for one that saw it leave first.
  virtual bool peerLeft(int /*peer*/) const { return false; }
  // After a failure nobody will take what is still in flight: close endpoints without
  // flushing, so pending sends end (with an error) instead of holding the close up.
  virtual void abandonPendingOnClose() = 0;
  // This rank has said goodbye: a peer may now close before its own goodbye is read, so
  // endpoint failures from here on are expected (quiet), not news.
  virtual void beginLeaving() = 0;
  virtual bool supportsMemoryType(MemoryType type) const = 0;
  // Bytes this rank has handed to send(), for wire accounting.
  virtual uint64_t bytesSent() const = 0;
  // Per rank: large sends' bytes and the time the link to it was kept busy (send_clock.h);
  // empty where the transport does not measure them.
  virtual std::vector<PeerSendTime> sendTimes() const { return {}; }
};

}  // namespace tsr::transport
