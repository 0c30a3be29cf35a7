// The consumer path (transport.h) over UCX active messages: the 64-bit tag rides as the
// message's header; the handler gives the payload to the matching posted receive's consumer
// right in UCX's receive buffer, or keeps a copy aside until that receive is posted. Large
// messages that UCX sends by rendezvous are fetched into a buffer of ours first.
#include <cstring>
#include <memory>

#include "base/logging.h"
#include "transport/ucx_internal.h"
#include "transport/ucx_transport.h"

namespace tsr::transport {

namespace {

constexpr unsigned kConsumerAmId = 1;

// A rendezvous message being fetched: where it goes when it has come.
struct Fetch {
  UcxTransport* self;
  uint64_t tag;
  std::vector<char> data;
};

}  // namespace

Status UcxTransport::setUpConsumerPath() {
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
                     UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  param.id = kConsumerAmId;
  param.flags = UCP_AM_FLAG_WHOLE_MSG;
  param.arg = this;
  param.cb = [](void* arg, const void* header, size_t headerLength, void* data, size_t length,
                const ucp_am_recv_param_t* info) -> ucs_status_t {
    auto* self = static_cast<UcxTransport*>(arg);
    uint64_t tag = 0;
    if (headerLength != sizeof tag) {
      log::get("transport")
          ->error("rank {}: dropped a consumer message with a {}-byte header", self->rank_, headerLength);
      return UCS_OK;
    }
    std::memcpy(&tag, header, sizeof tag);
    if (!(info->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
      self->onConsumerMessage(tag, data, length);
      return UCS_OK;
    }
    auto fetch = std::make_unique<Fetch>(Fetch{self, tag, std::vector<char>(length)});
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.recv_am = [](void* request, ucs_status_t st, size_t got, void* user) {
      std::unique_ptr<Fetch> f(static_cast<Fetch*>(user));
      if (st == UCS_OK) f->self->onConsumerMessage(f->tag, f->data.data(), got);
      ucp_request_free(request);
    };
    rp.user_data = fetch.get();
    ucs_status_ptr_t req =
        ucp_am_recv_data_nbx(static_cast<ucp_worker_h>(self->worker_), data, fetch->data.data(), length, &rp);
    if (req == nullptr) {
      self->onConsumerMessage(tag, fetch->data.data(), length);
    } else if (UCS_PTR_IS_ERR(req)) {
      log::get("transport")
          ->error("rank {}: fetching a consumer message failed: {}", self->rank_,
                  ucs_status_string(UCS_PTR_STATUS(req)));
    } else {
      fetch.release();  // the callback owns it now
    }
    return UCS_OK;
  };
  ucs_status_t st = ucp_worker_set_am_recv_handler(static_cast<ucp_worker_h>(worker_), &param);
  if (st != UCS_OK)
    return Status(Code::kTransport, std::string("ucp_worker_set_am_recv_handler: ") + ucs_status_string(st));
  return Status::ok();
}

void UcxTransport::onConsumerMessage(uint64_t tag, const void* data, size_t length) {
  auto it = consumerRecvs_.find(tag);
  if (it == consumerRecvs_.end()) {  // before its receive: kept until it is posted
    earlyMessages_[tag] = spareEarly_.copyOf(static_cast<const char*>(data), length);
    return;
  }
  ConsumerRecv r = it->second;
  consumerRecvs_.erase(it);
  if (length == r.bytes) r.consumer->consume(data);  // else the receiver names the lengths
  r.completion->bytes = length;
  r.completion->tag = tag;
  r.completion->done = true;
}

Status UcxTransport::sendToConsumer(int peer, uint64_t tag, const void* buffer, size_t bytes, Completion* c) {
  TSR_RETURN_IF_ERROR(checkPeer(peer, "send"));
  *c = Completion{};
  c->posted = true;
  c->tag = tag;  // the message's header: it must live until the send completes, as c does
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  TimedSend* timed = startTimedSend(c, peer, bytes);
  param.cb.send = timed ? onTimedSendDone : onSendDone;
  param.user_data = timed ? static_cast<void*>(timed) : c;
  param.memory_type = UCS_MEMORY_TYPE_HOST;
  ucs_status_ptr_t req = ucp_am_send_nbx(static_cast<ucp_ep_h>(endpoints_[peer]), kConsumerAmId, &c->tag, sizeof c->tag,
                                         buffer, bytes, &param);
  countSent(bytes);
  trackSend(req, c, peer, timed);
  return Status::ok();
}

Status UcxTransport::recvToConsumer(int peer, uint64_t tag, size_t bytes, Consumer* consumer, Completion* c) {
  bool left = peer >= 0 && peer < size_ && left_[peer];  // as recv(): its last messages may be here
  if (!left) TSR_RETURN_IF_ERROR(checkPeer(peer, "receive"));
  *c = Completion{};
  c->posted = true;
  auto early = earlyMessages_.find(tag);
  if (early != earlyMessages_.end()) {
    if (early->second.size() == bytes) consumer->consume(early->second.data());
    c->bytes = early->second.size();
    c->tag = tag;
    c->done = true;
    spareEarly_.giveBack(std::move(early->second));
    earlyMessages_.erase(early);
    return Status::ok();
  }
  if (!consumerRecvs_.emplace(tag, ConsumerRecv{peer, bytes, consumer, c}).second)
    return Status(Code::kInternal, "rank " + std::to_string(rank_) + ": a second receive for tag " +
                                       std::to_string(tag) + " from rank " + std::to_string(peer));
  return Status::ok();
}

bool UcxTransport::cancelConsumerRecv(Completion* c) {
  for (auto it = consumerRecvs_.begin(); it != consumerRecvs_.end(); ++it) {
    if (it->second.completion != c) continue;
    consumerRecvs_.erase(it);
    c->status = Status(Code::kAborted, "receive: cancelled");
    c->done = true;
    return true;
  }
  return false;
}

void UcxTransport::failConsumerRecvs(int peer, const Status& why) {
  for (auto it = consumerRecvs_.begin(); it != consumerRecvs_.end();) {
    if (it->second.peer != peer) {
      ++it;
      continue;
    }
    it->second.completion->status = why;
    it->second.completion->done = true;
    it = consumerRecvs_.erase(it);
  }
}

}  // namespace tsr::transport
