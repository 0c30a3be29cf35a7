// Joining the bootstrap ring: accept the left neighbour and dial the right one, concurrently,
// until both links are authenticated or the deadline passes (internal header, uses Asio).
//
// Accepting: every incoming connection runs its own acceptor handshake, so strangers (garbage,
// wrong secret, wrong rank, silence) are refused and logged (10 lines every 10 s at most, the
// rest counted) while the real left neighbour still gets in. Dialling: refused or failed attempts are retried with a
// backoff of 10 ms doubling to 500 ms.
#pragma once

#include <memory>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/handshake.h"

namespace tsr::runtime::detail {

struct RingLinks {
  std::unique_ptr<Link> left;   // from rank (r-1+N) % N; we read from it
  std::unique_ptr<Link> right;  // to rank (r+1) % N; we write to it
};

// `acceptor` is already listening on this rank's bootstrap port. Runs `io` on the calling
// thread until done; leaves no pending work that refers to the join. On failure, the link that
// was formed (if any) goes to `partial`, so the caller can say why it leaves.
Result<RingLinks> joinRing(asio::io_context& io, tcp::acceptor& acceptor, const LaunchInfo& info,
                           const BootstrapOptions& options, RingLinks* partial = nullptr);

}  // namespace tsr::runtime::detail
