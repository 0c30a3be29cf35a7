// The replay's network side (replay.cc): the matching of each send to its receive, as UCX tags
// do, and the transfer of the matched bytes host to host in SimGrid. Each rank may run more than
// one plan at once (a compressed step's scalars beside its bits), so every message, inbox and
// count is kept per (rank, stream).
#pragma once

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/sim/replay.h"

namespace tsr::sim {

namespace sg4 = simgrid::s4u;

inline constexpr size_t kStackKiB = 128;         // the ranks' actors' stacks (replay())
inline constexpr size_t kTransferStackKiB = 32;  // the transfers' actors' stacks
inline constexpr uint32_t kHeader = UINT32_MAX;  // message id of a pair's argument header

// Which of a rank's plans (sim_job.h): the main one, the one beside it, the one before it.
enum class Stream : uint8_t { kMain = 0, kBeside = 1, kBefore = 2 };
inline constexpr int kStreams = 3;

// What a rank hears back when one of its transfers is done.
enum class Flight : uint8_t { kOp, kHeaderIn, kHeaderOut };
struct Done {
  Flight what;
  size_t index;  // op index, or the peer's slot for headers
};

// Everything the ranks share. Both sides post into `posted` under the message's key; once both
// are there, a short-lived actor carries the bytes host to host (SimGrid starts the transfer
// then: UCX's rendezvous) and hands each side its Done. A rank's plan thus waits on one
// semaphore whatever it has in flight.
class Transfers {
 public:
  Transfers(const JobPlans& job, std::vector<sg4::Host*> hostOfRank, int pairWindow, size_t maxInFlight);

  void post(int from, int to, Stream stream, uint32_t id, bool isSend, Done done, size_t bytes);
  // The next Done of (rank, stream), waiting for it; false once the replay is stopping.
  bool next(int rank, Stream stream, Done* done);
  // Stops every rank at its next wake-up, with `why` as the replay's error.
  void stop(const std::string& why);

  const JobPlans& job() const { return job_; }
  sg4::Host* host(int rank) const { return hostOfRank_[rank]; }
  const std::string& stopped() const { return stopped_; }
  const std::string& mismatch() const { return mismatch_; }
  // Plans that disagree: the replay stops (every rank returns) and reports `what`.
  void setMismatch(const std::string& what) {
    if (mismatch_.empty()) mismatch_ = what;
    stop(what);
  }
  ReplayResult result;

 private:
  struct Side {
    bool set = false;
    Done done{};
    size_t bytes = 0;
  };
  struct Pending {
    Side send, recv;
  };
  struct Transfer {
    int from, to;
    Stream stream;
    Done sent, received;
    size_t bytes;
  };
  // A pair's transfers beyond the window wait their turn, in the order they matched.
  struct Lane {
    int active = 0;
    std::deque<Transfer> waiting;
  };

  size_t slot(int rank, Stream stream) const { return static_cast<size_t>(stream) * ranks_ + rank; }
  uint64_t pairKey(int from, int to) const { return static_cast<uint64_t>(from) * ranks_ + to; }
  uint64_t key(int from, int to, Stream stream, uint32_t id) const {
    return (pairKey(from, to) * kStreams + static_cast<uint64_t>(stream)) << 32 | id;
  }
  void deliver(int rank, Stream stream, Done d);
  void start(Transfer t);

  const JobPlans& job_;
  const int ranks_;
  const int pairWindow_;
  const size_t maxInFlight_;
  std::vector<sg4::Host*> hostOfRank_;
  std::vector<std::deque<Done>> inbox_;  // by slot()
  std::vector<sg4::SemaphorePtr> bell_;
  std::unordered_map<uint64_t, Pending> posted_;
  std::unordered_map<uint64_t, Lane> lanes_;
  std::vector<sg4::Mailbox*> freeBoxes_;  // mailboxes no transfer uses now
  size_t boxCount_ = 0;
  size_t inFlight_ = 0;
  std::string stopped_, mismatch_;
};

}  // namespace tsr::sim
