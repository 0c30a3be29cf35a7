#include "runtime/progress_engine.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>

#include <cstring>

#include "base/logging.h"
#include "runtime/control_message.h"
#include "runtime/progress_driving.h"
#include "transport/tag.h"

namespace tsr::runtime {

using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kNoticeGrace = std::chrono::milliseconds(50);
// Longest a rank leaving after an error waits for its peers' goodbyes (run()).
constexpr auto kLinger = std::chrono::milliseconds(1000);
// Longest a failed run's request waits for its sends and receives to end before it is told
// anyway (failWhenQuiet): a peer that aborted leaves a rendezvous send of ours waiting for a
// receive it will never post; the buffer is not read then, and the wait must end.
constexpr auto kQuietLimit = std::chrono::milliseconds(2000);
// The monotonic clock as of the last timer tick (a few ms behind): for deadlines and watches,
// read on every turn, where steady_clock's full read cost 5% of a small allreduce. The same
// clock as steady_clock (CLOCK_MONOTONIC), so the two compare.
Clock::time_point coarseNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}
}  // namespace

ProgressEngine::ProgressEngine(transport::Transport& transport, EngineOptions options)
    : transport_(transport),
      options_(std::move(options)),
      rank_(transport.rank()),
      neighbours_(options_.neighbourSockets),
      slowLinks_(options_.expectedSendRates, SlowLinkWatch::Options{}),
      controlBuffer_(kControlBytes),
      controlAuth_(options_.controlKey, transport.rank(), transport.size(), options_.comm) {
  lost_.assign(static_cast<size_t>(transport.size()), false);
  thread_ = std::thread([this] { run(); });
  // Named here, not by the thread itself: the name (for top -H, perf and gdb) is then there
  // from the start, even before the thread first runs.
  pthread_setname_np(thread_.native_handle(), "tsr-progress");
}

ProgressEngine::~ProgressEngine() { stop(); }

void ProgressEngine::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  transport_.wake();
  {
    std::lock_guard<std::mutex> lock(parkMutex_);
    parkCv_.notify_all();
  }
  thread_.join();
}

void ProgressEngine::submit(Submission submission) {
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if ((broken_.isOk() || sparedLocked(submission)) && !stop_) {
      if (options_.callerProgress) submission.request->setDriver(this);
      incoming_.push_back(std::move(submission));
      ++incomingCount_;
      queued = true;
    }
  }
  if (!queued) {
    submission.request->complete(refusal(submission));
    return;
  }
  // Whoever drives next starts it: wake the progress thread only if it sleeps or parks.
  if (sleeping_) transport_.wake();
  // Parked just after a blocking wait: start it on this thread (no wake-up; the progress
  // thread takes over within kParkLimit, or a wait or test drives it on).
  if (parked_ && callers_ == 0) driveOnce();
}

Status ProgressEngine::refusal(const Submission& s) const {
  Status why = health();
  // The collective that failed elsewhere (say, with a mismatch) reports that very error on
  // ranks that had not started it yet; later ones say the communicator is unusable.
  std::lock_guard<std::mutex> lock(mutex_);
  if (brokenAt_.last >= 0 && static_cast<int64_t>(s.seq) <= brokenAt_.last) return broken_;
  // Revoked: every later call says so with the same code (ULFM's MPI_ERR_REVOKED).
  if (why.code() == Code::kRevoked) return why;
  return Status(Code::kAborted, "communicator is unusable after an earlier error: " + why.toString());
}

Status ProgressEngine::health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_ && broken_.isOk()) return Status(Code::kAborted, "communicator was destroyed");
  return broken_;
}

void ProgressEngine::abort(const Status& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_.isOk()) broken_ = reason;
  abortRequested_ = true;
  transport_.wake();
}

std::string ProgressEngine::peerName(int peer) const { return transport::peerLabel(peer, options_.hosts); }

void ProgressEngine::postControlRecv() {
  Status st =
      transport_.recv(-1, transport::makeControlTag(0, options_.comm), transport::kControlTagMask,
                      controlBuffer_.data(), controlBuffer_.size(), transport::MemoryType::kHost, &controlRecv_);
  if (!st.isOk()) log::get("runtime")->error("cannot post the control receive: {}", st.toString());
}

bool ProgressEngine::startSubmissions() {
  if (incomingCount_ == 0) return false;    // no lock taken on a turn with nothing new
  std::vector<Submission>& batch = batch_;  // only the driving thread is here
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch.swap(incoming_);
    incomingCount_ = 0;
  }
  for (auto& s : batch) {
    if (!this->health().isOk() && !spared(s)) {
      s.request->complete(refusal(s));
      continue;
    }
    algorithms::TaskContext context{
        transport_, {transport_.rank(), options_.comm, s.seq}, s.seqSpan, transport_.size()};
    std::unique_ptr<algorithms::Task> executor;
    if (s.make) {
      auto task = s.make(context);
      if (!task.isOk()) {
        s.request->complete(task.status());
        continue;
      }
      executor = task.take();
    } else {
      executor = std::make_unique<algorithms::PlanExecutor>(s.plan, s.buffers, context.id, transport_);
    }
    if (spare_.empty()) spare_.emplace_back();
    active_.splice(active_.end(), spare_, spare_.begin());
    Active& a = active_.back();
    a.deadline = coarseNow() + std::chrono::milliseconds(s.timeoutMs > 0 ? s.timeoutMs : options_.timeoutMs);
    a.executor = std::move(executor);
    a.submission = std::move(s);
    Status st = a.executor->start();
    if (st.code() != Code::kInProgress) {
      auto it = std::prev(active_.end());
      finish(*it, st);
    }
  }
  batch.clear();  // moved-from submissions; the capacity stays for the next batch
  return true;
}

std::string ProgressEngine::label(const Active& a) {
  if (a.submission.pointToPoint) return a.executor->describe();
  return a.executor->describe() + " #" + std::to_string(a.submission.seq);
}

void ProgressEngine::finish(Active& active, Status status) {
  // Out of active_ first: breakCommunicator below walks (and empties) that list.
  std::list<Active> done;
  for (auto it = active_.begin(); it != active_.end(); ++it)
    if (&*it == &active) {
      done.splice(done.begin(), active_, it);
      break;
    }
  Active& a = done.front();
  if (status.isError()) {
    log::get("runtime")->error("{}", status.toString());
    bool spread = status.code() == Code::kMismatch || status.code() == Code::kPeerFailed ||
                  status.code() == Code::kTimeout || status.code() == Code::kTransport;
    // Break before completing: a caller woken by the completion must find it broken.
    FailedSeqs seqs;
    if (!a.submission.pointToPoint) seqs = {a.submission.seq, int64_t{a.submission.seq} + a.submission.seqSpan - 1};
    if (spread) breakCommunicator(status, true, seqs);
  }
  if (status.isError()) {
    failWhenQuiet(done, done.begin(), status);
    return;
  }
  a.submission.request->complete(status);
  // Let go of the run (its scratch, request and plan) and keep the entry for the next one.
  a = Active{};
  if (spare_.size() < 16) spare_.splice(spare_.end(), done);
}

void ProgressEngine::failWhenQuiet(std::list<Active>& from, std::list<Active>::iterator it, Status status) {
  if (it->executor->quiescent()) {
    it->submission.request->complete(status);
    from.erase(it);
    return;
  }
  it->owed = std::move(status);
  it->quietBy = coarseNow() + kQuietLimit;
  draining_.splice(draining_.end(), from, it);
}

void ProgressEngine::settleDraining(Clock::time_point now) {
  for (auto it = draining_.begin(); it != draining_.end();) {
    const bool quiet = it->executor->quiescent();
    if (it->owed && (quiet || now >= it->quietBy)) {
      it->submission.request->complete(*it->owed);
      it->owed.reset();
    }
    it = quiet && !it->owed ? draining_.erase(it) : std::next(it);
  }
}

bool ProgressEngine::driveActive() {
  // finish() may empty the whole list (a failure fails everything), so restart after each.
  bool any = false;
  for (bool again = true; again;) {
    again = false;
    for (auto& a : active_) {
      Status st = a.heldFailure ? *a.heldFailure : a.executor->progress();
      if (st.code() == Code::kInProgress) continue;
      // A lost peer endpoint is often the echo of a failure elsewhere: the peer failed on a
      // dead rank, told everyone, and left. Hold it briefly so that notice, naming the root
      // cause, wins (it fails every pending collective when it comes).
      bool lostPeer = st.code() == Code::kPeerFailed || st.code() == Code::kTransport;
      if (lostPeer && !a.heldFailure) {
        a.heldFailure = st;
        a.heldSince = Clock::now();
        continue;
      }
      if (a.heldFailure && Clock::now() - a.heldSince < kNoticeGrace) continue;
      finish(a, st);
      any = again = true;
      break;
    }
  }
  return any;
}

bool ProgressEngine::turn(bool spinning) {
  bool busy = startSubmissions();
  if (recoveryOutCount_.load(std::memory_order_relaxed) > 0) busy |= flushRecovery();
  busy |= transport_.progress();
  // Notices first: when a peer's abort notice and the failure it causes (its endpoint
  // closing) arrive together, the notice names the root cause.
  busy |= pollControl();
  busy |= driveActive();
  // Housekeeping (timeouts, watches, clean-up): when spinning, on busy turns and every 32nd
  // idle one (a waiting rank spins through idle turns, and their cost delays what it waits
  // for); an abort at once.
  if (spinning && !busy && ++idleTurns_ < 32 && !abortRequested_.load(std::memory_order_relaxed)) return false;
  idleTurns_ = 0;
  auto now = coarseNow();
  if (!left_.empty()) failWaitsOnLeftPeers(now);
  if (abortRequested_.exchange(false)) breakCommunicator(health(), true);
  checkTimeouts(now);
  watchNeighbours(now);
  if (watchingLost_.load(std::memory_order_relaxed)) noteLostPeers();
  watchLinkRates(now);
  settleDraining(now);
  controlSends_.remove_if([](const ControlSend& c) { return c.completion.done; });
  return busy;
}

bool ProgressEngine::hasWork() const {
  // Runs draining_ only need a turn some time to let go, unless a caller waits to be told.
  bool owed = std::any_of(draining_.begin(), draining_.end(), [](const Active& a) { return a.owed.has_value(); });
  return !active_.empty() || !controlSends_.empty() || abortRequested_ || hasIncoming() || owed ||
         recoveryOutCount_ > 0;
}

bool ProgressEngine::hasIncoming() const { return incomingCount_ > 0; }

void ProgressEngine::run() {
  log::setThreadRank(rank_);
  DrivingScope scope;  // this thread only drives: a task's wait here must not drive again
  lastBusy_ = Clock::now();
  {
    std::lock_guard<std::mutex> drive(driveMutex_);
    postControlRecv();
  }
  while (!stop_) {
    if (callers_ > 0) {
      park();
      continue;
    }
    std::unique_lock<std::mutex> drive(driveMutex_);
    if (turn(!active_.empty())) {  // with work pending it spins
      lastBusy_ = Clock::now();    // the spin window (spinUs) needs the fine clock
      continue;
    }
    // While a collective is pending, poll (yielding the core to the other ranks): UCX's
    // shared-memory transports raise no wake-up event, so sleeping on the event fd would
    // cost up to a millisecond per message. Idle, sleep until UCX or a submission wakes us,
    // without the lock, so a caller that comes meanwhile can drive at once.
    // With TSR_WAIT=sleep, pending collectives wait on the events too, in short slices (the
    // housekeeping of turn() still runs between them).
    bool recent = Clock::now() - lastBusy_ < std::chrono::microseconds(options_.spinUs);
    if (recent || (!active_.empty() && !options_.sleepWhileWaiting)) {
      drive.unlock();
      sched_yield();
      continue;
    }
    sleepOnEvents(drive, active_.empty() ? 100 : kWaitSliceMs, false);
  }
  std::lock_guard<std::mutex> drive(driveMutex_);
  // Shutting down: fail what is left, say goodbye (still listening, so peers' goodbyes are
  // consumed rather than left unmatched), and give in-flight operations a moment to settle.
  // An abort the loop had no turn to act on (abort() then the destructor at once) still
  // tells the peers, before the goodbye: else they would take this rank's exit as a clean
  // leave and wait for it until their timeout.
  if (abortRequested_.exchange(false)) breakCommunicator(health(), true);
  breakCommunicator(Status(Code::kAborted, "communicator destroyed"), false);
  transport_.beginLeaving();  // a peer that leaves first may close before its goodbye is read
  neighbours_.sayGoodbye();
  sayGoodbye();
  // After an error, peers may still be sending to this rank (the tail of a failed collective,
  // their own notices): closing with their bytes unread makes the kernel reset the connection,
  // which can drop what this rank sent them last, its abort notice among it (seen: a peer
  // failing with "Endpoint timeout" instead of the mismatch). So it lingers, reading, until
  // every peer still there has said goodbye too (everything a peer sent comes before its
  // goodbye), for at most kLinger.
  const bool linger = notified_ != Notified::kNone;
  // A peer whose goodbye came before this rank's lingers too, waiting for this one's.
  if (linger) sendControl(kGoodbye, true);
  // Not the peers known gone (the neighbour watch's dead, a shrink's lost): none says goodbye,
  // and their endpoints may still look fine.
  auto peersStillThere = [this] {
    std::vector<bool> gone;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gone = lost_;
    }
    for (int p = 0; p < transport_.size(); ++p)
      if (p != transport_.rank() && !(p < static_cast<int>(gone.size()) && gone[p]) && transport_.peerStatus(p).isOk())
        return true;
    return false;
  };
  auto until = Clock::now() + (linger ? kLinger : std::chrono::milliseconds(500));
  while (Clock::now() < until && (!controlSends_.empty() || (linger && peersStillThere()))) {
    transport_.progress();
    pollControl();
    controlSends_.remove_if([](const ControlSend& c) { return c.completion.done; });
  }
  transport_.cancel(&controlRecv_);
  while (Clock::now() < until) {
    transport_.progress();
    settleDraining(coarseNow());
    controlSends_.remove_if([](const ControlSend& c) { return c.completion.done; });
    if (draining_.empty() && controlSends_.empty() && (!controlRecv_.posted || controlRecv_.done)) break;
  }
  settleDraining(Clock::time_point::max());  // destroyed: whatever is still owed is told now
}

}  // namespace tsr::runtime
