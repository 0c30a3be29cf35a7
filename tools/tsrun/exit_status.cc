#include "tools/tsrun/exit_status.h"

#include <string.h>
#include <sys/wait.h>

namespace tsr::tools::tsrun {

std::string signalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

bool isFailure(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus) != 0;
  return true;
}

int exitCodeOf(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 1;
}

std::string describeExit(int rank, const std::string& host, int waitStatus) {
  std::string who = "rank " + std::to_string(rank) + " (host " + host + ")";
  if (WIFEXITED(waitStatus)) {
    return who + " exited with status " + std::to_string(WEXITSTATUS(waitStatus));
  }
  if (WIFSIGNALED(waitStatus)) {
    return who + " killed by signal " + signalName(WTERMSIG(waitStatus)) +
           (WCOREDUMP(waitStatus) ? " (core dumped)" : "");
  }
  return who + " ended with wait status " + std::to_string(waitStatus);
}

}  // namespace tsr::tools::tsrun
