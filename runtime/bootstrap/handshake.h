// One ring link's mutual authentication, run asynchronously on an io_context (internal header:
// it brings in Boost.Asio; only the bootstrap's own .cc files and tests include it).
//
// The acceptor greets with a nonce, the connector proves it holds the job secret and is the
// expected rank, the acceptor proves the same back (see wire.h for the bytes). A handshake that
// is not complete within its timeout is abandoned, so a silent stranger cannot hold a rank up.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "base/status.h"
#include "runtime/bootstrap/launch_env.h"
#include "runtime/bootstrap/wire.h"

namespace tsr::runtime::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// An authenticated, one-way-used ring connection and what protects its frames.
struct Link {
  explicit Link(tcp::socket s) : socket(std::move(s)) {}
  tcp::socket socket;
  int peerRank = -1;
  std::string remote;  // the other end's address, for messages
  wire::Mac key{};     // session key for frame MACs
  uint64_t sendSeq = 0;
  uint64_t recvSeq = 0;
};

struct HandshakeParams {
  int myRank = 0;
  int peerRank = 0;  // the only rank allowed at the other end
  std::string jobId;
  std::string secret;
  std::chrono::milliseconds timeout{2000};
};

using LinkCallback = std::function<void(Result<std::unique_ptr<Link>>)>;

class Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  enum class Role { kAcceptor, kConnector };

  // Starts the handshake on a connected socket; `done` runs once, on the io_context's thread,
  // with the link or the reason it was refused (unless abort() comes first).
  static std::shared_ptr<Handshake> start(Role role, tcp::socket socket, HandshakeParams params, LinkCallback done);
  // Closes the socket without calling `done`.
  void abort();

  Handshake(Role role, tcp::socket socket, HandshakeParams params, LinkCallback done);

 private:
  void begin();
  void fail(const std::string& why);
  void readError(const boost::system::error_code& ec, const char* waitingFor);
  void succeed();
  void acceptorReadClaimHead();
  void acceptorReadClaimTail(wire::ClaimHead head);
  void connectorSendClaim();
  void connectorReadAnswer();

  Role role_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  HandshakeParams params_;
  LinkCallback done_;
  bool finished_ = false;
  std::string remote_;
  wire::Nonce acceptorNonce_{};
  wire::Nonce connectorNonce_{};
  std::string buffer_;
};

// "host:port" of an endpoint ("[v6]:port" for IPv6).
std::string endpointString(const tcp::endpoint& endpoint);

// Dials `address` once and runs the connector side with `params`, blocking; Ok when both sides
// authenticated. Tests use it to play a stranger (wrong secret, wrong rank).
Status dialOnce(const PeerAddress& address, const HandshakeParams& params);

}  // namespace tsr::runtime::detail
