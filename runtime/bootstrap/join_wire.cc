#include "runtime/bootstrap/join_wire.h"

#include <charconv>

namespace tsr::runtime::detail {

HandshakeParams joinHandshake(const JoinCredentials& credentials, bool member) {
  HandshakeParams p;
  p.myRank = member ? kJoinMemberRank : kJoinerRank;
  p.peerRank = member ? kJoinerRank : kJoinMemberRank;
  p.jobId = credentials.jobId + "/join";
  p.secret = credentials.key;
  p.timeout = std::chrono::milliseconds(credentials.handshakeTimeoutMs);
  return p;
}

std::string encodeJoinRequest(const JoinRequest& request) {
  return request.host + "\n" + std::to_string(request.port) + "\n" + request.hostId;
}

Result<JoinRequest> decodeJoinRequest(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status(Code::kBootstrap, "join request '" + std::string(text.substr(0, 200)) + "': " + why);
  };
  const size_t a = text.find('\n');
  const size_t b = a == std::string_view::npos ? a : text.find('\n', a + 1);
  if (b == std::string_view::npos) return bad("not host, port and host id on three lines");
  JoinRequest r;
  r.host = std::string(text.substr(0, a));
  std::string_view port = text.substr(a + 1, b - a - 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
    return bad("port '" + std::string(port) + "' is not in 1..65535");
  r.port = static_cast<uint16_t>(value);
  r.hostId = std::string(text.substr(b + 1));
  if (r.host.find_first_of(" \n") != std::string::npos) return bad("the host has a space or newline");
  return r;
}

void readFrame(Link& link, std::function<void(Result<std::string>)> done) {
  auto head = std::make_shared<std::string>(wire::kFrameHeadBytes, '\0');
  asio::async_read(link.socket, asio::buffer(*head), [&link, head, done](const boost::system::error_code& ec, size_t) {
    if (ec) return done(Status(Code::kBootstrap, link.remote + " closed the link: " + ec.message()));
    const wire::FrameHead h = wire::decodeFrameHead(*head);
    if (h.seq != link.recvSeq || h.length == 0 || h.length > kMaxJoinFrameBytes)
      return done(Status(Code::kBootstrap, link.remote + " sent a frame of sequence " + std::to_string(h.seq) +
                                               " and " + std::to_string(h.length) + " bytes (want sequence " +
                                               std::to_string(link.recvSeq) + ", 1 to " +
                                               std::to_string(kMaxJoinFrameBytes) + " bytes)"));
    auto body = std::make_shared<std::string>(h.length + kDigestBytes, '\0');
    asio::async_read(link.socket, asio::buffer(*body),
                     [&link, body, h, done](const boost::system::error_code& ec2, size_t) {
                       if (ec2)
                         return done(Status(Code::kBootstrap, link.remote + " closed the link: " + ec2.message()));
                       std::string_view all(*body);
                       Status mac = wire::verifyFrame(link.key, h.seq, all.substr(0, h.length), all.substr(h.length));
                       if (!mac.isOk()) return done(Status(Code::kBootstrap, mac.message() + " from " + link.remote));
                       ++link.recvSeq;
                       done(body->substr(0, h.length));
                     });
  });
}

}  // namespace tsr::runtime::detail
