// How a rank ended, in the words tsrun prints and the code it exits with. Pure.
//
// A rank *fails* when it exits non-zero or dies by a signal. tsrun reports the first failure
// as "tsrun: rank R (host H) exited with status S" or "... killed by signal SIGNAME" and exits
// with S, or 128 + signal number for a signal (the shell's convention).
#pragma once

#include <string>

namespace tsr::tools::tsrun {

constexpr int kExitTimeout = 124;        // --timeout expired (like timeout(1))
constexpr int kExitCannotStart = 127;    // a rank's program could not be started (not found)
constexpr int kExitNotExecutable = 126;  // found, but not executable (the shell's convention)
constexpr int kExitUsage = 2;            // bad command line, hostfile or environment

// "SIGKILL" for 9; "signal 77" when the number has no name.
std::string signalName(int signal);

// waitStatus is what waitpid() stored.
bool isFailure(int waitStatus);
int exitCodeOf(int waitStatus);
// A remote rank runs under the rsh agent's shell, so a signal that kills it comes back as exit
// status 128 + N: the signal N for such a status of a remote rank, else 0.
int remoteSignalOf(int waitStatus, bool remote);
// remote: started through the rsh agent (its 128 + N statuses are named as signals too).
std::string describeExit(int rank, const std::string& host, int waitStatus, bool remote = false);

}  // namespace tsr::tools::tsrun
