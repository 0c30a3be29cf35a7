#include "base/port_reservation.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>

namespace tsr {

namespace {

// Lowest port of the ephemeral range; ports are picked from [kLowest, that).
constexpr int kLowest = 20000;

int ephemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 60999;
  if (in >> low >> high && low > kLowest + 1000) return low;
  return 32768;
}

}  // namespace

Result<PortReservation> PortReservation::reserve(int n, bool loopbackOnly) {
  PortReservation r;
  const int high = ephemeralLow();
  std::mt19937 rng(static_cast<unsigned>(getpid()) ^
                   static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::uniform_int_distribution<int> pick(kLowest, high - 1);
  int attempts = 0;
  while (static_cast<int>(r.ports_.size()) < n) {
    if (++attempts > 20000)
      return Status(Code::kInternal, "no free TCP port in " + std::to_string(kLowest) + ".." +
                                         std::to_string(high - 1) + " after 20000 attempts");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status(Code::kInternal, std::string("socket(): ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(loopbackOnly ? INADDR_LOOPBACK : INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(pick(rng)));
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd);  // taken (by anyone, including another reservation): try another
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    r.fds_.push_back(fd);
    r.ports_.push_back(ntohs(a.sin_port));
  }
  return r;
}

PortReservation::PortReservation(PortReservation&& other) noexcept
    : ports_(std::move(other.ports_)), fds_(std::move(other.fds_)) {
  other.fds_.clear();
}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    release();
    ports_ = std::move(other.ports_);
    fds_ = std::move(other.fds_);
    other.fds_.clear();
  }
  return *this;
}

PortReservation::~PortReservation() { release(); }

void PortReservation::release() {
  for (int fd : fds_) close(fd);
  fds_.clear();
}

}  // namespace tsr
