#include "runtime/bootstrap/listen_address.h"

#include <set>

namespace tsr::runtime::detail {

namespace {

namespace ip = boost::asio::ip;

// An address is this machine's when a socket can be bound to it.
bool isLocal(const ip::address& address) {
  boost::asio::io_context io;
  ip::tcp::acceptor probe(io);
  boost::system::error_code ec;
  probe.open(address.is_v6() ? ip::tcp::v6() : ip::tcp::v4(), ec);
  if (!ec) probe.bind(ip::tcp::endpoint(address, 0), ec);
  return !ec;
}

bool isLoopbackName(const std::string& host) {
  boost::system::error_code ec;
  auto literal = ip::make_address(host, ec);
  return host == "localhost" || (!ec && literal.is_loopback());
}

// Every rank on this machine: the peers name loopback, or this rank's own host.
bool allPeersHere(const LaunchInfo& info) {
  const std::string& mine = info.peers[info.rank].host;
  for (const PeerAddress& peer : info.peers)
    if (peer.host != mine && !isLoopbackName(peer.host)) return false;
  return true;
}

ListenAddress everyInterface(bool v6, std::string why) {
  ListenAddress out;
  out.address = v6 ? ip::address(ip::address_v6::any()) : ip::address(ip::address_v4::any());
  out.everyInterface = true;
  out.why = std::move(why);
  return out;
}

}  // namespace

ListenAddress chooseListenAddress(const LaunchInfo& info) {
  const std::string& host = info.peers[info.rank].host;
  const bool v6 = host.find(':') != std::string::npos;
  boost::system::error_code ec;
  ip::address literal = ip::make_address(host, ec);
  if (!ec) {
    if (literal.is_unspecified()) return everyInterface(v6, "the address is a wildcard");
    if (!isLocal(literal)) return everyInterface(v6, "it is not an address of this machine");
    return {literal, false, "the address in TSR_PEERS"};
  }
  // A name: resolved as the peers dialling it resolve it (IPv4, ring_join.cc).
  boost::asio::io_context io;
  ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(ip::tcp::v4(), host, "", ec);
  std::set<ip::address> addresses;
  if (!ec)
    for (const auto& entry : results) addresses.insert(entry.endpoint().address());
  if (addresses.size() != 1) return everyInterface(v6, "'" + host + "' does not resolve to one address here");
  ip::address address = *addresses.begin();
  if (address.is_loopback() && !allPeersHere(info))
    return everyInterface(
        v6, "'" + host + "' resolves to loopback here, and peers on other hosts reach it by another address");
  if (!isLocal(address)) return everyInterface(v6, "'" + host + "' is not an address of this machine");
  return {address, false, "'" + host + "' resolves to it"};
}

boost::system::error_code listenOn(ip::tcp::acceptor& acceptor, const ip::tcp::endpoint& endpoint) {
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  return ec;
}

}  // namespace tsr::runtime::detail
