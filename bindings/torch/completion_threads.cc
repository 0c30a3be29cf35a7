#include "bindings/torch/completion_threads.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace tessera_torch {
namespace {

struct Pool {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::function<void()>> tasks;
  size_t threads = 0;
  size_t idle = 0;  // threads waiting for a task (a woken one counts until it has taken one)

  void serve() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      ++idle;
      ready.wait(lock, [&] { return !tasks.empty(); });
      --idle;
      std::function<void()> task = std::move(tasks.front());
      tasks.pop_front();
      lock.unlock();
      try {
        task();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tessera: a completion failed: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "tessera: a completion failed\n");
      }
      lock.lock();
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
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.tasks.push_back(std::move(task));
    // Every idle thread may be spoken for by tasks queued before: a thread of its own then,
    // rather than a place behind a callback that may wait.
    start = p.idle < p.tasks.size() && p.threads < static_cast<size_t>(kMaxCompletionThreads);
    if (start) ++p.threads;
  }
  if (start)
    std::thread([&p] { p.serve(); }).detach();
  else
    p.ready.notify_one();
}

}  // namespace tessera_torch
