// What each rank is started with: its environment and, for remote hosts, the rsh command line.
// Pure functions; spawning lives in rank_process.{h,cc}.
//
// Vocabulary: the *rsh template* is the --rsh text split into words ("ssh -o BatchMode=yes",
// "ip netns exec"). A remote rank runs as
//     <rsh words...> <host> sh -c '<read the secret>' tsrun-rank env VAR=VALUE ... prog args...
// passed to execvp as an argv (no local shell). Agents like ssh join the words after the host
// into one string that the remote shell parses again, so for them each word is shell-quoted;
// agents that exec their argv directly (ip netns exec, nsenter, env, sudo, chroot) get the
// words unquoted. --rsh-quote=auto picks by the agent's program name.
// The job secret is on no command line (ps shows every user those): a remote rank's agent
// gets it on standard input (remoteInput), and the remote shell reads it with its `read`
// builtin into the environment before it execs the rank; local ranks receive it only through
// their environment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tools/tsrun/rank_plan.h"

namespace tsr::tools::tsrun {

struct EnvVar {
  std::string name;
  std::string value;

  bool operator==(const EnvVar&) const = default;
};

enum class RshQuote { kAuto, kAlways, kNever };

// Values shared by every rank of one job.
struct JobInfo {
  int worldSize = 0;
  std::string peers;   // peersString(plan)
  std::string secret;  // 64 hex characters
  std::string jobId;
  std::string graceSeconds = "5";  // TSR_LAUNCHER_WATCH: SIGTERM -> SIGKILL once tsrun is gone
};

// The variables tsrun sets for every rank; -x cannot override them.
const std::vector<std::string>& launcherVariableNames();

// Splits an rsh template into words; supports '...' and "..." quoting and backslash escapes.
Result<std::vector<std::string>> splitCommandTemplate(std::string_view text);

// POSIX shell quoting: words made only of safe characters are returned unchanged.
std::string shellQuote(std::string_view word);

// Whether the words after the host must be shell-quoted for this agent.
bool rshNeedsQuoting(const std::vector<std::string>& rshWords, RshQuote mode);

// Resolves -x specs: "VAR=VALUE" is taken as is, "VAR" forwards lookup(VAR). Fails on a bad
// name, an unset VAR, or a launcher variable (TSR_RANK, ...).
Result<std::vector<EnvVar>> resolveExports(const std::vector<std::string>& specs,
                                           const std::function<std::optional<std::string>(const std::string&)>& lookup);

// TSR_* variables of one rank, then the exported ones, in a fixed order.
std::vector<EnvVar> rankEnvironment(const RankSlot& slot, const JobInfo& job, const std::vector<EnvVar>& exports);

// base ("NAME=VALUE" strings, e.g. environ) with every variable of overrides replaced or added.
std::vector<std::string> mergeEnvironment(const std::vector<std::string>& base, const std::vector<EnvVar>& overrides);

// argv of a remote rank: rsh words, host, the shell that reads the secret from standard
// input, "env", VAR=VALUE... (TSR_JOB_SECRET left out), program and its arguments.
std::vector<std::string> remoteArgv(const std::vector<std::string>& rshWords, const std::string& host,
                                    const std::vector<EnvVar>& env, const std::vector<std::string>& program,
                                    bool quote);

// What a remote rank's agent gets on standard input: the job secret and a newline.
std::string remoteInput(const JobInfo& job);

// base without the variable `name`.
std::vector<std::string> withoutVariable(const std::vector<std::string>& base, const std::string& name);

}  // namespace tsr::tools::tsrun
