#include "runtime/slow_link_watch.h"

#include <algorithm>

namespace tsr::runtime {

SlowLinkWatch::SlowLinkWatch(std::vector<double> expected, Options options)
    : expected_(std::move(expected)), options_(options), last_(expected_.size()), quietUntil_(expected_.size()) {
  if (std::none_of(expected_.begin(), expected_.end(), [](double e) { return e > 0; }))
    expected_.clear();  // nothing to judge: due() stays false
}

std::vector<SlowLinkWatch::Slow> SlowLinkWatch::judge(Clock::time_point now,
                                                      const std::vector<transport::PeerSendTime>& totals) {
  std::vector<Slow> slow;
  if (totals.size() != expected_.size()) return slow;  // a transport that does not measure
  bool first = next_ == Clock::time_point{};
  next_ = now + options_.window;
  for (size_t r = 0; r < totals.size(); ++r) {
    uint64_t bytes = totals[r].bytes - last_[r].bytes;
    double busy = totals[r].busySeconds - last_[r].busySeconds;
    last_[r] = totals[r];
    if (first || expected_[r] <= 0 || bytes < options_.minBytes || busy <= 0) continue;
    double rate = static_cast<double>(bytes) / busy;
    if (rate >= options_.fraction * expected_[r] || now < quietUntil_[r]) continue;
    quietUntil_[r] = now + options_.quiet;
    slow.push_back({static_cast<int>(r), rate, expected_[r], bytes, busy});
  }
  return slow;
}

}  // namespace tsr::runtime
