// A member's door for replacements (join_link.h): an acceptor on a thread of its own, each
// connection authenticated with the join key and holding its request until taken.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "base/log_rate_limit.h"
#include "base/logging.h"
#include "runtime/bootstrap/join_wire.h"
#include "runtime/bootstrap/listen_address.h"

namespace tsr::runtime {

using detail::asio::ip::tcp;
namespace asio = detail::asio;
using Clock = std::chrono::steady_clock;

// A taken replacement's connection as a plain descriptor: the member writes its welcome from
// its own thread, outside the listener's io_context.
class JoinerLink {
 public:
  JoinerLink(int fd, uint64_t sendSeq) : fd_(fd), sendSeq_(sendSeq) {}
  ~JoinerLink() { ::close(fd_); }
  JoinerLink(const JoinerLink&) = delete;
  JoinerLink& operator=(const JoinerLink&) = delete;

  // A waiting replacement sends nothing more: anything to read means it left (end of file).
  bool alive() const {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 0;
  }
  Status send(const Digest& key, const std::string& payload, int timeoutMs) {
    TSR_ASSIGN_OR_RETURN(std::string frame, wire::encodeFrame(key, sendSeq_++, payload));
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    for (size_t sent = 0; sent < frame.size();) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, POLLOUT, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0)
        return Status(Code::kTimeout, "the replacement took no welcome within " + std::to_string(timeoutMs) + " ms");
      const ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        return Status(Code::kBootstrap, std::string("sending the welcome: ") + std::strerror(errno));
      if (n > 0) sent += static_cast<size_t>(n);
    }
    return Status::ok();
  }

 private:
  int fd_;
  uint64_t sendSeq_;
};

class JoinListener::Impl {
 public:
  explicit Impl(JoinCredentials credentials)
      : credentials_(std::move(credentials)), acceptor_(io_), log_(log::get("bootstrap")) {}

  ~Impl() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
    stopped_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (auto& h : handshakes_)
      if (auto live = h.lock()) live->abort();
    for (auto& link : reading_) link->socket.close(ec);
    io_.restart();
    io_.poll();  // the handlers cancelled above see stopped_ and return
  }

  Status open(const LaunchInfo& at) {
    const PeerAddress& me = at.peers.at(at.rank);
    detail::ListenAddress listen = detail::chooseListenAddress(at);
    tcp::endpoint endpoint(listen.address, me.port);
    boost::system::error_code ec = detail::listenOn(acceptor_, endpoint);
    if (ec)
      return Status(Code::kBootstrap, "cannot listen for replacements at " + me.toString() + " (" +
                                          detail::endpointString(endpoint) + "): " + ec.message());
    address_ = me.toString();
    accept();
    thread_ = std::thread([this] { io_.run(); });
    return Status::ok();
  }

  std::vector<PendingJoiner> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<PendingJoiner> out;
    for (auto& p : pending_) {
      if (p.link->alive())
        out.push_back(std::move(p));
      else
        log_->info("a replacement from {} left before it could join", p.remote);
    }
    pending_.clear();
    return out;
  }
  const std::string& address() const { return address_; }

 private:
  void accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (stopped_ || ec == asio::error::operation_aborted) return;
      if (!ec) onAccepted(std::move(socket));
      if (!ec) return accept();
      auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(50));
      retry->async_wait([this, retry](const boost::system::error_code& e) {
        if (!e && !stopped_) accept();
      });
    });
  }

  void refused(const std::string& remote, const std::string& why) {
    uint64_t heldBack = 0;
    if (refusedLog_.allow(log::LogRateLimit::Clock::now(), &heldBack))
      log_->warn("refused a replacement from {} at {}: {}{}", remote, address_, why,
                 heldBack ? " (" + std::to_string(heldBack) + " similar lines not logged)" : "");
  }

  void onAccepted(tcp::socket socket) {
    boost::system::error_code ec;
    auto endpoint = socket.remote_endpoint(ec);
    const std::string remote = ec ? "an unknown address" : detail::endpointString(endpoint);
    std::erase_if(handshakes_, [](const auto& h) { return h.expired(); });
    auto handshake = detail::Handshake::start(detail::Handshake::Role::kAcceptor, std::move(socket),
                                              detail::joinHandshake(credentials_, true),
                                              [this, remote](Result<std::unique_ptr<detail::Link>> link) {
                                                if (stopped_) return;
                                                if (!link.isOk()) return refused(remote, link.status().message());
                                                readRequest(std::shared_ptr<detail::Link>(link.take()), remote);
                                              });
    handshakes_.push_back(handshake);
  }

  // The request must follow the handshake within its timeout, so a silent member of the job
  // cannot hold a descriptor here.
  void readRequest(std::shared_ptr<detail::Link> link, const std::string& remote) {
    reading_.push_back(link);
    auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(credentials_.handshakeTimeoutMs));
    timer->async_wait([link](const boost::system::error_code& e) {
      boost::system::error_code ignored;
      if (!e) link->socket.close(ignored);
    });
    detail::readFrame(*link, [this, link, remote, timer](Result<std::string> payload) {
      timer->cancel();
      std::erase(reading_, link);
      if (stopped_) return;
      if (!payload.isOk()) return refused(remote, payload.status().message());
      if (payload.value()[0] != detail::kJoinRequestFrame) return refused(remote, "its first frame is no request");
      auto request = detail::decodeJoinRequest(std::string_view(payload.value()).substr(1));
      if (!request.isOk()) return refused(remote, request.status().message());
      const int fd = ::dup(link->socket.native_handle());
      boost::system::error_code ignored;
      link->socket.close(ignored);
      if (fd < 0) return refused(remote, std::string("dup: ") + std::strerror(errno));
      PendingJoiner joiner{request.take(), remote, link->key, std::make_shared<JoinerLink>(fd, link->sendSeq)};
      log_->info("a replacement from {} waits at {} to join", remote, address_);
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back(std::move(joiner));
    });
  }

  JoinCredentials credentials_;
  asio::io_context io_;  // declared before everything holding sockets: destroyed last
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  std::string address_;
  std::vector<std::weak_ptr<detail::Handshake>> handshakes_;  // the io thread's
  std::vector<std::shared_ptr<detail::Link>> reading_;        // the io thread's
  std::mutex mutex_;
  std::vector<PendingJoiner> pending_;
  log::LogRateLimit refusedLog_{10, std::chrono::seconds(10)};
  std::shared_ptr<spdlog::logger> log_;
};

Result<std::unique_ptr<JoinListener>> JoinListener::open(const LaunchInfo& at, JoinCredentials credentials) {
  if (at.rank < 0 || at.rank >= static_cast<int>(at.peers.size()))
    return Status(Code::kInvalidArgument, "join listener: rank " + std::to_string(at.rank) + " has no address among " +
                                              std::to_string(at.peers.size()));
  try {
    auto impl = std::make_unique<Impl>(std::move(credentials));
    TSR_RETURN_IF_ERROR(impl->open(at));
    return std::unique_ptr<JoinListener>(new JoinListener(std::move(impl)));
  } catch (const std::exception& e) {
    return Status(Code::kInternal, std::string("join listener: ") + e.what());
  }
}

JoinListener::JoinListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JoinListener::~JoinListener() = default;
std::vector<PendingJoiner> JoinListener::take() { return impl_->take(); }
const std::string& JoinListener::address() const { return impl_->address(); }

Status sendWelcome(PendingJoiner& joiner, const std::string& welcome, int timeoutMs) {
  return joiner.link->send(joiner.sessionKey, detail::kWelcomeFrame + welcome, timeoutMs);
}

std::string PendingJoiner::host() const {
  if (!request.host.empty()) return request.host;
  const size_t colon = remote.rfind(':');
  std::string host = remote.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

Result<Digest> joinKey(const std::string& jobSecret, const std::string& jobId) {
  return hmacSha256(jobSecret, {"tsr-join-key", jobId});
}

Result<Digest> sealForLink(const Digest& sessionKey, const std::string& label, const Digest& secret) {
  TSR_ASSIGN_OR_RETURN(Digest pad, hmacSha256(asView(sessionKey), {"tsr-seal", label}));
  Digest out = secret;
  for (size_t i = 0; i < out.size(); ++i) out[i] ^= pad[i];
  return out;
}

}  // namespace tsr::runtime
