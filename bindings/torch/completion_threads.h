// Threads that complete Works and their Futures off Tessera's progress thread. A Future runs its
// then() callbacks on the thread that completes it, and a callback may wait on another
// collective (PowerSGD's hook does): on the progress thread, the only thread that could finish
// that collective, the wait would never end, and the heartbeats and timeouts it keeps would stop.
// A cached pool, as gloo's worker threads are a pool: a task goes to an idle thread or starts one
// (up to kMaxCompletionThreads), so a callback that waits leaves the next completion a thread of
// its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace tessera_torch {

inline constexpr int kMaxCompletionThreads = 64;

// Runs `task` on a completion thread, soon; never blocks on other tasks. An exception it
// throws is printed, not propagated.
void postCompletion(std::function<void()> task);

// Waits (up to `limit`) until no completion is queued or running; false if some still are.
// At the interpreter's exit, while it can still run what a completion lets go of (a tensor
// whose Python object it then frees takes the GIL, which a finalized interpreter never gives).
bool drainCompletions(std::chrono::milliseconds limit);

// The completions a process group still owes (each Work counts from its post until its
// complete() has ended): its shutdown, once the communicator has ended every collective,
// waits for them, so each Work it waited for is completed when it returns.
class OwedCompletions {
 public:
  void add();
  void done();
  // Waits until none is owed but those this thread is completing (a Future callback that
  // destroys its own group runs inside its Work's completion, which would wait for itself).
  void waitForNone();

  // Marks this thread as completing one of the group's Works, for waitForNone.
  class Completing {
   public:
    explicit Completing(const OwedCompletions* owed);
    ~Completing();
    Completing(const Completing&) = delete;
    Completing& operator=(const Completing&) = delete;

   private:
    const OwedCompletions* owed_;
  };

 private:
  std::mutex mutex_;
  std::condition_variable none_;
  size_t owed_ = 0;
};

}  // namespace tessera_torch
