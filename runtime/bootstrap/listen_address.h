// Which address a rank's bootstrap listens on (internal header: it brings in Boost.Asio).
//
// The address its own TSR_PEERS entry names, so a job whose peers are all on loopback is not
// reachable from the network: every interface only when that entry is a wildcard (0.0.0.0,
// ::), is not an address of this machine (NAT, a container's published address), or is a
// name this machine cannot pin to one of its own addresses the way its peers will resolve it
// (a name resolving to several addresses, or to loopback while peers are on other hosts, as
// Debian's /etc/hosts entry 127.0.1.1 for the machine's own name does).
#pragma once

#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "runtime/bootstrap/launch_env.h"

namespace tsr::runtime::detail {

struct ListenAddress {
  boost::asio::ip::address address;
  bool everyInterface = false;
  std::string why;  // for the log: why this address
};

ListenAddress chooseListenAddress(const LaunchInfo& info);

// Opens `acceptor` listening on `endpoint` (SO_REUSEADDR, so a port reservation may still
// hold it: base/port_reservation.h); the first error, if any.
boost::system::error_code listenOn(boost::asio::ip::tcp::acceptor& acceptor,
                                   const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace tsr::runtime::detail
