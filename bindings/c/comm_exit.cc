#include "bindings/c/comm_exit.h"

#include <cstdlib>
#include <mutex>
#include <vector>

namespace tsr::capi {
namespace {

struct LiveComms {
  std::mutex mutex;
  std::vector<std::weak_ptr<CommLife>> lives;
};

// Never destroyed: the exit handler reads it after static destructors may have begun.
LiveComms& liveComms() {
  static auto* live = new LiveComms;
  return *live;
}

void closeLiveCommunicators() {
  std::vector<std::shared_ptr<CommLife>> open;
  {
    std::lock_guard<std::mutex> lock(liveComms().mutex);
    for (auto& weak : liveComms().lives)
      if (auto life = weak.lock()) open.push_back(std::move(life));
    liveComms().lives.clear();
  }
  for (auto& life : open) life->destroy();
}

}  // namespace

void closeAtExit(const std::shared_ptr<CommLife>& life) {
  static const bool registered = [] { return std::atexit(closeLiveCommunicators) == 0; }();
  (void)registered;
  std::lock_guard<std::mutex> lock(liveComms().mutex);
  // Forget the communicators destroyed since: the list stays as long as the live ones.
  std::erase_if(liveComms().lives, [](const std::weak_ptr<CommLife>& w) { return w.expired(); });
  liveComms().lives.push_back(life);
}

}  // namespace tsr::capi
