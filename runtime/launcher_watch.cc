#include "runtime/launcher_watch.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "base/logging.h"

namespace tsr::runtime {
namespace {

constexpr double kDefaultGraceSeconds = 5;
constexpr int kPollMs = 1000;

// Logged only to a log file: standard error went to tsrun too, and writing to it now would end
// the process with SIGPIPE before a SIGTERM handler could finish.
void endThisRank(int rank, double graceSeconds, bool logToFile) {
  if (logToFile)
    log::get("runtime")->error(
        "rank {}: tsrun is gone (the standard input it held for this rank ended): this rank "
        "stops itself, SIGTERM now, SIGKILL in {} s",
        rank, graceSeconds);
  kill(getpid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::duration<double>(graceSeconds));
  kill(getpid(), SIGKILL);
}

void watch(int rank, double graceSeconds, bool logToFile) {
  while (true) {
    pollfd fd{STDIN_FILENO, POLLRDHUP, 0};  // POLLHUP and POLLERR come unasked
    int n = poll(&fd, 1, kPollMs);
    if (n < 0) continue;  // EINTR
    LauncherPipe state = launcherPipeState(fd.revents);
    if (state == LauncherPipe::kEnded) return endThisRank(rank, graceSeconds, logToFile);
    if (state == LauncherPipe::kNotAPipe) return;
    // Data nobody reads would make poll() return at once: look again a little later.
    if (fd.revents & POLLIN) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

LauncherPipe launcherPipeState(short revents) {
  if (revents & POLLNVAL) return LauncherPipe::kNotAPipe;  // standard input was closed
  if (revents & (POLLHUP | POLLRDHUP | POLLERR)) return LauncherPipe::kEnded;
  return LauncherPipe::kOpen;
}

void watchLauncher(const std::string& grace, int rank, bool logToFile) {
  if (grace.empty()) return;
  static std::once_flag started;
  std::call_once(started, [&] {
    char* end = nullptr;
    double seconds = std::strtod(grace.c_str(), &end);
    if (end == grace.c_str() || *end != '\0' || !(seconds >= 0) || seconds > 86400) {
      log::get("runtime")->warn("rank {}: TSR_LAUNCHER_WATCH='{}' is not a grace in seconds (0..86400): {} s used",
                                rank, grace, kDefaultGraceSeconds);
      seconds = kDefaultGraceSeconds;
    }
    std::thread(watch, rank, seconds, logToFile).detach();
  });
}

}  // namespace tsr::runtime
