#include "runtime/neighbour_watch.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace tsr::runtime {

namespace {
constexpr auto kCheckEvery = std::chrono::milliseconds(50);
constexpr auto kHeartbeatEvery = std::chrono::milliseconds(250);

void sendByte(int fd, char byte) { [[maybe_unused]] ssize_t n = send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT); }
}  // namespace

NeighbourWatch::NeighbourWatch(std::vector<std::pair<int, int>> sockets) {
  auto now = Clock::now();
  for (auto [peer, fd] : sockets) neighbours_.push_back({peer, fd, false, now});
}

std::optional<NeighbourWatch::Event> NeighbourWatch::poll(Clock::time_point now,
                                                          std::chrono::milliseconds silenceLimit) {
  if (now < nextCheck_) return std::nullopt;
  nextCheck_ = now + kCheckEvery;
  if (now >= nextHeartbeat_) {
    nextHeartbeat_ = now + kHeartbeatEvery;
    for (const Neighbour& n : neighbours_)
      if (!n.done) sendByte(n.fd, 'H');
  }
  for (Neighbour& n : neighbours_) {
    if (n.done) continue;
    pollfd p{n.fd, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0) {
      char bytes[256];
      ssize_t got = recv(n.fd, bytes, sizeof bytes, MSG_DONTWAIT);
      if (got > 0) {
        n.lastHeard = now;
        for (ssize_t i = 0; i < got; ++i)
          if (bytes[i] == 'B') n.done = true;  // goodbye: it destroyed its communicator
        continue;
      }
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      n.done = true;
      return Event{Event::kDied, n.peer, std::chrono::milliseconds(0)};
    }
    auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - n.lastHeard);
    if (silenceLimit.count() > 0 && silent > silenceLimit) {
      n.done = true;
      return Event{Event::kSilent, n.peer, silent};
    }
  }
  return std::nullopt;
}

void NeighbourWatch::sayGoodbye() {
  for (Neighbour& n : neighbours_) {
    if (!n.done) sendByte(n.fd, 'B');
    n.done = true;
  }
}

}  // namespace tsr::runtime
