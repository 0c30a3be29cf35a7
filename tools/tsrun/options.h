// tsrun's command line: options up to the program name, the program and its arguments after.
//
// Parsed with CLI11 (prefix-command mode: parsing stops at the first positional word, so the
// program's own options are never taken for tsrun's). mpirun's single-dash "-np N" is accepted
// by rewriting it to "--np" before CLI11 sees it (only among tsrun's own options).
#pragma once

#include <string>
#include <vector>

#include "tools/tsrun/launch_command.h"

namespace tsr::tools::tsrun {

constexpr const char* kDefaultRsh = "ssh -o BatchMode=yes";
constexpr double kDefaultGraceSeconds = 5.0;

struct LaunchOptions {
  int np = 0;  // 0 = not given (then: total slots of the hostfile / -H list)
  std::string hostfile;
  std::string hostList;  // -H
  std::string rsh = kDefaultRsh;
  RshQuote rshQuote = RshQuote::kAuto;
  std::vector<std::string> exports;            // -x specs, as given
  double timeoutSeconds = 0;                   // 0 = no limit
  double graceSeconds = kDefaultGraceSeconds;  // SIGTERM -> SIGKILL delay when stopping a job
  bool dryRun = false;
  bool elastic = false;              // a failed rank does not stop the others
  int respawn = 0;                   // --respawn N: failed ranks started again to join, N in all
  std::vector<std::string> program;  // prog args...
};

struct CommandLine {
  LaunchOptions options;
  bool exitNow = false;  // --help or a usage error: print output, exit with exitCode
  int exitCode = 0;
  std::string output;  // help text (stdout) or error message (stderr)
};

// args[0] is tsrun's own name. Never throws.
CommandLine parseCommandLine(const std::vector<std::string>& args);

}  // namespace tsr::tools::tsrun
