// NeighbourWatch: liveness of a rank's two bootstrap-ring neighbours, over the TCP links the
// bootstrap leaves open (runtime/bootstrap).
//
// Each side writes a heartbeat byte ('H') every 250 ms and a goodbye byte ('B') when it
// destroys its communicator. The reader sees:
//   * end-of-file (or an error) without a goodbye: the neighbour died (SIGKILL, crash);
//   * no byte for the silence limit while a collective is pending: the neighbour's progress
//     thread stopped (SIGSTOP, a debugger, a frozen host): named before the collective's own
//     timeout would blame whichever peer this rank happens to wait on. The engine gives the
//     limit on each poll, from the pending calls' timeouts, so a timeout raised after creation
//     (tsr_comm_set_timeout, a call's own) raises it too.
// Called from the progress thread only.
#pragma once

#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace tsr::runtime {

class NeighbourWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Event {
    enum Kind { kDied, kSilent } kind;
    int peer;
    std::chrono::milliseconds silentFor;
  };

  // sockets: (neighbour rank, fd); empty for a 1-rank communicator.
  explicit NeighbourWatch(std::vector<std::pair<int, int>> sockets);

  // Sends a heartbeat when one is due and reads what arrived. Returns the first failure (at
  // most once per neighbour). Silence longer than `silenceLimit` is a failure; zero while no
  // collective waits (silence does not count then).
  std::optional<Event> poll(Clock::time_point now, std::chrono::milliseconds silenceLimit);
  // Tells both neighbours this rank is leaving on purpose.
  void sayGoodbye();

 private:
  struct Neighbour {
    int peer;
    int fd;
    bool done = false;  // said goodbye, died or reported silent
    Clock::time_point lastHeard;
  };
  std::vector<Neighbour> neighbours_;
  Clock::time_point nextCheck_{};
  Clock::time_point nextHeartbeat_{};
};

}  // namespace tsr::runtime
