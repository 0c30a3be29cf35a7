#include "bindings/torch/completion_threads.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace tessera_torch {
namespace {

struct Pool {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::function<void()>> tasks;
  size_t threads = 0;
  size_t idle = 0;     // threads waiting for a task (a woken one counts until it has taken one)
  size_t running = 0;  // tasks begun and not ended
  std::condition_variable drained;
  bool warned = false;  // has said once that every thread is busy

  void serve() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      ++idle;
      ready.wait(lock, [&] { return !tasks.empty(); });
      --idle;
      std::function<void()> task = std::move(tasks.front());
      tasks.pop_front();
      ++running;
      lock.unlock();
      try {
        task();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tessera: a completion failed: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "tessera: a completion failed\n");
      }
      task = nullptr;  // what it holds goes before it counts as ended
      lock.lock();
      if (--running == 0 && tasks.empty()) drained.notify_all();
    }
  }
};

// Never destroyed: its threads wait on it until the process ends, after static destructors.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void postCompletion(std::function<void()> task) {
  Pool& p = pool();
  bool start = false, full = false;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.tasks.push_back(std::move(task));
    // Every idle thread may be spoken for by tasks queued before: a thread of its own then,
    // rather than a place behind a callback that may wait.
    start = p.idle < p.tasks.size() && p.threads < static_cast<size_t>(kMaxCompletionThreads);
    if (start) ++p.threads;
    full = !start && p.idle < p.tasks.size() && !p.warned;
    p.warned = p.warned || full;
  }
  if (full)  // said once: a completion whose callback waits for a later one's would now wait for good
    std::fprintf(stderr,
                 "tessera: all %d completion threads are busy (then() callbacks that wait on other collectives?); "
                 "further completions wait for one of them to finish\n",
                 kMaxCompletionThreads);
  if (!start) {
    p.ready.notify_one();
    return;
  }
  try {
    std::thread([&p] { p.serve(); }).detach();
  } catch (const std::system_error& e) {  // no new thread (a thread limit): the others, or here
    std::function<void()> mine;
    {
      std::lock_guard<std::mutex> lock(p.mutex);
      --p.threads;
      if (p.threads == 0 && !p.tasks.empty()) {
        mine = std::move(p.tasks.back());
        p.tasks.pop_back();
      }
    }
    try {
      if (mine) mine();  // here, rather than never
    } catch (const std::exception& failure) {
      std::fprintf(stderr, "tessera: a completion failed: %s\n", failure.what());
    }
  }
}

bool drainCompletions(std::chrono::milliseconds limit) {
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.mutex);
  return p.drained.wait_for(lock, limit, [&] { return p.running == 0 && p.tasks.empty(); });
}

void OwedCompletions::add() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++owed_;
}

void OwedCompletions::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--owed_ == 0) none_.notify_all();
}

namespace {
// The groups whose Works this thread is completing, innermost last (a completion may complete
// another Work inline: a wait() in a Future callback).
thread_local std::vector<const OwedCompletions*> tCompleting;
}  // namespace

OwedCompletions::Completing::Completing(const OwedCompletions* owed) : owed_(owed) {
  if (owed_) tCompleting.push_back(owed_);
}

OwedCompletions::Completing::~Completing() {
  if (owed_) tCompleting.pop_back();
}

void OwedCompletions::waitForNone() {
  const auto mine = static_cast<size_t>(std::count(tCompleting.begin(), tCompleting.end(), this));
  std::unique_lock<std::mutex> lock(mutex_);
  none_.wait(lock, [&] { return owed_ <= mine; });
}

}  // namespace tessera_torch
