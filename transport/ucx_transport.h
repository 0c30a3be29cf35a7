// UcxTransport: the Transport over UCP tagged messages.
//
// One ucp_context per process (shared by every communicator, so ranks can also be threads of
// one process) and one ucp_worker per transport. Endpoints use UCP_ERR_HANDLING_MODE_PEER so a
// dead peer fails its requests instead of hanging them; the failure is remembered per peer.
// UCX's own variables (UCX_TLS, UCX_NET_DEVICES, ...) are read by ucp_config_read as usual.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/registered_memory.h"
#include "transport/spare_buffers.h"
#include "transport/transport.h"

namespace tsr::transport {

class UcxContext;

class UcxTransport final : public Transport {
 public:
  // tcpSendBuffer: UcxContext::instance's (0: Tessera's default).
  static Result<std::unique_ptr<UcxTransport>> create(int rank, int size, size_t tcpSendBuffer = 0);
  ~UcxTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& localAddress() const override { return address_; }
  Status connect(const std::vector<std::string>& addresses) override;
  // Like connect(); peers with fastLocal[peer] set get UCP_ERR_HANDLING_MODE_NONE, because
  // UCX (1.13) has no peer failure handling for its shared-memory transports and would send
  // to a same-host peer over TCP loopback in PEER mode. Their failures are caught above the
  // transport (bootstrap-link watch, timeouts, abort notices).
  Status connect(const std::vector<std::string>& addresses, const std::vector<bool>& fastLocal);
  // Collective, after connect() on every rank: exchanges an empty message with every peer and
  // flushes every endpoint, so UCX's connection set-up is over before anyone may leave
  // (ucx_settle.cc says why). Fails naming a peer that did not answer within timeoutMs.
  Status settle(int timeoutMs);
  // Host names by rank, so that errors say "rank 2 (tsr2)" (optional; the communicator sets
  // them before connecting).
  void setPeerHosts(std::vector<std::string> hosts) { hosts_ = std::move(hosts); }
  // The TCP send buffer Tessera asked of UCX for this transport (a user's UCX_TCP_SNDBUF wins).
  size_t tcpSendBuffer() const;
  // How the ranks reach each other outside UCX (the bootstrap's): an all-gather of one string
  // per rank, and a barrier.
  struct PeerExchange {
    std::function<Result<std::vector<std::string>>(const std::string&)> allGather;
    std::function<Status()> barrier;
  };
  // Collective (ucx_refit.cc): when the network link measured at `netBytesPerSec` wants a
  // smaller TCP send buffer than this transport has (tcpSendBufferForProbed), a new transport
  // to the same peers with that buffer (at least `minBytes`), connected and settled on every
  // rank; null when this one suits the link. Every rank decides from the same figures, so all
  // move or none.
  Result<std::unique_ptr<UcxTransport>> refitForLink(double netBytesPerSec, size_t minBytes,
                                                     const std::vector<bool>& fastLocal, const PeerExchange& peers,
                                                     int timeoutMs) const;

  Status send(int peer, uint64_t tag, const void* buffer, size_t bytes, MemoryType type,
              Completion* completion) override;
  // The consumer path over UCX active messages (ucx_consumer_path.cc).
  Status sendToConsumer(int peer, uint64_t tag, const void* buffer, size_t bytes, Completion* completion) override;
  Status recvToConsumer(int peer, uint64_t tag, size_t bytes, Consumer* consumer, Completion* completion) override;
  Status recv(int peer, uint64_t tag, uint64_t tagMask, void* buffer, size_t bytes, MemoryType type,
              Completion* completion) override;
  void cancel(Completion* completion) override;

  bool progress() override;
  // A function every thread that sends, receives or progresses through this transport runs
  // once before it does, from then on: a CUDA context made current (UCX 1.13 moves device
  // memory only where one is; algorithms::cudaThreadBinding). Replaces the one before.
  void setThreadBinding(std::function<void()> bind);
  bool armEvents() override;
  void sleepUntilEvent(int timeoutMs) override;
  void wake() override;

  Status peerStatus(int peer) const override;
  void markPeerLeft(int peer) override;
  bool peerLeft(int peer) const override { return peer >= 0 && peer < size_ && left_[peer]; }
  void abandonPendingOnClose() override { abandonOnClose_ = true; }
  void beginLeaving() override { closing_ = true; }
  bool supportsMemoryType(MemoryType type) const override;
  uint64_t bytesSent() const override { return bytesSent_.load(std::memory_order_relaxed); }
  std::vector<PeerSendTime> sendTimes() const override { return sendClock_.totals(SendClock::Clock::now()); }

  // A large send in flight, timed by the send clock; the UCX callback's user data (internal).
  struct TimedSend {
    Completion* completion;
    SendClock* clock;
    std::vector<TimedSend*>* spares;  // where it goes back once done
    int peer;
    size_t bytes;
  };

  // Registered (ucp_mem_map) host memory for buffers that are reused across collectives
  // (transport/registered_memory.h); shared, so it may outlive this transport.
  const std::shared_ptr<RegisteredMemory>& registeredMemory() const { return registered_; }

  // Marks a peer failed (error handler) and remembers why.
  void markPeerFailed(int peer, const std::string& why);
  void discardUnexpected();

 private:
  UcxTransport(int rank, int size, std::shared_ptr<UcxContext> context);
  // Runs the thread binding on this thread if it has not run the current one yet.
  void bindThisThread() {
    uint64_t generation = bindingGeneration_.load(std::memory_order_acquire);
    if (generation != 0 && generation != tBoundGeneration) bindThisThreadSlow();
  }
  void bindThisThreadSlow();
  Status init();
  Status checkPeer(int peer, const char* what) const;

  // Consumer path (ucx_consumer_path.cc): receives posted and waiting, messages that came
  // before their receive (kept aside), both keyed by tag.
  struct ConsumerRecv {
    int peer;
    size_t bytes;
    Consumer* consumer;
    Completion* completion;
  };
  // A send just handed to UCX: counted in bytesSent(), and its request (done at once, failed,
  // or in flight) recorded in c.
  void countSent(size_t bytes);
  void trackSend(void* request, Completion* c, int peer, TimedSend* timed);
  // The record for timing a send of `bytes` to peer (its callback: onTimedSendDone), or null
  // when the send is too small to say anything about the link.
  TimedSend* startTimedSend(Completion* c, int peer, size_t bytes);
  Status setUpConsumerPath();
  void onConsumerMessage(uint64_t tag, const void* data, size_t length);
  bool cancelConsumerRecv(Completion* completion);
  void failConsumerRecvs(int peer, const Status& why);
  std::unordered_map<uint64_t, ConsumerRecv> consumerRecvs_;
  std::unordered_map<uint64_t, std::vector<char>> earlyMessages_;
  // Their buffers, reused: up to 16 MiB (a ring step's block of a 64 MiB allreduce on 4 ranks).
  SpareBuffers spareEarly_{16u << 20};

  struct PeerHandlerArg {
    UcxTransport* self;
    int peer;
  };

  int rank_;
  int size_;
  std::shared_ptr<UcxContext> context_;
  void* worker_ = nullptr;  // ucp_worker_h, kept opaque so the header needs no UCX include
  int epollFd_ = -1;
  int workerFd_ = -1;
  int wakeFd_ = -1;
  std::string address_;
  std::vector<void*> endpoints_;  // ucp_ep_h per rank (null for self)
  // setThreadBinding's: generations are unique across transports, so a thread that drives
  // two of them runs each one's binding.
  std::mutex bindingMutex_;
  std::function<void()> binding_;
  std::atomic<uint64_t> bindingGeneration_{0};
  static thread_local uint64_t tBoundGeneration;
  std::vector<std::unique_ptr<PeerHandlerArg>> handlerArgs_;
  std::vector<Status> peerStatus_;
  std::vector<std::string> hosts_;    // by rank, for error messages (setPeerHosts)
  std::vector<bool> left_;            // said goodbye (see markPeerLeft)
  std::atomic<bool> closing_{false};  // leaving: peers' endpoint failures are expected
  bool abandonOnClose_ = false;
  std::shared_ptr<RegisteredMemory> registered_;
  std::vector<Completion> settleSends_, settleRecvs_;  // settle()'s, alive with the worker
  std::atomic<uint64_t> bytesSent_{0};
  SendClock sendClock_;
  std::vector<std::unique_ptr<TimedSend>> timedSends_;  // every record made, owned here
  std::vector<TimedSend*> spareTimedSends_;
};

}  // namespace tsr::transport
