// ShrinkAgreement: how the live ranks of a communicator agree on who failed before they build
// the survivors' communicator (Communicator::shrink, tsr_comm_shrink; as ULFM's
// MPIX_Comm_shrink). Pure logic: the communicator carries its messages over the control
// channel and feeds it what the transport and the neighbour watch know.
//
// Each rank holds a set of lost ranks: those it saw fail, and those any live peer said were
// lost (sets only grow: a rank once lost stays lost, as a peer that stalled past the timeout
// and wakes up must not come back with stale state). Whenever its set grows it sends the set,
// with the bootstrap port it reserved for the new communicator, to every rank it still
// counts as live. It has agreed when every live peer's latest message carries the same set as
// its own. A peer that has not agreed by the deadline is declared lost (expire()).
//
// Only a majority goes on: survivors must be more than half of the communicator's ranks, so
// the two sides of a network partition can never both build a communicator and train apart.
//
// A failure seen by some survivors only after others had agreed leaves them with different
// sets: their new communicators' secrets (derived from the set) differ, so the bootstrap
// between them fails, naming it, instead of building a communicator with a dead member.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::runtime {

struct ShrinkMessage {
  uint32_t epoch = 0;      // the communicator's shrink count: one agreement at a time
  uint16_t port = 0;       // the sender's bootstrap port for the new communicator
  std::vector<bool> lost;  // per rank of the old communicator
};

// "shrink <epoch> <port> <hex bitmap>"; decode fails on anything else (or a bitmap of
// another size).
std::string encodeShrink(const ShrinkMessage& m);
Result<ShrinkMessage> decodeShrink(const std::string& text, int size);

class ShrinkAgreement {
 public:
  ShrinkAgreement(int rank, int size, uint32_t epoch, uint16_t port);

  // This rank learned on its own that `peer` is gone. True when the set grew (send mine()).
  bool lose(int peer);
  // A peer's message. Ignored from a rank this one counts as lost, or of another epoch.
  // True when the set grew.
  bool receive(int from, const ShrinkMessage& m);
  // The deadline passed: every live peer that has not agreed is lost, whether it sent nothing
  // at all or stopped after an older set (stalled or cut off since: a live one hears of a
  // failure and answers within the resend period, long before the deadline). True when the
  // set grew.
  bool expire();

  ShrinkMessage mine() const { return {epoch_, port_, lost_}; }
  // Live peers whose latest message does not carry this rank's set (empty: agreed).
  std::vector<int> waitingFor() const;
  bool agreed() const { return waitingFor().empty(); }
  std::vector<int> survivors() const;
  // The survivors' bootstrap ports, in survivor order (valid once agreed).
  std::vector<uint16_t> ports() const;
  // Ok when the survivors are more than half of the ranks; else an error naming both sides.
  Status majority() const;
  // "ranks 1, 3" / "no rank": the lost set, for messages.
  std::string lostText() const;
  // The lost set as hex, for the new communicator's name and secret.
  std::string lostHex() const;

 private:
  int rank_;
  int size_;
  uint32_t epoch_;
  uint16_t port_;
  std::vector<bool> lost_;
  std::vector<std::optional<ShrinkMessage>> latest_;  // per peer
};

}  // namespace tsr::runtime
