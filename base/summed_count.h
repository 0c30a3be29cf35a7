// Counts that ranks add up in an allreduce (how many had NaN or Inf, ...) and messages then
// print. Every rank's share comes from a peer, so the sum may be anything a double holds; it
// is only a count when it is a whole number in [0, limit], and converting anything else to an
// integer is undefined behaviour.
#pragma once

#include <cmath>
#include <string>

namespace tsr {

// "N <noun>" for a sum that is a count of at most `limit`; otherwise text naming the sum as
// malformed, for the same message.
inline std::string summedCount(double sum, long long limit, const std::string& noun) {
  if (sum >= 0 && sum <= static_cast<double>(limit) && sum == std::floor(sum))
    return std::to_string(static_cast<long long>(sum)) + " " + noun;
  return "some " + noun + " (the ranks' counts add up to " + std::to_string(sum) +
         ", which no count is: a peer sent a malformed value)";
}

}  // namespace tsr
