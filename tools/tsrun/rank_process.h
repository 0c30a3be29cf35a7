// Starting one rank: posix_spawnp with its stdout and stderr on pipes, stdin on a pipe that
// holds `input` (if any) and stays open while tsrun holds its write end: the rank's runtime
// takes the pipe's end for tsrun's (TSR_LAUNCHER_WATCH), killed with SIGKILL even. In a
// process group of its own (so a signal to the group reaches the rank's children too),
// with tsrun's blocked signals unblocked and its ignored/handled signals reset to default.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::tools::tsrun {

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is looked up in tsrun's PATH
  std::vector<std::string> env;   // the complete environment, "NAME=VALUE"
  std::string input;              // written to standard input first
};

struct SpawnedProcess {
  pid_t pid = -1;  // also the process group id
  int outFd = -1;  // read ends, non-blocking, close-on-exec
  int errFd = -1;
  int inFd = -1;  // write end of the rank's standard input, close-on-exec; closing it tells
                  // the rank tsrun is gone
};

// Fails (naming argv[0] and the errno text) when the program cannot be executed.
Result<SpawnedProcess> spawnRank(const SpawnRequest& request);

// Joins argv for display, shell-quoting words that need it.
std::string displayCommand(const std::vector<std::string>& argv);

}  // namespace tsr::tools::tsrun
