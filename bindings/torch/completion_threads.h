// Threads that complete Works and their Futures off Tessera's progress thread. A Future runs its
// then() callbacks on the thread that completes it, and a callback may wait on another
// collective (PowerSGD's hook does): on the progress thread, the only thread that could finish
// that collective, the wait would never end, and the heartbeats and timeouts it keeps would stop.
// A cached pool, as gloo's worker threads are a pool: a task goes to an idle thread or starts one
// (up to kMaxCompletionThreads), so a callback that waits leaves the next completion a thread of
// its own.
#pragma once

#include <functional>

namespace tessera_torch {

inline constexpr int kMaxCompletionThreads = 64;

// Runs `task` on a completion thread, soon; never blocks on other tasks. An exception it
// throws is printed, not propagated.
void postCompletion(std::function<void()> task);

}  // namespace tessera_torch
