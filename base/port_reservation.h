// PortReservation: TCP ports for bootstrap listeners, chosen so nobody else can be handed them
// between the choice and the listen.
//
// Ports come from below the kernel's ephemeral range (ip_local_port_range), so no bind(0)
// anywhere on the machine (UCX's own listeners, other tests) can pick them. Each is held by a
// bound, non-listening socket: bound without SO_REUSEADDR (so the port is ours alone), then
// flagged SO_REUSEADDR, which lets a listener that also sets it (the bootstrap acceptor) bind
// and listen while the reservation still holds the port.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace tsr {

class PortReservation {
 public:
  // n distinct ports on 127.0.0.1 (loopbackOnly) or on every interface.
  static Result<PortReservation> reserve(int n, bool loopbackOnly);
  PortReservation() = default;
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();

  const std::vector<uint16_t>& ports() const { return ports_; }

 private:
  void release();
  std::vector<uint16_t> ports_;
  std::vector<int> fds_;
};

}  // namespace tsr
