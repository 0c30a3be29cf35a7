// SlowLinkWatch: names a peer whose link has become much slower than the job measured it at
// creation (a congested or degraded network port, a host whose NIC renegotiated down), so the
// user learns why the job crawls instead of only that it does. It warns, nothing more: the
// collectives still complete, at the slow link's pace.
//
// Every `window` the engine hands it the transport's per-peer send times (send_clock.h); for
// each peer with an expected rate (links to other hosts: the cost model's net figure, probed or
// TSR_LINK_BW) that took at least `minBytes` in the window, the rate it delivered is compared
// with the expected one. Below `fraction` of it, the peer is named, at most once a minute.
// A slowed host link shows on both its ring neighbours: the rank sending to it names it, and it
// names the rank it sends to (its own side of the link is the slow one). Pure logic.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "transport/send_clock.h"

namespace tsr::runtime {

class SlowLinkWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::chrono::milliseconds window{2000};
    double fraction = 0.25;
    uint64_t minBytes = 4u << 20;
    std::chrono::seconds quiet{60};  // after a warning, the same peer's next one
  };
  struct Slow {
    int peer;
    double bytesPerSecond;  // delivered in the window
    double expected;
    uint64_t bytes;
    double busySeconds;
  };

  // expected[r]: bytes/s the link to rank r was measured at; 0: not judged (itself, same host).
  SlowLinkWatch(std::vector<double> expected, Options options);
  SlowLinkWatch() : SlowLinkWatch({}, Options{}) {}

  bool due(Clock::time_point now) const { return !expected_.empty() && now >= next_; }
  // The peers found slow since the last judgement (empty until the window has passed).
  std::vector<Slow> judge(Clock::time_point now, const std::vector<transport::PeerSendTime>& totals);

 private:
  std::vector<double> expected_;
  Options options_;
  std::vector<transport::PeerSendTime> last_;
  std::vector<Clock::time_point> quietUntil_;
  Clock::time_point next_{};
};

}  // namespace tsr::runtime
