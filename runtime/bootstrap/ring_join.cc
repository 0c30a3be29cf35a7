#include "runtime/bootstrap/ring_join.h"

#include <algorithm>
#include <vector>

#include "base/log_rate_limit.h"
#include "base/logging.h"

namespace tsr::runtime::detail {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kFirstBackoff{10};
constexpr milliseconds kMaxBackoff{500};
// Warnings about rejected connections (strangers) and accept errors: 10 every 10 s at most.
constexpr int kLogBurst = 10;
constexpr std::chrono::seconds kLogWindow{10};

std::string heldBackNote(uint64_t heldBack) {
  return heldBack == 0 ? "" : " (" + std::to_string(heldBack) + " similar lines before this one were not logged)";
}

class RingJoin : public std::enable_shared_from_this<RingJoin> {
 public:
  RingJoin(asio::io_context& io, tcp::acceptor& acceptor, const LaunchInfo& info, const BootstrapOptions& options)
      : io_(io),
        acceptor_(acceptor),
        info_(info),
        options_(options),
        left_((info.rank - 1 + info.size) % info.size),
        right_((info.rank + 1) % info.size),
        resolver_(io),
        retryTimer_(io),
        log_(tsr::log::get("bootstrap")) {}

  Result<RingLinks> run(RingLinks* partial) {
    deadline_ = Clock::now() + milliseconds(options_.timeoutMs);
    accept();
    dial();
    while (!(links_.left && links_.right) && Clock::now() < deadline_) {
      if (io_.run_one_until(deadline_) == 0 && io_.stopped()) io_.restart();
    }
    stop();
    if (links_.left && links_.right) return std::move(links_);
    Status missing(Code::kBootstrap, missingMessage());
    if (partial) *partial = std::move(links_);
    return missing;
  }

 private:
  HandshakeParams params(int peer) const {
    return HandshakeParams{info_.rank, peer, info_.jobId, info_.secret, milliseconds(options_.handshakeTimeoutMs)};
  }

  void accept() {
    auto self = shared_from_this();
    acceptor_.async_accept([self](const boost::system::error_code& ec, tcp::socket socket) {
      if (self->stopped_) return;
      if (ec) {
        // Out of descriptors and the like: say so, and try again a little later.
        uint64_t heldBack = 0;
        if (self->acceptErrorLog_.allow(log::LogRateLimit::Clock::now(), &heldBack))
          self->log_->warn("rank {}: accept on the bootstrap port failed: {}{}", self->info_.rank, ec.message(),
                           heldBackNote(heldBack));
        self->acceptRetry_ = std::make_shared<asio::steady_timer>(self->io_, milliseconds(50));
        self->acceptRetry_->async_wait([self](const boost::system::error_code& e) {
          if (!e && !self->stopped_) self->accept();
        });
        return;
      }
      self->onAccepted(std::move(socket));
      self->accept();
    });
  }

  void onAccepted(tcp::socket socket) {
    auto self = shared_from_this();
    boost::system::error_code ec;
    auto endpoint = socket.remote_endpoint(ec);
    std::string remote = ec ? "an unknown address" : endpointString(endpoint);
    log_->debug("rank {}: connection from {}", info_.rank, remote);
    auto handshake = Handshake::start(
        Handshake::Role::kAcceptor, std::move(socket), params(left_),
        [self, remote](Result<std::unique_ptr<Link>> link) {
          if (self->stopped_) return;
          if (!link.isOk()) {
            uint64_t heldBack = 0;
            if (self->rejectLog_.allow(log::LogRateLimit::Clock::now(), &heldBack))
              self->log_->warn("rank {}: rejected bootstrap connection from {}: {}{}", self->info_.rank, remote,
                               link.status().message(), heldBackNote(heldBack));
            return;
          }
          if (self->links_.left)
            self->log_->info("rank {}: rank {} connected again from {}; using the new link", self->info_.rank,
                             self->left_, remote);
          self->links_.left = link.take();
          self->log_->debug("rank {}: left neighbour rank {} joined from {}", self->info_.rank, self->left_, remote);
        });
    pending_.push_back(handshake);
  }

  void dial() {
    if (stopped_ || links_.right) return;
    const PeerAddress& address = info_.peers[right_];
    boost::system::error_code ec;
    bool v6 = address.host.find(':') != std::string::npos;
    auto endpoints = resolver_.resolve(v6 ? tcp::v6() : tcp::v4(), address.host, std::to_string(address.port), ec);
    if (ec || endpoints.empty()) {
      lastDialError_ = "cannot resolve '" + address.host + "': " + ec.message();
      return retry();
    }
    std::vector<tcp::endpoint> list(endpoints.begin(), endpoints.end());
    tcp::endpoint target = list[attempts_++ % list.size()];
    auto socket = std::make_shared<tcp::socket>(io_);
    dialing_ = socket;
    auto self = shared_from_this();
    socket->async_connect(target, [self, socket](const boost::system::error_code& e) {
      if (self->stopped_) return;
      if (e) {
        self->lastDialError_ = e.message();
        return self->retry();
      }
      auto handshake = Handshake::start(Handshake::Role::kConnector, std::move(*socket), self->params(self->right_),
                                        [self](Result<std::unique_ptr<Link>> link) {
                                          if (self->stopped_) return;
                                          if (!link.isOk()) {
                                            const std::string& why = link.status().message();
                                            if (why != self->lastDialError_)
                                              self->log_->warn("rank {}: joining rank {} failed, will retry: {}",
                                                               self->info_.rank, self->right_, why);
                                            self->lastDialError_ = why;
                                            return self->retry();
                                          }
                                          self->links_.right = link.take();
                                          self->log_->debug("rank {}: connected to right neighbour rank {}",
                                                            self->info_.rank, self->right_);
                                        });
      self->pending_.push_back(handshake);
    });
  }

  void retry() {
    auto self = shared_from_this();
    retryTimer_.expires_after(backoff_);
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
    retryTimer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec && !self->stopped_) self->dial();
    });
  }

  // Cancels everything still in flight and runs the cancelled handlers, so no pending work
  // refers to this join any more.
  void stop() {
    stopped_ = true;
    boost::system::error_code ec;
    acceptor_.cancel(ec);
    retryTimer_.cancel();
    if (acceptRetry_) acceptRetry_->cancel();
    if (auto socket = dialing_.lock()) socket->close(ec);
    for (auto& weak : pending_)
      if (auto handshake = weak.lock()) handshake->abort();
    io_.restart();
    io_.poll();
    if (uint64_t heldBack = rejectLog_.takeHeldBack())
      log_->warn("rank {}: {} more bootstrap connections were rejected and not logged one by one", info_.rank,
                 heldBack);
  }

  std::string missingMessage() const {
    std::string timeout = std::to_string(options_.timeoutMs) + " ms";
    std::string r = std::to_string(info_.rank);
    std::vector<std::string> parts;
    if (!links_.right)
      parts.push_back("rank " + r + " could not connect to rank " + std::to_string(right_) + " at " +
                      info_.peers[right_].toString() + " within " + timeout +
                      (lastDialError_.empty() ? "" : " (last error: " + lastDialError_ + ")"));
    if (!links_.left)
      parts.push_back("rank " + r + " was never contacted by rank " + std::to_string(left_) + " (expected from " +
                      info_.peers[left_].host + ", its bootstrap address " + info_.peers[left_].toString() +
                      ") within " + timeout);
    std::string message;
    for (const auto& p : parts) {
      if (!message.empty()) message += "; ";
      message += p;
    }
    return message;
  }

  asio::io_context& io_;
  tcp::acceptor& acceptor_;
  const LaunchInfo& info_;
  BootstrapOptions options_;
  int left_;
  int right_;
  tcp::resolver resolver_;
  asio::steady_timer retryTimer_;
  std::shared_ptr<asio::steady_timer> acceptRetry_;
  std::shared_ptr<spdlog::logger> log_;
  Clock::time_point deadline_;
  milliseconds backoff_ = kFirstBackoff;
  size_t attempts_ = 0;
  std::string lastDialError_;
  std::weak_ptr<tcp::socket> dialing_;
  std::vector<std::weak_ptr<Handshake>> pending_;
  log::LogRateLimit rejectLog_{kLogBurst, kLogWindow};
  log::LogRateLimit acceptErrorLog_{kLogBurst, kLogWindow};
  RingLinks links_;
  bool stopped_ = false;
};

}  // namespace

Result<RingLinks> joinRing(asio::io_context& io, tcp::acceptor& acceptor, const LaunchInfo& info,
                           const BootstrapOptions& options, RingLinks* partial) {
  auto join = std::make_shared<RingJoin>(io, acceptor, info, options);
  return join->run(partial);
}

}  // namespace tsr::runtime::detail
