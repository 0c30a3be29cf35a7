// LauncherWatch: a rank started by tsrun ends when tsrun does, even when tsrun is killed with
// SIGKILL and cannot stop its ranks (Open MPI's daemons do the same for mpirun).
//
// tsrun gives each rank a pipe as standard input and keeps its write end open for the job's
// life, through ssh too; TSR_LAUNCHER_WATCH (set by tsrun) holds its --grace in seconds. When
// the pipe ends, the rank logs why and sends itself SIGTERM (a trainer's handler may save a
// checkpoint), then SIGKILL after the grace: what tsrun would have done. Nothing is read from
// standard input.
#pragma once

#include <string>

namespace tsr::runtime {

// Starts the process's one watcher thread on the first call with a grace ("5", "2.5"); later
// calls and an empty grace do nothing. An unreadable grace is named in a warning and 5 s used.
// The rank's end is logged only with `logToFile` (TSR_LOG_FILE): standard error led to tsrun.
void watchLauncher(const std::string& grace, int rank, bool logToFile);

// How the watcher reads standard input's state: poll() revents for fd 0 (pure, for tests).
enum class LauncherPipe { kOpen, kEnded, kNotAPipe };
LauncherPipe launcherPipeState(short revents);

}  // namespace tsr::runtime
