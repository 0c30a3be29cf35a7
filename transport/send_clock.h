// SendClock: how fast each peer takes this rank's large sends, for the slow-link warning
// (runtime/slow_link_watch.h).
//
// A peer's clock runs while at least one large send to it is in flight, so concurrent sends
// count their overlap once: busy seconds are the wall time the link to that peer was kept busy,
// and bytes / busy seconds is the rate it delivered. Sends that complete at once (buffered) and
// small ones say nothing about the link and are not counted. Pure logic; the transport calls it
// on its progress thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tsr::transport {

struct PeerSendTime {
  uint64_t bytes = 0;  // of completed large sends
  double busySeconds = 0;
};

class SendClock {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kLargeSendBytes = 64 * 1024;

  explicit SendClock(int size = 0) : peers_(size) {}

  void posted(int peer, Clock::time_point now);
  void completed(int peer, size_t bytes, Clock::time_point now);
  // Totals so far, per rank (busy time of sends still in flight included up to `now`).
  std::vector<PeerSendTime> totals(Clock::time_point now) const;

 private:
  struct Peer {
    PeerSendTime total;
    int inFlight = 0;
    Clock::time_point busySince;
  };
  std::vector<Peer> peers_;
};

}  // namespace tsr::transport
