// How callers drive a ProgressEngine and how its progress thread gives way meanwhile: a thread
// that waits on a request runs the turns itself (as MPI_Wait does), the progress thread parks
// while any caller drives, and either sleeps on the transport's events when nothing moves.
#include <sched.h>

#include <algorithm>
#include <thread>

#include "base/logging.h"
#include "runtime/progress_driving.h"
#include "runtime/progress_engine.h"

namespace tsr::runtime {

using Clock = std::chrono::steady_clock;

namespace {
constexpr std::chrono::milliseconds kParkLimit{1};
// While a caller keeps driving, the parked thread checks back ever less often, up to this.
constexpr std::chrono::milliseconds kLongParkLimit{32};
}  // namespace

void ProgressEngine::driveUntilDone(const Request& request) {
  if (tDriving) return;  // a wait from inside a turn (a task's code) cannot drive; it just waits
  DrivingScope scope;
  log::ThreadRankScope label(rank_);  // a caller may drive another rank's engine
  callers_.fetch_add(1);
  auto lastBusy = Clock::now();
  while (!request.done() && !stop_) {
    std::unique_lock<std::mutex> drive(driveMutex_, std::try_to_lock);
    if (!drive.owns_lock()) {  // the progress thread ends its turn, or another caller drives
      sched_yield();
      continue;
    }
    bool busy = turn(true);
    if (busy) {
      if (options_.sleepWhileWaiting) lastBusy = Clock::now();
    } else if (options_.sleepWhileWaiting && !request.done() &&
               Clock::now() - lastBusy >= std::chrono::microseconds(options_.spinUs)) {
      sleepOnEvents(drive, kWaitSliceMs, true);
      continue;
    }
    drive.unlock();
    if (!busy && !request.done()) sched_yield();  // the peers' ranks may share these cores
  }
  // Hand back: the progress thread resumes at once only when something is left to drive.
  bool more = false;
  {
    std::lock_guard<std::mutex> drive(driveMutex_);
    more = hasWork();
  }
  // After a long wait the progress thread is in a long park: wake it, so that a collective
  // posted next does not wait for its check-back (seq_cst: park() sets longParked_ before it
  // reads callers_, so one of the two sees the other).
  if (callers_.fetch_sub(1) == 1 && (more || longParked_)) {
    transport_.wake();
    std::lock_guard<std::mutex> lock(parkMutex_);
    resume_ = true;
    parkCv_.notify_all();
  }
}

void ProgressEngine::waitUntilIdle() {
  while (!stop_) {
    {
      std::unique_lock<std::mutex> drive(driveMutex_, std::try_to_lock);
      // Under the drive lock the lists hold still; controlSends_ and an abort request are
      // the engine's own business, not the caller's work.
      bool owed = std::any_of(draining_.begin(), draining_.end(), [](const Active& a) { return a.owed.has_value(); });
      if (drive.owns_lock() && active_.empty() && !hasIncoming() && !owed) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ProgressEngine::park() {
  std::unique_lock<std::mutex> lock(parkMutex_);
  // Bounded, and submit() does not wake it (that wake-up would cost every blocking call a
  // futex and a context switch): a non-blocking collective posted while no caller drives
  // starts within kParkLimit, or at once when the caller waits or tests it.
  // Where waiting ranks sleep (TSR_WAIT), while a caller still drives, this thread checks back
  // after twice as long each time, up to kLongParkLimit, and a leaving caller wakes it: there
  // the 1 ms check-backs were most of the context switches (1000 a second per rank during a
  // long wait). Spinning callers cost more than these; they keep the 1 ms checks.
  parked_ = true;
  auto limit = kParkLimit;
  while (!parkCv_.wait_for(lock, limit, [&] { return stop_ || resume_; })) {
    if (!options_.sleepWhileWaiting) break;
    longParked_ = true;
    if (callers_ == 0) break;
    limit = std::min(limit * 2, kLongParkLimit);
  }
  parked_ = false;
  longParked_ = false;
  resume_ = false;
}

void ProgressEngine::sleepOnEvents(std::unique_lock<std::mutex>& drive, int timeoutMs, bool caller) {
  sleeping_ = true;  // before looking at incoming_: a submitter then sees it and wakes us
  bool armed = transport_.armEvents() && !hasIncoming();
  drive.unlock();
  // The progress thread gives way to a caller that came meanwhile; a caller sleeps anyway.
  if (armed && (caller || callers_ == 0)) transport_.sleepUntilEvent(timeoutMs);
  sleeping_ = false;
}

void ProgressEngine::driveOnce() {
  if (tDriving) return;
  std::unique_lock<std::mutex> drive(driveMutex_, std::try_to_lock);
  if (!drive.owns_lock() || stop_) return;
  DrivingScope scope;
  log::ThreadRankScope label(rank_);
  turn();
}

}  // namespace tsr::runtime
