// LogRateLimit: at most `burst` lines per `window` for one kind of message, so a stranger
// who opens connection after connection cannot fill a rank's log (or its disk). The lines
// held back are counted, and the next line let through (or the caller's closing summary)
// says how many there were.
#pragma once

#include <chrono>
#include <cstdint>

namespace tsr::log {

class LogRateLimit {
 public:
  using Clock = std::chrono::steady_clock;

  LogRateLimit(int burst, Clock::duration window) : burst_(burst), window_(window) {}

  // Whether a line may be logged at `now`. When it may, *heldBack is how many were not logged
  // since the last line that was (to be said with it).
  bool allow(Clock::time_point now, uint64_t* heldBack) {
    if (used_ == 0 || now - windowStart_ >= window_) {
      windowStart_ = now;
      used_ = 0;
    }
    if (used_ >= burst_) {
      ++heldBack_;
      return false;
    }
    ++used_;
    *heldBack = heldBack_;
    heldBack_ = 0;
    return true;
  }

  // Lines held back since the last one let through; resets the count.
  uint64_t takeHeldBack() {
    uint64_t n = heldBack_;
    heldBack_ = 0;
    return n;
  }

 private:
  int burst_;
  Clock::duration window_;
  Clock::time_point windowStart_{};
  int used_ = 0;
  uint64_t heldBack_ = 0;
};

}  // namespace tsr::log
