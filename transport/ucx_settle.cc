// Settling a UcxTransport's endpoints (ucx_transport.h, settle()): every rank sends one empty
// synchronous message to every peer, receives one from each, and flushes every endpoint, so
// UCX finishes its connection set-up (wire-up) on all of them while every rank is still there
// to answer.
//
// Why: over TCP, UCX 1.13 connects an endpoint at once but learns the peer's endpoint id
// lazily, with a wire-up request and reply sent when a protocol first needs it (the first
// rendezvous message: any message above a few KiB). If the peer goes away while that exchange
// is queued (a communicator destroyed right after a mismatch, while a peer's large message
// to it was the first), UCX fails the endpoint from inside the queue's dispatch and trips its
// own assertion (wireup_ep.c: `pending_count == 0`), aborting the process; a worker destroyed
// with a reply still queued trips another. A synchronous send needs the peer's endpoint id, so
// once it completed the exchange is over, and no wire-up is left to queue later.
#include <chrono>

#include <ucp/api/ucp.h>

#include "base/logging.h"
#include "transport/tag.h"
#include "transport/ucx_internal.h"
#include "transport/ucx_transport.h"

namespace tsr::transport {

namespace {
// Its own communicator id, never a communicator's: only settle() uses this tag.
constexpr uint32_t kSettleComm = static_cast<uint32_t>(kTagCommMask);
}  // namespace

Status UcxTransport::settle(int timeoutMs) {
  auto worker = static_cast<ucp_worker_h>(worker_);
  // Members, not locals: a send UCX cannot cancel may still complete after a timeout.
  std::vector<Completion>& sends = settleSends_;
  std::vector<Completion>& recvs = settleRecvs_;
  sends.assign(size_, Completion{});
  recvs.assign(size_, Completion{});
  std::vector<void*> flushes;
  char nothing = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    TSR_RETURN_IF_ERROR(
        recv(peer, makeDataTag(peer, kSettleComm, 0, 0), kTagFullMask, &nothing, 0, MemoryType::kHost, &recvs[peer]));
    // A synchronous send completes once the peer matched it, which takes the endpoint's
    // remote id: UCX resolves it now (a wire-up request and reply), not at the first
    // rendezvous message of some later collective.
    sends[peer] = Completion{};
    sends[peer].posted = true;
    ucp_request_param_t sync{};
    sync.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    sync.cb.send = onSendDone;
    sync.user_data = &sends[peer];
    trackSend(ucp_tag_send_sync_nbx(static_cast<ucp_ep_h>(endpoints_[peer]), &nothing, 0,
                                    makeDataTag(rank_, kSettleComm, 0, 0), &sync),
              &sends[peer], peer, nullptr);
    ucp_request_param_t param{};
    ucs_status_ptr_t req = ucp_ep_flush_nbx(static_cast<ucp_ep_h>(endpoints_[peer]), &param);
    if (UCS_PTR_IS_ERR(req))
      return Status(Code::kPeerFailed, "rank " + std::to_string(rank_) + " cannot connect to " +
                                           peerLabel(peer, hosts_) + ": " + ucs_status_string(UCS_PTR_STATUS(req)));
    if (req) flushes.push_back(req);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  auto settled = [&]() -> Status {
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      for (const Completion* c : {&sends[peer], &recvs[peer]}) {
        if (!c->done) return Status(Code::kInProgress, "");
        if (!c->status.isOk())
          return Status(c->status.code(), "rank " + std::to_string(rank_) + " cannot connect to " +
                                              peerLabel(peer, hosts_) + ": " + c->status.message());
      }
    }
    for (void* req : flushes)
      if (ucp_request_check_status(req) == UCS_INPROGRESS) return Status(Code::kInProgress, "");
    return Status::ok();
  };
  Status st = settled();
  while (st.code() == Code::kInProgress && std::chrono::steady_clock::now() < deadline) {
    ucp_worker_progress(worker);
    st = settled();
  }
  if (st.code() == Code::kInProgress) {
    int missing = -1;
    for (int peer = 0; peer < size_ && missing < 0; ++peer)
      if (peer != rank_ && !recvs[peer].done) missing = peer;
    st = Status(Code::kTimeout, "rank " + std::to_string(rank_) + " could not connect to " +
                                    (missing >= 0 ? peerLabel(missing, hosts_) : std::string("every peer")) +
                                    " within " + std::to_string(timeoutMs) + " ms");
  }
  // After a timeout: what is still in flight ends (or is released) without us.
  for (Completion& c : recvs) cancel(&c);
  for (void* req : flushes) ucp_request_free(req);
  if (st.isOk()) log::get("transport")->debug("rank {}: endpoints to {} peers settled", rank_, size_ - 1);
  return st;
}

}  // namespace tsr::transport
