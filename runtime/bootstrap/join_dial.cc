// The replacement's side of joining (join_link.h): dial the members in turn, authenticate,
// ask, wait for a welcome; a member refused, gone or closing is left for the next one.
#include <algorithm>
#include <thread>

#include "base/logging.h"
#include "runtime/bootstrap/join_wire.h"

namespace tsr::runtime {

using detail::asio::ip::tcp;
namespace asio = detail::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);

// Runs `io` until *done or the deadline; then `cancel` and runs until the handlers have ended.
template <typename Cancel>
void runUntil(asio::io_context& io, Clock::time_point deadline, const bool* done, Cancel cancel) {
  io.restart();
  while (!*done && Clock::now() < deadline)
    if (io.run_one_until(deadline) == 0 && io.stopped()) io.restart();
  if (*done) return;
  cancel();
  io.restart();
  while (!*done) io.run_one();
}

// Connected and authenticated to one member, or why not.
Result<std::shared_ptr<detail::Link>> dial(asio::io_context& io, const PeerAddress& member,
                                           const JoinCredentials& credentials, Clock::time_point deadline) {
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(member.host, std::to_string(member.port), ec);
  if (ec || endpoints.empty()) return Status(Code::kBootstrap, "cannot resolve it: " + ec.message());
  tcp::socket socket(io);
  bool connected = false;
  boost::system::error_code connectError;
  socket.async_connect(*endpoints.begin(), [&](const boost::system::error_code& e) {
    connectError = e;
    connected = true;
  });
  runUntil(io, deadline, &connected, [&] { socket.close(ec); });
  if (connectError) return Status(Code::kBootstrap, "cannot connect: " + connectError.message());
  bool shaken = false;
  Result<std::shared_ptr<detail::Link>> out = Status(Code::kInternal, "no handshake");
  // The handshake ends by itself within its timeout (then `done` runs with the reason).
  auto handshake = detail::Handshake::start(detail::Handshake::Role::kConnector, std::move(socket),
                                            detail::joinHandshake(credentials, false),
                                            [&](Result<std::unique_ptr<detail::Link>> link) {
                                              if (link.isOk())
                                                out = std::shared_ptr<detail::Link>(link.take());
                                              else
                                                out = link.status();
                                              shaken = true;
                                            });
  runUntil(io, Clock::time_point::max(), &shaken, [] {});
  return out;
}

// Sends the request and waits for the welcome until the deadline.
Result<std::string> askAndWait(asio::io_context& io, detail::Link& link, const JoinRequest& mine,
                               Clock::time_point deadline) {
  TSR_ASSIGN_OR_RETURN(
      std::string frame,
      wire::encodeFrame(link.key, link.sendSeq++, detail::kJoinRequestFrame + detail::encodeJoinRequest(mine)));
  boost::system::error_code ec;
  asio::write(link.socket, asio::buffer(frame), ec);
  if (ec) return Status(Code::kBootstrap, "sending the request: " + ec.message());
  bool done = false;
  Result<std::string> welcome = Status(Code::kTimeout, "no welcome before the deadline");
  detail::readFrame(link, [&](Result<std::string> payload) {
    if (!payload.isOk())
      welcome = Status(payload.status().code(), "took the request, then " + payload.status().message());
    else if (payload.value()[0] != detail::kWelcomeFrame)
      welcome = Status(Code::kBootstrap, "answered with a frame that is no welcome");
    else
      welcome = payload.value().substr(1);
    done = true;
  });
  runUntil(io, deadline, &done, [&] { link.socket.close(ec); });
  return welcome;
}

}  // namespace

Result<Welcome> requestToJoin(const std::vector<PeerAddress>& members, const JoinCredentials& credentials,
                              const JoinRequest& mine, int timeoutMs) {
  if (members.empty()) return Status(Code::kInvalidArgument, "join: no member address to ask");
  try {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    asio::io_context io;
    std::vector<std::string> lastError(members.size(), "not asked");
    auto backoff = kFirstBackoff;
    while (Clock::now() < deadline) {
      for (size_t i = 0; i < members.size() && Clock::now() < deadline; ++i) {
        auto link = dial(io, members[i], credentials, deadline);
        if (!link.isOk()) {
          lastError[i] = link.status().message();
          continue;
        }
        log::get("bootstrap")->info("join: {} took the request; waiting to be let in", members[i].toString());
        auto welcome = askAndWait(io, *link.value(), mine, deadline);
        if (welcome.isOk()) return Welcome{welcome.take(), link.value()->key, members[i].toString()};
        lastError[i] = welcome.status().message();
      }
      std::this_thread::sleep_until(std::min(deadline, Clock::now() + backoff));
      backoff = std::min(kMaxBackoff, backoff * 2);
    }
    std::string why;
    for (size_t i = 0; i < members.size(); ++i) why += (i ? "; " : "") + members[i].toString() + ": " + lastError[i];
    return Status(Code::kTimeout,
                  "join: no member let this process in within " + std::to_string(timeoutMs) + " ms (" + why + ")");
  } catch (const std::exception& e) {
    return Status(Code::kInternal, std::string("join: ") + e.what());
  }
}

}  // namespace tsr::runtime
