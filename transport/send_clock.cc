#include "transport/send_clock.h"

namespace tsr::transport {

void SendClock::posted(int peer, Clock::time_point now) {
  Peer& p = peers_[peer];
  if (p.inFlight++ == 0) p.busySince = now;
}

void SendClock::completed(int peer, size_t bytes, Clock::time_point now) {
  Peer& p = peers_[peer];
  if (p.inFlight == 0) return;
  p.total.bytes += bytes;
  if (--p.inFlight == 0) p.total.busySeconds += std::chrono::duration<double>(now - p.busySince).count();
}

std::vector<PeerSendTime> SendClock::totals(Clock::time_point now) const {
  std::vector<PeerSendTime> out;
  out.reserve(peers_.size());
  for (const Peer& p : peers_) {
    PeerSendTime t = p.total;
    if (p.inFlight > 0) t.busySeconds += std::chrono::duration<double>(now - p.busySince).count();
    out.push_back(t);
  }
  return out;
}

}  // namespace tsr::transport
