// ProgressEngine: drives a communicator's transport. It starts posted collectives, drives
// their executors, enforces timeouts, and spreads failures: when a rank sees a mismatch, a
// dead peer or a timeout it sends an abort notice to every peer, so every rank's pending
// collective fails with the same reason instead of hanging.
//
// Two kinds of thread drive it, one at a time (driveMutex_): its own progress thread, which
// keeps non-blocking collectives moving while the caller computes, and a caller blocked in
// Request::wait(), which drives the engine itself (as MPI_Wait does) while the progress
// thread parks. The caller's thread so needs no hand-off and no wake-up: a small blocking
// collective costs what its messages cost.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/plan/executor.h"
#include "algorithms/team/request.h"
#include "base/log_rate_limit.h"
#include "runtime/control_auth.h"
#include "runtime/control_message.h"
#include "runtime/neighbour_watch.h"
#include "runtime/slow_link_watch.h"
#include "transport/transport.h"

namespace tsr::runtime {

struct EngineOptions {
  int timeoutMs = 300000;
  int spinUs = 50;
  uint32_t comm = 0;
  std::vector<std::string> hosts;  // per rank, for messages
  // (rank, fd) of the bootstrap ring links: end-of-file there without a goodbye byte means
  // that neighbour died, which breaks the communicator at once with the rank named.
  std::vector<std::pair<int, int>> neighbourSockets;
  // A caller blocked in Request::wait() drives the engine (TSR_CALLER_PROGRESS).
  bool callerProgress = true;
  // While a collective waits on its peers, sleep on the transport's events instead of
  // yielding the core (TSR_WAIT): only right when every message raises an event (TCP, not
  // UCX's shared memory), and then it leaves the cores to the ranks that have work.
  bool sleepWhileWaiting = false;
  // Seals and checks control messages (control_auth.h); the same on every rank. The
  // communicator derives it at creation; engines built without one share the all-zero key.
  Digest controlKey{};
  // Per rank: the bytes/s its link was measured at, for the slow-link warning
  // (slow_link_watch.h); 0 where not judged. Empty: no warning.
  std::vector<double> expectedSendRates;
  // Where recovery messages (control messages that start with kRecoveryPrefix: a shrink's
  // agreement, shrink_agreement.h) go, on the driving thread, instead of being taken for
  // abort notices. They travel sealed, as every control message does.
  std::function<void(int from, const std::string& body)> onRecovery;
};

inline constexpr char kRecoveryPrefix[] = "recover\n";

using algorithms::Request;
using algorithms::TaskFactory;

struct Submission {
  TaskFactory make;
  // Without `make`: a static plan's run, whose PlanExecutor the engine builds directly.
  std::shared_ptr<const algorithms::Plan> plan;
  algorithms::RunBuffers buffers;
  std::shared_ptr<void> keepAlive;  // scratch or task state, kept until the task is quiescent
  std::shared_ptr<Request> request;
  uint32_t seq = 0;
  uint32_t seqSpan = 1;
  // A send or receive between two ranks (Communicator::send/recv): it holds no sequence
  // number of its own (seq is the next collective's, seqSpan 0), and its failure names no
  // collective to spare.
  bool pointToPoint = false;
  int timeoutMs = 0;  // fails with kTimeout when not done by then; 0: the engine's timeoutMs
};

class ProgressEngine final : public algorithms::RequestDriver {
 public:
  ProgressEngine(transport::Transport& transport, EngineOptions options);
  ~ProgressEngine() override;
  // Stops the thread; pending collectives fail with kAborted. Call before destroying the
  // transport; destroy the engine after it (transport callbacks still write completions).
  void stop();

  // Thread-safe. Fails at once if the communicator is already broken.
  void submit(Submission submission);
  // Fails every pending collective and every later one with `reason`.
  void abort(const Status& reason);
  // Ok, or the error that broke the communicator.
  Status health() const;
  // Drives the engine on the calling thread until `request` is done (the progress thread
  // parks meanwhile), or until the engine stops (which completes every request). Used by
  // Request::wait() through RequestDriver.
  void driveUntilDone(const Request& request) override;
  // One turn on the calling thread if nobody else drives (Request::test()).
  void driveOnce() override;
  // Returns once nothing submitted is queued, running or owed its completion (or the engine
  // stopped): the progress thread finishes the work meanwhile; this thread looks every
  // millisecond. For a planned shutdown (Communicator::drain), not for a hot path.
  void waitUntilIdle();

  // Recovery (progress_recovery.cc). Thread-safe. Sends kRecoveryPrefix + body to each of
  // `peers` over the control channel, from the driving thread's next turn (which it wakes).
  void sendRecovery(const std::vector<int>& peers, const std::string& body);
  // From now on each turn's housekeeping notes which peers the transport has seen fail or
  // leave (the neighbour watch's are noted always).
  void watchLostPeers() { watchingLost_ = true; }
  // The peers known gone: failed endpoints, goodbyes, the neighbour watch's dead and silent.
  std::vector<int> lostPeers() const;
  // Notes peers as gone (a shrink's agreed lost set): a leaving rank does not wait for their
  // goodbyes.
  void markLost(const std::vector<int>& peers);

 private:
  struct Active {
    Submission submission;
    std::unique_ptr<algorithms::Task> executor;
    std::chrono::steady_clock::time_point deadline;
    // A lost-peer failure held back for a moment (driveActive), and since when.
    std::optional<Status> heldFailure;
    std::chrono::steady_clock::time_point heldSince;
    // A failed run whose transport operations still read or write the caller's buffers: its
    // status, told once they are done (or at quietBy, whichever comes first: settleDraining).
    std::optional<Status> owed;
    std::chrono::steady_clock::time_point quietBy;
  };
  struct ControlSend {
    std::string payload;
    transport::Completion completion;
  };

  void run();
  // One turn of the loop (needs driveMutex_ and a DrivingScope); true when anything happened.
  // `spinning`: the caller loops on idle turns, so housekeeping may wait a few of them.
  bool turn(bool spinning = false);
  bool hasWork() const;
  bool hasIncoming() const;
  void park();
  // Arms the transport's events and, when none is pending, sleeps (driveMutex_ held by
  // `drive` on entry, released on return) for at most timeoutMs. The progress thread
  // (caller false) does not sleep when a caller came meanwhile.
  void sleepOnEvents(std::unique_lock<std::mutex>& drive, int timeoutMs, bool caller);
  bool startSubmissions();
  bool driveActive();
  void failWaitsOnLeftPeers(std::chrono::steady_clock::time_point now);
  bool pollControl();
  void checkTimeouts(std::chrono::steady_clock::time_point now);
  void finish(Active& active, Status status);
  // "allreduce #12", "rank 0: send of 8 bytes to rank 1 (tag 0)": a run in messages.
  static std::string label(const Active& active);
  // Completes a failed run's request with `status` now if nothing of it is in flight, else
  // moves it to draining_ to be completed once quiet: a caller told it ended may free its
  // buffers, which a send still queued in UCX would then read (UCX cannot cancel sends).
  void failWhenQuiet(std::list<Active>& from, std::list<Active>::iterator it, Status status);
  // Completes the owed requests of draining_ runs that went quiet (or waited long enough) and
  // lets go of the quiet ones.
  void settleDraining(std::chrono::steady_clock::time_point now);
  // failed: the sequence numbers of the collective that failed (none: nothing in particular).
  // A mismatch breaks the communicator from that collective on only (see spared()); any other
  // failure breaks it for everything still pending.
  void breakCommunicator(const Status& reason, bool notifyPeers, FailedSeqs failed = {});
  // Whether `s` still runs although the communicator is broken: after a mismatch the transport
  // is sound and every rank called the collectives before the mismatched one alike, so those
  // complete on every rank (mutex_ held).
  bool sparedLocked(const Submission& s) const;
  bool spared(const Submission& s) const;
  Status refusal(const Submission& s) const;
  Status pendingFailure(const Submission& s, const Status& reason) const;
  void postControlRecv();
  void watchNeighbours(std::chrono::steady_clock::time_point now);
  void watchLinkRates(std::chrono::steady_clock::time_point now);
  // To every healthy peer, or (toLeftPeers) to those that have said goodbye already.
  void sendControl(const std::string& payload, bool toLeftPeers = false);
  void sendControlTo(int peer, const std::string& payload);
  // Sends the queued recovery messages (driving thread); true when there were any.
  bool flushRecovery();
  // Notes the transport's failed and departed peers in lost_ (driving thread).
  void noteLostPeers();
  void sayGoodbye();
  // A control message that failed its check (ControlAuth::open): not acted on, said (rate-limited).
  void dropControl(int from, const Status& why);
  std::string peerName(int peer) const;

  transport::Transport& transport_;
  EngineOptions options_;
  const int rank_;  // this rank (transport_.rank()), for log labels
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abortRequested_{false};
  // Which notice the peers have had: a mismatch's (sparing earlier collectives), then possibly
  // one that breaks everything.
  enum class Notified : uint8_t { kNone, kSparing, kAll };
  Notified notified_ = Notified::kNone;

  mutable std::mutex mutex_;  // guards incoming_, broken_, recoveryOut_ and lost_
  std::vector<std::pair<int, std::string>> recoveryOut_;
  std::atomic<size_t> recoveryOutCount_{0};
  std::atomic<bool> watchingLost_{false};
  std::vector<bool> lost_;
  std::vector<Submission> incoming_;
  std::vector<Submission> batch_;         // startSubmissions' swap partner: keeps its capacity
  std::atomic<size_t> incomingCount_{0};  // incoming_.size(), read without the lock
  Status broken_;
  FailedSeqs brokenAt_;   // the collective that broke it, if one did
  bool sparing_ = false;  // broken by a mismatch only: earlier collectives go on (spared())

  // Who drives: the progress thread or a waiting caller, one at a time. The progress thread
  // parks (parkCv_) while callers_ > 0 and sleeps on the transport's events without the lock.
  std::mutex driveMutex_;
  std::atomic<int> callers_{0};
  std::mutex parkMutex_;
  std::condition_variable parkCv_;
  bool resume_ = false;  // guarded by parkMutex_
  std::atomic<bool> parked_{false};
  std::atomic<bool> longParked_{false};  // parked past kParkLimit: a leaving caller wakes it
  std::atomic<bool> sleeping_{false};    // on the transport's events (submit must wake it)
  std::chrono::steady_clock::time_point lastBusy_;
  uint32_t idleTurns_ = 0;  // since the last housekeeping (turn)

  // Driving state (guarded by driveMutex_).
  NeighbourWatch neighbours_;
  SlowLinkWatch slowLinks_;
  std::list<Active> active_;
  std::list<Active> draining_;  // failed runs whose transport ops are still in flight
  std::list<Active> spare_;     // finished entries, reused by the next runs (no allocation)
  std::list<ControlSend> controlSends_;
  std::vector<std::pair<int, std::chrono::steady_clock::time_point>> left_;  // goodbyes, when
  transport::Completion controlRecv_;
  std::vector<char> controlBuffer_;
  ControlAuth controlAuth_;
  log::LogRateLimit droppedControlLog_{5, std::chrono::seconds(10)};  // forged or replayed ones
};

}  // namespace tsr::runtime
