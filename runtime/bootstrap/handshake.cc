#include "runtime/bootstrap/handshake.h"

#include "base/logging.h"
#include "runtime/bootstrap/join_wire.h"

namespace tsr::runtime::detail {

std::string endpointString(const tcp::endpoint& endpoint) {
  std::string host = endpoint.address().to_string();
  if (endpoint.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}

std::shared_ptr<Handshake> Handshake::start(Role role, tcp::socket socket, HandshakeParams params, LinkCallback done) {
  auto handshake = std::make_shared<Handshake>(role, std::move(socket), std::move(params), std::move(done));
  handshake->begin();
  return handshake;
}

Handshake::Handshake(Role role, tcp::socket socket, HandshakeParams params, LinkCallback done)
    : role_(role),
      socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      params_(std::move(params)),
      done_(std::move(done)) {
  boost::system::error_code ec;
  auto endpoint = socket_.remote_endpoint(ec);
  remote_ = ec ? "an unknown address" : endpointString(endpoint);
}

void Handshake::abort() {
  finished_ = true;
  boost::system::error_code ec;
  timer_.cancel();
  socket_.close(ec);
}

void Handshake::fail(const std::string& why) {
  if (finished_) return;
  finished_ = true;
  boost::system::error_code ec;
  timer_.cancel();
  socket_.close(ec);
  done_(Status(Code::kBootstrap, why));
}

void Handshake::readError(const boost::system::error_code& ec, const char* waitingFor) {
  if (ec == asio::error::eof || ec == asio::error::connection_reset) {
    if (role_ == Role::kConnector && std::string(waitingFor) == "answer" && params_.peerRank == kJoinMemberRank)
      fail("the member at " + remote_ +
           " closed the connection instead of answering: it refused our claim to join (a member still in its "
           "first bootstrap, whose door for replacements opens at its first grow; or another job's secret)");
    else if (role_ == Role::kConnector && std::string(waitingFor) == "answer")
      fail("rank " + std::to_string(params_.peerRank) + " at " + remote_ +
           " closed the connection instead of answering: it refused our claim (wrong job "
           "secret or job id?)");
    else
      fail("connection closed by " + remote_ + " before the " + waitingFor + " arrived");
    return;
  }
  fail("reading the " + std::string(waitingFor) + " from " + remote_ + ": " + ec.message());
}

void Handshake::begin() {
  auto self = shared_from_this();
  timer_.expires_after(params_.timeout);
  timer_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec) self->fail("no complete handshake within " + std::to_string(self->params_.timeout.count()) + " ms");
  });
  if (role_ == Role::kConnector) {
    buffer_.assign(wire::kHelloBytes, '\0');
    asio::async_read(socket_, asio::buffer(buffer_), [self](const boost::system::error_code& ec, size_t) {
      if (self->finished_) return;
      if (ec) return self->readError(ec, "greeting");
      auto nonce = wire::decodeHello(self->buffer_);
      if (!nonce.isOk()) return self->fail(nonce.status().message());
      self->acceptorNonce_ = nonce.value();
      self->connectorSendClaim();
    });
    return;
  }
  Status s = randomBytes(acceptorNonce_.data(), acceptorNonce_.size());
  if (!s.isOk()) return fail(s.message());
  buffer_ = wire::encodeHello(acceptorNonce_);
  asio::async_write(socket_, asio::buffer(buffer_), [self](const boost::system::error_code& ec, size_t) {
    if (self->finished_) return;
    if (ec) return self->fail("sending the greeting to " + self->remote_ + ": " + ec.message());
    self->acceptorReadClaimHead();
  });
}

void Handshake::acceptorReadClaimHead() {
  auto self = shared_from_this();
  buffer_.assign(wire::kClaimHeadBytes, '\0');
  asio::async_read(socket_, asio::buffer(buffer_), [self](const boost::system::error_code& ec, size_t) {
    if (self->finished_) return;
    if (ec) return self->readError(ec, "claim");
    auto head = wire::decodeClaimHead(self->buffer_);
    if (!head.isOk()) return self->fail(head.status().message());
    self->acceptorReadClaimTail(head.value());
  });
}

void Handshake::acceptorReadClaimTail(wire::ClaimHead head) {
  auto self = shared_from_this();
  buffer_.assign(head.tailBytes(), '\0');
  asio::async_read(socket_, asio::buffer(buffer_), [self, head](const boost::system::error_code& ec, size_t) {
    if (self->finished_) return;
    if (ec) return self->readError(ec, "claim");
    wire::Claim claim = wire::decodeClaimTail(head, self->buffer_);
    const HandshakeParams& p = self->params_;
    // Verified before anything it claims is believed or echoed.
    Status mac = wire::verifyClaim(p.secret, self->acceptorNonce_, claim);
    if (!mac.isOk()) return self->fail(mac.message());
    if (claim.jobId != p.jobId)
      return self->fail("holds the job secret but claims job id '" + log::printable(claim.jobId) +
                        "', which is not this job's");
    if (static_cast<int>(claim.rank) != p.peerRank)
      return self->fail("authenticated as rank " + std::to_string(claim.rank) + ", but only rank " +
                        std::to_string(p.peerRank) + " (the left neighbour) may connect here");
    self->connectorNonce_ = claim.nonce;
    auto answer =
        wire::encodeAnswer(p.secret, self->acceptorNonce_, self->connectorNonce_, p.jobId, p.myRank, p.peerRank);
    if (!answer.isOk()) return self->fail(answer.status().message());
    self->buffer_ = answer.take();
    asio::async_write(self->socket_, asio::buffer(self->buffer_), [self](const boost::system::error_code& ec2, size_t) {
      if (self->finished_) return;
      if (ec2) return self->fail("sending the answer to " + self->remote_ + ": " + ec2.message());
      self->succeed();
    });
  });
}

void Handshake::connectorSendClaim() {
  auto self = shared_from_this();
  Status s = randomBytes(connectorNonce_.data(), connectorNonce_.size());
  if (!s.isOk()) return fail(s.message());
  auto claim = wire::encodeClaim(params_.secret, acceptorNonce_, params_.myRank, params_.jobId, connectorNonce_);
  if (!claim.isOk()) return fail(claim.status().message());
  buffer_ = claim.take();
  asio::async_write(socket_, asio::buffer(buffer_), [self](const boost::system::error_code& ec, size_t) {
    if (self->finished_) return;
    if (ec) return self->fail("sending the claim to " + self->remote_ + ": " + ec.message());
    self->connectorReadAnswer();
  });
}

void Handshake::connectorReadAnswer() {
  auto self = shared_from_this();
  buffer_.assign(wire::kAnswerBytes, '\0');
  asio::async_read(socket_, asio::buffer(buffer_), [self](const boost::system::error_code& ec, size_t) {
    if (self->finished_) return;
    if (ec) return self->readError(ec, "answer");
    auto answer = wire::decodeAnswer(self->buffer_);
    if (!answer.isOk()) return self->fail(answer.status().message());
    const HandshakeParams& p = self->params_;
    Status mac =
        wire::verifyAnswer(p.secret, self->acceptorNonce_, self->connectorNonce_, p.jobId, p.myRank, answer.value());
    if (!mac.isOk()) return self->fail(self->remote_ + ": " + mac.message());
    if (static_cast<int>(answer.value().rank) != p.peerRank)
      return self->fail(self->remote_ + " answered as rank " + std::to_string(answer.value().rank) +
                        ", expected rank " + std::to_string(p.peerRank));
    self->succeed();
  });
}

void Handshake::succeed() {
  if (finished_) return;
  const HandshakeParams& p = params_;
  int connector = role_ == Role::kConnector ? p.myRank : p.peerRank;
  int acceptor = role_ == Role::kConnector ? p.peerRank : p.myRank;
  auto key = wire::sessionKey(p.secret, acceptorNonce_, connectorNonce_, p.jobId, static_cast<uint32_t>(connector),
                              static_cast<uint32_t>(acceptor));
  if (!key.isOk()) return fail(key.status().message());
  finished_ = true;
  timer_.cancel();
  boost::system::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  auto link = std::make_unique<Link>(std::move(socket_));
  link->peerRank = p.peerRank;
  link->remote = remote_;
  link->key = key.value();
  done_(std::move(link));
}

Status dialOnce(const PeerAddress& address, const HandshakeParams& params) {
  try {
    asio::io_context io;
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(address.host, std::to_string(address.port), ec);
    if (ec || endpoints.empty())
      return Status(Code::kBootstrap, "cannot resolve " + address.toString() + ": " + ec.message());
    tcp::socket socket(io);
    socket.connect(*endpoints.begin(), ec);
    if (ec) return Status(Code::kBootstrap, "cannot connect to " + address.toString() + ": " + ec.message());
    Status result(Code::kInternal, "handshake did not finish");
    auto handshake = Handshake::start(
        Handshake::Role::kConnector, std::move(socket), params,
        [&result](Result<std::unique_ptr<Link>> link) { result = link.isOk() ? Status::ok() : link.status(); });
    io.run();
    return result;
  } catch (const std::exception& e) {
    return Status(Code::kInternal, std::string("dialOnce: ") + e.what());
  }
}

}  // namespace tsr::runtime::detail
