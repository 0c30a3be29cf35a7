#include "transport/ucx_transport.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <ucp/api/ucp.h>

#include "base/logging.h"
#include "transport/tag.h"
#include "transport/ucx_context.h"
#include "transport/ucx_internal.h"

namespace tsr::transport {

namespace {

ucp_worker_h asWorker(void* w) { return static_cast<ucp_worker_h>(w); }

std::string ucsError(const char* what, ucs_status_t st) { return std::string(what) + ": " + ucs_status_string(st); }

void onRecvDone(void* request, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user) {
  auto* c = static_cast<Completion*>(user);
  c->status = fromUcs(st, "receive");
  if (st == UCS_OK && info) {
    c->bytes = info->length;
    c->tag = info->sender_tag;
  }
  c->done = true;
  c->handle = nullptr;
  ucp_request_free(request);
}

}  // namespace

Status fromUcs(ucs_status_t st, const std::string& what) {
  if (st == UCS_OK) return Status::ok();
  if (st == UCS_ERR_MESSAGE_TRUNCATED)
    return Status(Code::kMismatch, what + ": message larger than the receive buffer");
  if (st == UCS_ERR_CANCELED) return Status(Code::kAborted, what + ": cancelled");
  if (st == UCS_ERR_CONNECTION_RESET || st == UCS_ERR_ENDPOINT_TIMEOUT || st == UCS_ERR_UNREACHABLE ||
      st == UCS_ERR_NOT_CONNECTED || st == UCS_ERR_REJECTED)
    return Status(Code::kPeerFailed, what + ": " + ucs_status_string(st));
  return Status(Code::kTransport, what + ": " + ucs_status_string(st));
}

void onSendDone(void* request, ucs_status_t st, void* user) {
  auto* c = static_cast<Completion*>(user);
  c->status = fromUcs(st, "send");
  c->done = true;
  c->handle = nullptr;
  ucp_request_free(request);
}

void onTimedSendDone(void* request, ucs_status_t st, void* user) {
  auto* t = static_cast<UcxTransport::TimedSend*>(user);
  if (st == UCS_OK)
    t->clock->completed(t->peer, t->bytes, SendClock::Clock::now());
  else
    t->clock->completed(t->peer, 0, SendClock::Clock::now());
  t->spares->push_back(t);
  onSendDone(request, st, t->completion);
}

UcxTransport::TimedSend* UcxTransport::startTimedSend(Completion* c, int peer, size_t bytes) {
  if (bytes < SendClock::kLargeSendBytes) return nullptr;
  if (spareTimedSends_.empty()) {
    timedSends_.push_back(std::make_unique<TimedSend>());
    spareTimedSends_.push_back(timedSends_.back().get());
  }
  TimedSend* t = spareTimedSends_.back();
  spareTimedSends_.pop_back();
  *t = TimedSend{c, &sendClock_, &spareTimedSends_, peer, bytes};
  return t;
}

UcxTransport::UcxTransport(int rank, int size, std::shared_ptr<UcxContext> context)
    : rank_(rank), size_(size), context_(std::move(context)), sendClock_(size) {}

Result<std::unique_ptr<UcxTransport>> UcxTransport::create(int rank, int size, size_t tcpSendBuffer) {
  if (size < 1 || size > kMaxRanks || rank < 0 || rank >= size)
    return Status(Code::kInvalidArgument,
                  "transport: rank " + std::to_string(rank) + " / size " + std::to_string(size) + " out of range");
  TSR_ASSIGN_OR_RETURN(auto context, UcxContext::instance(tcpSendBuffer));
  std::unique_ptr<UcxTransport> t(new UcxTransport(rank, size, std::move(context)));
  TSR_RETURN_IF_ERROR(t->init());
  return t;
}

size_t UcxTransport::tcpSendBuffer() const { return context_->tcpSendBuffer(); }

Status UcxTransport::init() {
  TSR_ASSIGN_OR_RETURN(registered_, RegisteredMemory::create());
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // the progress thread or a waiting caller, one at a time
  ucp_worker_h worker = nullptr;
  ucs_status_t st = ucp_worker_create(static_cast<ucp_context_h>(context_->handle()), &wp, &worker);
  if (st != UCS_OK) return Status(Code::kTransport, ucsError("ucp_worker_create", st));
  worker_ = worker;

  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(worker, &addr, &len);
  if (st != UCS_OK) return Status(Code::kTransport, ucsError("ucp_worker_get_address", st));
  address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(worker, addr);

  TSR_RETURN_IF_ERROR(setUpConsumerPath());
  st = ucp_worker_get_efd(worker, &workerFd_);
  if (st != UCS_OK) return Status(Code::kTransport, ucsError("ucp_worker_get_efd", st));
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (wakeFd_ < 0 || epollFd_ < 0) return Status(Code::kTransport, std::string("eventfd/epoll: ") + strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = workerFd_;
  epoll_ctl(epollFd_, EPOLL_CTL_ADD, workerFd_, &ev);
  ev.data.fd = wakeFd_;
  epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &ev);

  endpoints_.assign(size_, nullptr);
  peerStatus_.assign(size_, Status::ok());
  left_.assign(size_, false);
  return Status::ok();
}

UcxTransport::~UcxTransport() {
  ucp_worker_h worker = asWorker(worker_);
  closing_ = true;  // peers that already left fail their endpoints now: expected, not news
  if (worker) {
    // Flush-close healthy endpoints, so what was sent last (the goodbye) reaches the peer;
    // force-close the failed ones. Either way the wait below is bounded.
    std::vector<void*> closing;
    for (size_t peer = 0; peer < endpoints_.size(); ++peer) {
      void*& ep = endpoints_[peer];
      if (!ep) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = peerStatus_[peer].isOk() && !abandonOnClose_ ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t req = ucp_ep_close_nbx(static_cast<ucp_ep_h>(ep), &param);
      if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
      ep = nullptr;
    }
    for (void* req : closing) {
      for (int i = 0; i < 100000 && ucp_request_check_status(req) == UCS_INPROGRESS; ++i) ucp_worker_progress(worker);
      ucp_request_free(req);
    }
    discardUnexpected();
    ucp_worker_destroy(worker);
  }
  if (epollFd_ >= 0) close(epollFd_);
  if (wakeFd_ >= 0) close(wakeFd_);
}

// Messages nobody will receive any more (peers' goodbyes that arrived after ours, the tail of
// a failed collective): receive and drop them, so UCX does not warn about each at destroy.
void UcxTransport::discardUnexpected() {
  ucp_worker_h worker = asWorker(worker_);
  std::vector<char> sink;
  int dropped = 0;
  for (int i = 0; i < 100000; ++i) {
    ucp_worker_progress(worker);
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h msg = ucp_tag_probe_nb(worker, 0, 0, 1, &info);
    if (msg == nullptr) break;
    sink.resize(std::max<size_t>(info.length, 1));
    ucp_request_param_t param{};
    ucs_status_ptr_t req = ucp_tag_msg_recv_nbx(worker, sink.data(), info.length, msg, &param);
    if (UCS_PTR_IS_PTR(req)) {
      for (int k = 0; k < 100000 && ucp_request_check_status(req) == UCS_INPROGRESS; ++k) ucp_worker_progress(worker);
      ucp_request_cancel(worker, req);
      ucp_request_free(req);
    }
    ++dropped;
  }
  if (dropped) log::get("transport")->debug("rank {}: dropped {} unreceived messages", rank_, dropped);
}

Status UcxTransport::connect(const std::vector<std::string>& addresses) {
  return connect(addresses, std::vector<bool>(addresses.size(), false));
}

Status UcxTransport::connect(const std::vector<std::string>& addresses, const std::vector<bool>& fastLocal) {
  if (static_cast<int>(addresses.size()) != size_ || fastLocal.size() != addresses.size())
    return Status(Code::kInternal, "transport: got " + std::to_string(addresses.size()) + " addresses for " +
                                       std::to_string(size_) + " ranks");
  handlerArgs_.resize(size_);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    handlerArgs_[peer] = std::make_unique<PeerHandlerArg>(PeerHandlerArg{this, peer});
    ucp_ep_params_t ep{};
    ep.field_mask =
        UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    bool local = fastLocal[peer];
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses[peer].data());
    ep.err_mode = local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t st) {
      auto* a = static_cast<PeerHandlerArg*>(arg);
      a->self->markPeerFailed(a->peer, ucs_status_string(st));
    };
    ep.err_handler.arg = handlerArgs_[peer].get();
    ucp_ep_h handle = nullptr;
    ucs_status_t st = ucp_ep_create(asWorker(worker_), &ep, &handle);
    if (st != UCS_OK)
      return Status(Code::kTransport, "rank " + std::to_string(rank_) + ": cannot create endpoint to " +
                                          peerLabel(peer, hosts_) + ": " + ucs_status_string(st));
    endpoints_[peer] = handle;
  }
  return Status::ok();
}

void UcxTransport::markPeerFailed(int peer, const std::string& why) {
  // UCX's words are about its endpoint ("Endpoint timeout" for a peer killed outright, where
  // nothing timed out): said as UCX's, after what they mean for the job.
  if (!peerStatus_[peer].isOk()) return;
  peerStatus_[peer] = Status(Code::kPeerFailed, "rank " + std::to_string(rank_) + " lost its connection to " +
                                                    peerLabel(peer, hosts_) + " (UCX: " + why + ")");
  failConsumerRecvs(peer, peerStatus_[peer]);  // UCX has no request of ours to fail for them
  log::get("transport")->log(closing_ ? spdlog::level::debug : spdlog::level::warn, "{}", peerStatus_[peer].message());
}

void UcxTransport::markPeerLeft(int peer) {
  if (peer < 0 || peer >= size_ || !peerStatus_[peer].isOk()) return;
  left_[peer] = true;
  peerStatus_[peer] = Status(Code::kPeerFailed, peerLabel(peer, hosts_) + " has destroyed its communicator");
  log::get("transport")->debug("rank {}: {}", rank_, peerStatus_[peer].message());
}

Status UcxTransport::peerStatus(int peer) const {
  if (peer < 0 || peer >= size_) return Status(Code::kInvalidArgument, "no such peer");
  return peerStatus_[peer];
}

bool UcxTransport::supportsMemoryType(MemoryType type) const {
  return type == MemoryType::kHost || (type == MemoryType::kCuda && context_->cudaMemory());
}

Status UcxTransport::checkPeer(int peer, const char* what) const {
  if (peer < 0 || peer >= size_ || peer == rank_ || !endpoints_[peer])
    return Status(Code::kInternal, std::string(what) + " to invalid peer " + std::to_string(peer) + " from rank " +
                                       std::to_string(rank_));
  if (closing_ && left_[peer]) return Status::ok();  // goodbye to a peer that left first (peerLeft)
  return peerStatus_[peer];
}

Status UcxTransport::send(int peer, uint64_t tag, const void* buffer, size_t bytes, MemoryType type, Completion* c) {
  TSR_RETURN_IF_ERROR(checkPeer(peer, "send"));
  bindThisThread();
  if (!supportsMemoryType(type))
    return Status(Code::kNotSupported, "UCX here has no CUDA memory support; stage through host");
  *c = Completion{};
  c->posted = true;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  TimedSend* timed = startTimedSend(c, peer, bytes);
  param.cb.send = timed ? onTimedSendDone : onSendDone;
  param.user_data = timed ? static_cast<void*>(timed) : c;
  param.memory_type = type == MemoryType::kCuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  ucs_status_ptr_t req = ucp_tag_send_nbx(static_cast<ucp_ep_h>(endpoints_[peer]), buffer, bytes, tag, &param);
  countSent(bytes);
  trackSend(req, c, peer, timed);
  return Status::ok();
}

void UcxTransport::countSent(size_t bytes) {
  // Sends are serialized (the worker is UCS_THREAD_MODE_SERIALIZED): a plain store, as a
  // locked add would stall until the store buffer drains (the shared-memory FIFO lines just
  // written), measured at 5% of a small allreduce.
  bytesSent_.store(bytesSent_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
}

void UcxTransport::trackSend(void* request, Completion* c, int peer, TimedSend* timed) {
  auto req = static_cast<ucs_status_ptr_t>(request);
  if (req == nullptr || UCS_PTR_IS_ERR(req)) {
    // Done at once (buffered) or failed: no callback comes, and nothing to time.
    if (timed) spareTimedSends_.push_back(timed);
    c->done = true;
    if (req != nullptr) c->status = fromUcs(UCS_PTR_STATUS(req), "send to " + peerLabel(peer, hosts_));
  } else {
    if (timed) sendClock_.posted(peer, SendClock::Clock::now());
    c->handle = req;
  }
}

Status UcxTransport::recv(int peer, uint64_t tag, uint64_t tagMask, void* buffer, size_t bytes, MemoryType type,
                          Completion* c) {
  // A peer that left sent everything before its goodbye: its last messages may be waiting
  // here still, so receiving from it is allowed (a message that never comes times out).
  bool left = peer >= 0 && peer < size_ && left_[peer];
  if (peer >= 0 && !left) TSR_RETURN_IF_ERROR(checkPeer(peer, "receive"));
  bindThisThread();
  if (!supportsMemoryType(type))
    return Status(Code::kNotSupported, "UCX here has no CUDA memory support; stage through host");
  *c = Completion{};
  c->posted = true;
  ucp_tag_recv_info_t info{};
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE |
                       UCP_OP_ATTR_FIELD_RECV_INFO;
  // UCX 1.13 leaves recv_info unset when a receive completes at once from the unexpected
  // queue, and the executor needs the length to check it: always take the callback path.
  param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = onRecvDone;
  param.user_data = c;
  param.memory_type = type == MemoryType::kCuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  param.recv_info.tag_info = &info;
  ucs_status_ptr_t req = ucp_tag_recv_nbx(asWorker(worker_), buffer, bytes, tag, tagMask, &param);
  if (req == nullptr) {
    c->done = true;
    c->bytes = info.length;
    c->tag = info.sender_tag;
  } else if (UCS_PTR_IS_ERR(req)) {
    c->done = true;
    c->status = fromUcs(UCS_PTR_STATUS(req), "receive from " + peerLabel(peer, hosts_));
  } else {
    c->handle = req;
  }
  return Status::ok();
}

void UcxTransport::cancel(Completion* c) {
  if (c->handle)
    ucp_request_cancel(asWorker(worker_), c->handle);
  else if (c->posted && !c->done)
    cancelConsumerRecv(c);
}

thread_local uint64_t UcxTransport::tBoundGeneration = 0;

void UcxTransport::setThreadBinding(std::function<void()> bind) {
  static std::atomic<uint64_t> nextGeneration{1};
  std::lock_guard<std::mutex> lock(bindingMutex_);
  binding_ = std::move(bind);
  bindingGeneration_.store(binding_ ? nextGeneration++ : 0, std::memory_order_release);
}

void UcxTransport::bindThisThreadSlow() {
  std::function<void()> bind;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(bindingMutex_);
    bind = binding_;
    generation = bindingGeneration_.load(std::memory_order_relaxed);
  }
  if (bind) bind();
  tBoundGeneration = generation;
}

bool UcxTransport::progress() {
  bindThisThread();
  bool any = false;
  while (ucp_worker_progress(asWorker(worker_)) != 0) any = true;
  return any;
}

bool UcxTransport::armEvents() {
  return ucp_worker_arm(asWorker(worker_)) != UCS_ERR_BUSY;  // busy: events already pending
}

void UcxTransport::sleepUntilEvent(int timeoutMs) {
  epoll_event events[2];
  int n = epoll_wait(epollFd_, events, 2, timeoutMs);
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd == wakeFd_) {
      uint64_t v;
      while (read(wakeFd_, &v, sizeof v) > 0) {
      }
    }
  }
}

void UcxTransport::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = write(wakeFd_, &one, sizeof one);
}

}  // namespace tsr::transport
