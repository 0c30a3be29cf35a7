#include "runtime/bootstrap/bootstrap.h"

#include "base/logging.h"
#include "runtime/bootstrap/job_secret.h"
#include "runtime/bootstrap/listen_address.h"
#include "runtime/bootstrap/ring_join.h"

namespace tsr::runtime {

using detail::asio::ip::tcp;
namespace asio = detail::asio;
using Clock = std::chrono::steady_clock;

// The first byte of every frame's payload: a blob of the all-gather, or the reason a rank gave
// up. A rank that fails tells its right neighbour why before it leaves, and each rank passes the
// first reason on, so a rank far from the fault names it (the host that never started, say)
// instead of the neighbour that left because of it, and learns it without waiting out its own
// timeout.
constexpr char kBlobFrame = 'D';
constexpr char kGiveUpFrame = 'A';
constexpr size_t kMaxReasonBytes = 1024;
constexpr auto kGiveUpSendLimit = std::chrono::milliseconds(500);

class Bootstrap::Impl {
 public:
  Impl(LaunchInfo info, BootstrapOptions options)
      : info_(std::move(info)), options_(options), acceptor_(io_), log_(tsr::log::get("bootstrap")) {}

  Status start() {
    if (info_.size == 1) return Status::ok();
    joinStart_ = Clock::now();
    const PeerAddress& me = info_.peers[info_.rank];
    detail::ListenAddress listen = detail::chooseListenAddress(info_);
    tcp::endpoint endpoint(listen.address, me.port);
    boost::system::error_code ec = detail::listenOn(acceptor_, endpoint);
    if (ec)
      return Status(Code::kBootstrap, "rank " + std::to_string(info_.rank) + " cannot listen on its bootstrap port " +
                                          std::to_string(me.port) + " (address " + me.toString() + ", listening on " +
                                          detail::endpointString(endpoint) + "): " + ec.message());
    log_->debug("rank {}: listening on {} ({}{})", info_.rank, detail::endpointString(endpoint),
                listen.everyInterface ? "every interface: " : "", listen.why);
    detail::RingLinks partial;
    auto links = detail::joinRing(io_, acceptor_, info_, options_, &partial);
    acceptor_.close(ec);  // the ring is formed: nobody else may connect
    if (!links.isOk()) {
      if (partial.right) sendGiveUp(*partial.right, links.status().message());
      return links.status();
    }
    left_ = std::move(links.value().left);
    right_ = std::move(links.value().right);
    return Status::ok();
  }

  Result<std::vector<std::string>> allGather(const std::string& myBlob) {
    if (!broken_.isOk())
      return Status(broken_.code(), "bootstrap unusable after an earlier error: " + broken_.message());
    if (myBlob.size() > options_.maxBlobBytes)
      return Status(Code::kInvalidArgument, "rank " + std::to_string(info_.rank) + ": all-gather blob of " +
                                                std::to_string(myBlob.size()) + " bytes exceeds maxBlobBytes " +
                                                std::to_string(options_.maxBlobBytes));
    const int n = info_.size, r = info_.rank;
    std::vector<std::string> blobs(n);
    blobs[r] = myBlob;
    // The first all-gather also waits for the rest of the ring to join, which may take each rank
    // up to the timeout from its own start: a rank whose own links formed at once must not give
    // up before a rank that still waits for a peer says which peer never came.
    const auto timeout = std::chrono::milliseconds(options_.timeoutMs);
    auto deadline = std::max(Clock::now(), firstGather_ ? joinStart_ + timeout : Clock::now()) + timeout;
    firstGather_ = false;
    for (int step = 0; step + 1 < n; ++step) {
      int sendIndex = (r - step + n) % n;
      int recvIndex = (r - step - 1 + n) % n;
      Status s = exchange(blobs[sendIndex], &blobs[recvIndex], step, deadline);
      if (!s.isOk()) {
        broken_ = s;
        sendGiveUp(*right_, forwardedReason_.empty() ? s.message() : forwardedReason_);
        boost::system::error_code ec;
        left_->socket.close(ec);
        right_->socket.close(ec);
        return s;
      }
    }
    return blobs;
  }

  const LaunchInfo& info() const { return info_; }
  std::vector<std::pair<int, int>> neighbourSockets() {
    std::vector<std::pair<int, int>> out;
    if (left_) out.emplace_back((info_.rank - 1 + info_.size) % info_.size, left_->socket.native_handle());
    if (right_) out.emplace_back((info_.rank + 1) % info_.size, right_->socket.native_handle());
    return out;
  }

 private:
  std::string who() const { return "rank " + std::to_string(info_.rank); }
  std::string peer(const detail::Link& link) const {
    return "rank " + std::to_string(link.peerRank) + " (" + link.remote + ")";
  }

  // Best effort, bounded: the neighbour may be gone or stalled; then it finds out on its own.
  void sendGiveUp(detail::Link& link, const std::string& reason) {
    if (!link.socket.is_open()) return;
    std::string payload = kGiveUpFrame + reason.substr(0, kMaxReasonBytes);
    auto frame = wire::encodeFrame(link.key, link.sendSeq++, payload);
    if (!frame.isOk()) return;
    bool done = false;
    asio::async_write(link.socket, asio::buffer(frame.value()),
                      [&done](const boost::system::error_code&, size_t) { done = true; });
    auto until = Clock::now() + kGiveUpSendLimit;
    io_.restart();
    while (!done && Clock::now() < until) {
      if (io_.run_one_until(until) == 0 && io_.stopped()) io_.restart();
    }
    if (!done) {
      boost::system::error_code ec;
      link.socket.close(ec);
      io_.restart();
      while (!done) io_.run_one();
    }
  }

  // One ring step: send `out` to the right while receiving one blob from the left.
  Status exchange(const std::string& out, std::string* in, int step, Clock::time_point deadline) {
    auto frame = wire::encodeFrame(right_->key, right_->sendSeq, kBlobFrame + out);
    if (!frame.isOk()) return frame.status();
    ++right_->sendSeq;
    bool sent = false, received = false;
    Status error;
    auto setError = [&error](Status s) {
      if (error.isOk()) error = std::move(s);
    };
    std::string stepName = "all-gather step " + std::to_string(step);
    asio::async_write(right_->socket, asio::buffer(frame.value()), [&](const boost::system::error_code& ec, size_t) {
      if (ec)
        setError(Status(Code::kBootstrap,
                        who() + ": sending " + stepName + " to " + peer(*right_) + " failed: " + ec.message()));
      sent = true;
    });
    std::string head(wire::kFrameHeadBytes, '\0');
    std::string body;
    auto readFailed = [&](const boost::system::error_code& ec) {
      if (ec == asio::error::eof || ec == asio::error::connection_reset)
        return Status(Code::kBootstrap,
                      who() + ": " + peer(*left_) + " closed its bootstrap connection during " + stepName);
      return Status(Code::kBootstrap,
                    who() + ": receiving " + stepName + " from " + peer(*left_) + " failed: " + ec.message());
    };
    asio::async_read(left_->socket, asio::buffer(head), [&](const boost::system::error_code& ec, size_t) {
      if (ec) {
        setError(readFailed(ec));
        received = true;
        return;
      }
      wire::FrameHead h = wire::decodeFrameHead(head);
      Status bad;
      if (h.seq != left_->recvSeq)
        bad = Status(Code::kBootstrap, who() + ": frame from " + peer(*left_) + " has sequence number " +
                                           std::to_string(h.seq) + ", expected " + std::to_string(left_->recvSeq) +
                                           " (replayed or forged)");
      else if (h.length > options_.maxBlobBytes)
        bad = Status(Code::kBootstrap, who() + ": " + peer(*left_) + " announced a " + std::to_string(h.length) +
                                           "-byte blob, over the limit of " + std::to_string(options_.maxBlobBytes));
      if (!bad.isOk()) {
        log_->warn("{}", bad.message());
        setError(bad);
        received = true;
        return;
      }
      body.assign(h.length + kDigestBytes, '\0');
      asio::async_read(left_->socket, asio::buffer(body), [&, h](const boost::system::error_code& ec2, size_t) {
        received = true;
        if (ec2) return setError(readFailed(ec2));
        std::string_view all(body);
        Status mac = wire::verifyFrame(left_->key, h.seq, all.substr(0, h.length), all.substr(h.length));
        if (!mac.isOk()) {
          Status s(Code::kBootstrap, who() + ": " + mac.message() + " from " + peer(*left_));
          log_->warn("{}", s.message());
          return setError(s);
        }
        ++left_->recvSeq;
        if (h.length > 0 && body[0] == kGiveUpFrame) {
          forwardedReason_ = body.substr(1, h.length - 1);
          return setError(Status(Code::kBootstrap, who() + ": " + peer(*left_) + " gave up: " + forwardedReason_));
        }
        if (h.length == 0 || body[0] != kBlobFrame)
          return setError(Status(Code::kBootstrap, who() + ": frame of unknown kind from " + peer(*left_)));
        *in = body.substr(1, h.length - 1);
      });
    });
    while (!(sent && received) && error.isOk()) {
      if (Clock::now() >= deadline) {
        setError(Status(Code::kTimeout, who() + ": " + stepName + " did not complete within " +
                                            std::to_string(options_.timeoutMs) + " ms (" +
                                            (received ? "sending to " + peer(*right_) : "waiting for " + peer(*left_)) +
                                            ")"));
        break;
      }
      if (io_.run_one_until(deadline) == 0 && io_.stopped()) io_.restart();
    }
    if (!(sent && received)) {
      // The handlers refer to this frame's locals: cancel and let them finish before returning.
      boost::system::error_code ec;
      left_->socket.close(ec);
      right_->socket.close(ec);
      io_.restart();
      while (!(sent && received)) io_.run_one();
    }
    return error;
  }

  LaunchInfo info_;
  BootstrapOptions options_;
  asio::io_context io_;  // declared before everything holding sockets: destroyed last
  tcp::acceptor acceptor_;
  std::unique_ptr<detail::Link> left_;
  std::unique_ptr<detail::Link> right_;
  Status broken_;
  std::string forwardedReason_;  // why the rank that gave up first did
  Clock::time_point joinStart_;
  bool firstGather_ = true;
  std::shared_ptr<spdlog::logger> log_;
};

namespace {

Status validate(const LaunchInfo& info, const BootstrapOptions& options) {
  auto bad = [](std::string m) { return Status(Code::kInvalidArgument, std::move(m)); };
  if (info.size < 1) return bad("bootstrap: world size " + std::to_string(info.size) + " < 1");
  if (info.rank < 0 || info.rank >= info.size)
    return bad("bootstrap: rank " + std::to_string(info.rank) + " is not in [0, " + std::to_string(info.size) + ")");
  if (info.size > 1 && static_cast<int>(info.peers.size()) != info.size)
    return bad("bootstrap: " + std::to_string(info.peers.size()) + " peer addresses for world size " +
               std::to_string(info.size));
  Status secret = checkJobSecret(info.secret, info.insecure, info.size);
  if (!secret.isOk()) return bad("bootstrap: rank " + std::to_string(info.rank) + ": " + secret.message());
  if (info.jobId.size() > wire::kMaxJobIdBytes)
    return bad("bootstrap: job id '" + info.jobId + "' is longer than " + std::to_string(wire::kMaxJobIdBytes) +
               " bytes");
  if (options.timeoutMs <= 0 || options.handshakeTimeoutMs <= 0)
    return bad("bootstrap: timeouts must be positive (timeoutMs " + std::to_string(options.timeoutMs) +
               ", handshakeTimeoutMs " + std::to_string(options.handshakeTimeoutMs) + ")");
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(const LaunchInfo& info, BootstrapOptions options) {
  try {
    TSR_RETURN_IF_ERROR(validate(info, options));
    if (info.size > 1 && info.secret.empty())
      tsr::log::get("bootstrap")
          ->error(
              "rank {}: TSR_INSECURE=1 and no job secret: the bootstrap is NOT authenticated; anyone who "
              "reaches {} can join this job or feed it data",
              info.rank, info.peers[info.rank].toString());
    auto impl = std::make_unique<Impl>(info, options);
    TSR_RETURN_IF_ERROR(impl->start());
    return std::unique_ptr<Bootstrap>(new Bootstrap(std::move(impl)));
  } catch (const std::exception& e) {
    return Status(Code::kInternal,
                  "rank " + std::to_string(info.rank) + ": bootstrap failed with an exception: " + e.what());
  }
}

Bootstrap::Bootstrap(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bootstrap::~Bootstrap() = default;

Result<std::vector<std::string>> Bootstrap::allGather(const std::string& myBlob) {
  try {
    return impl_->allGather(myBlob);
  } catch (const std::exception& e) {
    return Status(Code::kInternal,
                  "rank " + std::to_string(rank()) + ": all-gather failed with an exception: " + e.what());
  }
}

Status Bootstrap::barrier() {
  auto result = allGather(std::string());
  return result.status();
}

int Bootstrap::rank() const { return impl_->info().rank; }
int Bootstrap::size() const { return impl_->info().size; }
std::vector<std::pair<int, int>> Bootstrap::neighbourSockets() const { return impl_->neighbourSockets(); }

}  // namespace tsr::runtime
