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

int remoteSignalOf(int waitStatus, bool remote) {
  if (!remote || !WIFEXITED(waitStatus)) return 0;
  int status = WEXITSTATUS(waitStatus);
  return status > 128 && status <= 128 + 64 ? status - 128 : 0;
}

std::string describeExit(int rank, const std::string& host, int waitStatus, bool remote) {
  std::string who = "rank " + std::to_string(rank) + " (host " + host + ")";
  if (WIFEXITED(waitStatus)) {
    int signal = remoteSignalOf(waitStatus, remote);
    return who + " exited with status " + std::to_string(WEXITSTATUS(waitStatus)) +
           (signal ? " (killed by " + signalName(signal) + " on its host, as the remote shell reports)" : "");
  }
  if (WIFSIGNALED(waitStatus)) {
    return who + " killed by signal " + signalName(WTERMSIG(waitStatus)) +
           (WCOREDUMP(waitStatus) ? " (core dumped)" : "");
  }
  return who + " ended with wait status " + std::to_string(waitStatus);
}

}  // namespace tsr::tools::tsrun
