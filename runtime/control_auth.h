// Authenticated control messages (abort, mismatch and goodbye notices).
//
// They travel over UCX, where the tag's sender rank is whatever the sender wrote, and any
// process that reaches a worker's UCX address can post to it; unauthenticated, a stranger
// could end a job with one "goodbye". So each one is sealed:
//
//   counter (u64, big-endian) | body | HMAC-SHA256(K, "tsr-control" | comm | from | to | counter | body)
//
// K is the communicator's control key (deriveControlKey), the same on every rank. The MAC
// binds the claimed sender and the receiver, so a message cannot be re-labelled or redirected;
// the counter grows with every message a rank seals, and a receiver accepts from each sender
// only counters above the last it accepted, so a genuine message replayed is dropped. A fresh
// key per communicator stops replays from an earlier job or communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/bootstrap/hmac.h"

namespace tsr::runtime {

inline constexpr size_t kControlNonceBytes = 32;
inline constexpr size_t kControlOverhead = 8 + kDigestBytes;  // counter and MAC

// The control key of one communicator instance: HMAC(secret, label | job id | every rank's
// bootstrap card in rank order). Each card carries a fresh random nonce, and the bootstrap's
// all-gather is authenticated, so every rank derives the same key and no other job or
// communicator has it.
Result<Digest> deriveControlKey(std::string_view secret, std::string_view jobId, const std::vector<std::string>& cards);

class ControlAuth {
 public:
  ControlAuth(const Digest& key, int rank, int size, uint32_t comm);

  // The wire bytes of `body` from this rank to rank `to`; each call takes the next counter.
  Result<std::string> seal(int to, std::string_view body);
  // The body of a message that claims to come from rank `from` (the tag's source), if its MAC
  // is right for this rank and its counter is new; else why not. Accepting one advances that
  // sender's counter. The view points into `wire`.
  Result<std::string_view> open(int from, std::string_view wire);

 private:
  Result<Digest> mac(int from, int to, std::string_view counter, std::string_view body) const;

  std::string key_;
  int rank_;
  int size_;
  uint32_t comm_;
  uint64_t sent_ = 0;            // the last counter this rank sealed
  std::vector<uint64_t> heard_;  // per sender, the last counter accepted (0: none)
};

}  // namespace tsr::runtime
